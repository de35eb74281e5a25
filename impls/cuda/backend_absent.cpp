// The CUDA backend of a build without nvcc: the kernels stay in the registry
// (listed and reported as unavailable), nothing can run.
#include "cuda_backend.hpp"
#include "softcheck/kernel_failure.hpp"

namespace softcheck::cuda {

std::string unavailable_reason() { return "built without CUDA"; }

void run(Variant, Op, const void*, void*, std::int64_t, std::int64_t, double) {
  throw KernelFailure("CUDA kernel not run: built without CUDA");
}

void run_attention(const float*, const float*, const float*, const float*, float*, float*, std::int64_t,
                   std::int64_t, std::int64_t, double) {
  throw KernelFailure("CUDA kernel not run: built without CUDA");
}

}  // namespace softcheck::cuda
