// softcheck sweep: every row of a row space (one entry of a fixed f16/bf16
// row, every f16/bf16 pair, every FP8/FP6/FP4 row of length 2 or 3), every selected
// kernel of one format, against the oracle (sweep.hpp, docs/low-precision.md).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "commands.hpp"
#include "kernel_selection.hpp"
#include "shard_option.hpp"
#include "softcheck/run_suite.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/judge.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/storage.hpp"
#include "sweep.hpp"
#include "text_table.hpp"

namespace softcheck {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the calling thread, in seconds: the cost of the work itself,
// unaffected by other processes on a busy machine (wall time is reported too).
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

bool is_16bit(Format f) { return f == Format::f16 || f == Format::bf16; }

// The options that restrict the first, second and third swept entries: the
// repro line's and the command line's names.
constexpr std::array<const char*, 3> entry_options = {"--value", "--second", "--third"};

// The rows a sweep judges: its swept entries, each over its own patterns,
// then a fixed context. Row order: the first entry's values ascending, the
// last swept entry fastest, so a contiguous range of first values is a
// contiguous range of rows.
struct RowSpace {
  std::vector<std::vector<std::uint16_t>> patterns;  // of each swept entry
  std::vector<std::vector<double>> values;           // their values, exact in the kernels' format
  std::vector<double> context;
  int hex_digits = 4;  // of a pattern: 4 (f16, bf16) or 2 (the OCP element formats)

  std::size_t cols() const { return patterns.size() + context.size(); }
  // Rows per value of the first swept entry.
  std::uint64_t rows_per_first() const {
    std::uint64_t n = 1;
    for (std::size_t k = 1; k < patterns.size(); ++k) n *= patterns[k].size();
    return n;
  }
  std::string hex(std::uint16_t p) const { return fmt::format("0x{:0{}X}", p, hex_digits); }
};

// One (kernel, op) under test, with its outputs for every row of a block.
struct Target {
  const Kernel* kernel;
  const OpDecl* decl;
  std::vector<double> y;  // rows x cols, as doubles (exact)
  SweepResult result;
  double worst_key = -1;
};

std::vector<Target> select_targets(const std::vector<const Kernel*>& kernels, const SweepOptions& opt) {
  for (Op op : opt.ops)
    if (const std::string why = sweep_op_refusal(op); !why.empty()) throw std::invalid_argument(why);
  std::vector<Target> targets;
  const OpDecl* unswept = nullptr;  // the first op of the selected kernels the sweep does not run
  for (const Kernel* k : kernels) {
    if (k->format != opt.format)
      throw std::invalid_argument(fmt::format("{} is an {} kernel; sweep --dtype {} needs {} kernels", k->name,
                                              name(k->format), name(opt.format), name(opt.format)));
    if (!k->available) throw std::invalid_argument(k->name + " is unavailable: " + k->unavailable_reason);
    for (const OpDecl& d : k->ops) {
      if (!opt.ops.empty() && std::find(opt.ops.begin(), opt.ops.end(), d.op) == opt.ops.end()) continue;
      if (!sweeps_op(d.op)) {
        if (!unswept) unswept = &d;
        continue;
      }
      Target t{k, &d, {}, {}};
      t.result.kernel = k->name;
      t.result.op = d.op;
      t.result.declared = d.contract.declared;
      t.result.contract = d.contract.formula();
      targets.push_back(std::move(t));
    }
  }
  if (targets.empty() && unswept)
    throw std::invalid_argument("no selected kernel provides an op the sweep runs: " + sweep_op_refusal(unswept->op));
  if (targets.empty()) throw std::invalid_argument("no selected kernel provides the requested op");
  return targets;
}

// The kernel on every row in one batched call (temperature 1), timed.
void run_target(Target& t, const std::vector<unsigned char>& xin, std::size_t rows, std::size_t cols) {
  const double t0 = thread_cpu_seconds();
  std::vector<unsigned char> out(xin.size());
  t.kernel->run(t.decl->op, xin.data(), out.data(), static_cast<std::int64_t>(rows),
                static_cast<std::int64_t>(cols), 1.0);
  t.y = unpack(out, t.kernel->format, rows * cols);
  t.result.kernel_seconds += thread_cpu_seconds() - t0;
}

// One row of the sweep: its index in its block, the patterns of its swept
// entries, the inputs and the exact results.
struct SweepRow {
  std::size_t index;
  std::span<const std::uint16_t> patterns;
  std::span<const double> x;
  oracle::RowJudge* judge;  // MPFR for every row (sweep measures against the exact row alone)
};

// The command that sweeps this one row: the same row space, each swept entry
// restricted to the row's pattern.
std::string repro_of(const Target& t, const SweepOptions& opt, const RowSpace& space, const SweepRow& row) {
  std::string line = fmt::format("softcheck sweep --dtype {}", name(opt.format));
  if (opt.elements) line += fmt::format(" --elements {} --length {}", opt.elements->name, opt.length);
  line += fmt::format(" --impl {} --op {}", t.kernel->name, name(t.decl->op));
  if (opt.pairs) line += " --pairs";
  for (std::size_t k = 0; k < row.patterns.size(); ++k)
    line += fmt::format(" {} {}", entry_options[k], space.hex(row.patterns[k]));
  return line;
}

void record_worst(Target& t, const SweepOptions& opt, const RowSpace& space, const SweepRow& row, double key,
                  const oracle::RowVerdict& v) {
  if (key <= t.worst_key) return;  // the first strictly largest wins
  t.worst_key = key;
  SweepWorst& w = t.result.worst;
  w.present = true;
  w.patterns.assign(row.patterns.begin(), row.patterns.end());
  w.x = row.x[0];
  if (v.status == oracle::RowStatus::all_masked) {
    // No exact value: the kernel's outputs broke its masked-row policy.
    w.element = 0;
    w.got = t.y[row.index * row.x.size()];
    w.exact = "undefined (fully masked row, policy " + std::string(name(t.kernel->masked_policy)) + ")";
  } else {
    const auto ref = oracle::exact_values(row.judge->exact(), spec(t.decl->op).out[0].kind);
    w.element = v.error.worst_index;
    w.got = t.y[row.index * row.x.size() + v.error.worst_index];
    w.exact = oracle::to_string(ref[v.error.worst_index], 21);
  }
  w.ulp = key;
  w.bound = v.bound;
  w.row = hex_row(row.x.data(), static_cast<std::int64_t>(row.x.size()));
  w.repro = repro_of(t, opt, space, row);
}

// Compares one row's outputs with the shared exact row and folds the errors in.
void evaluate(Target& t, const SweepOptions& opt, const RowSpace& space, const SweepRow& row) {
  const double t0 = thread_cpu_seconds();
  SweepResult& s = t.result;
  const std::span<const double> y(t.y.data() + row.index * row.x.size(), row.x.size());
  const oracle::RowVerdict v = row.judge->judge(*t.decl, t.kernel->masked_policy, y);
  s.rows++;
  constexpr double broken_key = std::numeric_limits<double>::infinity();
  if (v.status == oracle::RowStatus::all_masked) {
    // Every entry -inf (E5M2's row of 0xFC alone): the masked-row policy, as
    // `run` judges such rows (policy rows, not in the error figures).
    s.masked_rows++;
    if (!v.follows_policy) {
      s.policy_violations++;
      record_worst(t, opt, space, row, broken_key, v);
    }
    s.compare_seconds += thread_cpu_seconds() - t0;
    return;
  }
  const RowError& e = v.error;
  const double b = v.bound;  // +inf for "none"
  s.elements += e.elements;
  s.measured += e.measured;
  s.nonfinite += e.nonfinite;
  s.special_mismatch += e.special_mismatch;
  s.max_ulp = std::max(s.max_ulp, e.max_ulp);
  s.mean_ulp += e.sum_ulp;  // divided by measured at the end
  s.max_bits = std::max(s.max_bits, e.max_bits);
  if (std::isfinite(b)) s.max_bound = std::max(s.max_bound, b);
  if (t.decl->contract.declared && !std::isfinite(b)) s.vacuous_rows++;
  if (!v.within) s.violations++;
  const bool floor_broken = !t.decl->contract.declared &&
                            oracle::breaks_floor_no_nonfinite(e, *t.decl, row.x, 1.0, opt.format);
  if (floor_broken) s.floor_violations++;
  record_worst(t, opt, space, row, v.broken || floor_broken ? broken_key : e.max_ulp, v);
  s.compare_seconds += thread_cpu_seconds() - t0;
}

// The row space of the options, the first entry's values over every shard
// (the shard's range is taken by run_sweep). Throws for a pattern outside the
// swept set and for options of another row space.
RowSpace row_space(const SweepOptions& opt) {
  RowSpace space;
  const std::size_t given_entries = !opt.thirds.empty() ? 3 : !opt.seconds.empty() ? 2 : 1;
  if (!opt.thirds.empty() && !(opt.elements && opt.length == 3))
    throw std::invalid_argument("--third is for --elements with --length 3");
  if (opt.elements) {
    const MiniFloat& e = *opt.elements;
    if (opt.pairs)
      throw std::invalid_argument("--pairs sweeps " + std::string(name(opt.format)) +
                                  " pairs; --elements --length 2 sweeps element pairs: give one of them");
    if (opt.length < min_element_length || opt.length > max_element_length)
      throw std::invalid_argument(fmt::format("--length {}: --elements rows have 2 or 3 entries", opt.length));
    if (given_entries > opt.length)
      throw std::invalid_argument(fmt::format("--second/--third name entries past --length {}", opt.length));
    space.hex_digits = 2;
    const std::vector<std::uint16_t> all = element_patterns(e);
    // Every swept value must reach the kernels unrounded: checked, not
    // assumed (E4M3 and E5M2 are exact in f16, bf16, f32 and f64).
    for (std::uint16_t p : all) {
      const double v = decode(e, static_cast<std::uint8_t>(p));
      if (round_to_format(v, opt.format) != v)
        throw std::invalid_argument(fmt::format("{} value {} ({}) is not exact in {}", e.name, v, space.hex(p),
                                                name(opt.format)));
    }
    const auto restricted = [&](const std::vector<std::uint16_t>& given, const char* option) {
      if (given.empty()) return all;
      for (std::uint16_t p : given) {
        if (p >= e.patterns())
          throw std::invalid_argument(
              fmt::format("{} 0x{:X}: not an {} pattern ({} bits)", option, p, e.name, e.bits()));
        if (!std::binary_search(all.begin(), all.end(), p))
          throw std::invalid_argument(fmt::format(
              "{} {}: {} of {}, whose rows have no exact softmax: not swept (sweep --help)", option, space.hex(p),
              std::isnan(decode(e, static_cast<std::uint8_t>(p))) ? "a NaN" : "+inf", e.name));
      }
      return given;
    };
    space.patterns.push_back(restricted(opt.patterns, entry_options[0]));
    space.patterns.push_back(restricted(opt.seconds, entry_options[1]));
    if (opt.length == 3) space.patterns.push_back(restricted(opt.thirds, entry_options[2]));
    for (const auto& ps : space.patterns) {
      std::vector<double> vs;
      for (std::uint16_t p : ps) vs.push_back(decode(e, static_cast<std::uint8_t>(p)));
      space.values.push_back(std::move(vs));
    }
    return space;
  }
  if (!is_16bit(opt.format))
    throw std::invalid_argument("sweep: --dtype " + std::string(name(opt.format)) +
                                " takes --elements (its own patterns are too many); without it f16 or bf16");
  if (!opt.pairs && !opt.seconds.empty()) throw std::invalid_argument("--second is for --pairs or --elements");
  const auto finite_only = [&](const std::vector<std::uint16_t>& given) {
    const std::vector<std::uint16_t> all = given.empty() ? finite_patterns(opt.format) : given;
    for (std::uint16_t p : all)
      if (!std::isfinite(decode16(p, opt.format)))
        throw std::invalid_argument(fmt::format("{} is not a finite {} value", space.hex(p), name(opt.format)));
    return all;
  };
  space.patterns.push_back(finite_only(opt.patterns));
  if (opt.pairs)
    space.patterns.push_back(finite_only(opt.seconds));
  else
    space.context = sweep_context();
  for (const auto& ps : space.patterns) {
    std::vector<double> vs;
    for (std::uint16_t p : ps) vs.push_back(decode16(p, opt.format));
    space.values.push_back(std::move(vs));
  }
  return space;
}

// About this many rows go to the kernels in one call: whole values of the
// first entry (at least one), so a block is the single sweep's every x, one a
// of the pair sweep, or one first entry of FP8 length 3.
constexpr std::uint64_t block_rows = 65536;

}  // namespace

const std::vector<double>& sweep_context() {
  static const std::vector<double> ctx = {-3.5, -1.75, -0.625, 0.0, 0.3125, 1.25, 2.0};
  return ctx;
}

std::vector<std::uint16_t> finite_patterns(Format f) {
  if (!is_16bit(f)) throw std::invalid_argument("sweep: f16 or bf16 only, not " + std::string(name(f)));
  std::vector<std::uint16_t> out;
  for (std::uint32_t p = 0; p <= 0xFFFF; ++p)
    if (std::isfinite(decode16(static_cast<std::uint16_t>(p), f))) out.push_back(static_cast<std::uint16_t>(p));
  return out;
}

const std::array<const MiniFloat*, 5>& sweep_element_formats() {
  static const std::array<const MiniFloat*, 5> formats = {&fp8_e4m3, &fp8_e5m2, &fp6_e2m3, &fp6_e3m2, &fp4_e2m1};
  return formats;
}

const MiniFloat* sweep_element_format(std::string_view name) {
  for (const MiniFloat* f : sweep_element_formats())
    if (name == f->name) return f;
  return nullptr;
}

namespace {

// NaN and +inf: a row holding one is RowStatus::undefined (no exact value).
bool has_no_exact_row(double v) { return std::isnan(v) || v == std::numeric_limits<double>::infinity(); }

}  // namespace

std::vector<std::uint16_t> element_patterns(const MiniFloat& f) {
  std::vector<std::uint16_t> out;
  for (unsigned p = 0; p < f.patterns(); ++p)
    if (!has_no_exact_row(decode(f, static_cast<std::uint8_t>(p)))) out.push_back(static_cast<std::uint16_t>(p));
  return out;
}

std::vector<std::uint16_t> excluded_element_patterns(const MiniFloat& f) {
  std::vector<std::uint16_t> out;
  for (unsigned p = 0; p < f.patterns(); ++p)
    if (has_no_exact_row(decode(f, static_cast<std::uint8_t>(p)))) out.push_back(static_cast<std::uint16_t>(p));
  return out;
}

std::string SweepResult::status() const {
  // A broken masked-row policy or the no-NaN floor fails a kernel with or
  // without a contract.
  if (policy_violations > 0 || floor_violations > 0) return "violated";
  if (!declared) return "no_contract";
  return violations > 0 ? "violated" : "held";
}

double SweepReport::oracle_us_per_row() const {
  return rows ? 1e6 * oracle_seconds / static_cast<double>(rows) : 0;
}

bool SweepReport::all_held() const {
  return std::none_of(results.begin(), results.end(),
                      [](const SweepResult& r) { return r.status() == "violated"; });
}

namespace {

SweepShardRows shard_rows(const RowSpace& space, const SweepOptions& opt) {
  if (opt.shard_count == 0 || opt.shard_index >= opt.shard_count)
    throw std::invalid_argument("sweep: shard index out of range");
  // Every row costs the same: the shard's contiguous, equal share of the
  // first entry's values.
  const std::vector<std::uint16_t>& every_first = space.patterns[0];
  SweepShardRows share;
  share.first_of_all = every_first.size();
  share.first_begin = every_first.size() * opt.shard_index / opt.shard_count;
  share.first_end = every_first.size() * (opt.shard_index + 1) / opt.shard_count;
  share.rows = (share.first_end - share.first_begin) * space.rows_per_first();
  share.range = share.first_begin == share.first_end
                    ? "none"
                    : fmt::format("{}..{}", space.hex(every_first[share.first_begin]),
                                  space.hex(every_first[share.first_end - 1]));
  return share;
}

}  // namespace

SweepShardRows sweep_shard_rows(const SweepOptions& opt) { return shard_rows(row_space(opt), opt); }

SweepReport run_sweep(const std::vector<const Kernel*>& kernels, const SweepOptions& opt) {
  const auto t_start = Clock::now();
  const double cpu_start = thread_cpu_seconds();
  const RowSpace space = row_space(opt);
  std::vector<Target> targets = select_targets(kernels, opt);
  const SweepShardRows share = shard_rows(space, opt);
  const std::size_t lo = share.first_begin, hi = share.first_end;

  SweepReport report;
  report.format = opt.format;
  report.pairs = opt.pairs;
  report.shard_index = opt.shard_index;
  report.shard_count = opt.shard_count;
  report.first_values = hi - lo;
  report.first_of_all = share.first_of_all;
  report.first_range = share.range;
  report.context = space.context;
  report.oracle_bits = opt.oracle_bits;
  if (opt.elements) {
    report.elements = opt.elements;
    report.length = opt.length;
    std::uint64_t all = 1, kept = 1;
    for (std::size_t k = 0; k < opt.length; ++k) {
      all *= opt.elements->patterns();
      kept *= element_patterns(*opt.elements).size();
    }
    report.rows_of_all = all;
    report.excluded_rows = all - kept;
  }

  const std::size_t swept = space.patterns.size(), cols = space.cols();
  const std::uint64_t per_first = space.rows_per_first();
  const std::size_t firsts_per_block = static_cast<std::size_t>(std::max<std::uint64_t>(1, block_rows / per_first));
  std::vector<double> x;
  std::vector<std::uint16_t> patterns;  // rows x swept
  for (std::size_t first = lo; first < hi; first += firsts_per_block) {
    const std::size_t last = std::min(hi, first + firsts_per_block);
    const std::size_t rows = static_cast<std::size_t>((last - first) * per_first);
    x.resize(rows * cols);
    patterns.resize(rows * swept);
    for (std::size_t r = 0; r < rows; ++r) {
      double* xr = x.data() + r * cols;
      std::uint16_t* pr = patterns.data() + r * swept;
      // Mixed radix: the first entry's value, then the others, the last fastest.
      std::uint64_t rest = r % per_first;
      for (std::size_t k = swept; k-- > 1;) {
        const std::size_t i = static_cast<std::size_t>(rest % space.patterns[k].size());
        rest /= space.patterns[k].size();
        xr[k] = space.values[k][i];
        pr[k] = space.patterns[k][i];
      }
      const std::size_t i0 = first + static_cast<std::size_t>(r / per_first);
      xr[0] = space.values[0][i0];
      pr[0] = space.patterns[0][i0];
      std::copy(space.context.begin(), space.context.end(), xr + swept);
    }
    const std::vector<unsigned char> xin = pack(x, opt.format);
    for (Target& t : targets) run_target(t, xin, rows, cols);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::span<const double> xr(x.data() + r * cols, cols);
      const double t0 = thread_cpu_seconds();
      oracle::RowJudge judge(xr, 1.0, opt.format, oracle::JudgeOptions::exact_only(opt.oracle_bits));
      (void)judge.exact();  // computed here, timed as the oracle's share; shared by every target
      report.oracle_seconds += thread_cpu_seconds() - t0;
      const SweepRow row{r, std::span<const std::uint16_t>(patterns.data() + r * swept, swept), xr, &judge};
      for (Target& t : targets) evaluate(t, opt, space, row);
    }
    report.rows += rows;
  }
  for (Target& t : targets) {
    if (t.result.measured > 0) t.result.mean_ulp /= static_cast<double>(t.result.measured);
    report.results.push_back(std::move(t.result));
  }
  report.total_seconds = seconds_since(t_start);
  report.total_cpu_seconds = thread_cpu_seconds() - cpu_start;
  return report;
}

// ------------------------------------------------------------------ output

namespace {

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// A pattern as the report writes it: 4 hex digits (f16, bf16), 2 (OCP elements).
std::string report_hex(const SweepReport& r, std::uint16_t p) {
  return r.elements ? fmt::format("0x{:02X}", p) : fmt::format("0x{:04X}", p);
}

std::string patterns_text(const SweepReport& r, const std::vector<std::uint16_t>& ps) {
  std::string out;
  for (std::uint16_t p : ps) out += (out.empty() ? "" : ",") + report_hex(r, p);
  return out;
}

nlohmann::json worst_json(const SweepReport& r, const SweepWorst& w) {
  if (!w.present) return nullptr;
  nlohmann::json j = {{"pattern", report_hex(r, w.patterns.at(0))},
                      {"x", hex_row(&w.x, 1)},
                      {"element", w.element},
                      {"got", hex_row(&w.got, 1)},
                      {"exact", w.exact},
                      {"ulp", number_or_null(w.ulp)},
                      {"bound", number_or_null(w.bound)},
                      {"row", w.row},
                      {"repro", w.repro}};
  // The other swept entries' patterns, under their options' names.
  if (w.patterns.size() > 1) j["second"] = report_hex(r, w.patterns[1]);
  if (w.patterns.size() > 2) j["third"] = report_hex(r, w.patterns[2]);
  return j;
}

}  // namespace

std::string sweep_json(const SweepReport& r) {
  nlohmann::json j;
  j["format"] = std::string(name(r.format));
  if (r.elements) {
    nlohmann::json excluded = nlohmann::json::array();
    for (std::uint16_t p : excluded_element_patterns(*r.elements)) excluded.push_back(report_hex(r, p));
    j["row"] = {{"elements", std::string(r.elements->name)}, {"length", r.length},
                {"temperature", 1.0},                       {"excluded_patterns", excluded},
                {"rows_of_all", r.rows_of_all},              {"excluded_rows", r.excluded_rows}};
  } else if (r.pairs)
    j["row"] = {{"pairs", true}, {"length", 2}, {"temperature", 1.0}};
  else
    j["row"] = {{"position", sweep_position}, {"context", r.context}, {"temperature", 1.0}};
  j["rows"] = r.rows;
  if (r.shard_count > 1)
    j["shard"] = {{"index", r.shard_index}, {"count", r.shard_count}, {"first_values", r.first_values},
                  {"of", r.first_of_all}, {"range", r.first_range}};
  j["oracle"] = {{"bits", r.oracle_bits}, {"seconds", r.oracle_seconds}, {"us_per_row", r.oracle_us_per_row()}};
  j["total_seconds"] = {{"wall", r.total_seconds}, {"cpu", r.total_cpu_seconds}};
  j["all_held"] = r.all_held();
  j["kernels"] = nlohmann::json::array();
  for (const SweepResult& s : r.results)
    j["kernels"].push_back({{"kernel", s.kernel},
                            {"op", std::string(name(s.op))},
                            {"contract", s.contract},
                            {"status", s.status()},
                            {"rows", s.rows},
                            {"elements", s.elements},
                            {"measured", s.measured},
                            {"max_ulp", s.max_ulp},
                            {"mean_ulp", s.mean_ulp},
                            {"max_bits", s.max_bits},
                            {"nonfinite", s.nonfinite},
                            {"special_mismatch", s.special_mismatch},
                            {"violations", s.violations},
                            {"max_bound", s.max_bound},
                            {"vacuous_bound_rows", s.vacuous_rows},
                            {"masked_rows", s.masked_rows},
                            {"policy_violations", s.policy_violations},
                            {"floor_violations", s.floor_violations},
                            {"seconds", {{"kernel", s.kernel_seconds}, {"compare", s.compare_seconds}}},
                            {"worst", worst_json(r, s.worst)}});
  return j.dump(2) + "\n";
}

namespace {

// The repro command indented by 4, continued with " \\" before an option where
// it would pass the terminal's width: still one command to paste.
std::string repro_lines(const std::string& command) {
  std::string out, line = "    ";
  std::size_t i = 0;
  while (i < command.size()) {
    std::size_t next = command.find(" --", i + 1);
    if (next == std::string::npos) next = command.size();
    const std::string piece = command.substr(i, next - i);  // " --opt value" (the first: "softcheck sweep")
    if (line.size() > 4 && line.size() + piece.size() + 2 > cli::terminal_width) {
      out += line + " \\\n";
      line = "      " + piece.substr(1);
    } else {
      line += piece;
    }
    i = next;
  }
  return out + line + "\n";
}

}  // namespace

std::string sweep_table(const SweepReport& r) {
  std::string row_text = "[x";
  for (double v : r.context) row_text += fmt::format(", {}", v);
  row_text += "]";
  const std::string shard = r.shard_count == 1 ? ""
                            : fmt::format(" (shard {}/{}: {} of the {} values of {}, {})", r.shard_index,
                                          r.shard_count, r.first_values, r.first_of_all,
                                          r.pairs || r.elements ? "a" : "x", r.first_range);
  std::string excluded;
  if (r.elements)
    for (std::uint16_t p : excluded_element_patterns(*r.elements)) excluded += " " + report_hex(r, p);
  const std::string which =
      !r.elements ? ""
      : excluded.empty()
          ? fmt::format("every {} pattern", r.elements->name)
          : fmt::format("every {} pattern but{} (a NaN or +inf has no exact softmax; {} of the {} rows hold one)",
                        r.elements->name, excluded, r.excluded_rows, r.rows_of_all);
  const std::string headline =
      r.elements ? fmt::format("sweep {} kernels, {} rows {} of length {}: {} rows, {} (T = 1){}", name(r.format),
                               r.elements->name, r.length == 2 ? "[a, b]" : "[a, b, c]", r.length, r.rows, which,
                               shard)
      : r.pairs ? fmt::format("sweep {} pairs: {} rows [a, b], a and b finite values (T = 1){}", name(r.format),
                              r.rows, shard)
                : fmt::format("sweep {}: x over {} finite values in the row {} (T = 1){}", name(r.format), r.rows,
                              row_text, shard);
  std::string out =
      cli::wrapped(headline) +
      cli::wrapped(fmt::format("oracle ({} bits, once per row, shared by every kernel): {:.2f} s CPU, {:.1f} us "
                               "per row",
                               r.oracle_bits, r.oracle_seconds, r.oracle_us_per_row())) +
      "\n";
  // 100 columns at most (text_table.hpp): x itself and the worst row's values
  // are under "worst rows", where each has a line of its own.
  cli::TextTable table({{"kernel"}, {"op"}, {"max ULP", true}, {"mean ULP", true}, {"NaN/inf", true},
                        {"contract"}, {"CPU s", true}, {"worst x"}});
  for (const SweepResult& s : r.results) {
    const std::string verdict = s.status() == "held"       ? fmt::format("held<={:.4g}", s.worst.bound)
                                : s.status() == "violated" ? fmt::format("VIOLATED:{}", s.violations + s.policy_violations + s.floor_violations)
                                                           : "none";
    table.add({s.kernel, std::string(name(s.op)), fmt::format("{:.4g}", s.max_ulp), fmt::format("{:.4g}", s.mean_ulp),
               std::to_string(s.nonfinite + s.special_mismatch), verdict,
               fmt::format("{:.2f}", s.kernel_seconds + s.compare_seconds),
               s.worst.present ? patterns_text(r, s.worst.patterns) : "-"});
  }
  out += table.render();
  out += "(contract: \"held<=B\" gives the bound B on the worst row)\n";
  for (const SweepResult& s : r.results)
    if (s.policy_violations > 0)
      out += cli::wrapped(fmt::format("{} {}: {} of the {} rows of -inf alone break the kernel's masked-row policy",
                                      s.kernel, name(s.op), s.policy_violations, s.masked_rows));
  for (const SweepResult& s : r.results)
    if (s.floor_violations > 0)
      out += cli::wrapped(fmt::format("{} {}: no contract, but NaN/inf where the exact value is finite on {} rows "
                                      "(the floor's no_nonfinite, docs/gating-your-kernel.md)",
                                      s.kernel, name(s.op), s.floor_violations));
  for (const SweepResult& s : r.results)
    if (s.vacuous_rows > 0)
      out += cli::wrapped(fmt::format("note: {} {}: the bound is infinite (K u >= 1) on {} rows (large |x| inflates "
                                      "R by 2^-50 M in row_shape)",
                                      s.kernel, name(s.op), s.vacuous_rows));
  out += "\nworst rows:\n";
  for (const SweepResult& s : r.results)
    if (s.worst.present) {
      const bool whole_row = s.worst.patterns.size() > 1;
      out += cli::wrapped(fmt::format("  {} {}: {} = {} ({}), element {}: {} ulp", s.kernel, name(s.op),
                                      whole_row ? "row" : "x", whole_row ? s.worst.row : hex_row(&s.worst.x, 1),
                                      patterns_text(r, s.worst.patterns), s.worst.element,
                                      std::isfinite(s.worst.ulp) ? fmt::format("{:.4g}", s.worst.ulp) : "NaN/inf"),
                          "      ");
      out += cli::wrapped(fmt::format("    got {} exact {}", hex_row(&s.worst.got, 1), s.worst.exact), "      ");
      out += repro_lines(s.worst.repro);
    }
  out += fmt::format("\n{} in {:.1f} s ({:.1f} s CPU, one thread)\n",
                     r.all_held() ? "every declared contract held" : "CONTRACT VIOLATED", r.total_seconds,
                     r.total_cpu_seconds);
  return out;
}

bool sweeps_op(Op op) {
  const OpSpec& o = spec(op);
  return !o.sparse() && !o.several_inputs() && !o.several_outputs() && o.out[0].shape == OperandShape::row;
}

std::vector<Op> sweep_ops() {
  std::vector<Op> ops;
  for (const OpSpec& o : op_table)
    if (sweeps_op(o.op)) ops.push_back(o.op);
  return ops;
}

std::string sweep_op_refusal(Op op) {
  if (sweeps_op(op)) return {};
  const OpSpec& o = spec(op);
  const auto names = [](std::span<const Operand> operands, std::string_view sep) {
    std::vector<std::string_view> v;
    for (const Operand& x : operands) v.push_back(x.name);
    return fmt::format("{}", fmt::join(v, sep));
  };
  std::string need;
  if (o.several_inputs())
    need = "takes " + names(std::span(o.in).subspan(1), ", ") + " besides the row of logits";
  else if (o.sparse())
    need = "is sparse: the sweep's dense oracle does not give its values";
  else if (o.several_outputs())
    need = "returns " + names(o.out, " and ") + " for a row";
  else
    need = "returns one value per row, not a row";
  std::vector<std::string_view> accepted;
  for (Op s : sweep_ops()) accepted.push_back(name(s));
  return fmt::format("{} {}; sweep runs {} (one row of logits in, one row of outputs back); `softcheck run` "
                     "takes {}",
                     o.name, need, fmt::join(accepted, " or "), o.name);
}

namespace cli {

namespace {

struct SweepArgs {
  std::string dtype;
  std::vector<std::string> impls;
  std::string op;
  std::vector<std::string> values, seconds, thirds;
  std::string elements;
  std::size_t length = min_element_length;
  unsigned oracle_bits = 256;
  bool json = false;
  bool pairs = false;
  PluginArgs plugins;
  std::optional<std::string> shard;
};

// "0x3C00" or "15360" -> a 16-bit pattern.
std::uint16_t parse_pattern(const std::string& text, const char* option = "--value") {
  const bool hex = text.starts_with("0x") || text.starts_with("0X");
  const char* begin = text.data() + (hex ? 2 : 0);
  const char* end = text.data() + text.size();
  unsigned v = 0;
  const auto r = std::from_chars(begin, end, v, hex ? 16 : 10);
  if (r.ec != std::errc() || r.ptr != end || begin == end || v > 0xFFFF)
    throw std::invalid_argument(std::string(option) + ": not a 16-bit pattern: '" + text + "' (e.g. 0x3C00)");
  return static_cast<std::uint16_t>(v);
}

}  // namespace

Command add_sweep(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "sweep",
      "Exhaustive check: the row [x, -3.5, -1.75, -0.625, 0, 0.3125, 1.25, 2] with x every finite\n"
      "value of --dtype f16/bf16 (with --pairs: every row [a, b] of two finite values, 4.0e9 in f16;\n"
      "with --elements: every row of 2 or 3 OCP FP8/FP6/FP4 values), every selected kernel of --dtype\n"
      "against the oracle.\n"
      "Exit status: 0 every declared contract held, 1 a contract, a masked-row policy or the no-NaN floor was\n"
      "violated, 2 usage error.");
  auto a = std::make_shared<SweepArgs>();
  sub->add_option("--dtype", a->dtype, "The kernels' format: f16 or bf16; with --elements also f32 or f64")
      ->required()
      ->check(CLI::IsMember({"f16", "bf16", "f32", "f64"}));
  sub->add_option("--impl", a->impls, "Kernel (repeatable; default: every available kernel of --dtype)");
  std::vector<std::string_view> row_ops;
  for (Op op : sweep_ops()) row_ops.push_back(name(op));
  sub->add_option("--op", a->op,
                  fmt::format("{} (default: every such op each kernel provides; the others take more than a row "
                              "of logits or return more than a row: `softcheck run`)",
                              fmt::join(row_ops, " or ")))
      ->check(CLI::Validator(
          [row_ops](std::string& s) -> std::string {
            const std::optional<Op> op = parse_op(s);
            if (!op) return fmt::format("{} is not an op; sweep runs {}", s, fmt::join(row_ops, " or "));
            return sweep_op_refusal(*op);
          },
          fmt::format("{{{}}}", fmt::join(row_ops, ","))));
  sub->add_option("--value", a->values,
                  "Only x (with --pairs or --elements: the first entry) = this bit pattern, e.g. 0x3C00 "
                  "(repeatable; for repro lines)");
  sub->add_flag("--pairs", a->pairs,
                "The rows [a, b] of length 2 over every pair of finite values (63,488^2 in f16, 65,280^2 in bf16): "
                "split it with --shard or a scheduler's variables (docs/scaling.md)");
  sub->add_option("--second", a->seconds,
                  "With --pairs or --elements: only the second entry = this bit pattern (repeatable; for repro "
                  "lines)");
  std::vector<std::string> element_names;
  for (const MiniFloat* f : sweep_element_formats()) element_names.emplace_back(f->name);
  sub->add_option("--elements", a->elements,
                  "e4m3, e5m2 (OCP FP8), e2m3, e3m2 (FP6) or e2m1 (FP4): every row of --length entries, each entry "
                  "a bit pattern of that format (exact in f16, bf16, f32, f64), fed to the kernels of --dtype. Rows "
                  "holding a NaN or +inf have no exact softmax and are not swept: E4M3's NaNs 0x7F, 0xFF (1,020 of "
                  "the 65,536 rows of length 2, 390,152 of the 16,777,216 of length 3), E5M2's +inf 0x7C and NaNs "
                  "0x7D-0x7F, 0xFD-0xFF (3,535 and 1,338,967); E5M2's -inf 0xFC is swept, a masked entry; FP6 and "
                  "FP4 have no specials")
      ->check(CLI::IsMember(element_names));
  CLI::Option* length_option = sub->add_option("--length", a->length,
                  "With --elements: 2 (FP8: 256^2 = 65,536 rows) or 3 (FP8: 256^3 = 16,777,216 rows, split it with "
                  "--shard: contiguous ranges of the first entry's values; FP6 64^3, FP4 16^3); default 2");
  sub->add_option("--third", a->thirds,
                  "With --elements --length 3: only the third entry = this bit pattern (repeatable; for repro lines)");
  sub->add_option("--oracle-bits", a->oracle_bits, "MPFR working precision in bits")
      ->check(CLI::Range(64u, 4096u))
      ->capture_default_str();
  sub->add_flag("--json", a->json, "Print the result as JSON instead of a table");
  add_plugin_options(*sub, a->plugins);
  add_shard_option(*sub, a->shard);
  return [a, length_option] {
    const Shard shard = this_shard(a->shard, a->json);
    SweepOptions opt;
    opt.pairs = a->pairs;
    opt.shard_index = shard.index;
    opt.shard_count = shard.count;
    opt.format = *parse_format(a->dtype);
    if (!a->elements.empty()) {
      opt.elements = sweep_element_format(a->elements);
      opt.length = a->length;
    } else if (length_option->count() > 0) {
      throw std::invalid_argument("--length is for --elements");
    }
    if (!a->op.empty()) opt.ops = {*parse_op(a->op)};
    for (const std::string& v : a->values) opt.patterns.push_back(parse_pattern(v));
    for (const std::string& v : a->seconds) opt.seconds.push_back(parse_pattern(v, "--second"));
    for (const std::string& v : a->thirds) opt.thirds.push_back(parse_pattern(v, "--third"));
    opt.oracle_bits = a->oracle_bits;
    const KernelSet kernel_set(a->plugins);
    std::vector<const Kernel*> kernels;
    if (a->impls.empty()) {
      for (const Kernel* k : kernel_set.all())
        if (k->format == opt.format && k->available && !k->test_only) kernels.push_back(k);
    } else {
      kernels = kernel_set.select(a->impls);
    }
    if (kernels.empty()) throw std::invalid_argument("no available " + a->dtype + " kernel to sweep");
    const SweepReport report = run_sweep(kernels, opt);
    fmt::print("{}", a->json ? sweep_json(report) : sweep_table(report));
    return report.all_held() ? exit_ok : exit_violation;
  };
}

}  // namespace cli

}  // namespace softcheck
