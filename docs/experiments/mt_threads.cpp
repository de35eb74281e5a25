// The _mt kernels' threads, compared in one process at commit 558144f, when
// run_blocks (impls/src/parallel_blocks.cpp) was a hand-written pool:
// shifted_simd on one thread, on that pool (two blocks), on an OpenMP team of
// two calling the one-thread kernel on each half of the rows, and oneDNN's
// default threading; bursts of about 2^21 elements, each after a 10 ms rest
// and one untimed call, the four in rotating order, 41 rounds; ratios are
// oneDNN's time / the variant's within a round (docs/measurements.md,
// "The _mt kernels' threads: OpenMP against a hand-written pool").
//   git worktree add /tmp/at-558144f 558144f && cd /tmp/at-558144f && scripts/bootstrap.sh
//   g++ -std=c++20 -O2 -fopenmp -Ibuild/core/generated -Icore/include -Iimpls/include -Iimpls/src \
//     docs/experiments/mt_threads.cpp -o /tmp/mt_threads -L/usr/local/cuda/targets/x86_64-linux/lib \
//     build/impls/libsoftcheck_impls.a build/impls/libsoftcheck_exp_lab.a build/impls/cuda/libsoftcheck_cuda.a \
//     build/core/libsoftcheck_core.a /usr/local/cuda/lib/libcudart_static.a \
//     /usr/lib/x86_64-linux-gnu/libdnnl.so.2.6 /usr/lib/x86_64-linux-gnu/libOpenCL.so \
//     /usr/lib/x86_64-linux-gnu/libXNNPACK.so -ldl -lrt -lpthread
//   /tmp/mt_threads ROWS COLS [ROUNDS=41] [REST_MS=10]
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include <functional>
#include "simd_softmax.hpp"
#include "softcheck/kernel.hpp"
using namespace softcheck;
using namespace softcheck::kernels;
using clk = std::chrono::steady_clock;
int main(int argc, char** argv) {
  const long rows = atol(argv[1]), cols = atol(argv[2]);
  const int pairs = argc > 3 ? atoi(argv[3]) : 41;
  const int rest_ms = argc > 4 ? atoi(argv[4]) : 10;
  std::vector<float> x(rows * cols), y(rows * cols);
  for (long i = 0; i < rows * cols; ++i) x[i] = float((i * 2654435761u) % 1000) / 100.0f;
  const SimdIsa isa = best_simd_isa();
  const Kernel* dnnl = find_kernel("onednn_f32");
  const size_t burst = std::max<size_t>(1, (size_t(1) << 21) / (rows * cols));
  std::function<void()> variants[4] = {
    [&] { simd_softmax(SimdAlgorithm::shifted, isa, x.data(), y.data(), rows, cols, 1.0f, 1); },
    [&] { simd_softmax(SimdAlgorithm::shifted, isa, x.data(), y.data(), rows, cols, 1.0f, 2); },
    [&] {
      const int used = 2;
#pragma omp parallel for num_threads(used) schedule(static, 1)
      for (int b = 0; b < used; ++b) {
        const long f = rows * b / used, l = rows * (b + 1) / used;
        simd_softmax(SimdAlgorithm::shifted, isa, x.data() + f * cols, y.data() + f * cols, l - f, cols, 1.0f, 1);
      }
    },
    [&] { const void* in[1] = {x.data()}; void* out[1] = {y.data()};
          dnnl->call({Op::softmax, in, out, rows, cols, 1.0}); },
  };
  const char* names[4] = {"single", "pool", "openmp", "onednn"};
  std::vector<double> t[4];
  for (int p = 0; p < pairs; ++p)
    for (int k0 = 0; k0 < 4; ++k0) {
      int k = (k0 + p) % 4;
      std::this_thread::sleep_for(std::chrono::milliseconds(rest_ms));
      variants[k]();
      auto s = clk::now();
      for (size_t i = 0; i < burst; ++i) variants[k]();
      t[k].push_back(std::chrono::duration<double>(clk::now() - s).count());
    }
  const double bytes = 8.0 * rows * cols * burst;
  for (int k = 0; k < 4; ++k) {
    std::vector<double> r;
    for (int p = 0; p < pairs; ++p) r.push_back(t[3][p] / t[k][p]);
    std::sort(r.begin(), r.end());
    std::vector<double> v = t[k]; std::sort(v.begin(), v.end());
    printf("%ldx%ld %-7s %6.2f GB/s  vs oneDNN default: %.2f (%.2f-%.2f)\n", rows, cols, names[k], bytes / v[pairs / 2] / 1e9,
           r[pairs / 2], r[pairs / 4], r[3 * pairs / 4]);
  }
}
