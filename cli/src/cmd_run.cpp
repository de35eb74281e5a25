// softcheck run: the built-in suite against the oracle, with reports.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "commands.hpp"
#include "run_suite.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::cli {

namespace {

struct RunArgs {
  std::vector<std::string> impls;
  std::string suite = "quick";
  std::uint64_t seed = 1;
  std::string out = "reports/out";
  unsigned jobs = 0;
  unsigned oracle_bits = 256;
  std::vector<std::string> families;
  std::vector<std::int64_t> sizes;
  std::vector<double> temperatures;
  bool quiet = false;
};

// Kernels named by --impl (built-in or test-only), or every built-in one.
std::vector<const Kernel*> select_kernels(const std::vector<std::string>& names) {
  std::vector<const Kernel*> ks;
  if (names.empty()) {
    for (const Kernel& k : builtin_kernels()) ks.push_back(&k);
    return ks;
  }
  for (const std::string& n : names) {
    const Kernel* k = find_kernel(n);
    if (!k) throw std::invalid_argument("unknown kernel '" + n + "' (see `softcheck list`)");
    if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  }
  return ks;
}

std::string fmt_num(double v) { return fmt::format("{:.3g}", v); }

void print_summary(const Report& r) {
  fmt::print("{:<22} {:<11} {:>6} {:>10} {:>10} {:>8} {:>8} {}\n", "kernel", "op", "cases", "max ULP",
             "mean ULP", "max bits", "NaN/inf", "contract");
  for (const KernelSummary& k : r.kernels) {
    std::string verdict = k.status == "held"          ? "held"
                          : k.status == "violated"    ? "VIOLATED"
                          : k.status == "unavailable" ? "unavailable: " + k.unavailable_reason
                                                      : "none";
    if (k.status != "unavailable" && k.nonfinite > 0) verdict += "  FLAGGED: NaN/inf on finite input";
    if (k.policy_violations > 0) verdict += fmt::format("  masked-row policy broken in {} rows", k.policy_violations);
    fmt::print("{:<22} {:<11} {:>6} {:>10} {:>10} {:>8} {:>8} {}\n", k.kernel, k.op, k.cases,
               fmt_num(k.max_ulp), fmt_num(k.mean_ulp), fmt_num(k.max_bits), k.nonfinite, verdict);
  }
}

}  // namespace

Command add_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Run kernels over the built-in input families and compare with the oracle");
  auto a = std::make_shared<RunArgs>();
  sub->add_option("--impl", a->impls, "Kernel to run (repeatable; default: every built-in kernel)");
  sub->add_option("--suite", a->suite, "quick (under a minute on 2 cores) or full")->check(CLI::IsMember({"quick", "full"}));
  sub->add_option("--seed", a->seed, "Seed of the input rows; same seed, same report.json byte for byte");
  sub->add_option("--out", a->out, "Directory for report.json and report.md")->capture_default_str();
  sub->add_option("--jobs", a->jobs, "Worker threads (default: all cores); reports are identical for any value");
  sub->add_option("--oracle-bits", a->oracle_bits, "MPFR working precision in bits")->check(CLI::Range(64u, 4096u))->capture_default_str();
  sub->add_option("--family", a->families, "Only this input family (repeatable; see `softcheck list --families`)");
  sub->add_option("--size", a->sizes, "Only this row length (repeatable)");
  sub->add_option("--temperature", a->temperatures, "Only this temperature (repeatable)");
  sub->add_flag("--quiet", a->quiet, "No progress and no table; exit status and files only");
  return [a] {
    const std::vector<const Kernel*> kernels = select_kernels(a->impls);
    RunOptions opt;
    opt.selection = {a->suite, a->families, a->sizes, a->temperatures};
    build_suite(opt.selection);  // validate before touching the output directory
    opt.seed = a->seed;
    opt.oracle_bits = a->oracle_bits;
    opt.jobs = a->jobs ? a->jobs : std::max(1u, std::thread::hardware_concurrency());
    const std::filesystem::path out = a->out;
    ensure_writable_dir(out);  // fail before the run, not after it
    const bool tty = !a->quiet && ::isatty(STDERR_FILENO);
    if (tty)
      opt.progress = [](std::size_t done, std::size_t total) {
        fmt::print(stderr, "\r{}/{} cases", done, total);
        if (done == total) fmt::print(stderr, "\n");
      };
    const auto t0 = std::chrono::steady_clock::now();
    const Report report = run_suite(kernels, opt);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_files_atomically({{out / "report.json", to_json(report)}, {out / "report.md", to_markdown(report)}});
    if (!a->quiet) {
      print_summary(report);
      fmt::print("\n{} in {:.1f} s with {} jobs; wrote {} and {}\n",
                 report.all_held() ? "every declared contract held" : "CONTRACT VIOLATED", secs,
                 opt.jobs, (out / "report.json").string(), (out / "report.md").string());
    }
    return report.all_held() ? exit_ok : exit_violation;
  };
}

}  // namespace softcheck::cli
