# Build options shared by every component.
option(SOFTCHECK_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(SOFTCHECK_WERROR "Treat warnings as errors" OFF)
option(SOFTCHECK_UNITY_BUILD "Compile the targets softcheck_unity names in batches of sources (CMake UNITY_BUILD)" ON)

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

# A unity build of `target` (SOFTCHECK_UNITY_BUILD): its sources compiled in
# batches of 8, so that the headers they share (Boost.Multiprecision's MPFR
# backend, 3.9 s at -O2 -g; RapidCheck; GoogleTest) are compiled once per
# batch instead of once per source. CI builds on 2 cores, twice (g++ here,
# clang with sanitizers in the fuzz tree); docs/measurements.md, "Build time",
# has the figures. Only for targets whose sources keep their private helpers
# under distinct names (a unity batch is one translation unit); a source
# with its own compile options (the fuzz tree's trace-cmp exemptions) is
# compiled apart by CMake. The kernels (softcheck_impls) stay one unit per
# kernel.
function(softcheck_unity target)
  if(SOFTCHECK_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

if(SOFTCHECK_SANITIZE)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined;-fno-omit-frame-pointer;-fno-sanitize-recover=undefined>")
  add_link_options(-fsanitize=address,undefined)
endif()
