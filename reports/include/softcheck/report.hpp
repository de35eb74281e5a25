// The run report: one data model, written as report.json (the single source,
// schema documented in docs/report-schema.md), report.md and report.html, and
// read back from report.json. Files are written atomically: all of a report
// or none of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/op.hpp"

namespace softcheck {

inline constexpr int report_schema_version = 1;

// The row that gave a kernel its largest error relative to its bound.
struct WorstCase {
  bool present = false;
  std::string family;
  std::int64_t cols = 0;
  double temperature = 1;
  std::int64_t row = 0;      // row index within the case
  std::int64_t element = 0;  // element index within the row
  double got = 0;            // kernel's output (NaN/inf allowed)
  std::string exact;         // oracle value, decimal, 21 digits
  double ulp = 0;
  double bound = 0;          // +inf: bound vacuous or no contract
  std::string input;         // the row as hex floats (only rows of <= 64 entries)
  std::string repro;         // command line that reruns exactly that case
};

// Where an output's errors lie beyond their maximum (docs/report-schema.md,
// "Bias and distribution"). Errors are in the output's metric (ULP, or units
// of u for the absolute ones); r the kernel's output, v the exact value.
struct ErrorDistribution {
  std::uint64_t measured = 0;     // outputs measured (both finite)
  double mean_signed_ulp = 0;     // mean of the signed error (r - v) / ulp
  double mean_signed_rel = 0;     // mean of (r - v) / |v| over the measured outputs with v != 0
  // Outputs at least 1/2 (ulp) above / below the exact value: those that are
  // not correctly rounded, with the side they missed on.
  std::uint64_t above = 0, below = 0;
  // Percentiles of |error| and of |error| / bound (outputs with a contract,
  // else 0): each an error some output had, within 1/32 (3.1 %) above the true
  // percentile (suite/src/quantile_sketch.hpp).
  double p50_ulp = 0, p99_ulp = 0, max_ulp = 0;
  double p50_ratio = 0, p99_ratio = 0, max_ratio = 0;
  // The sign test of the bias check, over rows (a row's outputs share one
  // normaliser's rounding, so they are not independent samples): rows with
  // more outputs above than below, and the reverse.
  std::uint64_t rows_above = 0, rows_below = 0;
  // (rows_above - rows_below) / sqrt(rows_above + rows_below): N(0, 1) for a
  // kernel that misses on either side equally often; 0 without such rows.
  double bias_z() const;
  // |bias_z| >= bias_z_threshold: two-sided p < 5.7e-7 under that null.
  bool biased() const;
};
inline constexpr double bias_z_threshold = 5;
// The sign test's statistic over rows: (above - below) / sqrt(above + below),
// 0 without such rows (ErrorDistribution::bias_z, the gate's cells).
double sign_test_z(std::uint64_t rows_above, std::uint64_t rows_below);

// One (family, row length) cell of an entry: what the gate compares cell by
// cell (docs/gate.md). Temperatures are merged.
struct CellSummary {
  std::string family;
  std::int64_t cols = 0;
  std::uint64_t rows = 0, measured = 0, nonfinite = 0, violations = 0;
  double max_ulp = 0, mean_ulp = 0, max_ratio = 0, mean_signed_ulp = 0;
  std::uint64_t rows_above = 0, rows_below = 0;
  // The smallest bound (ULP) over the cell's rows: the scale of the gate's
  // per-cell slack; +inf without a contract.
  double bound = std::numeric_limits<double>::infinity();
};

struct FamilySummary {
  std::string family;
  std::uint64_t rows = 0;
  double max_ulp = 0;
  std::uint64_t nonfinite = 0;
  std::uint64_t violations = 0;  // rows breaking the contract, the masked-row policy or the floor
  ErrorDistribution distribution;
};

// The reference rule (docs/gating-your-kernel.md, "The reference rule"),
// FlashAttention's test rule with the exact oracle as the reference: on every
// row, max_i |y_i - g_i| <= k max_i |r_i - g_i| + slack u max(1, max_i |r_i|),
// r the output of softcheck's stable kernel of the same format on the row.
struct ReferenceRuleSettings {
  std::string scope = "no_contract";  // no_contract | all | off: the outputs it judges
  // Defaults: FlashAttention's k = 2; a slack of 4 u, the least power of two
  // above which every correct built-in algorithm stays under the rule with
  // margin (max ratio 0.69 at 4 u, 1.74 at 1 u: docs/measurements.md).
  double k = 2, slack = 4;
};

// The reference rule's verdict on one entry.
// The `softcheck run` command that reruns one (family, row length) of a
// kernel: loaded as it was (load_options, empty for a built-in), at the run's
// suite, temperatures and seed, with its reference rule where it is not the
// default. The repro line of run's worst rows and of the gate's cells.
std::string run_repro_command(std::string_view load_options, std::string_view kernel, std::string_view suite,
                              std::string_view family, std::int64_t cols, const std::vector<double>& temperatures,
                              std::uint64_t seed, const ReferenceRuleSettings& rule);

struct ReferenceCheck {
  std::string kernel;       // the reference kernel; empty when the rule did not apply
  std::string not_applied;  // why it did not (an opt-out's reason, no reference kernel ...)
  std::uint64_t rows = 0, violations = 0;
  double max_ratio = 0;  // max over the rows of error / allowed
  bool present() const { return !kernel.empty() || !not_applied.empty(); }
};

// The conditional mode of a backward op's dx (docs/gradients.md): dx against
// the exact backward of the kernel's own forward output y, in the same scaled
// metric, so that the backward's error shows apart from the forward's.
// Measured, never gated.
struct ConditionalError {
  bool present = false;        // a softmax / log-softmax gradient entry
  std::uint64_t rows = 0;      // rows whose y could feed the backward
  std::uint64_t broken = 0;    // of them: a NaN/inf or wrong special value in dx
  double max_error = 0;        // max over the other rows (units of the entry's metric)
};

// The probability mass of a probability output (softmax, the sparse ops):
// per row with every output finite, sum_j y_j - 1 (the exact row sums to 1).
// A kernel can hold every output within its bound and still lose mass:
// P cast to E4M3 drops every probability below 2^-10 (docs/low-precision.md).
// Measured, never gated.
struct MassSummary {
  std::uint64_t rows = 0;   // rows measured (0: not a probability output)
  double max_lost = 0;      // max over the rows of 1 - sum y (>= 0)
  double max_gained = 0;    // max over the rows of sum y - 1 (>= 0)
  double mean_error = 0;    // mean of sum y - 1 (signed)
};

// Verdict of one property (properties/) for one (kernel, op).
struct PropertySummary {
  std::string property;
  std::string verdict;  // passed | failed | not_claimed | skipped
  std::string detail;   // why not claimed, or the failure (measured vs allowed)
  std::string repro;    // for failures: the command that replays the shrunk case
  std::uint64_t tests = 0;
};

// Errors of the rows that fall in one bin of a sweep: one row length, one
// temperature, or one decade of input magnitude max |x/T|.
struct ErrorBin {
  double key = 0;  // cols, temperature or decade (cols and decade are integers)
  std::uint64_t rows = 0, measured = 0, nonfinite = 0;
  double max_ulp = 0, mean_ulp = 0;  // over the measured elements of those rows
};

// ULP error histogram in log2 bins: bin 0 holds [0, 1/2), bin i >= 1 holds
// [2^(i-2), 2^(i-1)), and the last bin is open above.
inline constexpr std::size_t ulp_histogram_bins = 64;
std::size_t ulp_histogram_bin(double ulp);          // bin of a (non-negative) error
double ulp_histogram_lower_edge(std::size_t bin);   // 0, 0.5, 1, 2, 4, ...

// Decade of a row's input magnitude m = max |x_i / T| over its finite entries:
// floor(log10 m), clamped to [magnitude_min_decade, magnitude_max_decade] (so
// the lowest bin holds every smaller m, 0 included, and the highest every
// larger one: past 1e10 a softmax row is one-hot whatever the magnitude).
inline constexpr int magnitude_min_decade = -3;
inline constexpr int magnitude_max_decade = 10;
int magnitude_decade(double max_abs_scaled);

// What the op table says about a report's op name (an unknown name: false).
// Sparse ops' entries carry false_zeros / false_nonzeros.
inline bool is_sparse_op_name(std::string_view op) {
  const std::optional<Op> o = parse_op(op);
  return o && is_sparse(*o);
}
// The op table's operand for a report entry's output: the op's output named
// `output`, or its first when `output` is empty; nullptr when there is none.
inline const Operand* output_operand(std::string_view op, std::string_view output) {
  const std::optional<Op> o = parse_op(op);
  if (!o) return nullptr;
  for (const Operand& out : spec(*o).out)
    if (output.empty() || out.name == output) return &out;
  return nullptr;
}
// Outputs with Blanchard-Higham-Higham's normwise error (the others print n/a).
inline bool has_normwise(std::string_view op, std::string_view output = {}) {
  const Operand* o = output_operand(op, output);
  return o && o->normwise;
}
// Outputs whose error figures (the "ULP" columns) are in metric m: absolute
// errors in units of u, or the scaled error of a gradient.
inline bool has_metric(Metric m, std::string_view op, std::string_view output = {}) {
  const Operand* o = output_operand(op, output);
  return o && o->metric == m;
}

// "lse, entropy and softmax_lse:lse": the outputs whose error figures are in
// metric m (op table), for the reports' footnotes.
inline std::string metric_outputs(Metric m) {
  std::vector<std::string> labels;
  for (const OpSpec& o : op_table)
    for (std::size_t i = 0; i < o.out.size(); ++i)
      if (o.out[i].metric == m) labels.push_back(output_label(o.op, i));
  std::string s;
  for (std::size_t i = 0; i < labels.size(); ++i)
    s += (i == 0 ? "" : i + 1 == labels.size() ? " and " : ", ") + labels[i];
  return s;
}

// "cross_entropy:dx (s_j = p_j + [j = t]), ...": the scaled outputs with
// their scales, for the reports' footnote.
inline std::string scaled_metric_outputs() {
  std::string s;
  for (const OpSpec& o : op_table)
    for (std::size_t i = 0; i < o.out.size(); ++i)
      if (o.out[i].metric == Metric::scaled)
        s += (s.empty() ? "" : ", ") + output_label(o.op, i) + " (" + std::string(scale_formula(o.out[i].kind)) + ")";
  return s;
}

struct KernelSummary {
  std::string kernel, algorithm, format, op, masked_policy, description;
  // The narrower format the outputs are quantised to and measured in
  // (Kernel::quantised_outputs: "e4m3"); empty when they are in `format`.
  std::string output_format;
  // The MX format the rows are read as (Kernel::mx_inputs: "mxfp8_e4m3");
  // empty when they are `format`'s values.
  std::string input_format;
  // "f32", "f32->e4m3" for quantised outputs, "mxfp8_e4m3->f32" for MX
  // inputs: the format column of the tables.
  std::string format_label() const { return softcheck::format_label(format, output_format, input_format); }
  // The output this entry judges, for an op with several (softmax_lse: "y"
  // or "lse"; op table names); empty for an op with one.
  std::string output;
  bool contract_declared = false;
  std::string contract_formula;  // "none" when not declared
  std::string contract_why;
  std::string status;  // held | violated | no_contract | unavailable
  std::string unavailable_reason;
  // The options that load a plugin kernel ("--plugin /abs/lib.so --isolate"),
  // for repro lines; empty for a built-in kernel.
  std::string load_options;
  std::uint64_t cases = 0, rows = 0, elements = 0, measured = 0;
  double max_ulp = 0, mean_ulp = 0, max_bits = 0, mean_bits = 0, max_rel = 0, max_normwise = 0;
  double max_bound_ratio = 0;  // max over rows of max_ulp / bound (contract kernels)
  // Rows where the contract's bound is infinite (K u >= 1): measured, not
  // checked, so "held" covers rows - unbounded_rows rows.
  std::uint64_t unbounded_rows = 0;
  std::uint64_t nonfinite = 0, special_mismatch = 0;
  // Sparse ops (docs/sparse.md): support mismatches against the oracle, counted
  // apart from the ULP error (measured where both put an entry on the support).
  // false_zeros: kernel 0, exact > 0; false_nonzeros: kernel > 0, exact 0.
  std::uint64_t false_zeros = 0, false_nonzeros = 0;
  std::uint64_t contract_violations = 0, policy_violations = 0, policy_rows = 0;
  // The floor (docs/gating-your-kernel.md) for an entry without a declared
  // contract: rows of the format with a NaN/inf output where the exact value
  // is finite (any makes the status "violated"), unless the kernel opted out
  // of that check (floor_opt_out: its reason).
  bool floor_checked = false;
  std::uint64_t floor_violations = 0;
  std::string floor_opt_out;
  ReferenceCheck reference;
  ConditionalError conditional;
  MassSummary mass;
  WorstCase worst;
  ErrorDistribution distribution;  // over every family
  std::vector<FamilySummary> by_family;
  std::vector<CellSummary> cells;  // (family, cols) in case order
  std::vector<PropertySummary> properties;  // empty when properties were not run
  // Sweeps for the plots (empty in reports written before they existed).
  std::vector<std::uint64_t> ulp_histogram;  // measured elements per bin, trailing empty bins dropped
  std::vector<ErrorBin> by_size, by_temperature, by_magnitude;  // keys ascending

  // "op", or "op:output" for one output of an op with several: how tables,
  // plots and the gate name the entry.
  std::string label() const { return output.empty() ? op : op + ":" + output; }
  // "N of R rows unchecked: ..." (unbounded_rows), the one wording that run's
  // notes, report.md, report.html and the gate's notes give.
  std::string unchecked_rows() const {
    return std::to_string(unbounded_rows) + " of " + std::to_string(rows) +
           " rows unchecked: the contract's bound is infinite there (K u >= 1)";
  }
};

// Throughput of one (kernel, op, shape) from `softcheck bench` (Google Benchmark).
struct BenchResult {
  std::string kernel, format, op;
  std::int64_t rows = 0, cols = 0;
  double items_per_second = 0;       // elements per second
  double bytes_per_second = 0;       // input + output bytes per second
  double copy_bytes_per_second = 0;  // memcpy of as many bytes, measured in the same run
  double copy_fraction() const {
    return copy_bytes_per_second > 0 ? bytes_per_second / copy_bytes_per_second : 0;
  }
  // Bytes of one call's input (f64 8, f32 4, f16/bf16 2 per element).
  std::int64_t input_bytes() const { return rows * cols * (format == "f64" ? 8 : format == "f32" ? 4 : 2); }
};

// The machine and settings of a bench run. Timings exist only here: a report
// without `softcheck bench` merged into it is deterministic.
struct Performance {
  bool present = false;
  std::string host;
  std::uint64_t cpus = 0;
  double mhz_per_cpu = 0;
  std::string library_build_type;  // Google Benchmark's own build (debug or release)
  double min_time = 0;             // seconds per benchmark
  std::vector<BenchResult> results;
};

// Which oracle produced the exact rows of a run (docs/oracle.md, "Tiered
// oracle"): rows = rows with a finite entry that were compared; mpfr_rows =
// those that needed the MPFR oracle (all of them in mode "mpfr"; in mode
// "tiered" the fast tier's fallbacks, f64 kernels' rows included).
struct OracleUse {
  std::string mode;  // tiered | mpfr; empty in reports written before it existed
  std::uint64_t rows = 0, mpfr_rows = 0;
};

// A shard's part of a run (docs/scaling.md): which shard, the kernels whose
// property verdicts it checked, and the suite's state (suite/src/suite_state.hpp,
// compact JSON) that merging the shards finishes into the whole run's
// report. Absent (count 1) from a whole run's report and a merged one.
struct ShardInfo {
  std::size_t index = 0, count = 1;
  std::vector<std::string> properties_of;
  std::string state;
  bool present() const { return count > 1; }
};

// `run --budget SECONDS` (docs/scaling.md, "A time budget"): the run kept
// the cheapest of its cases, by a fixed cost model (seconds on the project's
// 2-core machine, never a timing of this run), whose modelled seconds fit in
// the budget, and lists the cases it skipped. The same budget keeps the same
// cases on any machine and for any --jobs. Absent (seconds 0) without it.
struct SkippedCase {
  std::string family, format;
  std::int64_t cols = 0;
  double temperature = 1;
  bool operator==(const SkippedCase&) const = default;
};
struct BudgetInfo {
  double seconds = 0;             // asked for
  double suite_seconds = 0;       // the cases' share: seconds less the property checks' modelled seconds
  double modelled_seconds = 0;    // the modelled seconds of the cases that ran
  std::size_t cases_run = 0, cases = 0;  // (format, case) pairs run, of those selected
  std::vector<SkippedCase> skipped;      // the others, in suite order
  bool present() const { return seconds > 0; }
};

struct Report {
  std::string tool_version;
  std::string suite;
  std::uint64_t seed = 0;
  unsigned oracle_bits = 0;
  OracleUse oracle;
  std::vector<std::string> families;
  std::vector<std::int64_t> sizes;
  std::vector<double> temperatures;
  // What the run was asked for (each empty: the suite's own), so that `gate`
  // reruns exactly its cases (the quick suite drops (size, temperature) pairs
  // of its own sizes only). Absent from reports written before it existed.
  bool selection_recorded = false;
  std::vector<std::string> selected_families;
  std::vector<std::int64_t> selected_sizes;
  std::vector<double> selected_temperatures;
  std::vector<std::string> selected_ops;  // `run --op`: the ops run (empty: all; written only when not)
  // "fnv1a64:" and 16 hex digits: the input operands of every case that ran,
  // bit for bit (each case's FNV-1a 64 folded in suite order), so that `gate`
  // can tell a rerun on other rows (a changed input family, another
  // softcheck) from one on the baseline's. Empty in reports written before it
  // existed.
  std::string inputs_digest;
  ReferenceRuleSettings reference_rule;
  // The floating-point environment the kernels ran in (fp_env.hpp's names:
  // "default", "ftz", "daz", "ftz_daz", "upward", "downward",
  // "toward_zero"); absent from reports written before it existed (default).
  std::string fp_env = "default";
  std::vector<KernelSummary> kernels;
  Performance performance;  // merged by `softcheck bench`; absent from `softcheck run`
  ShardInfo shard;          // `run --shard`'s report only
  BudgetInfo budget;        // `run --budget`'s report only
  // Overall verdict: every kernel with a contract held it and every policy held.
  bool all_held() const;
};

std::string to_json(const Report& r);      // pretty, deterministic, newline-terminated
std::string to_markdown(const Report& r);  // human summary
std::string to_html(const Report& r);      // self-contained page with inline SVG plots

// The identifier report.md and report.html carry of the report.json they were
// rendered from, so a set mixed from two runs is detectable: "fnv1a64:" and
// FNV-1a 64 of the JSON text's bytes in 16 lower-case hex digits. Deterministic
// (no time, no PID), so the same seed still gives byte-identical files.
std::string report_digest(std::string_view report_json);
// The renderings for a report.json text already made (its digest, as above);
// the one-argument forms digest to_json(r) themselves.
std::string to_markdown(const Report& r, std::string_view json_digest);
std::string to_html(const Report& r, std::string_view json_digest);

// A report.json, or any of its parts, that this version cannot read.
struct ReportFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses report.json text with strict validation: schema name, schema_version,
// every required field and its type, the vocabulary of status and verdict
// fields. Throws ReportFormatError naming the offending field.
Report from_json(std::string_view text);
// Reads and parses a file; errors (missing, unreadable, malformed) are
// ReportFormatError prefixed with the path. Only regular files (symbolic links
// to them included) of at most max_report_bytes are read: a device, FIFO or
// socket is refused before it is opened, so /dev/zero or a FIFO without a
// writer cannot make the gate grow without bound or block.
inline constexpr std::uintmax_t max_report_bytes = std::uintmax_t{64} << 20;  // 64 MiB
Report read_report(const std::filesystem::path& file);

// bench.json: the performance part of a report on its own (docs/report-schema.md).
std::string performance_to_json(const Performance& p);
Performance performance_from_json(std::string_view text);

// The report files of a run directory: report.json, report.md, report.html,
// ready for write_files_atomically.
std::vector<std::pair<std::filesystem::path, std::string>> report_files(const Report& r,
                                                                        const std::filesystem::path& dir);

// Throws std::runtime_error with a clear message when the directory cannot be
// created or written. Call before a long run to fail early.
void ensure_writable_dir(const std::filesystem::path& dir);

// Throws std::invalid_argument, before anything is written, when an output
// would replace an input or another output: the same file by identity
// (st_dev and st_ino, so "./x", "d/../x", symbolic and hard links are caught),
// or, for an output that does not exist yet, the same canonical path. An
// output that exists and is not a regular file (a directory, /dev/null, a
// FIFO) is refused too: renaming over it would replace it.
void check_outputs_against_inputs(const std::vector<std::filesystem::path>& inputs,
                                  const std::vector<std::filesystem::path>& outputs);

// Writes every (path, content) pair or none: each goes to a temporary file
// ".NAME.tmp.PID" in the same directory first, then all are renamed into
// place. On any error the temporaries are removed and std::runtime_error is
// thrown. Concurrent writers into one directory (threads or processes) are
// serialised by an exclusive lock on ".softcheck.lock" there, held from before
// the first temporary until after the last rename, so a set of files always
// comes from one writer; SIGINT, SIGTERM and SIGHUP are blocked during the
// renames. Temporaries of this kind left by processes that no longer exist
// (killed mid-write) are removed from the directory first.
void write_files_atomically(const std::vector<std::pair<std::filesystem::path, std::string>>& files);

// For a SIGINT/SIGTERM handler, async-signal-safe (unlink(2) only, over a
// fixed-size table): removes every temporary this process has in flight in
// write_files_atomically or registered with TemporaryInFlight, so an
// interrupted run leaves no partial or temporary files.
void remove_temporaries_in_flight() noexcept;

// Registers a temporary file for remove_temporaries_in_flight while it lives
// (for files written outside write_files_atomically, e.g. a child process's
// output). Registering does not create or remove the file. When the table is
// full the file is simply not registered.
class TemporaryInFlight {
 public:
  explicit TemporaryInFlight(const std::filesystem::path& file) noexcept;
  ~TemporaryInFlight();
  TemporaryInFlight(const TemporaryInFlight&) = delete;
  TemporaryInFlight& operator=(const TemporaryInFlight&) = delete;

 private:
  int slot_;
};

}  // namespace softcheck
