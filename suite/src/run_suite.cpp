#include "softcheck/run_suite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "suite_state.hpp"
#include "softcheck/fnv1a.hpp"
#include "softcheck/judge.hpp"
#include "softcheck/kernel_failure.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/sparse_oracle.hpp"
#include "softcheck/storage.hpp"
#include "softcheck/version.hpp"

namespace softcheck {

namespace {

using namespace suite_state;

struct SuiteShape {
  std::vector<std::int64_t> sizes;
  std::vector<double> temperatures;
  std::int64_t elements_per_case;  // rows = clamp(elements_per_case / cols, 1, max_rows)
  std::int64_t max_rows;
};

// Sizes cover 1..65536 with tile-boundary neighbours (8, 31, 128 ...);
// temperatures include 1 (x/T exact) and values where fl(x/T) rounds.
SuiteShape shape_of(const std::string& suite) {
  if (suite == "quick") return {{1, 2, 3, 8, 31, 128, 1000, 4096, 65536}, {1.0, 0.7}, 2048, 16};
  if (suite == "full")
    return {{1, 2, 3, 4, 7, 8, 9, 16, 17, 31, 32, 33, 64, 65, 127, 128, 129, 256, 1000, 1024,
             4096, 10000, 16384, 65536},
            {1.0, 0.25, 0.7, 3.7, 100.0},
            16384,
            64};
  throw std::invalid_argument("unknown suite '" + suite + "' (expected quick or full)");
}

constexpr std::int64_t max_cols = 1 << 20;

}  // namespace

std::vector<SuiteCase> build_suite(const SuiteSelection& sel, bool softmax_ops, bool attention_ops) {
  SuiteShape shape = shape_of(sel.suite);
  for (std::int64_t n : sel.sizes)
    if (n < 1 || n > max_cols)
      throw std::invalid_argument(fmt::format("size {} out of range [1, {}]", n, max_cols));
  for (double t : sel.temperatures)
    if (!std::isfinite(t) || t <= 0)
      throw std::invalid_argument(fmt::format("temperature {} must be finite and > 0", t));
  for (const std::string& op : sel.ops)
    if (!parse_op(op)) throw std::invalid_argument(fmt::format("unknown op '{}' (expected one of {})", op, op_names()));
  const auto& sizes = sel.sizes.empty() ? shape.sizes : sel.sizes;
  const auto& temps = sel.temperatures.empty() ? shape.temperatures : sel.temperatures;

  std::vector<const InputFamily*> fams;
  if (sel.families.empty()) {
    if (softmax_ops)
      for (const InputFamily& f : input_families()) fams.push_back(&f);
    if (attention_ops)
      for (const InputFamily& f : attention_input_families()) fams.push_back(&f);
  } else {
    for (const std::string& name : sel.families) {
      const InputFamily* f = find_input_family(name);
      if (!f) throw std::invalid_argument("unknown family '" + name + "' (see `softcheck list --families`)");
      fams.push_back(f);
    }
  }

  std::vector<SuiteCase> cases;
  for (const InputFamily* fam : fams)
    for (double t : temps) {
      if (fam->fixed_cols > 0) {
        cases.push_back({fam, fam->fixed_cols, t, 1});
        continue;
      }
      for (std::int64_t n : sizes) {
        // The quick suite runs its longest rows (the oracle's bulk) at T = 1
        // only, to stay under a minute on 2 cores; `full` runs every pair.
        if (sel.sizes.empty() && sel.suite == "quick" && n == shape.sizes.back() && t != 1.0) continue;
        if (sel.sizes.empty() && fam->attention() && n * fam->head_dim > attention_max_elements) continue;
        cases.push_back({fam, n, t, std::clamp<std::int64_t>(shape.elements_per_case / n, 1, shape.max_rows)});
      }
    }
  return cases;
}

std::uint64_t case_seed(std::uint64_t seed, const SuiteCase& c, Format f) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  h = hash_mix(h, seed);
  h = hash_mix(h, c.family->name);
  h = hash_mix(h, name(f));
  h = hash_mix(h, static_cast<std::uint64_t>(c.cols));
  std::uint64_t tbits;
  std::memcpy(&tbits, &c.temperature, sizeof tbits);
  return hash_mix(h, tbits);
}

std::string hex_row(const double* x, std::int64_t n) {
  std::string s;
  for (std::int64_t i = 0; i < n; ++i) {
    if (i) s += ',';
    s += std::isinf(x[i]) ? (x[i] > 0 ? "inf" : "-inf") : fmt::format("{:a}", x[i]);
  }
  return s;
}

namespace {

// One output of one (kernel, op) pair under test: each output of an op
// with several (softmax_lse's y and lse) is judged and reported on its own.
struct Target {
  const Kernel* kernel = nullptr;
  const OpDecl* decl = nullptr;
  std::size_t output = 0;  // index into spec(decl->op).out
  // The reference rule's stable kernel and its op for this output; null when
  // the rule does not judge it (reference_not_applied says why, if it should have).
  const Kernel* reference = nullptr;
  const OpDecl* reference_decl = nullptr;
  std::size_t reference_output = 0;  // which of reference_decl's op's outputs
  std::string reference_not_applied;

  const Contract& contract() const { return decl->contract_of(output); }
  const Operand& operand() const { return spec(decl->op).out[output]; }
  // Output elements per row of case c: n for a row output, 1 for a scalar,
  // d for attention's O (what `measured` counts, and can never exceed).
  std::uint64_t elements_per_row(const SuiteCase& c) const {
    return static_cast<std::uint64_t>(output_cols(operand(), c.cols, c.family ? c.family->head_dim : 0));
  }
};

// Sweep bins (report.hpp ErrorBin) are accumulated with mean_ulp holding the
// sum of the ULP errors; finish_means divides once everything is merged.
void add_row(ErrorBin& b, const RowError& e) {
  b.rows++;
  b.measured += e.measured;
  b.nonfinite += e.nonfinite;
  b.max_ulp = std::max(b.max_ulp, e.max_ulp);
  b.mean_ulp += e.sum_ulp;
}

// Largest |x_i / T| over the finite entries of a row (0 when none): the
// largest |x_i| divided once, the same double (a correctly rounded division
// by T > 0 is monotone), without a division per element.
double max_abs_scaled(const double* x, std::int64_t n, double temperature) {
  double m = 0;
  for (std::int64_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) m = std::max(m, std::fabs(x[i]));
  return m / temperature;
}

// The outputs measured in the conditional mode too: a backward's dx, given
// the kernel's own forward output (report.hpp ConditionalError).
bool has_conditional_mode(OutputKind k) {
  return k == OutputKind::softmax_gradient || k == OutputKind::log_softmax_gradient;
}


std::string repro_line(const Kernel& k, Op op, bool contract, const SuiteCase& c, const RunOptions& opt,
                       const double* x) {
  // `repro` replays softmax properties; a sparse op's case is replayed by `run`.
  // A plugin kernel is replayed with the options that loaded it (Kernel::load_options).
  const std::string impl = (k.load_options.empty() ? "" : k.load_options + " ") + "--impl " + k.name;
  // `repro` replays the accuracy property, claimed with a contract only and
  // judged in the storage format; the floor, the reference rule and
  // quantised outputs are replayed by `run`.
  if (c.cols <= 64 && !is_sparse(op) && !spec(op).several_inputs() && contract && !k.quantised_outputs)
    return fmt::format("softcheck repro {} --op {} --property accuracy --temperature {} --row {}", impl,
                       name(op), c.temperature, hex_row(x, c.cols));
  // The run's suite (rows per case follow it) and its reference rule.
  return run_repro_command(k.load_options, k.name, opt.selection.suite, c.family->name, c.cols, {c.temperature},
                           opt.seed, opt.reference_rule);
}

// Keeps w (for row `row` of case c) as the worst case when its key is larger.
bool keep_if_worse(Accum& a, double key, WorstCase w, const Target& t, const SuiteCase& c, std::int64_t row,
                   const double* x, const RunOptions& opt) {
  if (key <= a.worst_key) return false;  // strictly larger only: the first worst wins (determinism)
  a.worst_key = key;
  a.worst_text_pending = false;
  w.present = true;
  w.family = c.family->name;
  w.cols = c.cols;
  w.temperature = c.temperature;
  w.row = row;
  if (c.cols <= 64) w.input = hex_row(x, c.cols);
  // `repro` replays the contract; a row the reference rule judged is replayed by `run`.
  w.repro = repro_line(*t.kernel, t.decl->op, t.contract().declared && t.reference == nullptr, c, opt, x);
  a.worst = std::move(w);
  return true;
}

// Sort key of a measured row for the worst case: the row's largest ULP error
// relative to its bound (contract kernels), else the error itself; NaN/inf
// results rank above everything.
// Without a contract, when the reference rule judges the output, a row ranks
// by its error / allowed there (the worst case is the row that broke the rule
// most, and its repro line replays that).
double row_key(const Target& t, const RowError& e, double bound, double reference_ratio = -1) {
  const bool broken = e.nonfinite > 0 || e.special_mismatch > 0;
  if (broken) return std::numeric_limits<double>::infinity();
  if (t.contract().declared) return std::isinf(bound) ? 0 : e.max_ulp / bound;
  if (t.reference != nullptr) return std::max(reference_ratio, 0.0);  // rows it did not judge rank last
  return e.max_ulp;
}

// A row with a finite entry: its errors e (from either oracle tier) into the
// accumulator; `exact_text` is the worst element's exact value (21 digits),
// only read when the row becomes the worst case; empty: computed later from
// the kept row. The ULP histogram is the caller's.
// `y` holds the measured outputs; `index` (sparse ops: the measured subset of
// the row) maps them back to row positions, nullptr when all were measured.
void record_measured_row(Accum& a, const Target& t, const SuiteCase& c, std::int64_t row, const double* x,
                         const double* y, const RowError& e, double bound, const std::string& exact_text,
                         const RunOptions& opt, const std::vector<std::size_t>* index = nullptr,
                         double reference_ratio = -1) {
  a.rows++;
  a.elements += t.elements_per_row(c);
  a.measured += e.measured;
  a.nonfinite += e.nonfinite;
  a.special_mismatch += e.special_mismatch;
  a.sum_ulp += e.sum_ulp;
  a.sum_bits += e.sum_bits;
  a.max_ulp = std::max(a.max_ulp, e.max_ulp);
  a.max_bits = std::max(a.max_bits, e.max_bits);
  a.max_rel = std::max(a.max_rel, e.max_rel);
  a.max_normwise = std::max(a.max_normwise, e.normwise);
  add_row(a.measured_rows, e);
  add_row(bin_at(a.by_magnitude, magnitude_decade(max_abs_scaled(x, c.cols, c.temperature))), e);
  const bool broken = e.nonfinite > 0 || e.special_mismatch > 0;
  if (t.contract().declared) {
    a.min_bound = std::min(a.min_bound, bound);
    const double ratio = std::isinf(bound) ? 0 : e.max_ulp / bound;
    a.max_bound_ratio = std::max(a.max_bound_ratio, ratio);
    if (std::isinf(bound)) a.unbounded_rows++;
    if (broken || e.max_ulp > bound) a.contract_violations++;
  } else if (oracle::breaks_floor_no_nonfinite(e, *t.decl, {x, static_cast<std::size_t>(c.cols)}, c.temperature,
                                               t.kernel->format)) {
    a.floor_violations++;  // the floor (kernel.hpp) holds for kernels without a contract too
  }
  if (e.elements == 0) return;  // a sparse row with nothing measured (all support mismatches)
  WorstCase w;
  const std::size_t position = index ? (*index)[e.worst_index] : e.worst_index;
  w.got = y[position];
  w.exact = exact_text;
  w.element = static_cast<std::int64_t>(position);
  w.ulp = broken ? INFINITY : e.max_ulp;
  w.bound = bound;
  if (keep_if_worse(a, row_key(t, e, bound, reference_ratio), std::move(w), t, c, row, x, opt) && exact_text.empty())
    a.worst_text_pending = true;
}

// A fully masked row: counted, and a policy violation when `follows` is false.
void record_masked_row(Accum& a, const Target& t, const SuiteCase& c, std::int64_t row, const double* x,
                       const double* y, bool follows, const RunOptions& opt) {
  a.rows++;
  a.elements += t.elements_per_row(c);
  a.policy_rows++;
  if (follows) return;
  a.policy_violations++;
  WorstCase w;
  w.got = y[0];
  w.exact = "undefined (fully masked row, policy " + std::string(name(t.kernel->masked_policy)) + ")";
  w.bound = INFINITY;
  keep_if_worse(a, std::numeric_limits<double>::infinity(), std::move(w), t, c, row, x, opt);
}

// The signed errors of a row (bias figures). An output is above / below when
// it missed the exact value by at least 1/2 (ulp): not correctly rounded.
void record_signed_errors(Accum& a, const oracle::RowVerdict& v) {
  // The sums in locals, in index order (the same roundings): through the
  // accumulator each add waited for the previous store.
  std::uint64_t above = 0, below = 0, rel_measured = 0;
  double sum_ulp = a.sum_signed_ulp, sum_rel = a.sum_signed_rel;
  for (double e : v.element_signed) {
    if (std::isnan(e)) continue;
    sum_ulp += e;
    above += e >= 0.5 ? 1 : 0;
    below += e <= -0.5 ? 1 : 0;
  }
  for (double r : v.element_signed_rel)
    if (!std::isnan(r)) {
      sum_rel += r;
      rel_measured++;
    }
  a.sum_signed_ulp = sum_ulp;
  a.sum_signed_rel = sum_rel;
  a.rel_measured += rel_measured;
  a.above += above;
  a.below += below;
  a.rows_above += above > below ? 1 : 0;
  a.rows_below += below > above ? 1 : 0;
}

// The reference rule on one row (report.hpp ReferenceRuleSettings), for a
// kernel row `v` and the stable kernel's row `vr` of the same output: the
// decision is oracle::reference_rule's (judge.hpp), shared with `compare`.
double apply_reference_rule(Accum& a, const ReferenceRuleSettings& rule, const Target& t, const SuiteCase& c,
                          const double* x, std::span<const double> y, const oracle::RowVerdict& v,
                          std::span<const double> yr, const oracle::RowVerdict& vr, oracle::RowJudge& judge) {
  const oracle::ReferenceRuleVerdict r =
      oracle::reference_rule(judge, *t.decl, t.output, {x, static_cast<std::size_t>(c.cols)}, c.temperature,
                             t.kernel->format, y, v, yr, vr, rule.k, rule.slack);
  if (!r.judged) return -1;
  a.reference_rows++;
  a.reference_max_ratio = std::max(a.reference_max_ratio, r.ratio);
  if (r.violated) a.reference_violations++;
  return r.ratio;
}

// One row's verdict into the accumulator. The worst element's exact text
// (21 digits) is MPFR's when MPFR decided, else left to run_suite for the
// kernel's final worst case.
// sum(y) - 1 of a probability row whose outputs are all finite (the exact
// row sums to 1): what a kernel that drops or inflates probabilities moves,
// whatever each output's error (P cast to E4M3 loses the keys below 2^-10
// while each stays within half an ULP). Summed in double, in order: at most
// n 2^-53 off for a row of n values in [0, 1].
void record_mass(Accum& a, std::span<const double> y) {
  double sum = 0;
  for (double p : y) {
    if (!std::isfinite(p)) return;
    sum += p;
  }
  const double m = sum - 1;
  a.mass_rows++;
  a.mass_sum += m;
  a.mass_max_lost = std::max(a.mass_max_lost, -m);
  a.mass_max_gained = std::max(a.mass_max_gained, m);
}

void record_verdict(Accum& a, const Target& t, const SuiteCase& c, std::int64_t row, const double* x,
                    std::span<const double> y, const oracle::RowVerdict& v, oracle::RowJudge& judge,
                    const RunOptions& opt, double reference_ratio) {
  if (v.status == oracle::RowStatus::all_masked) {
    record_masked_row(a, t, c, row, x, y.data(), v.follows_policy, opt);
    return;
  }
  a.false_zeros += v.false_zeros;
  a.false_nonzeros += v.false_nonzeros;
  const bool has_bound = t.contract().declared;
  for (double e : v.element_error) {
    if (std::isnan(e)) continue;
    a.histogram[ulp_histogram_bin(e)]++;
    a.ulp_sketch.add(e);
    if (has_bound) a.ratio_sketch.add(std::isinf(v.bound) ? 0 : e / v.bound);
  }
  record_signed_errors(a, v);
  if (t.operand().kind == OutputKind::probabilities) record_mass(a, y);
  const bool sparse = is_sparse(t.decl->op);
  std::string exact_text;
  if (v.tier == oracle::Tier::mpfr && v.error.elements > 0 && row_key(t, v.error, v.bound, reference_ratio) > a.worst_key) {
    const oracle::Real& exact = sparse ? judge.sparse_exact(*t.decl).p[v.measured_index[v.error.worst_index]]
                                       : judge.exact_output(*t.decl, t.output)[v.error.worst_index];
    exact_text = oracle::to_string(exact, 21);
  }
  record_measured_row(a, t, c, row, x, y.data(), v.error, v.bound, exact_text, opt,
                      sparse ? &v.measured_index : nullptr, reference_ratio);
}

// A run that threw KernelFailure: every row of the case counts as a contract
// violation (status "violated", contract or not) and the worst case carries
// the message after kernel_failure_prefix.
void record_failure(Accum& a, const Target& t, const SuiteCase& c, const double* x, const std::string& message,
                    const RunOptions& opt) {
  const auto rows = static_cast<std::uint64_t>(c.rows);
  a.rows += rows;
  a.elements += rows * t.elements_per_row(c);
  a.contract_violations += rows;
  a.violated_rows += rows;
  WorstCase w;
  w.got = NAN;
  w.exact = std::string(kernel_failure_prefix) + message;
  w.ulp = INFINITY;
  w.bound = INFINITY;
  keep_if_worse(a, std::numeric_limits<double>::infinity(), std::move(w), t, c, 0, x, opt);
}

// Why outputs quantised to result format `of` are not all values of it (a
// kernel that stores something else, as a cast that passes subnormals
// through under DAZ does), naming the first; empty when they are. Such a
// call fails its case, as a KernelFailure does: the judge measures values
// of `of` only.
std::string off_the_grid(std::span<const double> y, Format of, std::int64_t cols) {
  for (std::size_t j = 0; j < y.size(); ++j)
    if (!std::isnan(y[j]) && round_to_format(y[j], of) != y[j])
      return fmt::format("output {} of row {} is {:a}, not a value of {} (the format its outputs are quantised to)",
                         static_cast<std::int64_t>(j) % cols, static_cast<std::int64_t>(j) / cols, y[j], name(of));
  return {};
}

// The head dimension of op's operands on case c: its attention family's, 0
// for an op without one.
std::int64_t head_dim(Op op, const SuiteCase& c) { return has_head_dim(op) ? c.family->head_dim : 0; }

// Zeroed buffers for every output of op (op table: rows x cols values for a
// row output, one per row for a scalar one) in format f, and their pointers.
void allocate_outputs(Op op, const SuiteCase& c, Format f, std::vector<std::vector<unsigned char>>& buffers,
                      std::vector<void*>& pointers) {
  const OperandList outs = spec(op).out;
  buffers.assign(outs.size(), {});
  pointers.clear();
  for (std::size_t o = 0; o < outs.size(); ++o) {
    buffers[o].resize(static_cast<std::size_t>(c.rows * output_cols(outs[o], c.cols, head_dim(op, c))) *
                      element_size(f));
    pointers.push_back(buffers[o].data());
  }
}

// A CSV field: as it is, or quoted (RFC 4180) when it holds a comma, a quote
// or a line break.
std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string csv_number(double v) { return std::isnan(v) ? std::string() : fmt::format("{}", v); }

// The unit of an output's error figures: ulp, u (absolute) or u s (scaled).
std::string_view metric_unit(Metric m) {
  switch (m) {
    case Metric::ulp: return "ulp";
    case Metric::absolute: return "u";
    case Metric::scaled: return "u s";
  }
  return "";
}

// One rows_csv line (rows_csv_header): `verdict` says what the row came to;
// the figures are NaN (empty) where they do not apply.
void add_csv_row(std::string& out, const Target& t, const SuiteCase& c, Format f, std::int64_t row, double R,
                 double M, double error, double bound, double reference_ratio, std::string_view verdict,
                 const std::string& repro) {
  out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(t.kernel->name),
                     csv_field(output_label(t.decl->op, t.output)), name(f), csv_field(c.family->name), c.cols,
                     c.temperature, row, csv_number(R), csv_number(M), csv_number(error),
                     metric_unit(t.operand().metric), csv_number(bound), csv_number(reference_ratio), verdict,
                     csv_field(repro));
}

// What a judged row came to, for rows_csv: the masked-row policy kept or
// broken, a NaN/inf output (broken), the contract held or violated, the
// reference rule's verdict for an output without a contract, else measured.
std::string_view row_verdict(const Target& t, const oracle::RowVerdict& v, double reference_ratio) {
  if (v.status == oracle::RowStatus::all_masked) return v.follows_policy ? "policy_held" : "policy_violated";
  if (v.broken) return "broken";
  if (t.contract().declared) return v.within ? "held" : "violated";
  if (reference_ratio >= 0) return reference_ratio <= 1 ? "reference_held" : "reference_violated";
  return "no_contract";
}

// Runs one (format, case): fill, kernel, oracle, compare. Each row is judged
// by one RowJudge shared by the targets: the fast tiers, MPFR's exact_row once
// for the dense targets they could not decide, one exact_sparse per sparse
// (op, parameters).
// The rows a kernel reads: its format's values, or (Kernel::mx_inputs) those
// values as MX blocks of an element format, whose values every kernel of
// the kind is given and judged on.
struct RowsKind {
  Format format;
  std::optional<MiniFloat> mx_inputs;
  bool operator==(const RowsKind& o) const {
    return format == o.format && mx_inputs.has_value() == o.mx_inputs.has_value() &&
           (!mx_inputs || mx_inputs->name == o.mx_inputs->name);
  }
  std::string label() const { return format_label(name(format), {}, mx_inputs ? mx_format_name(*mx_inputs) : ""); }
};

// x (rows of `cols`) as rows of `kind`: each row through mx_row for MX inputs.
std::vector<double> rows_of_kind(std::vector<double> x, std::int64_t cols, const RowsKind& kind) {
  if (!kind.mx_inputs) return x;
  const auto n = static_cast<std::size_t>(cols);
  for (std::size_t start = 0; start < x.size(); start += n) {
    const std::vector<double> held = mx_row({x.data() + start, n}, *kind.mx_inputs);
    std::copy(held.begin(), held.end(), x.begin() + static_cast<std::ptrdiff_t>(start));
  }
  return x;
}

CaseResult run_case(const SuiteCase& c, const RowsKind& kind, const std::vector<Target>& targets,
                    const RunOptions& opt) {
  const Format f = kind.format;
  const std::uint64_t seed = case_seed(opt.seed, c, f);
  const std::vector<double> x = rows_of_kind(fill_rows(*c.family, f, c.rows, c.cols, seed), c.cols, kind);
  const std::vector<unsigned char> xin = pack(x, f);
  // The other inputs, filled when an op of the case takes them.
  std::vector<std::int64_t> class_targets;
  std::vector<double> upstream;
  std::vector<unsigned char> upstream_in;
  AttentionOperands attention;
  std::vector<unsigned char> q_in, k_in, v_in;
  for (const Target& t : targets)
    for (const Operand& in : spec(t.decl->op).in) {
      if (in.input == InputKind::class_index && class_targets.empty())
        class_targets = fill_class_targets(x, c.rows, c.cols, seed);
      if (in.input == InputKind::upstream_gradient && upstream.empty()) {
        upstream = fill_upstream_gradients(f, c.rows, c.cols, seed);
        upstream_in = pack(upstream, f);
      }
      if (in.input == InputKind::query && attention.q.empty()) {
        attention = fill_attention_operands(*c.family, f, c.rows, c.cols, seed);
        q_in = pack(attention.q, f);
        k_in = pack(attention.K, f);
        v_in = pack(attention.V, f);
      }
    }
  // What the kernels of this case are given, bit for bit (folded into
  // Report::inputs_digest): the gate refuses a baseline whose rows were other ones.
  std::uint64_t inputs_fnv = fnv1a64_start;
  const auto digest = [&inputs_fnv](const void* data, std::size_t bytes) {
    inputs_fnv = fnv1a64_add(inputs_fnv, {static_cast<const unsigned char*>(data), bytes});
  };
  digest(xin.data(), xin.size());
  digest(class_targets.data(), class_targets.size() * sizeof(std::int64_t));
  digest(upstream_in.data(), upstream_in.size());
  digest(q_in.data(), q_in.size());
  digest(k_in.data(), k_in.size());
  digest(v_in.data(), v_in.size());
  digest(attention.window.data(), attention.window.size() * sizeof(KeyWindow));
  const auto inputs_of = [&](Op op) {
    std::vector<const void*> in;
    for (const Operand& o : spec(op).in) {
      const void* p = xin.data();
      switch (o.input) {
        case InputKind::class_index: p = class_targets.data(); break;
        case InputKind::upstream_gradient: p = upstream_in.data(); break;
        case InputKind::query: p = q_in.data(); break;
        case InputKind::keys: p = k_in.data(); break;
        case InputKind::values: p = v_in.data(); break;
        case InputKind::key_window: p = attention.window.data(); break;
        case InputKind::logits:
        case InputKind::none: break;
      }
      in.push_back(p);
    }
    return in;
  };
  std::vector<std::vector<double>> outputs, forward_of;
  std::vector<std::int64_t> out_cols;  // per target: output values per row
  std::vector<std::string> failures(targets.size());  // KernelFailure messages
  std::vector<double> call_seconds(targets.size(), 0);  // of the call that produced each target's output
  const bool timed = opt.entry_seconds != nullptr;
  using Clock = std::chrono::steady_clock;
  double last_call = 0;
  // One call per (kernel, op): the targets of its outputs follow each other.
  std::vector<std::vector<unsigned char>> call_out;
  std::string call_failure;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    if (i == 0 || targets[i - 1].kernel != t.kernel || targets[i - 1].decl != t.decl) {
      std::vector<void*> out_ptr;
      allocate_outputs(t.decl->op, c, f, call_out, out_ptr);
      call_failure.clear();
      const Clock::time_point start = timed ? Clock::now() : Clock::time_point{};
      try {
        const std::vector<const void*> in = inputs_of(t.decl->op);
        const FpEnvScope env(opt.fp_env);  // the kernel's call only
        t.kernel->call({t.decl->op, in, out_ptr, c.rows, c.cols, c.temperature, head_dim(t.decl->op, c)});
      } catch (const KernelFailure& e) {
        call_failure = e.what();
      }
      if (timed) last_call = std::chrono::duration<double>(Clock::now() - start).count();
    }
    failures[i] = call_failure;
    call_seconds[i] = last_call;
    out_cols.push_back(output_cols(t.operand(), c.cols, head_dim(t.decl->op, c)));
    outputs.push_back(unpack(call_out[t.output], f, static_cast<std::size_t>(c.rows * out_cols.back())));
    if (failures[i].empty() && t.kernel->quantised_outputs)
      failures[i] = off_the_grid(outputs.back(), *t.kernel->quantised_outputs, out_cols.back());
    // A backward's dx is also judged given the call's own forward output y
    // (its output 0: the conditional mode).
    forward_of.emplace_back();
    if (has_conditional_mode(t.operand().kind) && call_failure.empty())
      forward_of.back() = unpack(call_out[0], f, static_cast<std::size_t>(c.rows * c.cols));
  }
  // The reference rule's stable kernels: one call per (kernel, op) a target
  // needs, none when that kernel and op is itself a target here (its output
  // and each row's verdict are then shared with it, not computed twice).
  struct ReferenceRun {
    const Kernel* kernel = nullptr;
    const OpDecl* decl = nullptr;
    std::size_t output = 0;               // which of decl's op's outputs
    std::vector<double> own;              // the output, when no target computed it
    const std::vector<double>* y = nullptr;  // own, or that target's
    std::int64_t cols = 0;
    oracle::RowVerdict verdict;  // of the row being judged
    bool judged = false;
  };
  std::vector<ReferenceRun> references;
  std::vector<std::ptrdiff_t> reference_of(targets.size(), -1);  // the run a target is judged against
  std::vector<std::ptrdiff_t> reference_from(targets.size(), -1);  // the run a target's output serves
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    if (t.reference_decl == nullptr) continue;
    auto it = std::find_if(references.begin(), references.end(), [&](const ReferenceRun& r) {
      return r.decl == t.reference_decl && r.output == t.reference_output;
    });
    if (it == references.end()) {
      ReferenceRun run;
      run.kernel = t.reference;
      run.decl = t.reference_decl;
      run.output = t.reference_output;
      run.cols = output_cols(spec(t.reference_decl->op).out[run.output], c.cols, head_dim(t.reference_decl->op, c));
      const auto same = std::find_if(targets.begin(), targets.end(), [&](const Target& o) {
        return o.kernel == t.reference && o.decl == t.reference_decl && o.output == run.output;
      });
      const auto j = static_cast<std::size_t>(same - targets.begin());
      if (same != targets.end() && failures[j].empty()) {
        run.y = &outputs[j];
        reference_from[j] = static_cast<std::ptrdiff_t>(references.size());
      } else {  // one call filling every output of its op; the one it serves kept
        std::vector<std::vector<unsigned char>> out;
        std::vector<void*> out_ptr;
        allocate_outputs(t.reference_decl->op, c, f, out, out_ptr);
        const std::vector<const void*> in = inputs_of(t.reference_decl->op);
        t.reference->call(
            {t.reference_decl->op, in, out_ptr, c.rows, c.cols, c.temperature, head_dim(t.reference_decl->op, c)});
        run.own = unpack(out[run.output], f, static_cast<std::size_t>(c.rows * run.cols));
      }
      references.push_back(std::move(run));
      it = references.end() - 1;
    }
    reference_of[i] = it - references.begin();
  }
  for (ReferenceRun& run : references)
    if (run.y == nullptr) run.y = &run.own;  // once the vector no longer moves
  CaseResult res;
  res.inputs_fnv = inputs_fnv;
  std::vector<Accum>& acc = res.acc;
  acc.resize(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) acc[i].seconds = call_seconds[i];
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (failures[i].empty()) continue;
    record_failure(acc[i], targets[i], c, x.data(), failures[i], opt);
    if (opt.rows_csv != nullptr)
      for (std::int64_t r = 0; r < c.rows; ++r)
        add_csv_row(res.rows_csv, targets[i], c, f, r, NAN, NAN, NAN, NAN, NAN, "kernel_failed",
                    repro_line(*targets[i].kernel, targets[i].decl->op, false, c, opt, x.data() + r * c.cols));
  }
  // Every target's rows go through the row judge (oracle/judge.hpp), which
  // owns the tier order and shares the exact rows between targets; the
  // report's histogram needs each element's bin.
  std::vector<std::size_t> judged;
  for (std::size_t i = 0; i < targets.size(); ++i)
    if (failures[i].empty()) judged.push_back(i);
  oracle::JudgeOptions judge_options;
  judge_options.bits = opt.oracle_bits;
  judge_options.tiered = opt.oracle == OracleMode::tiered;
  judge_options.element_bin = ulp_histogram_bin;
  judge_options.signed_errors = true;
  // One judge per output format: f's, and the narrower format of a kernel
  // whose outputs are quantised (Kernel::quantised_outputs), measured in its
  // ULPs. Each keeps its tiers' storage row to row.
  std::vector<std::unique_ptr<oracle::RowJudge>> judges;
  std::vector<oracle::RowJudge*> judge_of(targets.size(), nullptr);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const Format of = targets[i].kernel->output_format();
    auto at = std::find_if(judges.begin(), judges.end(), [of](const auto& j) { return j->format() == of; });
    if (at == judges.end()) at = judges.insert(at, std::make_unique<oracle::RowJudge>(of, judge_options));
    judge_of[i] = at->get();
  }
  for (std::int64_t r = 0; r < c.rows; ++r) {
    const double* xr = x.data() + r * c.cols;
    const std::span<const double> row{xr, static_cast<std::size_t>(c.cols)};
    bool counted = false;
    for (const auto& judge : judges) {
      judge->set_row(row, c.temperature);
      if (!class_targets.empty()) judge->set_target(class_targets[static_cast<std::size_t>(r)]);
      if (!upstream.empty()) judge->set_upstream({upstream.data() + r * c.cols, static_cast<std::size_t>(c.cols)});
      if (!attention.q.empty()) {
        const auto d = static_cast<std::size_t>(attention.head_dim), n = static_cast<std::size_t>(c.cols);
        const auto row_at = static_cast<std::size_t>(r);
        judge->set_attention({attention.q.data() + row_at * d, d}, {attention.K.data() + row_at * n * d, n * d},
                             {attention.V.data() + row_at * n * d, n * d}, attention.head_dim,
                             attention.window[row_at]);
      }
    }
    for (ReferenceRun& ref : references) ref.judged = false;
    bool undefined = false;
    for (std::size_t i : judged) {
      oracle::RowJudge& judge = *judge_of[i];
      const std::span<const double> y(outputs[i].data() + r * out_cols[i], static_cast<std::size_t>(out_cols[i]));
      // Timed from here: the first entry judged on a row also pays for the
      // exact row the others share (RunOptions::entry_seconds is approximate so).
      const Clock::time_point judged_from = timed ? Clock::now() : Clock::time_point{};
      ReferenceRun* served = reference_from[i] >= 0 ? &references[static_cast<std::size_t>(reference_from[i])] : nullptr;
      const oracle::RowVerdict v = served != nullptr && served->judged
                                       ? served->verdict
                                       : judge.judge(*targets[i].decl, targets[i].kernel->masked_policy, y,
                                                     targets[i].output);
      if (served != nullptr && !served->judged) {
        served->verdict = v;
        served->judged = true;
      }
      if (v.status == oracle::RowStatus::undefined) {  // families never produce +inf/NaN
        undefined = true;
        break;
      }
      counted = counted || v.status == oracle::RowStatus::ok;
      const std::uint64_t violations_before = acc[i].violations();
      double reference_ratio = -1;  // the rule's error / allowed on this row, -1 when it did not judge it
      if (reference_of[i] >= 0) {
        ReferenceRun& ref = references[static_cast<std::size_t>(reference_of[i])];
        const std::span<const double> yr(ref.y->data() + r * ref.cols, static_cast<std::size_t>(ref.cols));
        if (!ref.judged) ref.verdict = judge.judge(*ref.decl, ref.kernel->masked_policy, yr, ref.output);
        ref.judged = true;
        reference_ratio =
            apply_reference_rule(acc[i], opt.reference_rule, targets[i], c, xr, y, v, yr, ref.verdict, judge);
      }
      record_verdict(acc[i], targets[i], c, r, xr, y, v, judge, opt, reference_ratio);
      if (opt.rows_csv != nullptr) {
        const Target& t = targets[i];
        const bool masked = v.status != oracle::RowStatus::ok;
        add_csv_row(res.rows_csv, t, c, f, r, masked ? NAN : v.shape.R, masked ? NAN : v.shape.M,
                    masked ? NAN : v.error.max_ulp, t.contract().declared && !masked ? v.bound : NAN,
                    reference_ratio >= 0 ? reference_ratio : NAN, row_verdict(t, v, reference_ratio),
                    repro_line(*t.kernel, t.decl->op, t.contract().declared && t.reference == nullptr, c, opt, xr));
      }
      if (!forward_of[i].empty() && v.status == oracle::RowStatus::ok) {
        const std::span<const double> y_forward(forward_of[i].data() + r * c.cols, static_cast<std::size_t>(c.cols));
        if (const auto e = judge.conditional_error(*targets[i].decl, y_forward, y, targets[i].output)) {
          acc[i].conditional_rows++;
          if (e->nonfinite + e->special_mismatch > 0) acc[i].conditional_broken++;
          else acc[i].conditional_max = std::max(acc[i].conditional_max, e->max_ulp);
        }
      }
      if (acc[i].violations() > violations_before) acc[i].violated_rows++;
      if (timed) acc[i].seconds += std::chrono::duration<double>(Clock::now() - judged_from).count();
    }
    if (undefined) continue;
    const bool used_mpfr =
        std::any_of(judges.begin(), judges.end(), [](const auto& judge) { return judge->used_mpfr(); });
    res.oracle_rows += counted ? 1 : 0;
    res.mpfr_rows += used_mpfr ? 1 : 0;
  }
  // Each pending worst case keeps its row: one copy per distinct row, shared
  // by the targets whose worst case it is (a copy per target, made each time
  // a row became the worst, was 455 MB in the quick suite).
  std::map<std::int64_t, std::shared_ptr<const std::vector<double>>> worst_rows;
  for (Accum& a : acc)
    if (a.worst_text_pending) {
      std::shared_ptr<const std::vector<double>>& row = worst_rows[a.worst.row];
      if (!row) {
        const auto first = x.begin() + a.worst.row * c.cols;
        row = std::make_shared<const std::vector<double>>(first, first + c.cols);
      }
      a.worst_row = row;
    }
  return res;
}

KernelSummary describe(const Target& t) {
  const Kernel& k = *t.kernel;
  const Contract& c = t.contract();
  KernelSummary s;
  s.conditional.present = has_conditional_mode(t.operand().kind);
  s.kernel = k.name;
  s.algorithm = k.algorithm;
  s.format = std::string(name(k.format));
  if (k.quantised_outputs) s.output_format = std::string(name(*k.quantised_outputs));
  if (k.mx_inputs) s.input_format = mx_format_name(*k.mx_inputs);
  s.op = std::string(name(t.decl->op));
  if (spec(t.decl->op).several_outputs()) s.output = std::string(t.operand().name);
  s.masked_policy = std::string(name(k.masked_policy));
  s.description = k.description;
  s.contract_declared = c.declared;
  s.contract_formula = c.declared ? c.formula() : "none";
  s.contract_why = c.why;
  s.floor_checked = !c.declared && k.available;  // with a contract, NaN/inf already breaks it
  if (const OptOut* o = t.decl->opted_out(floor_no_nonfinite)) s.floor_opt_out = o->reason;
  if (t.reference_decl != nullptr) s.reference.kernel = t.reference->name;
  s.reference.not_applied = t.reference_not_applied;
  s.unavailable_reason = k.unavailable_reason;
  s.load_options = k.load_options;
  return s;
}

// Whether and against what the reference rule judges target t (its fields
// reference, reference_decl, reference_not_applied).
void choose_reference(Target& t, const ReferenceRuleSettings& rule) {
  if (rule.scope == "off" || is_sparse(t.decl->op) || !t.kernel->available) return;
  if (t.contract().declared && rule.scope != "all") return;
  if (const OptOut* o = t.decl->opted_out(floor_reference)) {
    t.reference_not_applied = "opted out: " + o->reason;
    return;
  }
  // The rule compares two kernels' errors in one format; a quantised
  // output's are in its narrower one.
  if (t.kernel->quantised_outputs) {
    t.reference_not_applied = fmt::format("the outputs are quantised to {}: no stable kernel stores them so",
                                          name(t.kernel->output_format()));
    return;
  }
  // An attention output's reference is an attention kernel (its lse is no row's lse).
  const StableReference ref = has_head_dim(t.decl->op)
                                  ? stable_attention_reference(t.decl->op, t.kernel->format, t.output)
                                  : stable_reference_kernel(t.kernel->format, t.operand().kind, t.decl->params);
  if (ref.kernel == nullptr) {
    t.reference_not_applied = fmt::format("softcheck has no stable kernel for this output in {}", name(t.kernel->format));
    return;
  }
  t.reference = ref.kernel;
  t.reference_decl = ref.decl;
  t.reference_output = ref.output;
}

// Sparse ops run on rows up to sparse_max_cols; those whose oracle is the
// certified bisection (oracle::needs_bisection, docs/sparse.md) up to
// oracle::bisection_max_cols.
constexpr std::int64_t sparse_max_cols = 4096;

bool runs_case(const OpDecl& d, const SuiteCase& c) {
  // An attention family's row is a score bias with q, K and V beside it;
  // the other ops take rows of logits.
  if (has_head_dim(d.op) != c.family->attention()) return false;
  if (!is_sparse(d.op)) return true;
  const auto longest = oracle::needs_bisection(d.op, d.params) ? oracle::bisection_max_cols : sparse_max_cols;
  return c.cols <= static_cast<std::int64_t>(longest);
}

}  // namespace

void check_temperatures(const std::vector<const Kernel*>& kernels, const SuiteSelection& sel) {
  for (double t : sel.temperatures)
    for (const Kernel* k : kernels)
      if (k->available && !temperature_fits_format(t, k->format))
        throw std::invalid_argument(fmt::format(
            "temperature {} is not a normal {} value (kernel {}): contracts and properties hold for normal "
            "temperatures only (`softcheck repro` answers \"not applicable\"); choose another --temperature or --impl",
            t, name(k->format), k->name));
}

void check_reference_rule(const ReferenceRuleSettings& rule) {
  if (rule.scope != "no_contract" && rule.scope != "all" && rule.scope != "off")
    throw std::invalid_argument("reference rule scope '" + rule.scope + "' (expected no_contract, all or off)");
  if (!std::isfinite(rule.k) || rule.k < 1)
    throw std::invalid_argument(fmt::format("reference rule k = {} must be finite and >= 1", rule.k));
  if (!std::isfinite(rule.slack) || rule.slack < 0)
    throw std::invalid_argument(fmt::format("reference rule slack = {} must be finite and >= 0", rule.slack));
}

namespace {
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
}  // namespace

// CPU seconds per row and per value, least squares over the per-case CPU
// times of `run --jobs 1` (quick suite; its default kernels, then with
// --peers --sparse --gradients --attention) by the three ways a case's rows
// are judged (the fast tiers' refitted each time they got faster; the MPFR
// ones' code did not change); over 1.6, less than the 1.84 times a --jobs 1
// run's speed that 2 cores gave (wall, quick suite without the property
// checks) when the CPU seconds were measured: the same runs took 12 % longer
// minutes later on the same machine, and a budget is better kept than
// overrun. docs/measurements.md, "The cost model of --budget", has the fits,
// their error and the commands that reproduce them.
double modelled_case_seconds(const SuiteCase& c, Format f, const CaseWork& work) {
  constexpr double speedup = 1.6;
  const auto rows = static_cast<double>(c.rows);
  const double values = rows * static_cast<double>(c.cols) * static_cast<double>(std::max<std::int64_t>(1, c.family->head_dim));
  const auto outputs = static_cast<double>(work.outputs), sparse = static_cast<double>(work.sparse_outputs);
  double cpu = 0;
  if (c.family->attention()) {  // the MPFR attention oracle: q.k and p.V per key
    cpu = 8.15e-5 * rows * outputs + 5.69e-8 * values * outputs;
  } else if (work.mpfr_rows) {  // MPFR's exact row, then each output against it
    cpu = 2.48e-5 * rows * outputs + 7.64e-6 * values + 4.7e-7 * values * (outputs - sparse) + 9.37e-7 * values * sparse;
  } else {  // the fast tiers (the f64 results' double-double tier the dearest)
    const double per_value = f == Format::f64 ? 1.39e-7 : f == Format::f32 ? 4.0e-8 : f == Format::f16 ? 9.98e-8 : 1.23e-7;
    cpu = 2.55e-6 * rows * outputs + per_value * values * outputs;
  }
  return cpu / speedup;
}

// Start-up, the worst cases' exact texts and the report files (a --jobs 1
// run's wall time less its cases' CPU seconds); then the property checks,
// per kernel a process and per property case its share of 2 cores (wall
// seconds of the quick suite's 35 kernels at property_tests 10 and 100,
// docs/measurements.md).
double modelled_overhead_seconds(const std::vector<const Kernel*>& kernels, int property_tests) {
  const int tests = std::max(0, property_tests);
  return 0.15 + (tests > 0 ? static_cast<double>(kernels.size()) * (0.0016 + 0.00173 * tests) : 0.0);
}

void check_budget(const RunOptions& opt) {
  if (opt.budget.seconds == 0 && opt.budget.suite_seconds == 0) return;
  if (!opt.shard.whole())
    throw std::invalid_argument("--budget and --shard do not combine: a budget chooses among the whole run's cases");
  if (!(std::isfinite(opt.budget.seconds) && opt.budget.seconds > 0 && opt.budget.suite_seconds >= 0 &&
        opt.budget.suite_seconds <= opt.budget.seconds))
    throw std::invalid_argument(fmt::format("budget of {} s with {} s for the cases: expected finite seconds > 0, the "
                                            "cases' share in [0, seconds]",
                                            opt.budget.seconds, opt.budget.suite_seconds));
}

Report run_suite(const std::vector<const Kernel*>& given, const RunOptions& opt) {
  check_temperatures(given, opt.selection);
  check_reference_rule(opt.reference_rule);
  if (const std::string why = fp_env_unsupported(opt.fp_env); !why.empty()) throw std::invalid_argument(why);
  check_budget(opt);

  // Outside the default FP environment a kernel that requires it is reported
  // unavailable, with its reason, and never run.
  std::deque<Kernel> not_in_this_env;
  std::vector<const Kernel*> kernels;
  for (const Kernel* k : given) {
    const std::string why = not_run_in_fp_env(*k, opt.fp_env);
    if (why.empty() || !k->available) {
      kernels.push_back(k);
      continue;
    }
    Kernel& off = not_in_this_env.emplace_back(*k);
    off.available = false;
    off.unavailable_reason = why;
    kernels.push_back(&off);
  }

  std::vector<Target> targets;
  for (const Kernel* k : kernels)
    for (const OpDecl& d : k->ops) {
      const auto& ops = opt.selection.ops;
      if (!ops.empty() && std::find(ops.begin(), ops.end(), name(d.op)) == ops.end()) continue;
      for (std::size_t o = 0; o < spec(d.op).out.size(); ++o) {
        Target t;
        t.kernel = k;
        t.decl = &d;
        t.output = o;
        choose_reference(t, opt.reference_rule);
        targets.push_back(std::move(t));
      }
    }
  const bool attention_ops =
      std::any_of(targets.begin(), targets.end(), [](const Target& t) { return has_head_dim(t.decl->op); });
  const bool softmax_ops =
      targets.empty() ||
      std::any_of(targets.begin(), targets.end(), [](const Target& t) { return !has_head_dim(t.decl->op); });
  const std::vector<SuiteCase> cases = build_suite(opt.selection, softmax_ops, attention_ops);

  // Work items: (rows, case) for every kind of rows an available kernel
  // reads: its format's values, or those values as MX blocks of an element
  // format (Kernel::mx_inputs), each kind's rows made once per case.
  std::vector<RowsKind> kinds;
  const auto kind_of = [](const Kernel& k) { return RowsKind{k.format, k.mx_inputs}; };
  for (const Target& t : targets)
    if (t.kernel->available && std::find(kinds.begin(), kinds.end(), kind_of(*t.kernel)) == kinds.end())
      kinds.push_back(kind_of(*t.kernel));
  struct Item {
    RowsKind rows;
    std::size_t case_index;
    std::vector<std::size_t> target_index;
  };
  std::vector<Item> items;
  for (const RowsKind& kind : kinds) {
    std::vector<std::size_t> ti;
    for (std::size_t i = 0; i < targets.size(); ++i)
      if (targets[i].kernel->available && kind_of(*targets[i].kernel) == kind) ti.push_back(i);
    for (std::size_t c = 0; c < cases.size(); ++c) {
      std::vector<std::size_t> tc;
      for (std::size_t i : ti)
        if (runs_case(*targets[i].decl, cases[c])) tc.push_back(i);
      if (!tc.empty()) items.push_back({kind, c, std::move(tc)});
    }
  }

  // Each item's modelled seconds (the cost model: shards, budgets, case times).
  std::vector<CaseWork> work(items.size());
  std::vector<double> seconds;
  for (std::size_t i = 0; i < items.size(); ++i) {
    CaseWork& w = work[i];
    w.outputs = items[i].target_index.size();
    w.mpfr_rows = opt.oracle == OracleMode::mpfr;
    for (std::size_t t : items[i].target_index) {
      w.sparse_outputs += is_sparse(targets[t].decl->op) ? 1 : 0;
      w.mpfr_rows = w.mpfr_rows || !oracle::RowJudge::has_fast_tier(*targets[t].decl, targets[t].output);
    }
    seconds.push_back(modelled_case_seconds(cases[items[i].case_index], items[i].rows.format, w));
  }
  // This shard's items (all of them for the whole run), split by their modelled seconds (docs/scaling.md).
  std::vector<std::size_t> to_run;
  {
    const std::vector<std::size_t> shard_of = assign_to_shards(seconds, opt.shard.count);
    for (std::size_t i = 0; i < items.size(); ++i)
      if (shard_of[i] == opt.shard.index) to_run.push_back(i);
  }
  // Within a budget: first each entry's cheapest item (an entry that ran no
  // case would read as held), then the cheapest of the others (ties in item
  // order) while their modelled seconds fit; the rest are listed in the report.
  BudgetInfo budget;
  if (opt.budget.seconds > 0) {
    budget.seconds = opt.budget.seconds;
    budget.suite_seconds = opt.budget.suite_seconds;
    budget.cases = items.size();
    std::vector<std::size_t> cheapest(items.size());
    std::iota(cheapest.begin(), cheapest.end(), std::size_t{0});
    std::stable_sort(cheapest.begin(), cheapest.end(), [&](std::size_t a, std::size_t b) { return seconds[a] < seconds[b]; });
    std::vector<char> kept(items.size(), 0);
    std::vector<char> covered(targets.size(), 0);
    for (std::size_t i : cheapest)
      for (std::size_t t : items[i].target_index)
        if (!covered[t]) {
          covered[t] = 1;
          if (!kept[i]) budget.modelled_seconds += seconds[i];
          kept[i] = 1;
        }
    if (budget.modelled_seconds > budget.suite_seconds)
      throw std::invalid_argument(fmt::format(
          "--budget leaves {:.2f} s for the cases, less than the {:.2f} s modelled for one case of each kernel and "
          "output; raise --budget or run fewer kernels",
          budget.suite_seconds, budget.modelled_seconds));
    for (std::size_t i : cheapest) {
      if (kept[i]) continue;
      if (budget.modelled_seconds + seconds[i] > budget.suite_seconds) break;
      budget.modelled_seconds += seconds[i];
      kept[i] = 1;
    }
    to_run.clear();
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (kept[i]) {
        to_run.push_back(i);
        continue;
      }
      const SuiteCase& c = cases[items[i].case_index];
      budget.skipped.push_back({c.family->name, items[i].rows.label(), c.cols, c.temperature});
    }
    budget.cases_run = to_run.size();
  }

  // Items run in any order on any thread; results land in their own slot and
  // are merged in item order, so the report is identical for every --jobs.
  // The dearest (modelled) first, so that no long case starts last and ends
  // the run on one thread; in item order with rows_csv, whose lines are
  // written in item order as soon as the items before them are done.
  if (opt.rows_csv == nullptr)
    std::stable_sort(to_run.begin(), to_run.end(), [&](std::size_t a, std::size_t b) { return seconds[a] > seconds[b]; });
  SuiteState state;
  for (const Item& it : items) {
    const SuiteCase& c = cases[it.case_index];
    state.items.push_back({c.family->name, c.cols, c.temperature, it.target_index});
  }
  state.results.resize(items.size());
  state.ran.assign(items.size(), 0);
  std::vector<CaseResult>& results = state.results;
  // Per target and family: the sketches of the percentiles, merged from each
  // case as it finishes (merging commutes: the same for any --jobs).
  std::vector<std::map<std::string, Sketches>>& sketches = state.sketches;
  sketches.resize(targets.size());
  std::mutex sketch_mutex;
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex progress_mutex;
  // rows_csv: each item's lines once every item before it is written (items
  // are handed out in order, so at most --jobs of them wait).
  std::vector<char> finished(to_run.size(), 0);
  std::size_t next_to_write = 0;
  std::mutex csv_mutex;
  const auto write_csv_in_order = [&](std::size_t k) {
    if (opt.rows_csv == nullptr) return;
    std::lock_guard lock(csv_mutex);
    finished[k] = 1;
    for (; next_to_write < to_run.size() && finished[next_to_write]; ++next_to_write) {
      std::string& lines = results[to_run[next_to_write]].rows_csv;
      opt.rows_csv->write(lines.data(), static_cast<std::streamsize>(lines.size()));
      std::string().swap(lines);
    }
    if (!*opt.rows_csv) throw std::runtime_error("writing the rows CSV failed");
  };
  std::vector<double> cpu_seconds(items.size(), 0);  // measured for RunOptions::case_times
  std::exception_ptr failure;
  std::mutex failure_mutex;
  // The first exception ends the run: no item starts after it.
  const auto stop_with = [&](std::exception_ptr e) {
    std::lock_guard lock(failure_mutex);
    if (!failure) failure = e;
    next = to_run.size();
  };
  auto worker = [&] {
    for (std::size_t k; (k = next++) < to_run.size();) {
      const std::size_t i = to_run[k];
      try {
        std::vector<Target> sel;
        for (std::size_t t : items[i].target_index) sel.push_back(targets[t]);
        const double cpu_before = opt.case_times != nullptr ? thread_cpu_seconds() : 0;
        results[i] = run_case(cases[items[i].case_index], items[i].rows, sel, opt);
        if (opt.case_times != nullptr) cpu_seconds[i] = thread_cpu_seconds() - cpu_before;
        state.ran[i] = 1;
        std::lock_guard lock(sketch_mutex);
        for (std::size_t j = 0; j < sel.size(); ++j) {
          Accum& a = results[i].acc[j];
          Sketches& into = sketches[items[i].target_index[j]][cases[items[i].case_index].family->name];
          into.ulp.merge(a.ulp_sketch);
          into.ratio.merge(a.ratio_sketch);
          into.rel_measured += a.rel_measured;
          a.ulp_sketch.clear();
          a.ratio_sketch.clear();
        }
      } catch (...) {
        stop_with(std::current_exception());
      }
      try {
        write_csv_in_order(k);
      } catch (...) {
        stop_with(std::current_exception());
      }
      const std::size_t d = ++done;
      if (opt.progress) {
        std::lock_guard lock(progress_mutex);
        opt.progress(d, to_run.size());
      }
    }
  };
  const unsigned jobs = std::max(1u, std::min<unsigned>(opt.jobs, static_cast<unsigned>(to_run.size())));
  std::vector<std::thread> pool;
  for (unsigned j = 1; j < jobs; ++j) pool.emplace_back(worker);
  worker();
  for (std::thread& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
  if (opt.case_times != nullptr) {
    for (std::size_t i : to_run) {
      const SuiteCase& c = cases[items[i].case_index];
      *opt.case_times << fmt::format("{},{},{},{},{},{},{},{},{},{:.6f},{:.6f}\n", name(items[i].rows.format),
                                     c.family->name, c.cols, c.temperature, c.rows,
                                     std::max<std::int64_t>(1, c.family->head_dim), work[i].outputs,
                                     work[i].sparse_outputs, work[i].mpfr_rows ? 1 : 0, seconds[i], cpu_seconds[i]);
    }
    if (!*opt.case_times) throw std::runtime_error("writing the case times failed");
  }

  Report report;
  report.tool_version = softcheck_version;
  report.suite = opt.selection.suite;
  report.seed = opt.seed;
  report.oracle_bits = opt.oracle_bits;
  report.oracle.mode = std::string(name(opt.oracle));
  report.reference_rule = opt.reference_rule;
  report.fp_env = std::string(name(opt.fp_env));
  report.selection_recorded = true;
  report.selected_families = opt.selection.families;
  report.selected_sizes = opt.selection.sizes;
  report.selected_temperatures = opt.selection.temperatures;
  report.selected_ops = opt.selection.ops;
  for (const SuiteCase& c : cases) {
    // A family no op here takes (an attention family named beside softmax kernels only) is not in the report.
    if (c.family->attention() ? !attention_ops : !softmax_ops) continue;
    if (std::find(report.families.begin(), report.families.end(), c.family->name) == report.families.end())
      report.families.push_back(c.family->name);
    if (c.family->fixed_cols == 0 && std::find(report.sizes.begin(), report.sizes.end(), c.cols) == report.sizes.end())
      report.sizes.push_back(c.cols);
    if (std::find(report.temperatures.begin(), report.temperatures.end(), c.temperature) == report.temperatures.end())
      report.temperatures.push_back(c.temperature);
  }
  for (const Target& t : targets) {
    KernelSummary& s = report.kernels.emplace_back(describe(t));
    if (!t.kernel->available) s.status = "unavailable";
  }
  report.budget = std::move(budget);
  resolve_worst_texts(state, report.kernels, opt.oracle_bits);
  finish_report(report, state, opt.entry_seconds);
  if (!opt.shard.whole()) {
    report.shard.index = opt.shard.index;
    report.shard.count = opt.shard.count;
    report.shard.state = state_to_json(state);
  }
  return report;
}

}  // namespace softcheck
