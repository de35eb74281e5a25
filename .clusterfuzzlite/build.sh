#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build script. The builder image (Dockerfile beside
# this file) copies it to $SRC/build.sh and OSS-Fuzz's `compile` runs it from
# $SRC/softcheck with $CC $CXX $CFLAGS $CXXFLAGS $LIB_FUZZING_ENGINE
# $SANITIZER $OUT $WORK set for the build at hand (address, undefined or
# coverage). fuzz/build.sh does the work (docs/fuzzing.md); this file only
# adapts OSS-Fuzz's flags to what the project links.
# fuzz/tests/clusterfuzzlite_build.sh (ctest fuzz.clusterfuzzlite_build) runs
# it the same way with clang-14.
set -euo pipefail

# MSan reports every read of memory that uninstrumented code wrote, and the
# fuzzers link the distribution's MPFR, GMP, fmt and libstdc++: not a build
# this project supports (project.yaml does not list it). Say so instead of
# producing fuzzers whose every report is false.
if [[ ${SANITIZER:-} == memory ]]; then
  echo "softcheck: MSan is not supported (uninstrumented MPFR, GMP, fmt, libstdc++); see .clusterfuzzlite/project.yaml" >&2
  exit 1
fi

# OSS-Fuzz's CXXFLAGS select libc++ (-stdlib=libc++), but the fuzzers link the
# distribution's C++ libraries (fmt, rapidcheck), built against libstdc++:
# their std::string and std::vector symbols would not resolve under libc++.
# ASan and UBSan work with libstdc++ (only MSan needs an instrumented C++
# library), and the runner image has libstdc++ (build.sh leaves it out of
# $OUT/lib as part of the base system).
CXXFLAGS=${CXXFLAGS//-stdlib=libc++/}

# OSS-Fuzz's undefined build includes -fsanitize=float-divide-by-zero, which
# is not undefined behaviour for IEEE 754 floats (C++ with
# numeric_limits<float>::is_iec559: x/0 is +-inf, 0/0 is NaN) and is exactly
# what these targets feed the kernels: rows of zeros, infinities and fully
# masked rows. Off, so that a UBSan report means real undefined behaviour;
# the local build (-fsanitize=undefined) does not include it either. Only
# where the flags ask for it: other flags would make another CMake tree's
# worth of compiling for the ClusterFuzzLite test, which shares the smoke's.
if [[ $CFLAGS$CXXFLAGS == *float-divide-by-zero* ]]; then
  CFLAGS+=" -fno-sanitize=float-divide-by-zero"
  CXXFLAGS+=" -fno-sanitize=float-divide-by-zero"
fi
export CFLAGS CXXFLAGS

# The targets, their .options, .dict and seed corpora, and the shared
# libraries beyond the C/C++ runtime land in $OUT; the CMake tree in $WORK/tree.
# $SRC/softcheck, not this file's directory: OSS-Fuzz runs a copy of this
# file from $SRC.
exec "$SRC/softcheck/fuzz/build.sh"
