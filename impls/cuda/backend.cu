// The CUDA backend: availability (decided once, at the first registry use)
// and the host-buffer run function of the registry entries.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <string>

#include "launch.cuh"
#include "softcheck/kernel_failure.hpp"

namespace softcheck::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw KernelFailure(std::string(what) + ": " + cudaGetErrorString(e));
}

std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// What is missing, in words: cudaGetDeviceCount's own message for a machine
// without a driver ("CUDA driver version is insufficient for CUDA runtime
// version") reads as if the driver were merely old.
std::string no_device_reason(cudaError_t e) {
  if (e == cudaErrorNoDevice) return "no CUDA device: no NVIDIA GPU found";
  if (e == cudaErrorInsufficientDriver) {
    // The runtime reports a missing driver library and an old one alike; the
    // library itself tells them apart, and says which CUDA it supports.
    void* libcuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!libcuda) return "no CUDA device: no NVIDIA driver (libcuda.so.1) found";
    using DriverGetVersion = int (*)(int*);
    const auto driver_get_version = reinterpret_cast<DriverGetVersion>(dlsym(libcuda, "cuDriverGetVersion"));
    int driver_version = 0, runtime_version = 0;
    const bool known = driver_get_version && driver_get_version(&driver_version) == 0 && driver_version > 0;
    dlclose(libcuda);
    (void)cudaRuntimeGetVersion(&runtime_version);
    if (!known) return "no CUDA device: libcuda.so.1 found, but it is no NVIDIA driver (no cuDriverGetVersion)";
    if (driver_version < runtime_version)
      return "no CUDA device: NVIDIA driver too old for this CUDA runtime (driver: CUDA " +
             cuda_version(driver_version) + ", runtime: CUDA " + cuda_version(runtime_version) + ")";
    return "no CUDA device: the NVIDIA driver refused this CUDA runtime (driver: CUDA " +
           cuda_version(driver_version) + ", runtime: CUDA " + cuda_version(runtime_version) +
           "): " + cudaGetErrorString(e);
  }
  return std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
}

std::string probe() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky, but leave no error behind
    return no_device_reason(e);
  }
  if (count == 0) return no_device_reason(cudaErrorNoDevice);
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

void run_attention(const float* x, const float* q, const float* K, const float* V, float* O, float* lse,
                   std::int64_t rows, std::int64_t n, std::int64_t d, double temperature) {
  if (const std::string why = unavailable_reason(); !why.empty())
    throw KernelFailure(std::string(attention_kernel_name) + " not run: " + why);
  if (d > attention_max_head_dim)
    throw KernelFailure(std::string(attention_kernel_name) + ": head dimension " + std::to_string(d) +
                        " above the kernel's " + std::to_string(attention_max_head_dim));
  const auto count = [](std::int64_t e) { return static_cast<std::size_t>(e) * sizeof(float); };
  const std::size_t x_bytes = count(rows * n), q_bytes = count(rows * d), kv_bytes = count(rows * n * d),
                    lse_bytes = count(rows);
  DeviceBuffer dx(x_bytes), dq(q_bytes), dK(kv_bytes), dV(kv_bytes), dO(q_bytes), dlse(lse_bytes);
  check(cudaMemcpy(dx.get(), x, x_bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  check(cudaMemcpy(dq.get(), q, q_bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  check(cudaMemcpy(dK.get(), K, kv_bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  check(cudaMemcpy(dV.get(), V, kv_bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  check(launch_attention(static_cast<const float*>(dx.get()), static_cast<const float*>(dq.get()),
                         static_cast<const float*>(dK.get()), static_cast<const float*>(dV.get()),
                         static_cast<float*>(dO.get()), static_cast<float*>(dlse.get()), rows, n, d,
                         static_cast<float>(temperature), nullptr),
        attention_kernel_name);
  // Synchronous on the legacy default stream: also reports errors of the kernel itself.
  check(cudaMemcpy(O, dO.get(), q_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  check(cudaMemcpy(lse, dlse.get(), lse_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

}  // namespace softcheck::cuda
