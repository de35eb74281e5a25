// softcheck run: the built-in suite against the oracle, with reports.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "commands.hpp"
#include "fp_env_option.hpp"
#include "kernel_selection.hpp"
#include "property_verdicts.hpp"
#include "shard_option.hpp"
#include "softcheck/run_suite.hpp"
#include "softcheck/kernel.hpp"
#include "text_table.hpp"

namespace softcheck::cli {

namespace {

struct RunArgs {
  std::vector<std::string> impls;
  std::string suite = "quick";
  std::uint64_t seed = 1;
  std::string out = "reports/out";
  unsigned jobs = 0;
  unsigned oracle_bits = 256;
  std::string oracle = "tiered";
  std::vector<std::string> families;
  std::vector<std::int64_t> sizes;
  std::vector<double> temperatures;
  bool quiet = false;
  bool peers = false;
  bool sparse = false;
  bool gradients = false;
  bool attention = false;
  std::vector<std::string> ops;
  int property_tests = 10;
  PluginArgs plugins;
  ReferenceRuleSettings reference_rule;
  std::string rows_csv;
  std::string fp_env = "default";
  std::optional<std::string> shard;
  double budget = 0;
  std::string case_times;
};

// The --rows-csv file while the run writes it: a temporary ".NAME.tmp.PID"
// beside it (removed on SIGINT/SIGTERM and on any error), renamed into place
// once the report files are.
class RowsCsvFile {
 public:
  explicit RowsCsvFile(const std::filesystem::path& path)
      : path_(path),
        temp_(path.parent_path() / fmt::format(".{}.tmp.{}", path.filename().string(), ::getpid())),
        in_flight_(temp_) {
    out_.open(temp_, std::ios::binary | std::ios::trunc);
    if (!out_) throw std::runtime_error("--rows-csv: cannot write '" + temp_.string() + "'");
    out_ << rows_csv_header << '\n';
  }
  ~RowsCsvFile() {
    if (!committed_) {
      out_.close();
      std::error_code ignored;
      std::filesystem::remove(temp_, ignored);
    }
  }
  RowsCsvFile(const RowsCsvFile&) = delete;
  RowsCsvFile& operator=(const RowsCsvFile&) = delete;

  std::ostream& stream() { return out_; }
  void commit() {
    out_.close();
    if (!out_) throw std::runtime_error("--rows-csv: writing '" + temp_.string() + "' failed");
    std::filesystem::rename(temp_, path_);
    committed_ = true;
  }

 private:
  std::filesystem::path path_, temp_;
  TemporaryInFlight in_flight_;
  std::ofstream out_;
  bool committed_ = false;
};

std::string fmt_num(double v) { return fmt::format("{:.3g}", v); }

// The bar's state: redrawn when the filled width or the elapsed second changes.
struct Bar {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int drawn_fill = -1;
  long drawn_second = -1;
};

void draw_bar(Bar& b, std::size_t done, std::size_t total) {
  constexpr int width = 32;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - b.start).count();
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1;
  const int fill = static_cast<int>(frac * width);
  const long second = static_cast<long>(elapsed);
  if (fill == b.drawn_fill && second == b.drawn_second && done != total) return;
  b.drawn_fill = fill;
  b.drawn_second = second;
  const std::string eta = done > 0 && done < total ? fmt::format(", ~{:.0f} s left", elapsed / frac - elapsed) : "";
  fmt::print(stderr, "\r[{}{}] {:>3.0f}% {}/{} cases, {:.0f} s{}\x1b[K", std::string(static_cast<std::size_t>(fill), '#'),
             std::string(static_cast<std::size_t>(width - fill), '.'), 100 * frac, done, total, elapsed, eta);
  if (done == total) fmt::print(stderr, "\n");
}

// The table fits 100 columns (text_table.hpp): the verdict column holds a word
// and markers; what used to follow it on the row (NaN/inf flags, broken
// masked-row policy, a kernel's failure, sparse support mismatches) is a note
// under the table, and a reason of unavailability one note per group.
void print_summary(const Report& r) {
  TextTable table({{"kernel"}, {"op"}, {"cases", true}, {"max ULP", true}, {"mean ULP", true}, {"max bits", true},
                   {"NaN/inf", true}, {"contract"}});
  ReasonNotes unavailable;
  std::string notes;
  std::vector<std::string> shown;
  for (const KernelSummary& k : r.kernels) {
    if (shown.empty() || shown.back() != k.kernel) shown.push_back(k.kernel);
    std::string verdict = k.status == "held"          ? "held"
                          : k.status == "violated"    ? "VIOLATED"
                          : k.status == "unavailable" ? "unavailable"
                                                      : "none";
    if (k.status == "unavailable") unavailable.add(k.kernel, k.unavailable_reason);
    const auto note = [&](std::string_view marker, const std::string& text) {
      if (!marker.empty()) verdict += fmt::format(" {}", marker);
      notes += labelled(fmt::format("{} {}:", k.kernel, k.label()), text);
    };
    if (k.reference.violations > 0)
      note("REFERENCE", fmt::format("error above {} x {}'s + {} u on {} of {} rows (max ratio {}; the reference rule "
                                    "fails the run)",
                                    fmt_num(r.reference_rule.k), k.reference.kernel, fmt_num(r.reference_rule.slack),
                                    k.reference.violations, k.reference.rows, fmt_num(k.reference.max_ratio)));
    if (k.distribution.biased())
      note("BIASED", fmt::format("one-sided errors: {} rows above, {} below the exact value (z = {:.1f})",
                                 k.distribution.rows_above, k.distribution.rows_below, k.distribution.bias_z()));
    if (k.floor_violations > 0)
      note("FLOOR", fmt::format("NaN/inf where the exact value is finite on {} rows the format holds (no contract: "
                                "the floor fails the run)",
                                k.floor_violations));
    else if (k.status != "unavailable" && k.nonfinite > 0)
      note("FLAGGED", "FLAGGED: NaN/inf on finite input");
    if (k.unbounded_rows > 0)
      note("UNCHECKED", fmt::format("{}; \"{}\" covers the other rows", k.unchecked_rows(), k.status));
    // A quantised output's ULPs are its own format's, and its rows can lose
    // mass with every output within its bound.
    if (!k.output_format.empty())
      note("", fmt::format("outputs quantised to {}: ULPs of {}; sum(y) - 1 per row: max lost {}, max gained {}",
                           k.output_format, k.output_format, fmt_num(k.mass.max_lost), fmt_num(k.mass.max_gained)));
    if (k.policy_violations > 0)
      note("POLICY", fmt::format("masked-row policy broken in {} rows", k.policy_violations));
    if (k.worst.exact.starts_with(kernel_failure_prefix)) note("FAILED", k.worst.exact);
    if (k.status == "violated" && k.worst.present) note("", "repro: " + k.worst.repro);
    if (const auto op = parse_op(k.op); op && is_sparse(*op))
      note("", fmt::format("support: {} false zeros, {} false non-zeros", k.false_zeros, k.false_nonzeros));
    table.add({k.kernel, k.label(), std::to_string(k.cases), fmt_num(k.max_ulp), fmt_num(k.mean_ulp),
               fmt_num(k.max_bits), std::to_string(k.nonfinite), verdict});
  }
  // The ULP columns of a one-value-per-row output are in units of u, not of
  // the output's ulp (report.md says the same under its table).
  const auto any_in = [&](Metric m) {
    return std::any_of(r.kernels.begin(), r.kernels.end(),
                       [m](const KernelSummary& k) { return k.status != "unavailable" && has_metric(m, k.op, k.output); });
  };
  if (any_in(Metric::absolute))
    notes += labelled(metric_outputs(Metric::absolute) + ":",
                      "the ULP columns are |got - exact| / u, an absolute error in units of u (2^-24 in f32, "
                      "2^-53 in f64), the unit of their contracts");
  if (any_in(Metric::scaled))
    notes += labelled(scaled_metric_outputs() + ":",
                      "the ULP columns are the scaled error |got - exact| / max(u s, denorm_min) (docs/gradients.md)");
  const std::string below = notes + unavailable.render(shown, "unavailable");
  fmt::print("{}{}{}", table.render(), below.empty() ? "" : "\n", below);
}

}  // namespace

std::function<void(std::size_t, std::size_t)> progress_bar(bool enabled) {
  if (!enabled || !::isatty(STDERR_FILENO)) return {};
  auto bar = std::make_shared<Bar>();
  return [bar](std::size_t done, std::size_t total) { draw_bar(*bar, done, total); };
}

Command add_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Run kernels over the built-in input families and compare with the oracle");
  auto a = std::make_shared<RunArgs>();
  sub->add_option("--impl", a->impls, "Kernel to run (repeatable; default: every built-in and plugin kernel)");
  sub->add_flag("--peers", a->peers, "With no --impl: also run the peer libraries' kernels (oneDNN, XNNPACK)");
  sub->add_flag("--sparse", a->sparse,
                "With no --impl: also run the sparse kernels (sparsemax, entmax, top-k, threshold; "
                "docs/sparse.md); --impl may name one either way");
  sub->add_flag("--gradients", a->gradients,
                "With no --impl: also run the gradient kernels (cross-entropy loss and gradient; "
                "docs/gradients.md); --impl may name one either way");
  sub->add_flag("--attention", a->attention,
                "With no --impl: also run the attention kernels over the attention families (docs/attention.md); "
                "--impl may name one either way");
  sub->add_option("--op", a->ops,
                  "Only this op (repeatable: " + softcheck::op_names() +
                      "); with no --impl, every kernel that provides it (sparse and gradient kernels included)")
      ->check(CLI::IsMember(softcheck::op_table_names()));
  add_plugin_options(*sub, a->plugins);
  sub->add_option("--suite", a->suite, "quick (under a minute on 2 cores) or full")->check(CLI::IsMember({"quick", "full"}));
  sub->add_option("--seed", a->seed, "Seed of the input rows; same seed, same report.json byte for byte");
  sub->add_option("--out", a->out, "Directory for report.json, report.md and report.html")->capture_default_str();
  sub->add_option("--jobs", a->jobs,
                  "Worker threads for the suite and processes for the property checks (default: all cores); "
                  "reports are identical for any value");
  sub->add_option("--oracle-bits", a->oracle_bits, "MPFR working precision in bits")->check(CLI::Range(64u, 4096u))->capture_default_str();
  sub->add_option("--oracle", a->oracle,
                  "tiered: fast tiers with rigorous error bounds (double then long double; double-double for f64 "
                  "results), MPFR for the rows they cannot decide (docs/oracle.md); mpfr: MPFR for every row. "
                  "Same verdicts either way")
      ->check(CLI::IsMember({"tiered", "mpfr"}))->capture_default_str();
  sub->add_option("--family", a->families, "Only this input family (repeatable; see `softcheck list --families`)");
  sub->add_option("--size", a->sizes, "Only this row length (repeatable)");
  sub->add_option("--temperature", a->temperatures, "Only this temperature (repeatable)");
  sub->add_option("--property-tests", a->property_tests,
                  "Cases per property in the report's property verdicts (0: skip; `softcheck check` runs more)")
      ->check(CLI::Range(0, 100000))->capture_default_str();
  sub->add_option("--reference-rule", a->reference_rule.scope,
                  "Which outputs the reference rule judges: on every row, max |y - exact| <= K x that of "
                  "softcheck's stable kernel of the same format + SLACK u max(1, max |output|) "
                  "(FlashAttention's test rule; docs/gating-your-kernel.md). no_contract: outputs without a "
                  "derived contract; all: every output (a second gate beside the contracts); off")
      ->check(CLI::IsMember({"no_contract", "all", "off"}))->capture_default_str();
  sub->add_option("--reference-k", a->reference_rule.k, "K of the reference rule (>= 1)")
      ->check(CLI::Range(1.0, 1e12))->capture_default_str();
  sub->add_option("--reference-slack", a->reference_rule.slack,
                  "SLACK of the reference rule, in units of the format's u (>= 0)")
      ->check(CLI::Range(0.0, 1e12))->capture_default_str();
  sub->add_flag("--quiet", a->quiet, "No progress and no table; exit status and files only");
  add_fp_env_option(*sub, a->fp_env);
  sub->add_option("--rows-csv", a->rows_csv,
                  "Also write one CSV line per judged row and report entry to FILE (kernel, output, format, family, "
                  "n, temperature, row, R, M, max error, unit, bound, reference ratio, verdict, repro; "
                  "docs/report-schema.md)");
  add_shard_option(*sub, a->shard);
  sub->add_option("--budget", a->budget,
                  "Seconds the run may take on the project's 2-core machine, by softcheck's cost model (never a "
                  "clock): each kernel's cheapest case, then the cheapest others that fit; the report lists the "
                  "cases skipped. The same budget runs the same cases on any machine and for any --jobs "
                  "(docs/scaling.md). Not with --shard")
      ->check(CLI::Range(0.001, 1e7));
  sub->add_option("--case-times", a->case_times,
                  "Also write one CSV line per case run to FILE: the case, its modelled seconds and the CPU seconds "
                  "it took (measured, so not the same twice; what scripts/fit-cost-model.py fits --budget's model "
                  "to)");
  return [a] {
    const Shard shard = this_shard(a->shard, a->quiet);
    const KernelSet kernel_set(a->plugins);
    // --op without --impl: every kernel that provides one of the ops.
    const bool by_op = !a->ops.empty() && a->impls.empty();
    std::vector<const Kernel*> kernels =
        kernel_set.select(a->impls, a->peers, /*with_sparse=*/a->sparse || !a->impls.empty() || by_op,
                          /*with_gradients=*/a->gradients || by_op, /*with_attention=*/a->attention || by_op,
                          /*with_quantised=*/true);
    const auto provides_an_op = [&](const Kernel* k) {
      return std::any_of(a->ops.begin(), a->ops.end(), [&](const std::string& op) { return k->find(*parse_op(op)); });
    };
    if (by_op) std::erase_if(kernels, [&](const Kernel* k) { return !provides_an_op(k); });
    // --op with nothing to run is a mistake, not a pass.
    if (!a->ops.empty())
      for (const Kernel* k : kernels)
        if (!provides_an_op(k))
          throw std::invalid_argument(fmt::format("kernel {} provides none of the ops given with --op", k->name));
    if (!a->ops.empty() && kernels.empty())
      throw std::invalid_argument("no kernel provides the ops given with --op (see `softcheck list --gradients --sparse --attention`)");
    warn_kernels_without_ops(kernels);
    RunOptions opt;
    opt.selection = {a->suite, a->families, a->sizes, a->temperatures, a->ops};
    build_suite(opt.selection);  // validate before touching the output directory
    check_temperatures(kernels, opt.selection);
    opt.reference_rule = a->reference_rule;
    check_reference_rule(opt.reference_rule);
    opt.seed = a->seed;
    opt.oracle_bits = a->oracle_bits;
    opt.oracle = a->oracle == "mpfr" ? OracleMode::mpfr : OracleMode::tiered;
    opt.fp_env = fp_env_of(a->fp_env);
    opt.shard = shard;
    if (a->budget > 0) {
      const double overhead = modelled_overhead_seconds(kernels_of_shard(kernels, shard), a->property_tests);
      if (overhead >= a->budget)
        throw std::invalid_argument(fmt::format(
            "--budget {} s leaves nothing for the cases: start-up and the property checks ({} cases per property) "
            "are modelled at {:.2f} s; raise --budget or lower --property-tests",
            a->budget, a->property_tests, overhead));
      opt.budget = {a->budget, a->budget - overhead};
    }
    check_budget(opt);
    opt.jobs = a->jobs ? a->jobs : std::max(1u, std::thread::hardware_concurrency());
    const std::filesystem::path out = a->out;
    // The report files must not replace a plugin library the run loads.
    std::vector<std::filesystem::path> outputs = {out / "report.json", out / "report.md", out / "report.html"};
    if (!a->rows_csv.empty()) outputs.emplace_back(a->rows_csv);
    if (!a->case_times.empty()) outputs.emplace_back(a->case_times);
    check_outputs_against_inputs({a->plugins.paths.begin(), a->plugins.paths.end()}, outputs);
    ensure_writable_dir(out);  // fail before the run, not after it
    std::optional<RowsCsvFile> rows_csv;
    if (!a->rows_csv.empty()) {
      const std::filesystem::path dir = std::filesystem::path(a->rows_csv).parent_path();
      if (!dir.empty()) ensure_writable_dir(dir);
      rows_csv.emplace(a->rows_csv);
      opt.rows_csv = &rows_csv->stream();
    }
    std::ostringstream case_times;
    if (!a->case_times.empty()) {
      const std::filesystem::path dir = std::filesystem::path(a->case_times).parent_path();
      if (!dir.empty()) ensure_writable_dir(dir);
      case_times << case_times_header << '\n';
      opt.case_times = &case_times;
    }
    opt.progress = progress_bar(!a->quiet);
    const auto t0 = std::chrono::steady_clock::now();
    // The property checks fork (parallel_check.hpp): before the suite's threads.
    // A shard checks the properties of its share of the kernels.
    const std::vector<const Kernel*> property_kernels = kernels_of_shard(kernels, shard);
    KernelVerdicts verdicts;
    if (a->property_tests > 0) {
      if (!a->quiet) fmt::print(stderr, "checking properties ({} cases each, {} processes)...\n", a->property_tests, opt.jobs);
      verdicts = property_verdicts(property_kernels, a->property_tests, a->seed, opt.jobs);
    }
    Report report = run_suite(kernels, opt);
    attach_property_verdicts(report, verdicts);
    if (!shard.whole() && a->property_tests > 0)
      for (const Kernel* k : property_kernels) report.shard.properties_of.push_back(k->name);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto files = report_files(report, out);
    if (!a->case_times.empty()) files.emplace_back(a->case_times, case_times.str());
    write_files_atomically(files);
    if (rows_csv) rows_csv->commit();
    if (!a->quiet) {
      print_summary(report);
      // A kernel without a contract is violated by the floor alone: say which.
      // What broke: a contract (or a masked-row policy, a kernel's failure),
      // or only the floor and the reference rule.
      const bool contract = std::any_of(report.kernels.begin(), report.kernels.end(), [](const KernelSummary& k) {
        return k.contract_violations > 0 || k.policy_violations > 0;
      });
      const bool floor = std::any_of(report.kernels.begin(), report.kernels.end(), [](const KernelSummary& k) {
        return k.floor_violations > 0 || k.reference.violations > 0;
      });
      std::uint64_t unchecked = 0;
      for (const KernelSummary& k : report.kernels) unchecked += k.unbounded_rows;
      const std::string held = unchecked == 0 ? "every declared contract held"
                                              : fmt::format("every declared contract held where it has a finite "
                                                            "bound ({} rows unchecked: UNCHECKED above)",
                                                            unchecked);
      const std::string headline = report.all_held() ? held
                                   : contract        ? "CONTRACT VIOLATED"
                                   : floor           ? "FLOOR VIOLATED (the floor or the reference rule)"
                                                     : "PROPERTY FAILED";
      fmt::print("\n{}", wrapped(fmt::format("{}{}{} in {:.1f} s with {} jobs; oracle {}: {} of {} rows needed MPFR; "
                                             "wrote report.json, report.md and report.html in {}{}",
                                             headline,
                                             shard.whole() ? "" : fmt::format(" (shard {}/{}: its cases only; "
                                                                              "`softcheck report --merge` joins the shards)",
                                                                              shard.index, shard.count),
                                             !report.budget.present()
                                                 ? ""
                                                 : fmt::format(" (budget {} s: {} of {} cases, modelled {:.1f} s{})",
                                                               report.budget.seconds, report.budget.cases_run,
                                                               report.budget.cases,
                                                               report.budget.modelled_seconds +
                                                                   (report.budget.seconds - report.budget.suite_seconds),
                                                               report.budget.skipped.empty()
                                                                   ? ""
                                                                   : "; report.md lists those skipped"),
                                             secs, opt.jobs, report.oracle.mode, report.oracle.mpfr_rows,
                                             report.oracle.rows, out.string(),
                                             a->rows_csv.empty() ? "" : ", and the rows in " + a->rows_csv)));
    }
    return report.all_held() ? exit_ok : exit_violation;
  };
}

}  // namespace softcheck::cli
