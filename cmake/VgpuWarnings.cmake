# Warnings for every target of the project (not for third-party code).
function(vgpu_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion
      -Wno-sign-conversion -Wnon-virtual-dtor -Werror=return-type -Werror=format>)
endfunction()
