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
# Peer libraries (impls/src/peer_*.cpp). Without them the peers' kernels are
# listed as unavailable; -DSOFTCHECK_PEERS=OFF leaves them out on purpose.
option(SOFTCHECK_PEERS "Build the oneDNN and XNNPACK peer adapters when the libraries are found" ON)
if(SOFTCHECK_PEERS)
  find_package(dnnl QUIET)                        # libdnnl-dev: ships a CMake config (DNNL::dnnl)
  # libxnnpack-dev ships no CMake config: the header and the library; xnnpack.h
  # includes pthreadpool.h (libpthreadpool-dev).
  find_path(XNNPACK_INCLUDE_DIR xnnpack.h)
  find_path(PTHREADPOOL_INCLUDE_DIR pthreadpool.h)
  find_library(XNNPACK_LIBRARY XNNPACK)
else()
  set(dnnl_FOUND FALSE)
endif()
if(SOFTCHECK_PEERS AND XNNPACK_INCLUDE_DIR AND PTHREADPOOL_INCLUDE_DIR AND XNNPACK_LIBRARY)
  set(XNNPACK_FOUND TRUE)
  add_library(softcheck::xnnpack INTERFACE IMPORTED)
  target_include_directories(softcheck::xnnpack INTERFACE ${XNNPACK_INCLUDE_DIR} ${PTHREADPOOL_INCLUDE_DIR})
  target_link_libraries(softcheck::xnnpack INTERFACE ${XNNPACK_LIBRARY})
else()
  set(XNNPACK_FOUND FALSE)
endif()
include(CheckLanguage)
check_language(CUDA)
message(STATUS "softcheck: Google Benchmark ${benchmark_FOUND}")
message(STATUS "softcheck: oneDNN (peer adapters) ${dnnl_FOUND}")
message(STATUS "softcheck: XNNPACK (peer adapters) ${XNNPACK_FOUND}")
# CUDA kernels (impls/cuda/, docs/cuda.md): built when nvcc is found and
# SOFTCHECK_ENABLE_CUDA is ON; a build, not a run (without a device at run
# time they are listed as unavailable). SOFTCHECK_CUDA_ARCHITECTURES lists the
# SASS targets; the last one is also embedded as PTX ("90" gives
# CMAKE_CUDA_ARCHITECTURES 90-real;90-virtual). Setting
# CMAKE_CUDA_ARCHITECTURES yourself overrides both.
option(SOFTCHECK_ENABLE_CUDA "Build the CUDA kernels when a CUDA compiler is found" ON)
set(SOFTCHECK_CUDA_ARCHITECTURES "90" CACHE STRING
    "CUDA architectures to build SASS for; PTX of the last one is embedded too")
set(SOFTCHECK_CUDA OFF)
if(SOFTCHECK_ENABLE_CUDA AND CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(softcheck_cuda_archs "")
    foreach(arch IN LISTS SOFTCHECK_CUDA_ARCHITECTURES)
      list(APPEND softcheck_cuda_archs "${arch}-real")
    endforeach()
    list(GET SOFTCHECK_CUDA_ARCHITECTURES -1 softcheck_ptx_arch)
    list(APPEND softcheck_cuda_archs "${softcheck_ptx_arch}-virtual")
    set(CMAKE_CUDA_ARCHITECTURES "${softcheck_cuda_archs}")
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(SOFTCHECK_CUDA ON)
  message(STATUS "softcheck: CUDA kernels built with ${CMAKE_CUDA_COMPILER} "
                 "(${CMAKE_CUDA_COMPILER_VERSION}) for ${CMAKE_CUDA_ARCHITECTURES}")
elseif(CMAKE_CUDA_COMPILER)
  message(STATUS "softcheck: CUDA compiler found but SOFTCHECK_ENABLE_CUDA=OFF: CUDA kernels are not built")
else()
  message(STATUS "softcheck: CUDA compiler not found: CUDA kernels are not built")
endif()
