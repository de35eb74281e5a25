# Build options shared by every component.
option(SOFTCHECK_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(SOFTCHECK_WERROR "Treat warnings as errors" OFF)

# Kernels must be compiled with strict IEEE semantics: the whole point is to
# measure their rounding, so no -ffast-math and no FMA contraction behind our back.
# (C and C++ only: CUDA sources get the nvcc equivalents in impls/cuda/.)
add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-ffp-contract=off>
                    $<$<COMPILE_LANGUAGE:C,CXX>:-fno-fast-math>)

function(softcheck_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
  if(SOFTCHECK_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(SOFTCHECK_SANITIZE)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined;-fno-omit-frame-pointer;-fno-sanitize-recover=undefined>")
  add_link_options(-fsanitize=address,undefined)
endif()
