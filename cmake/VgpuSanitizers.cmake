# AddressSanitizer + UBSan for the Debug build the tests use. Code loaded into
# programs that are not sanitized (the intercept library inside a CUDA program)
# needs the ASan runtime preloaded; VGPU_ASAN_RUNTIME names it for vgpu-run.
set(VGPU_ASAN_RUNTIME "")
if(VGPU_SANITIZE AND CMAKE_BUILD_TYPE STREQUAL "Debug")
  foreach(flag -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX,C>:${flag}>")
  endforeach()
  add_link_options($<$<LINK_LANGUAGE:CXX,C>:-fsanitize=address,undefined>)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so
                  OUTPUT_VARIABLE VGPU_ASAN_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libubsan.so
                  OUTPUT_VARIABLE VGPU_UBSAN_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
  message(STATUS "vgpu: sanitized build (ASan runtime ${VGPU_ASAN_RUNTIME})")
endif()
