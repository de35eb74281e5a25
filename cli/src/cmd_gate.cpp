// softcheck gate: a run compared with a stored baseline (docs/gate.md).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "commands.hpp"
#include "kernel_selection.hpp"
#include "property_verdicts.hpp"
#include "softcheck/run_suite.hpp"
#include "softcheck/gate.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::cli {

namespace {

struct GateArgs {
  std::string baseline, report, junit;
  double margin = 0.10;
  double slack_ulp = 0.5;
  double slack_ratio = 0.1;
  double bias_z_growth = 3;
  std::vector<std::string> reference_rules;
  unsigned jobs = 0;
  bool quiet = false;
  bool junit_times = false;
  PluginArgs plugins;
};

// The baseline's kernels that this build (and the --plugin libraries) knows,
// each once, in baseline order; the others are reported missing by the gate.
std::vector<const Kernel*> baseline_kernels(const Report& baseline, const KernelSet& known) {
  std::vector<const Kernel*> ks;
  for (const KernelSummary& s : baseline.kernels)
    if (const Kernel* k = known.find(s.kernel); k && std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  return ks;
}

// Without --report: rerun exactly the inputs the baseline records, and its
// property verdicts with the same per-property budget and seed.
Report rerun_baseline_suite(const Report& baseline, const GateArgs& a, gate::Timings* timings) {
  const KernelSet known(a.plugins);
  RunOptions opt;
  // The cases the baseline's run evaluated: its selection as asked for
  // (older reports: the families, sizes and temperatures it ran).
  if (baseline.selection_recorded)
    opt.selection = {baseline.suite, baseline.selected_families, baseline.selected_sizes,
                     baseline.selected_temperatures, baseline.selected_ops};
  else
    opt.selection = {baseline.suite, baseline.families, baseline.sizes, baseline.temperatures, {}};
  if (!baseline.reference_rule.scope.empty()) opt.reference_rule = baseline.reference_rule;
  opt.seed = baseline.seed;
  opt.oracle_bits = baseline.oracle_bits;
  // The baseline's floating-point environment (reports before it: the default).
  opt.fp_env = parse_fp_env(baseline.fp_env).value_or(FpEnv::standard);
  opt.jobs = a.jobs ? a.jobs : std::max(1u, std::thread::hardware_concurrency());
  opt.progress = progress_bar(!a.quiet);
  // A budget run's cases: the same budget keeps the same ones (the cost
  // model never reads a clock); the skipped lists are compared after the rerun.
  opt.budget = {baseline.budget.seconds, baseline.budget.suite_seconds};
  const std::vector<const Kernel*> kernels = baseline_kernels(baseline, known);
  if (kernels.empty())
    throw std::invalid_argument("no kernel of the baseline exists in this build (a plugin's kernels need --plugin)");
  // The property checks fork (parallel_check.hpp): before the suite's threads.
  KernelVerdicts verdicts;
  if (const int tests = property_tests_of(baseline); tests > 0)
    verdicts = property_verdicts(kernels, tests, baseline.seed, opt.jobs);
  std::vector<double> seconds;
  if (timings != nullptr) opt.entry_seconds = &seconds;
  const auto start = std::chrono::steady_clock::now();
  Report report = run_suite(kernels, opt);
  if (timings != nullptr) {
    timings->total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (std::size_t i = 0; i < report.kernels.size() && i < seconds.size(); ++i)
      timings->entry_seconds[{report.kernels[i].kernel, report.kernels[i].label()}] = seconds[i];
  }
  attach_property_verdicts(report, verdicts);
  return report;
}

gate::Options gate_options(const GateArgs& a) {
  gate::Options opt;
  opt.margin = a.margin;
  opt.slack_ulp = a.slack_ulp;
  opt.slack_ratio = a.slack_ratio;
  opt.bias_z_growth = a.bias_z_growth;
  for (const std::string& r : a.reference_rules) opt.reference_rules.push_back(gate::parse_reference_rule(r));
  return opt;
}

}  // namespace

Command add_gate(CLI::App& app) {
  auto* sub = app.add_subcommand("gate", "Compare a run with a stored baseline report; fail on regressions");
  auto a = std::make_shared<GateArgs>();
  sub->add_option("--baseline", a->baseline, "Baseline report.json")->required();
  sub->add_option("--report", a->report,
                  "Report to check (default: rerun the baseline's suite, seed, inputs and kernels now)");
  sub->add_option("--margin", a->margin, "Relative growth of max ULP tolerated over the baseline")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  sub->add_option("--slack-ulp", a->slack_ulp, "Absolute growth of max ULP tolerated on top of the margin")
      ->check(CLI::Range(0.0, 1e12))
      ->capture_default_str();
  sub->add_option("--slack-ratio", a->slack_ratio,
                  "Per (family, row length) cell: growth tolerated as a fraction of the cell's contract bound "
                  "(error/bound by this, max and mean ULP by this x bound; docs/gate.md)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  sub->add_option("--bias-z-growth", a->bias_z_growth,
                  "Bias check: fail where the sign test's |z| is >= 5 and this much above the baseline's")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  sub->add_option("--reference-rule", a->reference_rules,
                  "KERNEL:K: every kernel with a contract in KERNEL's format and op must have max ULP <= K x "
                  "KERNEL's + slack (repeatable)");
  sub->add_option("--junit", a->junit, "Write JUnit XML here (one testcase per kernel, op and check)");
  sub->add_flag("--junit-times", a->junit_times,
                "Put measured wall seconds in the JUnit file: the rerun's total on the test suite, each kernel and "
                "op's on its `contract` testcase (the file then differs from run to run; needs the rerun, not "
                "--report)");
  sub->add_option("--jobs", a->jobs,
                  "Worker threads (and property-check processes) when the suite is rerun (default: all cores)");
  add_plugin_options(*sub, a->plugins);
  sub->add_flag("--quiet", a->quiet, "No progress and no table; exit status (and --junit) only");
  sub->footer("Exit status: 0 no regression, 1 a regression (named in the output), 2 harness error: a missing, "
              "malformed or foreign file, schema mismatch, a bad option (nothing is written).");
  return [a] {
    const gate::Options opt = gate_options(*a);
    const Report baseline = read_report(a->baseline);
    if (!a->junit.empty()) {
      // The JUnit file must not replace what the gate reads: its baseline,
      // the report or a plugin library.
      std::vector<std::filesystem::path> inputs{a->baseline};
      if (!a->report.empty()) inputs.emplace_back(a->report);
      for (const std::string& p : a->plugins.paths) inputs.emplace_back(p);
      const std::filesystem::path j = a->junit;
      check_outputs_against_inputs(inputs, {j});
      ensure_writable_dir(j.parent_path().empty() ? std::filesystem::path(".") : j.parent_path());
    }
    if (a->junit_times && (a->junit.empty() || !a->report.empty()))
      throw std::invalid_argument("--junit-times needs --junit and the gate's own rerun (no --report): only the "
                                  "rerun is timed");
    gate::Timings timings;
    // A shard's report holds some of the run's cases: gated alone it would pass
    // on what it did not run.
    const auto whole_run = [](const Report& r, const std::string& file) {
      if (r.shard.present())
        throw std::invalid_argument(fmt::format(
            "{} is shard {}/{} of a run, not the whole run: merge the shards (`softcheck report --merge "
            "SHARD.json... --out DIR`) and gate DIR/report.json",
            file, r.shard.index, r.shard.count));
    };
    whole_run(baseline, a->baseline);
    const Report report = a->report.empty() ? rerun_baseline_suite(baseline, *a, a->junit_times ? &timings : nullptr)
                                            : read_report(a->report);
    if (!a->report.empty()) whole_run(report, a->report);
    // A run that skipped other cases than the baseline (`run --budget`) would
    // pass on what it did not run, or fail on what the baseline did not.
    if (baseline.budget.seconds != report.budget.seconds || baseline.budget.skipped != report.budget.skipped)
      throw std::invalid_argument(fmt::format(
          "{} and {} ran different cases (`run --budget`: {} against {}, {} against {} cases skipped); gate a run of "
          "the baseline's budget with this softcheck (its cost model may have changed)",
          a->baseline, a->report.empty() ? "the rerun" : a->report,
          baseline.budget.present() ? fmt::format("{} s", baseline.budget.seconds) : "none",
          report.budget.present() ? fmt::format("{} s", report.budget.seconds) : "none", baseline.budget.skipped.size(),
          report.budget.skipped.size()));
    // A rerun on other rows than the baseline's (an input family changed
    // between the two softchecks) compares cells of different inputs: no
    // verdict either way.
    if (!baseline.inputs_digest.empty() && !report.inputs_digest.empty() &&
        baseline.inputs_digest != report.inputs_digest)
      throw std::invalid_argument(fmt::format(
          "{} and {} ran on different input rows (inputs {} against {}): the input families changed between the "
          "softchecks that wrote them; write a new baseline with this softcheck (`softcheck run` with the "
          "baseline's options) and review its differences before gating on it",
          a->baseline, a->report.empty() ? "the rerun" : a->report, baseline.inputs_digest, report.inputs_digest));
    // Either side may come from a softcheck before the digest: say which,
    // since the check above then did not happen.
    for (const auto& [side, name] : {std::pair{&baseline, a->baseline}, std::pair{&report, a->report}})
      if (side->inputs_digest.empty() && !name.empty() && !a->quiet)
        fmt::print(stderr,
                   "gate: note: {} records no inputs digest (written before softcheck recorded one): whether the "
                   "two runs judged the same rows is not checked\n",
                   name);
    const gate::Result result = gate::compare(baseline, report, opt);
    if (!a->junit.empty())
      write_files_atomically({{a->junit, gate::junit_xml(result, a->junit_times ? &timings : nullptr)}});
    if (!a->quiet) fmt::print("{}", gate::diff_table(result));
    return result.passed() ? exit_ok : exit_violation;
  };
}

}  // namespace softcheck::cli
