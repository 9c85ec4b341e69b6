# The guest kernel module (kmod/): an optional target, built when Debian's
# kernel headers (linux-headers-amd64) are installed. The version is the one
# the headers package installed (scripts/kernel-version.sh), not the running
# kernel's. Kbuild writes its objects next to the sources, so the sources are
# copied into the build tree first.
#
#   VGPU_KERNEL_VERSION   the kernel built against ("" when none: no target)
#   VGPU_KMOD             path of vgpu.ko once built (target vgpu_kmod)
set(VGPU_KERNEL_VERSION "" CACHE STRING "Kernel version for the guest module (default: Debian's headers)")
if(NOT VGPU_KERNEL_VERSION)
  execute_process(COMMAND ${PROJECT_SOURCE_DIR}/scripts/kernel-version.sh
                  OUTPUT_VARIABLE detected OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE no_headers ERROR_QUIET)
  if(no_headers EQUAL 0)
    set(VGPU_KERNEL_VERSION ${detected})
  endif()
endif()

set(VGPU_KMOD "")
if(VGPU_KERNEL_VERSION AND EXISTS /lib/modules/${VGPU_KERNEL_VERSION}/build/Makefile)
  set(kmod_src ${CMAKE_CURRENT_SOURCE_DIR}/kmod)
  set(kmod_dir ${CMAKE_BINARY_DIR}/kmod)
  file(GLOB kmod_sources CONFIGURE_DEPENDS ${kmod_src}/*.c ${kmod_src}/*.h)
  set(kmod_headers
    ${PROJECT_SOURCE_DIR}/protocol/include/vgpu/protocol/wire_header.h
    ${PROJECT_SOURCE_DIR}/protocol/include/vgpu/protocol/region.h
    ${PROJECT_SOURCE_DIR}/protocol/include/vgpu/protocol/vm_region.h
    ${CMAKE_CURRENT_SOURCE_DIR}/include/vgpu/transport/vgpu_dev.h)
  set(VGPU_KMOD ${kmod_dir}/vgpu.ko)
  add_custom_command(
    OUTPUT ${VGPU_KMOD}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${kmod_dir}
    COMMAND ${CMAKE_COMMAND} -E copy_if_different ${kmod_sources} ${kmod_src}/Kbuild ${kmod_dir}
    # W=1: the kernel's extra warnings; -Werror (Kbuild) makes them fail the build.
    COMMAND make -s -C /lib/modules/${VGPU_KERNEL_VERSION}/build M=${kmod_dir}
            VGPU_ROOT=${PROJECT_SOURCE_DIR} W=1 modules
    DEPENDS ${kmod_sources} ${kmod_src}/Kbuild ${kmod_headers}
    COMMENT "Building the guest kernel module for Linux ${VGPU_KERNEL_VERSION}"
    VERBATIM)
  add_custom_target(vgpu_kmod ALL DEPENDS ${VGPU_KMOD})
  message(STATUS "vgpu: guest kernel module for Linux ${VGPU_KERNEL_VERSION}")
else()
  message(STATUS "vgpu: no kernel headers (linux-headers-amd64): the guest kernel module is not built")
endif()
set(VGPU_KMOD ${VGPU_KMOD} PARENT_SCOPE)
set(VGPU_KERNEL_VERSION ${VGPU_KERNEL_VERSION} PARENT_SCOPE)
