// The CUDA backend: availability (decided once, at the first registry use)
// and the host-buffer run function of the registry entries.
#include <cuda_runtime.h>

#include <string>

#include "launch.cuh"
#include "softcheck/kernel_failure.hpp"

namespace softcheck::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw KernelFailure(std::string(what) + ": " + cudaGetErrorString(e));
}

std::string probe() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky, but leave no error behind
    return std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
  }
  if (count == 0) return "no CUDA device";
  if (const cudaError_t k = probe_kernels(); k != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no kernel image for this CUDA device (") + cudaGetErrorString(k) + ")";
  }
  return "";
}

// cudaMalloc'd bytes, freed on scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes > 0) check(cudaMalloc(&p_, bytes), "cudaMalloc");
  }
  ~DeviceBuffer() {
    if (p_) (void)cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

}  // namespace

std::string unavailable_reason() {
  static const std::string reason = probe();
  return reason;
}

void run(Variant v, Op op, const void* x, void* y, std::int64_t rows, std::int64_t cols,
         double temperature) {
  if (const std::string why = unavailable_reason(); !why.empty())
    throw KernelFailure(std::string(kernel_name(v)) + " not run: " + why);
  const std::size_t bytes = static_cast<std::size_t>(rows * cols) * element_bytes(v);
  DeviceBuffer dx(bytes), dy(bytes), workspace(workspace_bytes(v, rows));
  check(cudaMemcpy(dx.get(), x, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  check(launch(v, op, dx.get(), dy.get(), rows, cols, static_cast<float>(temperature), workspace.get(),
               nullptr),
        kernel_name(v));
  // Synchronous on the legacy default stream: also reports errors of the kernel itself.
  check(cudaMemcpy(y, dy.get(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

}  // namespace softcheck::cuda
