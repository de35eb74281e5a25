// oracle_bench: rows per second of the MPFR oracle and of the tiered oracle
// (docs/oracle.md) on the quick suite's f32 rows, measured in the same run.
// The rows are exactly those `softcheck run` feeds the f32
// kernels (same families, sizes, temperatures, seed 1).
//
//   oracle/mpfr          exact_row per row
//   oracle/extended      fast_row per row (the extended tier alone)
//   oracle/double        double_fast_row per row (the double tier alone)
//   oracle/double-double dd_fast_row per row (the tier f64 results use; here
//                        on the same rows, for its cost against MPFR)
//   decide/mpfr          exact_row + compare_row of shifted_f32's softmax
//   decide/tiered        double tier + compare_row_fast, then the extended
//                        tier, then exact_row + compare_row for the rows
//                        neither can decide (what `softcheck run --oracle
//                        tiered` does per row)
//   oracle/double-double-f64, decide/double-double-f64
//                        the f64 results' path on the quick suite's f64 rows
//                        (shifted_f64's softmax): dd_fast_row alone, and
//                        dd_fast_row + compare_row_fast, then exact_row +
//                        compare_row for the rows it leaves
//
// items = rows; the counter `elements` is elements per second. The ratio of
// the two items_per_second is the speed-up; nothing here asserts it.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <span>
#include <vector>

#include "softcheck/run_suite.hpp"
#include "softcheck/input_families.hpp"
#include "softcheck/fast_oracle.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"

namespace {

using namespace softcheck;

struct Row {
  std::vector<double> x, y;  // input and shifted_f32's softmax
  double temperature;
};

// The quick suite's rows of format f with kernel's softmax of them.
std::vector<Row> quick_rows(Format f, const char* kernel) {
  std::vector<Row> out;
  const Kernel* k = find_kernel(kernel);
  for (const SuiteCase& c : build_suite({"quick", {}, {}, {}, {}})) {
    const std::vector<double> x = fill_rows(*c.family, f, c.rows, c.cols, case_seed(1, c, f));
    std::vector<double> y(x.size());
    if (f == Format::f64) {
      k->run(Op::softmax, x.data(), y.data(), c.rows, c.cols, c.temperature);
    } else {
      std::vector<float> xf(x.begin(), x.end()), yf(x.size());
      k->run(Op::softmax, xf.data(), yf.data(), c.rows, c.cols, c.temperature);
      y.assign(yf.begin(), yf.end());
    }
    for (std::int64_t r = 0; r < c.rows; ++r) {
      const auto b = static_cast<std::size_t>(r * c.cols), e = b + static_cast<std::size_t>(c.cols);
      out.push_back({{x.begin() + b, x.begin() + e}, {y.begin() + b, y.begin() + e}, c.temperature});
    }
  }
  return out;
}

const std::vector<Row>& quick_f32_rows() {
  static const std::vector<Row> rows = quick_rows(Format::f32, "shifted_f32");
  return rows;
}
const std::vector<Row>& quick_f64_rows() {
  static const std::vector<Row> rows = quick_rows(Format::f64, "shifted_f64");
  return rows;
}

std::int64_t total_elements(const std::vector<Row>& rows) {
  std::int64_t n = 0;
  for (const Row& r : rows) n += static_cast<std::int64_t>(r.x.size());
  return n;
}

void finish(benchmark::State& state, std::int64_t fallbacks = -1, const std::vector<Row>& all = quick_f32_rows()) {
  const auto rows = static_cast<std::int64_t>(all.size());
  state.SetItemsProcessed(state.iterations() * rows);
  state.counters["elements"] = benchmark::Counter(static_cast<double>(state.iterations() * total_elements(all)),
                                                  benchmark::Counter::kIsRate);
  state.counters["rows"] = static_cast<double>(rows);
  if (fallbacks >= 0) state.counters["mpfr_rows"] = static_cast<double>(fallbacks);
}

void BM_OracleMpfr(benchmark::State& state) {
  for (auto _ : state)
    for (const Row& r : quick_f32_rows()) benchmark::DoNotOptimize(oracle::exact_row(r.x, r.temperature));
  finish(state);
}

// One fast tier alone: `tier(x, T, row)` fills the reused row.
template <class FastRow_, void (*tier)(std::span<const double>, double, FastRow_&)>
void BM_OracleTier(benchmark::State& state) {
  FastRow_ f;
  for (auto _ : state)
    for (const Row& r : quick_f32_rows()) {
      tier(r.x, r.temperature, f);
      benchmark::DoNotOptimize(f);
    }
  finish(state);
}

void BM_DecideMpfr(benchmark::State& state) {
  for (auto _ : state)
    for (const Row& r : quick_f32_rows()) {
      const oracle::ExactRow e = oracle::exact_row(r.x, r.temperature);
      if (e.status == oracle::RowStatus::ok)
        benchmark::DoNotOptimize(compare_row(r.y, e.softmax, Format::f32, Op::softmax));
    }
  finish(state);
}

// Whether `tier` (writing into `f`) decides the row's metrics (into `e`).
template <class FastRow_, class F>
bool decided(const Row& r, FastRow_& f, oracle::FastRowError& e, F tier) {
  tier(r.x, r.temperature, f);
  if (f.status != oracle::RowStatus::ok || !f.usable) return false;
  const bool d = oracle::compare_row_fast(r.y, f, Format::f32, OutputKind::probabilities, e);
  benchmark::DoNotOptimize(e);
  return d;
}

void BM_DecideTiered(benchmark::State& state) {
  std::int64_t fallbacks = 0, extended = 0;
  oracle::DoubleFastRow fd;  // storage reused row to row, as run_suite does
  oracle::FastRow fe;
  oracle::FastRowError decision;
  const auto by_double = [](std::span<const double> x, double t, oracle::DoubleFastRow& o) {
    oracle::double_fast_row(x, t, o);
  };
  const auto by_extended = [](std::span<const double> x, double t, oracle::FastRow& o) { oracle::fast_row(x, t, o); };
  for (auto _ : state) {
    fallbacks = extended = 0;
    for (const Row& r : quick_f32_rows()) {
      if (decided(r, fd, decision, by_double)) continue;
      if (fd.status != oracle::RowStatus::ok && fd.status != oracle::RowStatus::undefined) continue;  // all masked
      ++extended;
      if (decided(r, fe, decision, by_extended)) continue;
      if (fe.status != oracle::RowStatus::ok) continue;
      ++fallbacks;
      const oracle::ExactRow e = oracle::exact_row(r.x, r.temperature);
      benchmark::DoNotOptimize(compare_row(r.y, e.softmax, Format::f32, Op::softmax));
    }
  }
  finish(state, fallbacks);
  state.counters["extended_rows"] = static_cast<double>(extended);
}

// The f64 results' tier on the f64 rows, alone and deciding shifted_f64's
// softmax (MPFR for the rows it leaves).
void BM_OracleDDf64(benchmark::State& state) {
  oracle::DDFastRow f;
  for (auto _ : state)
    for (const Row& r : quick_f64_rows()) {
      oracle::dd_fast_row(r.x, r.temperature, f);
      benchmark::DoNotOptimize(f);
    }
  finish(state, -1, quick_f64_rows());
}

void BM_DecideDDf64(benchmark::State& state) {
  std::int64_t fallbacks = 0;
  oracle::DDFastRow f;
  oracle::FastRowError decision;
  for (auto _ : state) {
    fallbacks = 0;
    for (const Row& r : quick_f64_rows()) {
      oracle::dd_fast_row(r.x, r.temperature, f);
      if (f.status == oracle::RowStatus::ok && f.usable &&
          oracle::compare_row_fast(r.y, f, Format::f64, OutputKind::probabilities, decision)) {
        benchmark::DoNotOptimize(decision);
        continue;
      }
      if (f.status != oracle::RowStatus::ok && f.status != oracle::RowStatus::undefined) continue;  // all masked
      const oracle::ExactRow e = oracle::exact_row(r.x, r.temperature);
      if (e.status != oracle::RowStatus::ok) continue;
      ++fallbacks;
      benchmark::DoNotOptimize(compare_row(r.y, e.softmax, Format::f64, Op::softmax));
    }
  }
  finish(state, fallbacks, quick_f64_rows());
}

BENCHMARK(BM_OracleMpfr)->Name("oracle/mpfr")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_OracleTier<oracle::FastRow, oracle::fast_row>)->Name("oracle/extended")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleTier<oracle::DoubleFastRow, oracle::double_fast_row>)
    ->Name("oracle/double")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleTier<oracle::DDFastRow, oracle::dd_fast_row>)
    ->Name("oracle/double-double")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecideMpfr)->Name("decide/mpfr")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_DecideTiered)->Name("decide/tiered")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleDDf64)->Name("oracle/double-double-f64")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecideDDf64)->Name("decide/double-double-f64")->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  (void)quick_f32_rows();  // the rows are made before any timing starts
  (void)quick_f64_rows();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
