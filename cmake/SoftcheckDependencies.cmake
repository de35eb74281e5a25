# Every required dependency is a Debian 12 package (scripts/bootstrap.sh installs
# them). Nothing is downloaded at build time.
find_package(Boost 1.74 REQUIRED)                 # libboost-dev: Boost.Multiprecision
find_path(MPFR_INCLUDE_DIR mpfr.h REQUIRED)       # libmpfr-dev
find_library(MPFR_LIBRARY mpfr REQUIRED)
find_library(GMP_LIBRARY gmp REQUIRED)            # libgmp-dev
add_library(softcheck::mpfr INTERFACE IMPORTED)
target_include_directories(softcheck::mpfr INTERFACE ${MPFR_INCLUDE_DIR})
target_link_libraries(softcheck::mpfr INTERFACE ${MPFR_LIBRARY} ${GMP_LIBRARY} Boost::headers)

find_package(GTest REQUIRED)                      # libgtest-dev
find_package(rapidcheck REQUIRED)                 # librapidcheck-dev (with rapidcheck_gtest)
find_package(CLI11 REQUIRED)                      # libcli11-dev: argument parsing
find_package(nlohmann_json 3.10 REQUIRED)         # nlohmann-json3-dev: report JSON
find_package(fmt REQUIRED)                        # libfmt-dev: formatting
find_package(Threads REQUIRED)

# Optional peers and accelerators: say clearly whether each was found.
find_package(benchmark QUIET)
find_package(dnnl QUIET)
include(CheckLanguage)
check_language(CUDA)
message(STATUS "softcheck: Google Benchmark ${benchmark_FOUND}")
message(STATUS "softcheck: oneDNN (peer adapters) ${dnnl_FOUND}")
if(CMAKE_CUDA_COMPILER)
  message(STATUS "softcheck: CUDA compiler found: ${CMAKE_CUDA_COMPILER}")
else()
  message(STATUS "softcheck: CUDA compiler not found: CUDA kernels are not built")
endif()
