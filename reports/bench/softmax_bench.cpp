// softcheck_bench: Google Benchmark over every registered (available) kernel x
// op x shape, plus memcpy of the same byte counts in the same run, so that
// each kernel's bandwidth can be read as a fraction of the machine's copy
// bandwidth. `softcheck bench` runs it and merges the results into a report.
//
// Rates are per wall-clock second (UseRealTime): a peer may run on several
// threads, and per-CPU-second rates would credit it with the others' work.
//
// Threads, like with like: the built-in kernels run on one thread,
// their _mt twins (shifted_simd_mt_f32, online_simd_mt_f32) split the rows
// of a batch over every core. Debian's libdnnl runs on OpenMP (libgomp):
// oneDNN's default uses omp_get_max_threads() threads (OMP_NUM_THREADS), so
// onednn_* here is the multi-threaded peer, and onednn_*_1thread is the same
// primitive with omp_set_num_threads(1) around the timed loop, the peer of
// the single-threaded kernels. Both in the same run, so ratios between them
// are measured under the same machine load.
//
// Benchmark names (parsed by `softcheck bench`; keep in sync):
//   KERNEL/OP/FORMAT/ROWSxCOLS   items = elements, bytes = input + output
//   copy/BYTES                   memcpy of BYTES; bytes = 2 x BYTES (read + write)
// (Google Benchmark appends /real_time to both.)
//
// With --paired-cross-entropy or --paired-ops instead it registers the pairs
// of scripts/gradient-speed.sh (register_cross_entropy_pairs,
// register_new_op_pairs; names as --paired's below).
// With --paired (the first argument; `softcheck bench` never passes it) it
// registers only the pairs of scripts/kernel-speed.sh instead:
//   pair/KERNEL/PEER/OP/FORMAT/ROWSxCOLS
// (Google Benchmark appends /manual_time, and /iterations:41/manual_time to
// the multi-threaded pairs.) --pair-rest-ms=MS right after it sets the rest
// of the multi-threaded pairs (see PairTiming; default 10).
// Each iteration times a burst of KERNEL and a burst of PEER on the same
// rows, one right after the other (alternating which goes first; see
// PairTiming for what precedes each burst), and keeps their ratio. On a shared machine whose speed drifts by tens of percent
// within seconds, two bursts a few milliseconds apart see the same machine:
// the median of those per-pair ratios is what a side-by-side comparison
// needs, where two separate benchmarks seconds apart differed by up to 2x.
// Counters: ratio (median of PEER time / KERNEL time: above 1, KERNEL is
// faster), ratio_q1 and ratio_q3 (its quartiles), pairs, and each side's
// median GB/s (kernel_GBps, peer_GBps; bytes = input + output).
#include <benchmark/benchmark.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "softcheck/kernel.hpp"
// The peers' registry (oneDNN, XNNPACK) lands separately; until it does only
// the built-in kernels exist.
#if __has_include("softcheck/peers.hpp")
#include "softcheck/peers.hpp"
#define SOFTCHECK_BENCH_PEERS 1
#endif

namespace {

using softcheck::Format;
using softcheck::Kernel;
using softcheck::Op;

struct Shape {
  std::int64_t rows, cols;
  std::int64_t head_dim = 0;  // attention: d (the name's ROWSxCOLS gains "xD")
};

std::string shape_name(const Shape& s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols) + (s.head_dim > 0 ? "x" + std::to_string(s.head_dim) : "");
}

// One row of 2^10 ... 2^20 elements, two attention-like batches and a
// vocabulary-sized one (64 rows of 32,000: the three batched shapes of the
// `_mt` kernels' goal against oneDNN).
std::vector<Shape> shapes() {
  std::vector<Shape> s;
  for (int e = 10; e <= 20; ++e) s.push_back({1, std::int64_t{1} << e});
  s.push_back({4096, 128});
  s.push_back({1024, 4096});
  s.push_back({64, 32000});
  return s;
}

std::size_t element_bytes(Format f) { return static_cast<std::size_t>(softcheck::info(f).width / 8); }

// binary16 bits of a value that f16 holds exactly and normally (or 0).
std::uint16_t f16_bits(double v) {
  if (v == 0) return 0;
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const int e = std::ilogb(v);
  const auto mantissa = static_cast<std::uint16_t>(std::ldexp(std::fabs(v), 10 - e) - 1024);
  return static_cast<std::uint16_t>(sign | ((e + 15) << 10) | mantissa);
}

std::uint16_t bf16_bits(double v) {
  const auto f = static_cast<float>(v);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<std::uint16_t>(bits >> 16);  // exact: v has at most 6 significant bits
}

// Inputs: multiples of 1/16 in [-2, 2), exact in every format.
std::vector<unsigned char> inputs(Format f, std::size_t count) {
  std::vector<unsigned char> buf(count * element_bytes(f));
  for (std::size_t i = 0; i < count; ++i) {
    const double v = static_cast<double>((i * 2654435761u) % 64) / 16.0 - 2.0;
    if (f == Format::f64) {
      std::memcpy(buf.data() + i * 8, &v, 8);
    } else if (f == Format::f32) {
      const auto x = static_cast<float>(v);
      std::memcpy(buf.data() + i * 4, &x, 4);
    } else {
      const std::uint16_t x = f == Format::f16 ? f16_bits(v) : bf16_bits(v);
      std::memcpy(buf.data() + i * 2, &x, 2);
    }
  }
  return buf;
}

// The op's output buffers in format f (op table: a row output holds
// rows x cols values, a scalar output one per row) and their pointers.
struct Outputs {
  std::vector<std::vector<unsigned char>> buffers;
  std::vector<void*> pointers;
  std::size_t bytes = 0;

  Outputs(Format f, Op op, Shape s) {
    for (const softcheck::Operand& o : softcheck::spec(op).out) {
      buffers.emplace_back(static_cast<std::size_t>(s.rows * softcheck::output_cols(o, s.cols, s.head_dim)) *
                           element_bytes(f));
      bytes += buffers.back().size();
    }
    for (std::vector<unsigned char>& b : buffers) pointers.push_back(b.data());
  }
};

// The op's inputs (op table): the logits x (inputs()), one class target per
// row (row r: entry (r * 7919) mod cols), an upstream gradient (the same
// values as x); for attention the bias x, q, K and V (inputs() of their
// sizes) and unbounded windows; and their pointers in op order.
struct Inputs {
  std::vector<unsigned char> x, head, keys;
  std::vector<std::int64_t> targets;
  std::vector<softcheck::KeyWindow> windows;
  std::vector<const void*> pointers;
  std::size_t bytes = 0;

  Inputs(Format f, Op op, Shape s)
      : x(inputs(f, static_cast<std::size_t>(s.rows * s.cols))),
        head(inputs(f, static_cast<std::size_t>(s.rows * s.head_dim))),
        keys(inputs(f, static_cast<std::size_t>(s.rows * s.cols * s.head_dim))),
        windows(static_cast<std::size_t>(s.rows)) {
    for (std::int64_t r = 0; r < s.rows; ++r) targets.push_back((r * 7919) % s.cols);
    for (const softcheck::Operand& o : softcheck::spec(op).in) {
      const void* p = x.data();
      std::size_t size = x.size();
      if (o.input == softcheck::InputKind::class_index) {
        p = targets.data();
        size = targets.size() * sizeof(std::int64_t);
      } else if (o.shape == softcheck::OperandShape::head) {
        p = head.data();
        size = head.size();
      } else if (o.shape == softcheck::OperandShape::keys) {
        p = keys.data();
        size = keys.size();
      } else if (o.shape == softcheck::OperandShape::window) {
        p = windows.data();
        size = windows.size() * sizeof(softcheck::KeyWindow);
      }
      pointers.push_back(p);
      bytes += size;
    }
  }
};

// One timed call: the outputs kept, so the compiler cannot drop the call.
void call_kernel(const Kernel* k, Op op, const Inputs& in, Outputs& y, Shape s) {
  k->call({op, in.pointers, y.pointers, s.rows, s.cols, 1.0, s.head_dim});
  benchmark::DoNotOptimize(y.pointers.data());
  benchmark::ClobberMemory();
}

void run_kernel(benchmark::State& state, const Kernel* k, Op op, Shape s) {
  const auto count = static_cast<std::size_t>(s.rows * s.cols);
  const Inputs in(k->format, op, s);
  Outputs y(k->format, op, s);
  for (auto _ : state) call_kernel(k, op, in, y, s);
  const auto iterations = static_cast<std::int64_t>(state.iterations());
  state.SetItemsProcessed(iterations * static_cast<std::int64_t>(count));
  state.SetBytesProcessed(iterations * static_cast<std::int64_t>(in.bytes + y.bytes));
}

// OpenMP's thread count setter, looked up in the already loaded runtime
// (oneDNN's libgomp): the benchmark does not link OpenMP itself. Null when
// no OpenMP runtime is loaded.
struct OmpThreads {
  void (*set)(int) = nullptr;
  int (*get)() = nullptr;
};
OmpThreads omp_threads() {
  OmpThreads t;
  t.set = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  t.get = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  if (t.set == nullptr || t.get == nullptr) t = {};
  return t;
}

// run_kernel with OpenMP (and so oneDNN) limited to one thread, restored after.
void run_kernel_one_omp_thread(benchmark::State& state, const Kernel* k, Op op, Shape s, OmpThreads omp) {
  const int before = omp.get();
  omp.set(1);
  run_kernel(state, k, op, s);
  omp.set(before);
}

// The value a fraction q of the way through `v` (sorted here), between two
// neighbours interpolated linearly: the median at q = 1/2 (the mean of the
// middle two for an even count), the quartiles at 1/4 and 3/4.
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto below = static_cast<std::size_t>(at);
  if (below + 1 >= v.size()) return v.back();
  return v[below] + (at - static_cast<double>(below)) * (v[below + 1] - v[below]);
}

// How a pair's bursts are timed. Multi-threaded pairs rest before each burst:
// libgomp's threads spin for milliseconds after oneDNN's call returns
// (GOMP_SPINCOUNT: 300,000 PAUSEs, whose length varies between CPUs), and on
// a machine with few cores a burst right after oneDNN's would share them with
// those spinning threads (measured here: our _mt kernels at half their speed
// on 4096 x 128). On the 2-vCPU VM of docs/kernels.md they stopped within
// about 6 ms, so the default rest is 10 ms; --pair-rest-ms sets another. Every burst starts with one
// untimed call, so that neither side is timed waking its threads or
// refilling its caches after the other.
struct PairTiming {
  bool peer_one_thread;          // pin the peer to one OpenMP thread (restored after)
  std::chrono::milliseconds rest;  // untimed sleep before each burst
};

// One pair of --paired (see the top of this file).
void run_pair(benchmark::State& state, const Kernel* kernel, const Kernel* peer, Op op, Shape s,
              OmpThreads omp, PairTiming timing) {
  const auto count = static_cast<std::size_t>(s.rows * s.cols);
  const Inputs x(kernel->format, op, s);
  Outputs y(kernel->format, op, s);
  // A burst of about 2^21 elements: a millisecond or two per side.
  const std::size_t burst = std::max<std::size_t>(1, (std::size_t{1} << 21) / count);
  const auto seconds_of = [&](const Kernel* k) {
    if (timing.rest.count() > 0) std::this_thread::sleep_for(timing.rest);
    call_kernel(k, op, x, y, s);  // untimed
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < burst; ++i) call_kernel(k, op, x, y, s);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const int threads_before = timing.peer_one_thread ? omp.get() : 0;
  if (timing.peer_one_thread) omp.set(1);
  std::vector<double> ratios, kernel_seconds, peer_seconds;
  bool kernel_first = true;
  for (auto _ : state) {
    double tk = 0, tp = 0;
    if (kernel_first) {
      tk = seconds_of(kernel);
      tp = seconds_of(peer);
    } else {
      tp = seconds_of(peer);
      tk = seconds_of(kernel);
    }
    kernel_first = !kernel_first;
    state.SetIterationTime(tk + tp);
    ratios.push_back(tp / tk);
    kernel_seconds.push_back(tk);
    peer_seconds.push_back(tp);
  }
  if (timing.peer_one_thread) omp.set(threads_before);
  const double bytes = static_cast<double>(burst) * static_cast<double>(x.bytes + y.bytes);
  state.counters["ratio"] = quantile(ratios, 0.5);
  state.counters["ratio_q1"] = quantile(ratios, 0.25);
  state.counters["ratio_q3"] = quantile(ratios, 0.75);
  state.counters["pairs"] = static_cast<double>(ratios.size());
  state.counters["kernel_GBps"] = bytes / quantile(kernel_seconds, 0.5) / 1e9;
  state.counters["peer_GBps"] = bytes / quantile(peer_seconds, 0.5) / 1e9;
}

void run_copy(benchmark::State& state, std::size_t bytes) {
  std::vector<unsigned char> src(bytes, 1), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(2 * bytes));
}

// Every registered kernel: built-ins, the sparse kernels (sparsemax, entmax,
// top-k, threshold: their own ops), then peers. Unavailable ones are skipped.
std::vector<const Kernel*> registered_kernels() {
  std::vector<const Kernel*> ks;
  for (const Kernel& k : softcheck::builtin_kernels()) ks.push_back(&k);
  for (const Kernel& k : softcheck::sparse_kernels()) ks.push_back(&k);
  for (const Kernel& k : softcheck::gradient_kernels())
    if (!k.test_only) ks.push_back(&k);
  for (const Kernel& k : softcheck::attention_kernels()) ks.push_back(&k);  // paired only (a head dimension)
#ifdef SOFTCHECK_BENCH_PEERS
  for (const Kernel& k : softcheck::peer_kernels()) ks.push_back(&k);
#endif
  return ks;
}

void register_all() {
  std::set<std::size_t> copy_sizes;
  const OmpThreads omp = omp_threads();
  for (const Kernel* kp : registered_kernels()) {
    const Kernel& k = *kp;
    if (!k.available) continue;
    for (const softcheck::OpDecl& d : k.ops) {
      if (softcheck::has_head_dim(d.op)) continue;  // no head dimension in these shapes: --paired-ops times attention
      for (const Shape& s : shapes()) {
        const std::string name = k.name + "/" + std::string(softcheck::name(d.op)) + "/" +
                                 std::string(softcheck::name(k.format)) + "/" + std::to_string(s.rows) + "x" +
                                 std::to_string(s.cols);
        benchmark::RegisterBenchmark(name.c_str(), run_kernel, &k, d.op, s)->Unit(benchmark::kMicrosecond)->UseRealTime();
        if (k.name.starts_with("onednn_") && omp.set != nullptr) {
          const std::string pinned = k.name + "_1thread" + name.substr(k.name.size());
          benchmark::RegisterBenchmark(pinned.c_str(), run_kernel_one_omp_thread, &k, d.op, s, omp)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
        copy_sizes.insert(static_cast<std::size_t>(s.rows * s.cols) * element_bytes(k.format));
      }
    }
  }
  for (std::size_t bytes : copy_sizes)
    benchmark::RegisterBenchmark(("copy/" + std::to_string(bytes)).c_str(), run_copy, bytes)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
}

// --paired: the four SIMD kernels against oneDNN's f32 softmax, the
// single-threaded ones against oneDNN on one OpenMP thread, the _mt ones
// against its default threading (like with like, as above).
int register_pairs(std::chrono::milliseconds rest) {
  const auto find = [](const std::string& name) -> const Kernel* {
    for (const Kernel* k : registered_kernels())
      if (k->name == name && k->available) return k;
    return nullptr;
  };
  const OmpThreads omp = omp_threads();
  const Kernel* onednn = find("onednn_f32");
  if (onednn == nullptr || omp.set == nullptr) {
    std::fprintf(stderr, "softcheck_bench --paired: oneDNN's f32 softmax (onednn_f32) is %s\n",
                 onednn == nullptr ? "not available in this build" : "here, but no OpenMP runtime was found to pin it to one thread");
    return 2;
  }
  for (const auto& [kernel_name, one_thread] :
       {std::pair{"shifted_simd_f32", true}, std::pair{"online_simd_f32", true},
        std::pair{"shifted_simd_mt_f32", false}, std::pair{"online_simd_mt_f32", false}}) {
    const Kernel* k = find(kernel_name);
    if (k == nullptr) {
      std::fprintf(stderr, "softcheck_bench --paired: %s is not available\n", kernel_name);
      return 2;
    }
    const std::string peer = one_thread ? "onednn_f32_1thread" : "onednn_f32";
    const PairTiming timing{one_thread, one_thread ? std::chrono::milliseconds(0) : rest};
    for (const Shape& s : shapes()) {
      const std::string name = "pair/" + k->name + "/" + peer + "/softmax/f32/" + std::to_string(s.rows) + "x" +
                               std::to_string(s.cols);
      auto* b = benchmark::RegisterBenchmark(name.c_str(), run_pair, k, onednn, Op::softmax, s, omp, timing)
                    ->UseManualTime()
                    ->Unit(benchmark::kMicrosecond);
      // The rests are not timed, so --benchmark_min_time would make a
      // multi-threaded pair run for minutes: a fixed count of pairs instead.
      if (!one_thread) b->Iterations(41);
    }
  }
  return 0;
}

// A pair of --paired-cross-entropy or --paired-ops: KERNEL against PEER on
// OP, f32, both on one thread (PyTorch's peer sets its own thread count to
// one; oneDNN's is pinned to one OpenMP thread around its bursts).
struct OpPair {
  const char* kernel;
  const char* peer;
  Op op;
};

// Registers each pair on each shape (a fixed `iterations` pairs per run when
// given, else 5 on shapes of more than 2^26 elements, whose calls take about
// a second each); 2 with a message when a kernel or peer is not available in
// this build.
int register_op_pairs(const char* flag, const std::vector<OpPair>& pairs, const std::vector<Shape>& op_shapes,
                      int iterations = 0) {
  const auto find = [](const std::string& name) -> const Kernel* {
    for (const Kernel* k : registered_kernels())
      if (k->name == name && k->available) return k;
    return nullptr;
  };
  const OmpThreads omp = omp_threads();
  for (const OpPair& p : pairs) {
    const Kernel* k = find(p.kernel);
    const Kernel* peer = find(p.peer);
    const bool onednn = std::string_view(p.peer).starts_with("onednn_");
    for (const auto& [who, what] : {std::pair{k, p.kernel}, std::pair{peer, p.peer}})
      if (who == nullptr || who->find(p.op) == nullptr) {
        std::fprintf(stderr, "softcheck_bench %s: %s's %s is not available in this build%s\n", flag, what,
                     std::string(softcheck::name(p.op)).c_str(),
                     std::string_view(what).starts_with("torch") ? " (libtorch-dev)" : "");
        return 2;
      }
    if (onednn && omp.set == nullptr) {
      std::fprintf(stderr, "softcheck_bench %s: no OpenMP runtime was found to pin %s to one thread\n", flag, p.peer);
      return 2;
    }
    const std::string peer_label = std::string(p.peer) + (onednn ? "_1thread" : "");
    for (const Shape& s : op_shapes) {
      const std::string name =
          "pair/" + k->name + "/" + peer_label + "/" + std::string(softcheck::name(p.op)) + "/f32/" + shape_name(s);
      auto* b = benchmark::RegisterBenchmark(name.c_str(), run_pair, k, peer, p.op, s, omp,
                                             PairTiming{onednn, std::chrono::milliseconds(0)})
                    ->UseManualTime()
                    ->Unit(benchmark::kMillisecond);
      if (iterations > 0)
        b->Iterations(iterations);
      else if (s.rows * s.cols > (std::int64_t{1} << 26))
        b->Iterations(5);
    }
  }
  return 0;
}

// --paired-cross-entropy: the cross-entropy kernels (loss and gradient in
// one call: cross_entropy_f32, cross_entropy_chunked_f32,
// cross_entropy_simd_f32) against PyTorch's cross_entropy forward and
// autograd backward (torch_f32), on one vocabulary-scale row and a
// 4096 x 32000 batch (scripts/gradient-speed.sh).
int register_cross_entropy_pairs() {
  std::vector<OpPair> pairs;
  for (const char* kernel_name : {"cross_entropy_f32", "cross_entropy_chunked_f32", "cross_entropy_simd_f32"})
    pairs.push_back({kernel_name, "torch_f32", Op::cross_entropy});
  return register_op_pairs("--paired-cross-entropy", pairs, {Shape{1, 262144}, Shape{4096, 32000}});
}

// --paired-ops: the SIMD kernels of the other ops against their peers
// (scripts/gradient-speed.sh -p ops): shifted_log1p_simd_f32's lse and
// entropy against PyTorch (logsumexp; Categorical's entropy), and the two
// SIMD backward kernels (forward y and dx in one call) against PyTorch
// (softmax then _softmax_backward_data) and oneDNN (its forward and backward
// primitives), on one vocabulary-scale row and two batches.
int register_new_op_pairs() {
  const std::vector<OpPair> pairs = {
      {"shifted_log1p_simd_f32", "torch_f32", Op::lse},
      {"shifted_log1p_simd_f32", "torch_f32", Op::entropy},
      {"softmax_backward_simd_f32", "torch_f32", Op::softmax_backward},
      {"softmax_backward_simd_f32", "onednn_f32", Op::softmax_backward},
      {"log_softmax_backward_simd_f32", "torch_f32", Op::log_softmax_backward},
      {"log_softmax_backward_simd_f32", "onednn_f32", Op::log_softmax_backward},
  };
  if (const int rc = register_op_pairs("--paired-ops", pairs, {Shape{1, 262144}, Shape{1024, 4096}, Shape{64, 32000}});
      rc != 0)
    return rc;
  // Attention: one query per row against `cols` keys of head dimension 64 and
  // 128, against PyTorch's math composition and against the scalar flash
  // loop it vectorises.
  const std::vector<OpPair> attention = {
      {"attention_flash_simd_f32", "torch_f32", Op::attention},
      {"attention_flash_simd_f32", "attention_flash_bc64_f32", Op::attention},
  };
  // A call takes 0.05-0.2 s: a fixed 9 pairs, where --benchmark_min_time
  // would stop after 2 or 3.
  return register_op_pairs("--paired-ops", attention, {Shape{256, 1024, 64}, Shape{64, 4096, 128}}, 9);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--paired-cross-entropy") == 0 || std::strcmp(argv[1], "--paired-ops") == 0)) {
    const bool ce = std::strcmp(argv[1], "--paired-cross-entropy") == 0;
    if (const int rc = ce ? register_cross_entropy_pairs() : register_new_op_pairs(); rc != 0) return rc;
    argv[1] = argv[0];
    --argc;
    ++argv;
  } else if (argc > 1 && std::strcmp(argv[1], "--paired") == 0) {
    // Our own options, dropped before Google Benchmark sees (and rejects) them.
    int ours = 1;
    std::chrono::milliseconds rest{10};
    constexpr std::string_view rest_flag = "--pair-rest-ms=";
    if (argc > 2 && std::string_view(argv[2]).starts_with(rest_flag)) {
      const std::string value(std::string_view(argv[2]).substr(rest_flag.size()));
      char* end = nullptr;
      const long ms = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || ms < 0 || ms > 60000) {
        std::fprintf(stderr, "softcheck_bench: --pair-rest-ms wants whole milliseconds from 0 to 60000, not '%s'\n",
                     value.c_str());
        return 2;
      }
      rest = std::chrono::milliseconds(ms);
      ours = 2;
    }
    if (const int rc = register_pairs(rest); rc != 0) return rc;
    argv[ours] = argv[0];
    argc -= ours;
    argv += ours;
  } else {
    register_all();
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
