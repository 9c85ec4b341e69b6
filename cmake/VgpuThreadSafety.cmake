# Clang's thread-safety analysis over the libraries whose locking is annotated
# (protocol/include/vgpu/thread_annotations.h). With VGPU_THREAD_SAFETY a
# violation, or any other warning in them, fails their build; the target
# `thread-safety` builds just them (scripts/thread-safety.sh, CI).
set(VGPU_THREAD_SAFETY_TARGETS
  vgpu_scheduler        # the dispatcher
  vgpu_transport_host   # the host loop
  vgpu_guest_core       # the guest's connection
  vgpu_policy           # accounting (the ledger's budgets)
  vgpu_host             # the session layer, the usage flusher
  vgpu_executor_common) # the memory ledger (TenantLedger)

if(VGPU_THREAD_SAFETY)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "VGPU_THREAD_SAFETY needs clang (CC=clang CXX=clang++)")
  endif()
  foreach(target ${VGPU_THREAD_SAFETY_TARGETS})
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wthread-safety -Wthread-safety-beta -Werror>)
  endforeach()
  add_custom_target(thread-safety DEPENDS ${VGPU_THREAD_SAFETY_TARGETS})
endif()
