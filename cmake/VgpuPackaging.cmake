# Debian packages (CPack's DEB generator), from any build of this tree:
#   scripts/build-packages.sh     (a Release build, then cpack and lintian)
#
#   vgpu-host   vgpud, vgpuctl, the workers (/usr/libexec/vgpu), the systemd
#               unit, the `vgpu` user, /etc/vgpu/vgpud.toml
#   vgpu-guest  the guest driver and NVML (/usr/lib/vgpu), vgpu-smi,
#               vgpu-run, the login profile that puts the driver under
#               programs in a VM
#   vgpu-dkms   the guest kernel module's sources, built by DKMS for each
#               kernel of the VM
#
# Maintainer scripts, copyright and changelog are in cmake/deb/.
set(vgpu_deb ${CMAKE_CURRENT_LIST_DIR}/deb)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME vgpu)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# Whoever builds packages for machines names themselves (Debian's
# Maintainer field, the changelog's trailer).
set(VGPU_PACKAGE_MAINTAINER "vgpu developers <vgpu@example.org>" CACHE STRING
    "Maintainer of the Debian packages: Name <address>")
set(CPACK_PACKAGE_CONTACT "${VGPU_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL host guest dkms)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Debian's own compression for packages.
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)

set(CPACK_DEBIAN_HOST_PACKAGE_NAME vgpu-host)
set(CPACK_DEBIAN_HOST_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_HOST_PACKAGE_DEPENDS "adduser, init-system-helpers (>= 1.54~)")
set(CPACK_DEBIAN_HOST_PACKAGE_RECOMMENDS "libvirt-daemon-system")
set(CPACK_DEBIAN_HOST_PACKAGE_SUGGESTS "vgpu-guest, prometheus, grafana")
set(CPACK_DEBIAN_HOST_DESCRIPTION "one GPU shared by many VMs: the host daemon
vgpu shares one NVIDIA GPU among virtual machines by time: each VM's CUDA
calls land in a queue of its own on the host, and a fair-share scheduler with
per-student quotas decides whose work the GPU runs next.
.
This package holds vgpud (the daemon, run as a systemd service by the vgpu
user), its worker processes, vgpuctl (courses, students, quotas and usage
reports) and a Grafana dashboard over vgpud's Prometheus metrics. Without a
GPU, vgpud runs its CPU simulation of one.")

set(CPACK_DEBIAN_GUEST_PACKAGE_NAME vgpu-guest)
set(CPACK_DEBIAN_GUEST_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_GUEST_PACKAGE_RECOMMENDS "vgpu-dkms (= ${PROJECT_VERSION}-1)")
set(CPACK_DEBIAN_GUEST_DESCRIPTION "one GPU shared by many VMs: the guest's CUDA driver
vgpu shares one NVIDIA GPU among virtual machines by time. In a VM, this
package's libcuda.so.1 and libnvidia-ml.so.1 stand in for NVIDIA's driver:
unmodified CUDA programs (plain nvcc builds, NVIDIA's runtime, NVRTC and the
CUDA libraries) run on the host's GPU through the vgpu kernel module.
.
It also holds vgpu-smi (the VM's nvidia-smi, with the student's GPU-time
budget) and vgpu-run, which runs a program as a simulated VM of a vgpud on
the same machine.")

set(CPACK_DEBIAN_DKMS_PACKAGE_NAME vgpu-dkms)
set(CPACK_DEBIAN_DKMS_PACKAGE_SECTION kernel)
set(CPACK_DEBIAN_DKMS_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_DKMS_PACKAGE_DEPENDS "dkms")
set(CPACK_DEBIAN_DKMS_PACKAGE_RECOMMENDS "linux-headers-amd64 | linux-headers-generic")
set(CPACK_DEBIAN_DKMS_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_DKMS_DESCRIPTION "one GPU shared by many VMs: the guest kernel module (DKMS)
vgpu shares one NVIDIA GPU among virtual machines by time. This package
builds the VM's vgpu kernel module with DKMS, for every kernel the VM
installs: it drives QEMU's ivshmem device that connects the VM to vgpud on
the host, and gives programs /dev/vgpu.")

foreach(component host guest dkms)
  string(TOUPPER ${component} upper)
  set(scripts)
  foreach(script conffiles postinst prerm postrm)
    if(EXISTS ${vgpu_deb}/${component}/${script})
      set(VERSION ${PROJECT_VERSION})  # @VERSION@ in the scripts
      configure_file(${vgpu_deb}/${component}/${script} ${CMAKE_BINARY_DIR}/deb/${component}/${script}
                     @ONLY FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
                     GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
      list(APPEND scripts ${CMAKE_BINARY_DIR}/deb/${component}/${script})
    endif()
  endforeach()
  set(CPACK_DEBIAN_${upper}_PACKAGE_CONTROL_EXTRA ${scripts})
  set(CPACK_DEBIAN_${upper}_PACKAGE_CONTROL_STRICT_PERMISSION ON)
endforeach()

# Every package: its copyright and Debian changelog (lintian wants both),
# installed only when packaging (EXCLUDE_FROM_ALL: not by `cmake --install`).
foreach(component host guest dkms)
  string(TOUPPER ${component} upper)
  set(name ${CPACK_DEBIAN_${upper}_PACKAGE_NAME})
  set(changelog ${CMAKE_BINARY_DIR}/deb/${name}/changelog.Debian)
  file(READ ${vgpu_deb}/changelog.Debian.in text)
  string(REPLACE "@PACKAGE@" ${name} text "${text}")
  string(REPLACE "@VERSION@" "${PROJECT_VERSION}-1" text "${text}")
  string(REPLACE "@MAINTAINER@" "${VGPU_PACKAGE_MAINTAINER}" text "${text}")
  file(WRITE ${changelog} "${text}")
  execute_process(COMMAND gzip -9nf ${changelog} COMMAND_ERROR_IS_FATAL ANY)
  install(FILES ${vgpu_deb}/copyright ${changelog}.gz
          DESTINATION share/doc/${name} COMPONENT ${component} EXCLUDE_FROM_ALL)
  # What lintian says that does not apply to packages made outside Debian's
  # archive, each with its reason (cmake/deb/<component>/lintian-overrides).
  install(FILES ${vgpu_deb}/${component}/lintian-overrides DESTINATION share/lintian/overrides
          RENAME ${name} COMPONENT ${component} EXCLUDE_FROM_ALL)
endforeach()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${vgpu_deb}/changelog.Debian.in)

include(CPack)
