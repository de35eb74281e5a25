// `softcheck run`: every selected kernel over the built-in input families x
// sizes x temperatures, compared with the oracle (benchdnn's shape: fill,
// reference, compare, report).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "softcheck/fp_env.hpp"
#include "softcheck/input_families.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/report.hpp"
#include "softcheck/shard.hpp"

namespace softcheck {

struct SuiteCase {
  const InputFamily* family = nullptr;
  std::int64_t cols = 0;
  double temperature = 1;
  std::int64_t rows = 0;
};

struct SuiteSelection {
  std::string suite = "quick";             // quick | full
  std::vector<std::string> families;       // empty: all
  std::vector<std::int64_t> sizes;         // empty: the suite's sizes
  std::vector<double> temperatures;        // empty: the suite's temperatures
  std::vector<std::string> ops;            // empty: every op of each kernel; else those only (op names)
};

// Throws std::invalid_argument for an unknown suite or family, or a size or
// temperature out of range. With no family selected, the softmax families
// (input_families) when `softmax_ops`, the attention families
// (attention_input_families) when `attention_ops`: run_suite asks for
// those its kernels' ops take. An attention family's rows stop at
// attention_max_elements keys x head dimension unless --size asks for more
// (each row costs the MPFR oracle that many products).
std::vector<SuiteCase> build_suite(const SuiteSelection& sel, bool softmax_ops = true, bool attention_ops = false);
inline constexpr std::int64_t attention_max_elements = std::int64_t{1} << 22;

// Throws std::invalid_argument when a temperature of `sel` is not a normal
// value of some available kernel's format (temperature_fits_format: a
// subnormal T, one that rounds to 0 or overflows there). The contracts and the
// properties are stated for such temperatures only, and `repro` answers "not
// applicable" outside them: `run` and `gate` refuse them rather than give a
// verdict the repro line cannot reproduce.
void check_temperatures(const std::vector<const Kernel*>& kernels, const SuiteSelection& sel);

// Which oracle computes the exact rows (docs/oracle.md, "Tiered oracle"):
// tiered = the fast tiers (double, then long double) with rigorous bounds,
// falling back to MPFR for the rows they cannot decide; mpfr = exact_row for
// every row.
enum class OracleMode { tiered, mpfr };
constexpr std::string_view name(OracleMode m) { return m == OracleMode::tiered ? "tiered" : "mpfr"; }

struct RunOptions {
  SuiteSelection selection;
  std::uint64_t seed = 1;
  unsigned oracle_bits = 256;
  unsigned jobs = 1;
  OracleMode oracle = OracleMode::tiered;
  // The reference rule (report.hpp ReferenceRuleSettings): which outputs it
  // judges, its k and slack.
  ReferenceRuleSettings reference_rule;
  std::function<void(std::size_t done, std::size_t total)> progress;  // may be empty
  // When set: wall seconds per report entry (in report order), the time of
  // the kernel calls that produced it plus its comparison with the oracle.
  // Timings never enter the Report (same seed, same report.json); the gate's
  // --junit-times puts them in its JUnit file.
  std::vector<double>* entry_seconds = nullptr;
  // When set: one CSV line per judged row and report entry (rows_csv_header's
  // columns), written in case order (the same bytes for any --jobs), as
  // each case's predecessors are done.
  std::ostream* rows_csv = nullptr;
  // The floating-point environment of the kernels' calls (fp_env.hpp); the
  // oracle, the judge and the reference rule's stable kernels run in the
  // default one. A kernel that requires the default environment
  // (Kernel::requires_default_fp_env) is not run in another: its entries
  // say so (status unavailable).
  FpEnv fp_env = FpEnv::standard;
  // Run only this shard's cases (assign_to_shards over the cases' costs);
  // its report then carries the state `merge_shard_reports` needs.
  Shard shard;
  // When set: one CSV line per case run (case_times_header's columns), in
  // case order, with its modelled seconds and the CPU seconds its thread
  // spent on it (measured: they differ from run to run and never enter the
  // report). The data the cost model is fitted to (scripts/fit-cost-model.py).
  std::ostream* case_times = nullptr;
  // `run --budget` (seconds > 0): run only the cheapest cases whose
  // modelled_case_seconds sum to at most suite_seconds (the budget less
  // modelled_overhead_seconds), and list the others in the
  // report (Report::budget). Not with a shard.
  struct Budget {
    double seconds = 0, suite_seconds = 0;
  } budget;
};

// softcheck's cost model (docs/scaling.md, "A time budget"): seconds on the
// project's 2-core machine, from each case's shape and its kernels' count,
// never from a clock, so that a budget keeps the same cases everywhere. Its
// constants were fitted to per-case CPU times (docs/measurements.md).
struct CaseWork {
  std::size_t outputs = 0;         // outputs judged on each row
  std::size_t sparse_outputs = 0;  // of those, sparse ops' (their own exact rows)
  bool mpfr_rows = false;          // MPFR computes the exact rows (an output without a fast tier, or --oracle mpfr)
};
double modelled_case_seconds(const SuiteCase& c, Format f, const CaseWork& work);
// What `run` spends besides the cases: start-up, the report files and the
// property checks (property_tests cases per property) of kernels.
double modelled_overhead_seconds(const std::vector<const Kernel*>& kernels, int property_tests);
// Throws std::invalid_argument when opt.budget is set with a shard, or its
// figures are not finite with the cases' share in [0, seconds].
void check_budget(const RunOptions& opt);

// The columns of RunOptions::case_times: the case, head dimension (1 off the
// attention families), the CaseWork figures, modelled and measured seconds.
inline constexpr std::string_view case_times_header =
    "format,family,n,temperature,rows,head_dim,outputs,sparse_outputs,mpfr_rows,modelled_seconds,cpu_seconds";

// The columns of RunOptions::rows_csv (docs/report-schema.md, "rows.csv"):
// the report entry (kernel, output, format), the case (family, n, T), the
// row's index in its case, its shape figures R and M, the error in the
// output's metric and unit, the contract's bound (empty without one), the
// reference rule's error / allowed (empty where it did not judge the row),
// the verdict, and the line that reruns the row.
inline constexpr std::string_view rows_csv_header =
    "kernel,output,format,family,n,temperature,row,R,M,max_error,unit,bound,reference_ratio,verdict,repro";

// Seed of one case's rows: depends on the run seed, family, format, size and
// temperature only, so a kernel's rows do not change with the selection.
std::uint64_t case_seed(std::uint64_t seed, const SuiteCase& c, Format f);

// Throws std::invalid_argument unless scope is no_contract, all or off, k is
// finite and >= 1, and slack is finite and >= 0.
void check_reference_rule(const ReferenceRuleSettings& rule);

// A kernel whose run throws KernelFailure (softcheck/kernel_failure.hpp) is
// recorded, the others go on: every row of that case counts as a contract
// violation and the kernel's worst case has got = NaN and exact =
// kernel_failure_prefix + the message. Any other exception ends the run.
Report run_suite(const std::vector<const Kernel*>& kernels, const RunOptions& opt);

inline constexpr std::string_view kernel_failure_prefix = "kernel failed: ";

// The report of the whole run from the reports of its shards (any order):
// byte for byte the report.json the unsharded run writes with the same
// options. Throws std::invalid_argument when they are not the N shards of
// one run: a shard missing or given twice, a report that is not a shard,
// shards of different runs (settings, kernels or cases), or different N.
// Property verdicts come from the shard that checked each kernel
// (ShardInfo::properties_of).
Report merge_shard_reports(const std::vector<Report>& shards);

// Hex-exact text of a row ("0x1.8p+1,-inf,..."), for inputs and repro lines.
std::string hex_row(const double* x, std::int64_t n);

}  // namespace softcheck
