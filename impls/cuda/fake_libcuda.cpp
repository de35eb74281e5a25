// Stand-ins for the NVIDIA driver library, libcuda.so.1, for the test of the
// CUDA kernels' unavailable reason (driver_reasons_test.sh): built with
// FAKE_DRIVER_VERSION, a driver that supports only that CUDA version (older
// than any runtime softcheck builds with); without, a library of that name
// that is no driver at all. The CUDA runtime finds it first on
// LD_LIBRARY_PATH and answers cudaErrorInsufficientDriver either way.
extern "C" {

#ifdef FAKE_DRIVER_VERSION
int cuDriverGetVersion(int* version) {
  *version = FAKE_DRIVER_VERSION;
  return 0;
}

int cuInit(unsigned /*flags*/) { return 0; }
#else
int fake_libcuda_is_no_driver = 1;
#endif

}  // extern "C"
