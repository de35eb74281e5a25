// softcheck_cuda_bench: achieved bandwidth of the CUDA kernels (tiled online
// softmax and attention) against a device-to-device cudaMemcpy of the same
// bytes, measured in the same run.
//
//   softcheck_cuda_bench [--quick] [--iterations N]
//
// For each shape, each variant (softmax; log-softmax for cuda_tiled_online_f32)
// is timed with CUDA events over N launches after 3 warm-up launches. Bytes
// counted per launch: the input once and the output once (2 rows*cols
// elements), the minimum any softmax must move; the kernels actually read the
// input twice (the second pass usually hits L2). The copy moves the same
// bytes: cudaMemcpyAsync of rows*cols elements (read + write).
// The attention kernel (cuda_attention_flash_f32) is timed the same way on
// (rows, keys n, head dimension d) shapes; its bytes per launch are what the
// op must move at least: the bias (rows x n), q (rows x d), K and V (rows x n
// x d each) read once, O (rows x d) and lse (rows) written once. Its copy
// moves the same bytes: cudaMemcpyAsync of half of them (read + write).
// One line per result starting with "BENCH" (key=value), for scripts; an
// attention line has op=attention and cols=n, plus d=.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "launch.cuh"

namespace {

using softcheck::Op;
using softcheck::cuda::Variant;

[[noreturn]] void die(const char* what, cudaError_t e) {
  std::fprintf(stderr, "softcheck_cuda_bench: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(2);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(what, e);
}

struct Shape {
  std::int64_t rows, cols;
};

// Deterministic inputs in [-8, 8) (values only change the exp's speed a little).
__global__ void fill(float* x, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const unsigned h = static_cast<unsigned>(i) * 2654435761u;
    x[i] = static_cast<float>(h >> 8) * (16.0f / 16777216.0f) - 8.0f;
  }
}

__global__ void to_half(const float* x, __half* h, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    h[i] = __float2half_rn(x[i]);
}

class Timer {
 public:
  Timer() {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~Timer() {
    (void)cudaEventDestroy(start_);
    (void)cudaEventDestroy(stop_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  // Mean seconds per call of f over `iterations` calls, after 3 warm-up calls.
  template <class F>
  double seconds_per_call(F f, int iterations) {
    for (int i = 0; i < 3; ++i) check(f(), "warm-up");
    check(cudaEventRecord(start_), "cudaEventRecord");
    for (int i = 0; i < iterations; ++i) check(f(), "timed call");
    check(cudaEventRecord(stop_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3 / iterations;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

struct Buffers {
  void* x = nullptr;
  void* y = nullptr;
  void* workspace = nullptr;
};

void report(const char* kernel, Op op, const Shape& s, std::size_t elem, double secs, double copy_secs) {
  const double bytes = 2.0 * static_cast<double>(s.rows * s.cols) * static_cast<double>(elem);
  const double gbps = bytes / secs * 1e-9, copy_gbps = bytes / copy_secs * 1e-9;
  std::printf("%-30s %-11s %7lld %8lld %10.1f %9.1f %9.1f %8.3f\n", kernel,
              std::string(name(op)).c_str(), static_cast<long long>(s.rows),
              static_cast<long long>(s.cols), secs * 1e6, gbps, copy_gbps, gbps / copy_gbps);
  std::printf("BENCH kernel=%s op=%s rows=%lld cols=%lld us=%.2f gbps=%.1f copy_gbps=%.1f fraction=%.4f\n",
              kernel, std::string(name(op)).c_str(), static_cast<long long>(s.rows),
              static_cast<long long>(s.cols), secs * 1e6, gbps, copy_gbps, gbps / copy_gbps);
}

void bench_shape(const Shape& s, int iterations, Timer& timer) {
  const std::int64_t n = s.rows * s.cols;
  Buffers f32, f16;
  check(cudaMalloc(&f32.x, static_cast<std::size_t>(n) * 4), "cudaMalloc");
  check(cudaMalloc(&f32.y, static_cast<std::size_t>(n) * 4), "cudaMalloc");
  check(cudaMalloc(&f16.x, static_cast<std::size_t>(n) * 2), "cudaMalloc");
  check(cudaMalloc(&f16.y, static_cast<std::size_t>(n) * 2), "cudaMalloc");
  const std::size_t ws = softcheck::cuda::workspace_bytes(Variant::split_f32, s.rows);
  check(cudaMalloc(&f32.workspace, ws), "cudaMalloc");
  fill<<<1024, 256>>>(static_cast<float*>(f32.x), n);
  to_half<<<1024, 256>>>(static_cast<const float*>(f32.x), static_cast<__half*>(f16.x), n);
  check(cudaDeviceSynchronize(), "fill");

  double copy_secs[2];  // [0]: f32 bytes, [1]: f16 bytes
  for (int h = 0; h < 2; ++h) {
    const Buffers& b = h ? f16 : f32;
    const std::size_t bytes = static_cast<std::size_t>(n) * (h ? 2 : 4);
    copy_secs[h] = timer.seconds_per_call(
        [&] { return cudaMemcpyAsync(b.y, b.x, bytes, cudaMemcpyDeviceToDevice); }, iterations);
  }
  for (Variant v : softcheck::cuda::all_variants) {
    const bool half = v == Variant::tiled_f16;
    const Buffers& b = half ? f16 : f32;
    for (Op op : {Op::softmax, Op::log_softmax}) {
      if (op == Op::log_softmax && v != Variant::tiled_f32) continue;
      const double secs = timer.seconds_per_call(
          [&] { return softcheck::cuda::launch(v, op, b.x, b.y, s.rows, s.cols, 1.0f, f32.workspace, nullptr); },
          iterations);
      report(softcheck::cuda::kernel_name(v), op, s, half ? 2 : 4, secs, copy_secs[half ? 1 : 0]);
    }
  }
  for (void* p : {f32.x, f32.y, f32.workspace, f16.x, f16.y}) check(cudaFree(p), "cudaFree");
}

// --------------------------------------------------------------- attention

struct AttentionShape {
  std::int64_t rows, n, d;
};

void bench_attention(const AttentionShape& s, int iterations, Timer& timer) {
  const std::int64_t x_count = s.rows * s.n, q_count = s.rows * s.d, kv_count = s.rows * s.n * s.d;
  const double bytes = 4.0 * static_cast<double>(x_count + q_count + 2 * kv_count + q_count + s.rows);
  float *x = nullptr, *q = nullptr, *K = nullptr, *V = nullptr, *O = nullptr, *lse = nullptr;
  void *copy_src = nullptr, *copy_dst = nullptr;
  const auto copy_bytes = static_cast<std::size_t>(bytes / 2);
  using Buffer = std::pair<float**, std::int64_t>;
  for (const Buffer& b : {Buffer{&x, x_count}, Buffer{&q, q_count}, Buffer{&K, kv_count}, Buffer{&V, kv_count},
                          Buffer{&O, q_count}, Buffer{&lse, s.rows}})
    check(cudaMalloc(b.first, static_cast<std::size_t>(b.second) * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&copy_src, copy_bytes), "cudaMalloc");
  check(cudaMalloc(&copy_dst, copy_bytes), "cudaMalloc");
  for (const Buffer& b : {Buffer{&x, x_count}, Buffer{&q, q_count}, Buffer{&K, kv_count}, Buffer{&V, kv_count}})
    fill<<<1024, 256>>>(*b.first, b.second);
  check(cudaMemsetAsync(copy_src, 0, copy_bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "fill");
  const double copy_secs = timer.seconds_per_call(
      [&] { return cudaMemcpyAsync(copy_dst, copy_src, copy_bytes, cudaMemcpyDeviceToDevice); }, iterations);
  const double secs = timer.seconds_per_call(
      [&] { return softcheck::cuda::launch_attention(x, q, K, V, O, lse, s.rows, s.n, s.d, 1.0f, nullptr); },
      iterations);
  const double gbps = bytes / secs * 1e-9, copy_gbps = bytes / copy_secs * 1e-9;
  std::printf("%-30s %-11s %7lld %8lld %10.1f %9.1f %9.1f %8.3f  (d = %lld)\n",
              softcheck::cuda::attention_kernel_name, "attention", static_cast<long long>(s.rows),
              static_cast<long long>(s.n), secs * 1e6, gbps, copy_gbps, gbps / copy_gbps, static_cast<long long>(s.d));
  std::printf("BENCH kernel=%s op=attention rows=%lld cols=%lld us=%.2f gbps=%.1f copy_gbps=%.1f fraction=%.4f d=%lld\n",
              softcheck::cuda::attention_kernel_name, static_cast<long long>(s.rows), static_cast<long long>(s.n),
              secs * 1e6, gbps, copy_gbps, gbps / copy_gbps, static_cast<long long>(s.d));
  for (void* p : {static_cast<void*>(x), static_cast<void*>(q), static_cast<void*>(K), static_cast<void*>(V),
                  static_cast<void*>(O), static_cast<void*>(lse), copy_src, copy_dst})
    check(cudaFree(p), "cudaFree");
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int iterations = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: softcheck_cuda_bench [--quick] [--iterations N]\n");
      return 2;
    }
  }
  const std::string why = softcheck::cuda::unavailable_reason();
  if (!why.empty()) {
    std::fprintf(stderr, "softcheck_cuda_bench: CUDA kernels unavailable: %s\n", why.c_str());
    return 3;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("device: %s (sm_%d%d, %d SMs, %.0f MiB)\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, static_cast<double>(prop.totalGlobalMem) / (1 << 20));
  // Short rows (many blocks), medium, long rows (few blocks: the split
  // variant's case), 128-256 MiB per f32 buffer.
  std::vector<Shape> shapes = {{65536, 512}, {8192, 4096}, {512, 65536}, {32, 1 << 20}};
  if (quick) shapes = {{8192, 4096}, {32, 1 << 20}};
  std::printf("%-30s %-11s %7s %8s %10s %9s %9s %8s\n", "kernel", "op", "rows", "cols", "us/call", "GB/s",
              "copy GB/s", "fraction");
  Timer timer;
  for (const Shape& s : shapes) bench_shape(s, iterations, timer);
  // Attention, 256 MiB of K and of V each: many short rows, the usual
  // decoding shape, and long rows with few blocks (64 rows: fewer blocks than
  // an H200 has SMs, the case a split-KV kernel is for).
  std::vector<AttentionShape> attention_shapes = {{1024, 1024, 64}, {512, 1024, 128}, {4096, 64, 256}, {64, 8192, 128}};
  if (quick) attention_shapes = {{512, 1024, 128}, {64, 8192, 128}};
  for (const AttentionShape& s : attention_shapes) bench_attention(s, iterations, timer);
  return 0;
}
