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
# OpenMP (the compiler's runtime: libgomp with g++, from libgcc-12-dev): the
# _mt kernels' threads (impls/src/parallel_blocks.hpp). Without it (clang
# without libomp, as the fuzz build has) those kernels run on one thread and
# say so in their description.
find_package(OpenMP QUIET COMPONENTS CXX)

# Optional peers and accelerators: say clearly whether each was found.
find_package(benchmark QUIET)
# Peer libraries (impls/src/peer_*.cpp). Without them the peers' kernels are
# listed as unavailable; -DSOFTCHECK_PEERS=OFF leaves them out on purpose.
option(SOFTCHECK_PEERS "Build the oneDNN and XNNPACK peer adapters when the libraries are found" ON)
if(SOFTCHECK_PEERS)
  # libdnnl-dev ships a CMake config (DNNL::dnnl). Debian's is built with the
  # OpenCL GPU runtime and calls find_package(OpenCL REQUIRED), which would abort
  # the whole configure where OpenCL's dev files are missing: look for OpenCL
  # first and leave oneDNN out, with the reason, when it is not there.
  find_file(SOFTCHECK_DNNL_CONFIG dnnl-config.cmake
            HINTS ${dnnl_DIR}
            PATH_SUFFIXES lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/dnnl lib/cmake/dnnl lib64/cmake/dnnl)
  set(SOFTCHECK_DNNL_WHY "no dnnl-config.cmake (install libdnnl-dev)")
  if(SOFTCHECK_DNNL_CONFIG)
    file(READ "${SOFTCHECK_DNNL_CONFIG}" softcheck_dnnl_config_text)
    set(softcheck_dnnl_needs_opencl FALSE)
    if(softcheck_dnnl_config_text MATCHES "find_package\\(OpenCL REQUIRED\\)")
      find_package(OpenCL QUIET)
      if(NOT OpenCL_FOUND)
        set(softcheck_dnnl_needs_opencl TRUE)
      endif()
    endif()
    if(softcheck_dnnl_needs_opencl)
      set(SOFTCHECK_DNNL_WHY "its CMake config needs OpenCL, which was not found (install ocl-icd-opencl-dev)")
    else()
      find_package(dnnl QUIET)
      if(NOT dnnl_FOUND)
        set(SOFTCHECK_DNNL_WHY "${SOFTCHECK_DNNL_CONFIG} did not load")
      endif()
    endif()
  endif()
  # libxnnpack-dev ships no CMake config: the header and the library; xnnpack.h
  # includes pthreadpool.h (libpthreadpool-dev).
  find_path(XNNPACK_INCLUDE_DIR xnnpack.h)
  find_path(PTHREADPOOL_INCLUDE_DIR pthreadpool.h)
  find_library(XNNPACK_LIBRARY XNNPACK)
else()
  set(dnnl_FOUND FALSE)
  set(SOFTCHECK_DNNL_WHY "SOFTCHECK_PEERS=OFF")
endif()
if(SOFTCHECK_PEERS AND XNNPACK_INCLUDE_DIR AND PTHREADPOOL_INCLUDE_DIR AND XNNPACK_LIBRARY)
  set(XNNPACK_FOUND TRUE)
  add_library(softcheck::xnnpack INTERFACE IMPORTED)
  target_include_directories(softcheck::xnnpack INTERFACE ${XNNPACK_INCLUDE_DIR} ${PTHREADPOOL_INCLUDE_DIR})
  target_link_libraries(softcheck::xnnpack INTERFACE ${XNNPACK_LIBRARY})
else()
  set(XNNPACK_FOUND FALSE)
  if(NOT SOFTCHECK_PEERS)
    set(SOFTCHECK_XNNPACK_WHY "SOFTCHECK_PEERS=OFF")
  else()
    set(SOFTCHECK_XNNPACK_WHY "")
    foreach(part XNNPACK_INCLUDE_DIR:xnnpack.h PTHREADPOOL_INCLUDE_DIR:pthreadpool.h XNNPACK_LIBRARY:libXNNPACK)
      string(REPLACE ":" ";" part "${part}")
      list(GET part 0 var)
      list(GET part 1 file)
      if(NOT ${var})
        string(APPEND SOFTCHECK_XNNPACK_WHY " ${file}")
      endif()
    endforeach()
    set(SOFTCHECK_XNNPACK_WHY "missing${SOFTCHECK_XNNPACK_WHY} (install libxnnpack-dev libpthreadpool-dev)")
  endif()
endif()
# libtorch (libtorch-dev, PyTorch 1.13's C++ API): the torch_* peers. Found by
# its headers and libraries (Debian's TorchConfig.cmake pulls in the whole
# Caffe2 configuration, CUDA probing included, for three libraries).
find_path(TORCH_ATEN_INCLUDE_DIR ATen/ATen.h)
find_path(TORCH_API_INCLUDE_DIR torch/torch.h PATH_SUFFIXES torch/csrc/api/include)
find_library(TORCH_LIBRARY torch)
find_library(TORCH_CPU_LIBRARY torch_cpu)
find_library(TORCH_C10_LIBRARY c10)
# libtorch 1.13's headers do not compile with clang 14 in C++20 (c10::IValue
# is incomplete where std::vector<IValue> is instantiated; the fuzz build,
# fuzz/build.sh, is clang): g++ only.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(softcheck_torch_compiler_ok TRUE)
else()
  set(softcheck_torch_compiler_ok FALSE)
endif()
if(SOFTCHECK_PEERS AND softcheck_torch_compiler_ok AND TORCH_ATEN_INCLUDE_DIR AND TORCH_API_INCLUDE_DIR
   AND TORCH_LIBRARY AND TORCH_CPU_LIBRARY AND TORCH_C10_LIBRARY)
  set(TORCH_FOUND TRUE)
  add_library(softcheck::torch INTERFACE IMPORTED)
  target_include_directories(softcheck::torch SYSTEM INTERFACE ${TORCH_ATEN_INCLUDE_DIR} ${TORCH_API_INCLUDE_DIR})
  target_link_libraries(softcheck::torch INTERFACE ${TORCH_LIBRARY} ${TORCH_CPU_LIBRARY} ${TORCH_C10_LIBRARY})
else()
  set(TORCH_FOUND FALSE)
  if(NOT SOFTCHECK_PEERS)
    set(SOFTCHECK_TORCH_WHY "SOFTCHECK_PEERS=OFF")
  elseif(NOT softcheck_torch_compiler_ok)
    set(SOFTCHECK_TORCH_WHY "libtorch 1.13's headers do not compile with ${CMAKE_CXX_COMPILER_ID} in C++20 (g++ only)")
  else()
    set(SOFTCHECK_TORCH_WHY "missing ATen/ATen.h, torch/torch.h or libtorch, libtorch_cpu, libc10 (install libtorch-dev)")
  endif()
endif()
# NumPy files for `softcheck compare` (libxtensor-dev: xtensor's npy reader,
# header-only, with xtl). Without it `compare` says it was built without them.
option(SOFTCHECK_NPY "Read NumPy .npy files in `softcheck compare` (xtensor)" ON)
set(SOFTCHECK_NPY_FOUND FALSE)
if(SOFTCHECK_NPY)
  find_package(xtensor QUIET)
  if(xtensor_FOUND)
    set(SOFTCHECK_NPY_FOUND TRUE)
  else()
    set(SOFTCHECK_NPY_WHY "no xtensor CMake config (install libxtensor-dev)")
  endif()
else()
  set(SOFTCHECK_NPY_WHY "SOFTCHECK_NPY=OFF")
endif()

# The Python module (python/, docs/python.md): pybind11 (pybind11-dev) for an
# interpreter that imports NumPy and has its C headers (python3-dev,
# python3-numpy). The interpreter: SOFTCHECK_PYTHON_EXECUTABLE when set, else
# the first python3 on PATH that has both (a python3 earlier on PATH without
# NumPy, e.g. pyenv's or a bare venv's, is passed over). pybind11's config
# insists on Python's headers, so it is loaded only once they are known to exist.
option(SOFTCHECK_PYTHON "Build the Python module when pybind11, NumPy and Python's headers are found" ON)
set(SOFTCHECK_PYTHON_EXECUTABLE "" CACHE FILEPATH "Python interpreter to build the module for (empty: search PATH)")
set(SOFTCHECK_PYTHON_FOUND FALSE)
set(SOFTCHECK_PYTHON_WHY "SOFTCHECK_PYTHON=OFF")
if(SOFTCHECK_PYTHON)
  find_file(SOFTCHECK_PYBIND11_CONFIG pybind11Config.cmake PATH_SUFFIXES lib/cmake/pybind11 share/cmake/pybind11)
  if(NOT SOFTCHECK_PYBIND11_CONFIG)
    set(SOFTCHECK_PYTHON_WHY "no pybind11Config.cmake (install pybind11-dev)")
  else()
    if(SOFTCHECK_PYTHON_EXECUTABLE)
      set(softcheck_python_candidates "${SOFTCHECK_PYTHON_EXECUTABLE}")
    else()
      set(softcheck_python_candidates "")
      string(REPLACE ":" ";" softcheck_path_dirs "$ENV{PATH}")
      foreach(dir IN LISTS softcheck_path_dirs)
        if(dir AND EXISTS "${dir}/python3" AND NOT IS_DIRECTORY "${dir}/python3")
          list(APPEND softcheck_python_candidates "${dir}/python3")
        endif()
      endforeach()
    endif()
    set(SOFTCHECK_PYTHON_WHY "no python3 that imports numpy and has Python.h (install python3-numpy python3-dev)")
    foreach(candidate IN LISTS softcheck_python_candidates)
      execute_process(
        COMMAND "${candidate}" -c
                "import os, sys, sysconfig, numpy; inc = sysconfig.get_paths()['include']; assert os.path.isfile(os.path.join(inc, 'Python.h')); print(os.path.realpath(sys.executable), end='')"
        RESULT_VARIABLE softcheck_python_rc OUTPUT_VARIABLE softcheck_python_exe ERROR_QUIET)
      if(softcheck_python_rc EQUAL 0 AND softcheck_python_exe)
        set(SOFTCHECK_PYTHON_FOUND TRUE)
        set(SOFTCHECK_PYTHON_INTERPRETER "${softcheck_python_exe}")
        break()
      endif()
    endforeach()
    if(SOFTCHECK_PYTHON_FOUND)
      set(PYTHON_EXECUTABLE "${SOFTCHECK_PYTHON_INTERPRETER}" CACHE FILEPATH "Python for pybind11" FORCE)
      find_package(pybind11 CONFIG QUIET)
      if(NOT pybind11_FOUND)
        set(SOFTCHECK_PYTHON_FOUND FALSE)
        set(SOFTCHECK_PYTHON_WHY "${SOFTCHECK_PYBIND11_CONFIG} did not load")
      else()
        execute_process(COMMAND "${SOFTCHECK_PYTHON_INTERPRETER}" -c "import pytest"
                        RESULT_VARIABLE softcheck_pytest_rc OUTPUT_QUIET ERROR_QUIET)
        if(softcheck_pytest_rc EQUAL 0)
          set(SOFTCHECK_PYTEST_FOUND TRUE)
        else()
          set(SOFTCHECK_PYTEST_FOUND FALSE)
        endif()
      endif()
    endif()
  endif()
endif()

include(CheckLanguage)
check_language(CUDA)
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
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(SOFTCHECK_CUDA ON)
  endif()
endif()

# Fuzzing needs clang's libFuzzer runtime; fuzz/build.sh and fuzz/smoke.sh make
# their own clang build, so this only reports what they will find.
find_program(SOFTCHECK_CLANG NAMES clang++-14 clang++)
set(SOFTCHECK_LIBFUZZER_WHY "clang++ not found (install clang-14 libclang-rt-14-dev)")
if(SOFTCHECK_CLANG)
  execute_process(COMMAND ${SOFTCHECK_CLANG} -print-file-name=libclang_rt.fuzzer-x86_64.a
                  OUTPUT_VARIABLE softcheck_fuzzer_rt OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(IS_ABSOLUTE "${softcheck_fuzzer_rt}" AND EXISTS "${softcheck_fuzzer_rt}")
    set(SOFTCHECK_LIBFUZZER_WHY "")
  else()
    set(SOFTCHECK_LIBFUZZER_WHY "${SOFTCHECK_CLANG} has no libFuzzer runtime (install libclang-rt-14-dev)")
  endif()
endif()

# One line per optional part: found, or not found and why.
function(softcheck_summary name found what why)
  if(found)
    message(STATUS "softcheck: ${name}: found (${what})")
  else()
    message(STATUS "softcheck: ${name}: not found: ${why}")
  endif()
endfunction()
if(SOFTCHECK_CUDA)
  set(softcheck_cuda_why "")
elseif(CMAKE_CUDA_COMPILER AND NOT SOFTCHECK_ENABLE_CUDA)
  set(softcheck_cuda_why "nvcc found but SOFTCHECK_ENABLE_CUDA=OFF")
elseif(CMAKE_CUDA_COMPILER)
  set(softcheck_cuda_why "nvcc found but not the CUDA toolkit's libraries (find_package(CUDAToolkit))")
else()
  set(softcheck_cuda_why "no CUDA compiler (nvcc) on PATH or in CUDACXX")
endif()
softcheck_summary("CUDA" "${SOFTCHECK_CUDA}"
  "${CMAKE_CUDA_COMPILER} ${CMAKE_CUDA_COMPILER_VERSION}, ${CMAKE_CUDA_ARCHITECTURES}; kernels built, run only where a device is present"
  "${softcheck_cuda_why}: CUDA kernels are not built")
softcheck_summary("oneDNN" "${dnnl_FOUND}" "${dnnl_DIR}, version ${dnnl_VERSION}: onednn_* peers"
  "${SOFTCHECK_DNNL_WHY}: onednn_* peers listed as unavailable")
softcheck_summary("XNNPACK" "${XNNPACK_FOUND}" "${XNNPACK_LIBRARY}: xnnpack_* peers"
  "${SOFTCHECK_XNNPACK_WHY}: xnnpack_* peers listed as unavailable")
softcheck_summary("libtorch" "${TORCH_FOUND}" "${TORCH_CPU_LIBRARY}: torch_* peers"
  "${SOFTCHECK_TORCH_WHY}: torch_* peers listed as unavailable")
softcheck_summary("xtensor (.npy)" "${SOFTCHECK_NPY_FOUND}" "${xtensor_DIR}: softcheck compare reads .npy files"
  "${SOFTCHECK_NPY_WHY}: softcheck compare is unavailable")
if(SOFTCHECK_PYTHON_FOUND AND NOT SOFTCHECK_PYTEST_FOUND)
  set(softcheck_pytest_note "; no pytest for ${SOFTCHECK_PYTHON_INTERPRETER} (install python3-pytest): python.pytest not registered")
else()
  set(softcheck_pytest_note "")
endif()
softcheck_summary("Python module" "${SOFTCHECK_PYTHON_FOUND}"
  "${SOFTCHECK_PYTHON_INTERPRETER}, pybind11 ${pybind11_VERSION}: build/python/softcheck${softcheck_pytest_note}"
  "${SOFTCHECK_PYTHON_WHY}: the Python module is not built")
if(benchmark_FOUND)
  set(softcheck_benchmark_why "")
else()
  set(softcheck_benchmark_why "no benchmark CMake config (install libbenchmark-dev): softcheck_bench, oracle_bench and 'softcheck bench' are not built")
endif()
if(CMAKE_DISABLE_FIND_PACKAGE_OpenMP)
  set(softcheck_openmp_why "CMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON")
else()
  set(softcheck_openmp_why "the compiler has no OpenMP runtime")
endif()
softcheck_summary("OpenMP" "${OpenMP_CXX_FOUND}" "${OpenMP_CXX_FLAGS} ${OpenMP_CXX_LIB_NAMES}: the _mt kernels' threads"
  "${softcheck_openmp_why}: the _mt kernels run on one thread")
softcheck_summary("Google Benchmark" "${benchmark_FOUND}" "${benchmark_DIR}" "${softcheck_benchmark_why}")
if(SOFTCHECK_LIBFUZZER_WHY STREQUAL "")
  set(softcheck_libfuzzer_found TRUE)
else()
  set(softcheck_libfuzzer_found FALSE)
endif()
softcheck_summary("clang/libFuzzer" "${softcheck_libfuzzer_found}" "${SOFTCHECK_CLANG}: fuzz/build.sh, fuzz/smoke.sh"
  "${SOFTCHECK_LIBFUZZER_WHY}: the fuzz targets still build as corpus replays")
