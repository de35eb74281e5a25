// softcheck sweep: every finite value of one entry of a fixed f16/bf16 row,
// every selected kernel of that format, against the oracle (sweep.hpp,
// docs/low-precision.md).
#include <fmt/format.h>

#include <algorithm>
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

std::string pattern_hex(std::uint16_t p) { return fmt::format("0x{:04X}", p); }

bool is_16bit(Format f) { return f == Format::f16 || f == Format::bf16; }

// One (kernel, op) under test, with its outputs for every row.
struct Target {
  const Kernel* kernel;
  const OpDecl* decl;
  std::vector<double> y;  // rows x cols, as doubles (exact)
  SweepResult result;
  double worst_key = -1;
};

std::vector<Target> select_targets(const std::vector<const Kernel*>& kernels, const SweepOptions& opt) {
  std::vector<Target> targets;
  for (const Kernel* k : kernels) {
    if (k->format != opt.format)
      throw std::invalid_argument(fmt::format("{} is an {} kernel; sweep --dtype {} needs {} kernels", k->name,
                                              name(k->format), name(opt.format), name(opt.format)));
    if (!k->available) throw std::invalid_argument(k->name + " is unavailable: " + k->unavailable_reason);
    for (const OpDecl& d : k->ops) {
      if (!opt.ops.empty() && std::find(opt.ops.begin(), opt.ops.end(), d.op) == opt.ops.end()) continue;
      // The sweep varies one entry of a row and reads a row of outputs.
      if (is_sparse(d.op) || spec(d.op).scalar_output() || spec(d.op).several_outputs()) continue;
      Target t{k, &d, {}, {}};
      t.result.kernel = k->name;
      t.result.op = d.op;
      t.result.declared = d.contract.declared;
      t.result.contract = d.contract.formula();
      targets.push_back(std::move(t));
    }
  }
  if (targets.empty()) throw std::invalid_argument("no selected kernel provides the requested op");
  return targets;
}

// rows x cols inputs: row r is x_r (at sweep_position) and the context.
std::vector<double> sweep_rows(const std::vector<std::uint16_t>& patterns, Format f) {
  const std::vector<double>& ctx = sweep_context();
  const std::size_t cols = ctx.size() + 1;
  std::vector<double> x(patterns.size() * cols);
  for (std::size_t r = 0; r < patterns.size(); ++r) {
    double* row = x.data() + r * cols;
    std::copy(ctx.begin(), ctx.end(), row + 1);
    row[sweep_position] = decode16(patterns[r], f);
  }
  return x;
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

// One row of the sweep: its index in its block, x's pattern (pairs: a's and
// b's), the inputs and the exact results.
struct SweepRow {
  std::size_t index;
  std::uint16_t pattern;
  std::optional<std::uint16_t> second;  // pairs only
  std::span<const double> x;
  oracle::RowJudge* judge;  // MPFR for every row (sweep measures against the exact row alone)
};

std::string repro_of(const Target& t, Format f, const SweepRow& row) {
  return fmt::format("softcheck sweep --dtype {} --impl {} --op {}{} --value {}{}", name(f), t.kernel->name,
                     name(t.decl->op), row.second ? " --pairs" : "", pattern_hex(row.pattern),
                     row.second ? " --second " + pattern_hex(*row.second) : "");
}

void record_worst(Target& t, Format f, const SweepRow& row, const RowError& e, double bound, bool broken) {
  const double key = broken ? std::numeric_limits<double>::infinity() : e.max_ulp;
  if (key <= t.worst_key) return;  // the first strictly largest wins
  t.worst_key = key;
  const auto ref = oracle::exact_values(row.judge->exact(), spec(t.decl->op).out[0].kind);
  SweepWorst& w = t.result.worst;
  w.present = true;
  w.pattern = row.pattern;
  w.second = row.second.value_or(0);
  w.x = row.x[sweep_position];
  w.element = e.worst_index;
  w.got = t.y[row.index * row.x.size() + e.worst_index];
  w.exact = oracle::to_string(ref[e.worst_index], 21);
  w.ulp = key;
  w.bound = bound;
  w.row = hex_row(row.x.data(), static_cast<std::int64_t>(row.x.size()));
  w.repro = repro_of(t, f, row);
}

// Compares one row's outputs with the shared exact row and folds the errors in.
void evaluate(Target& t, Format f, const SweepRow& row) {
  const double t0 = thread_cpu_seconds();
  SweepResult& s = t.result;
  const std::span<const double> y(t.y.data() + row.index * row.x.size(), row.x.size());
  const oracle::RowVerdict v = row.judge->judge(*t.decl, t.kernel->masked_policy, y);
  const RowError& e = v.error;
  const double b = v.bound;  // +inf for "none"
  const bool broken = v.broken;
  s.rows++;
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
  record_worst(t, f, row, e, b, broken);
  s.compare_seconds += thread_cpu_seconds() - t0;
}

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

std::string SweepResult::status() const {
  if (!declared) return "no_contract";
  return violations > 0 ? "violated" : "held";
}

double SweepReport::oracle_us_per_row() const {
  return rows ? 1e6 * oracle_seconds / static_cast<double>(rows) : 0;
}

bool SweepReport::all_held() const {
  return std::none_of(results.begin(), results.end(), [](const SweepResult& r) { return r.violations > 0; });
}

SweepReport run_sweep(const std::vector<const Kernel*>& kernels, const SweepOptions& opt) {
  const auto t_start = Clock::now();
  const double cpu_start = thread_cpu_seconds();
  if (!is_16bit(opt.format))
    throw std::invalid_argument("sweep: --dtype must be f16 or bf16, not " + std::string(name(opt.format)));
  std::vector<Target> targets = select_targets(kernels, opt);
  const auto finite_only = [&](const std::vector<std::uint16_t>& given) {
    const std::vector<std::uint16_t> all = given.empty() ? finite_patterns(opt.format) : given;
    for (std::uint16_t p : all)
      if (!std::isfinite(decode16(p, opt.format)))
        throw std::invalid_argument(fmt::format("{} is not a finite {} value", pattern_hex(p), name(opt.format)));
    return all;
  };
  const std::vector<std::uint16_t> every_first = finite_only(opt.patterns);
  if (!opt.pairs && !opt.seconds.empty()) throw std::invalid_argument("--second is for --pairs");
  const std::vector<std::uint16_t> seconds = opt.pairs ? finite_only(opt.seconds) : std::vector<std::uint16_t>{};
  if (opt.shard_count == 0 || opt.shard_index >= opt.shard_count)
    throw std::invalid_argument("sweep: shard index out of range");
  // Every row costs the same: the shard's contiguous, equal share of x (a).
  const std::size_t lo = every_first.size() * opt.shard_index / opt.shard_count;
  const std::size_t hi = every_first.size() * (opt.shard_index + 1) / opt.shard_count;
  const std::vector<std::uint16_t> patterns(every_first.begin() + static_cast<std::ptrdiff_t>(lo),
                                            every_first.begin() + static_cast<std::ptrdiff_t>(hi));

  SweepReport report;
  report.format = opt.format;
  report.pairs = opt.pairs;
  report.shard_index = opt.shard_index;
  report.shard_count = opt.shard_count;
  report.first_values = patterns.size();
  report.first_of_all = every_first.size();
  report.first_range = patterns.empty() ? "none"
                                        : fmt::format("{}..{}", pattern_hex(patterns.front()), pattern_hex(patterns.back()));
  if (!opt.pairs) report.context = sweep_context();
  report.oracle_bits = opt.oracle_bits;

  // One block of rows at a time: all x at once, or (pairs) one a with every b.
  const auto run_block = [&](const std::vector<double>& x, std::size_t cols, const auto& row_patterns) {
    const std::size_t rows = x.size() / cols;
    const std::vector<unsigned char> xin = pack(x, opt.format);
    for (Target& t : targets) run_target(t, xin, rows, cols);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::span<const double> xr(x.data() + r * cols, cols);
      const double t0 = thread_cpu_seconds();
      oracle::RowJudge judge(xr, 1.0, opt.format, oracle::JudgeOptions::exact_only(opt.oracle_bits));
      (void)judge.exact();  // computed here, timed as the oracle's share; shared by every target
      report.oracle_seconds += thread_cpu_seconds() - t0;
      const auto [pattern, second] = row_patterns(r);
      for (Target& t : targets) evaluate(t, opt.format, {r, pattern, second, xr, &judge});
    }
    report.rows += rows;
  };
  if (!opt.pairs) {
    run_block(sweep_rows(patterns, opt.format), sweep_context().size() + 1, [&](std::size_t r) {
      return std::pair{patterns[r], std::optional<std::uint16_t>{}};
    });
  } else {
    std::vector<double> x(2 * seconds.size());
    for (const std::uint16_t a : patterns) {
      for (std::size_t r = 0; r < seconds.size(); ++r) {
        x[2 * r] = decode16(a, opt.format);
        x[2 * r + 1] = decode16(seconds[r], opt.format);
      }
      run_block(x, 2, [&](std::size_t r) { return std::pair{a, std::optional<std::uint16_t>{seconds[r]}}; });
    }
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

nlohmann::json worst_json(const SweepWorst& w, bool pairs) {
  if (!w.present) return nullptr;
  nlohmann::json j = {{"pattern", pattern_hex(w.pattern)}, {"x", hex_row(&w.x, 1)}, {"element", w.element},
                      {"got", hex_row(&w.got, 1)},           {"exact", w.exact},      {"ulp", number_or_null(w.ulp)},
                      {"bound", number_or_null(w.bound)},     {"row", w.row},          {"repro", w.repro}};
  if (pairs) j["second"] = pattern_hex(w.second);
  return j;
}

}  // namespace

std::string sweep_json(const SweepReport& r) {
  nlohmann::json j;
  j["format"] = std::string(name(r.format));
  if (r.pairs)
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
                            {"seconds", {{"kernel", s.kernel_seconds}, {"compare", s.compare_seconds}}},
                            {"worst", worst_json(s.worst, r.pairs)}});
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
                                          r.shard_count, r.first_values, r.first_of_all, r.pairs ? "a" : "x",
                                          r.first_range);
  std::string out =
      cli::wrapped(r.pairs ? fmt::format("sweep {} pairs: {} rows [a, b], a and b finite values (T = 1){}",
                                         name(r.format), r.rows, shard)
                           : fmt::format("sweep {}: x over {} finite values in the row {} (T = 1){}", name(r.format),
                                         r.rows, row_text, shard)) +
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
                                : s.status() == "violated" ? fmt::format("VIOLATED:{}", s.violations)
                                                           : "none";
    table.add({s.kernel, std::string(name(s.op)), fmt::format("{:.4g}", s.max_ulp), fmt::format("{:.4g}", s.mean_ulp),
               std::to_string(s.nonfinite + s.special_mismatch), verdict,
               fmt::format("{:.2f}", s.kernel_seconds + s.compare_seconds),
               !s.worst.present ? "-"
               : r.pairs        ? pattern_hex(s.worst.pattern) + "," + pattern_hex(s.worst.second)
                                : pattern_hex(s.worst.pattern)});
  }
  out += table.render();
  out += "(contract: \"held<=B\" gives the bound B on the worst row)\n";
  for (const SweepResult& s : r.results)
    if (s.vacuous_rows > 0)
      out += cli::wrapped(fmt::format("note: {} {}: the bound is infinite (K u >= 1) on {} rows (large |x| inflates "
                                      "R by 2^-50 M in row_shape)",
                                      s.kernel, name(s.op), s.vacuous_rows));
  out += "\nworst rows:\n";
  for (const SweepResult& s : r.results)
    if (s.worst.present) {
      out += cli::wrapped(fmt::format("  {} {}: {} = {} ({}), element {}: {} ulp", s.kernel, name(s.op),
                                      r.pairs ? "row" : "x", r.pairs ? s.worst.row : hex_row(&s.worst.x, 1),
                                      r.pairs ? pattern_hex(s.worst.pattern) + "," + pattern_hex(s.worst.second)
                                              : pattern_hex(s.worst.pattern),
                                      s.worst.element,
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

namespace cli {

namespace {

struct SweepArgs {
  std::string dtype;
  std::vector<std::string> impls;
  std::string op;
  std::vector<std::string> values, seconds;
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
      "Exhaustive f16/bf16 check: the row [x, -3.5, -1.75, -0.625, 0, 0.3125, 1.25, 2] with x every\n"
      "finite value of --dtype (with --pairs: every row [a, b] of two finite values, 4.0e9 in f16),\n"
      "every selected kernel of that format against the oracle.\n"
      "Exit status: 0 every declared contract held, 1 a contract was violated, 2 usage error.");
  auto a = std::make_shared<SweepArgs>();
  sub->add_option("--dtype", a->dtype, "f16 or bf16")->required()->check(CLI::IsMember({"f16", "bf16"}));
  sub->add_option("--impl", a->impls, "Kernel (repeatable; default: every available kernel of --dtype)");
  // The sweep reads a row of outputs per row: the dense ops whose one output
  // is a row (op table).
  std::vector<std::string> row_ops;
  std::string row_op_list;
  for (const OpSpec& o : op_table)
    if (!o.sparse() && !o.scalar_output() && !o.several_outputs()) {
      row_ops.emplace_back(o.name);
      row_op_list += (row_op_list.empty() ? "" : " or ") + std::string(o.name);
    }
  sub->add_option("--op", a->op, row_op_list + " (default: every such op each kernel provides)")
      ->check(CLI::IsMember(row_ops));
  sub->add_option("--value", a->values,
                  "Only x (with --pairs: a) = this bit pattern, e.g. 0x3C00 (repeatable; for repro lines)");
  sub->add_flag("--pairs", a->pairs,
                "The rows [a, b] of length 2 over every pair of finite values (63,488^2 in f16, 65,280^2 in bf16): "
                "split it with --shard or a scheduler's variables (docs/scaling.md)");
  sub->add_option("--second", a->seconds, "With --pairs: only b = this bit pattern (repeatable; for repro lines)");
  sub->add_option("--oracle-bits", a->oracle_bits, "MPFR working precision in bits")
      ->check(CLI::Range(64u, 4096u))
      ->capture_default_str();
  sub->add_flag("--json", a->json, "Print the result as JSON instead of a table");
  add_plugin_options(*sub, a->plugins);
  add_shard_option(*sub, a->shard);
  return [a] {
    const Shard shard = this_shard(a->shard, a->json);
    SweepOptions opt;
    opt.pairs = a->pairs;
    opt.shard_index = shard.index;
    opt.shard_count = shard.count;
    for (const std::string& v : a->seconds) opt.seconds.push_back(parse_pattern(v, "--second"));
    opt.format = *parse_format(a->dtype);
    if (!a->op.empty()) opt.ops = {*parse_op(a->op)};
    for (const std::string& v : a->values) opt.patterns.push_back(parse_pattern(v));
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
