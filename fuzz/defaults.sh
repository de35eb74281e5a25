# shellcheck shell=bash disable=SC2034  # sourced: the variables are used by its callers
# Sourced by fuzz/build.sh and fuzz/tests/clusterfuzzlite_build.sh: the
# compiler, flags and engine of the local fuzz build (clang-14, libFuzzer,
# ASan and UBSan). build.sh takes each one whose OSS-Fuzz variable is unset;
# the ClusterFuzzLite test passes them explicitly as those variables, so that
# its build and fuzz/smoke.sh's are the same CMake tree with the same flags
# and CI compiles the project with clang once (the second build is a no-op).
fuzz_default_CC=clang-14
fuzz_default_CXX=clang++-14
fuzz_default_CFLAGS='-O1 -fno-omit-frame-pointer -gline-tables-only -fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined'
fuzz_default_CXXFLAGS=$fuzz_default_CFLAGS
fuzz_default_LIB_FUZZING_ENGINE=-fsanitize=fuzzer
