// The row verdict: does one kernel output row meet its op's contract, and
// why. One place owns the order of the oracle's tiers (docs/oracle.md,
// "Tiered oracle") and the decision every checker makes: the run suite,
// `sweep`, the accuracy property and the fuzzers' differential check all
// ask a RowJudge (LLVM libc's MPFR matcher: one object decides and explains).
//
// A RowJudge holds one input row and computes its exact values lazily, once,
// in tier order: the double-double tier for f64 results, the double then the
// long double tier for the other formats, MPFR last, for the rows (and ops)
// the fast tiers cannot decide. Several kernels' outputs on the same row share
// those computations.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "softcheck/attention_oracle.hpp"
#include "softcheck/fast_oracle.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/sparse_oracle.hpp"

namespace softcheck::oracle {

enum class Tier : unsigned char { none, fast_double, fast_extended, fast_double_double, mpfr };
std::string_view name(Tier t);

struct JudgeOptions {
  unsigned bits = default_bits;  // MPFR precision of the exact row
  bool tiered = true;            // false: MPFR for every row
  // What a fast tier must decide before its verdict is taken (else the row
  // goes to the next tier): every element's error to within `tolerance` in
  // the op's unit (compare_row_fast), the verdict against the bound, and with
  // `element_bin`, each element's bin.
  double tolerance = 1e-3;
  // When set, RowVerdict::element_error is filled, and a fast tier's verdict
  // is taken only when every element's bin (e.g. a histogram's) is decided.
  // Non-decreasing in its argument (a fast tier decides an element's bin from
  // the two ends of its figure's enclosure); a plain function: it is called
  // twice per element decided.
  std::size_t (*element_bin)(double) = nullptr;
  // When true, RowVerdict::element_signed and element_signed_rel are filled
  // (the run report's bias figures).
  bool signed_errors = false;
  // false: when the fast tiers cannot decide, the verdict has tier none and
  // no figures (a caller with a cheaper stage of its own after them).
  bool mpfr_fallback = true;

  // MPFR for every row (checks that want the exact row alone).
  static JudgeOptions exact_only(unsigned bits = default_bits) {
    JudgeOptions o;
    o.bits = bits;
    o.tiered = false;
    return o;
  }
  // The fast tiers only: undecided rows get tier none.
  static JudgeOptions fast_only() {
    JudgeOptions o;
    o.mpfr_fallback = false;
    return o;
  }
};

// The verdict on one output row.
struct RowVerdict {
  RowStatus status = RowStatus::ok;  // undefined: a +inf/NaN input, no verdict
  // all_masked rows: whether the outputs follow the kernel's masked-row policy.
  bool follows_policy = true;
  // ok rows: errors in the op's metric against the exact values; when a fast
  // tier decided, ULP figures are within `uncertainty` of MPFR's.
  RowError error;
  double uncertainty = 0;
  std::vector<double> element_error;  // with JudgeOptions::element_bin: per output, NaN unless class finite
  // With JudgeOptions::signed_errors: per output, the error with the sign of
  // r - v (ULP, in the output's metric) and (r - v) / |v| (NaN unless class
  // finite; the relative error also NaN where v = 0). A fast tier gives 0
  // where its enclosure of v holds r (the error is then below its tolerance).
  std::vector<double> element_signed, element_signed_rel;
  double bound = std::numeric_limits<double>::infinity();  // the contract's, +inf for none
  RowShape shape{};  // the row shape the bound was computed on (ok rows)
  bool broken = false;   // a NaN/inf output where the exact value is finite, or a wrong special value
  bool within = true;    // declared contract: !broken && max error <= bound (always true without one)
  Tier tier = Tier::none;
  // Sparse ops (docs/sparse.md): the errors cover the outputs that both the
  // oracle and the kernel put on the support, at these row positions; a
  // kernel 0 where the exact value is positive and does not round to 0 is a
  // false zero, a non-zero where it is 0 a false non-zero (counted, never in
  // the error figures). NaN/inf outputs stay measured wherever they are.
  std::vector<std::size_t> measured_index;
  std::size_t false_zeros = 0, false_nonzeros = 0;

  bool holds() const { return status != RowStatus::ok ? follows_policy : within; }
};

class RowJudge {
 public:
  RowJudge(std::span<const double> x, double temperature, Format f, JudgeOptions opt = {});
  explicit RowJudge(Format f, JudgeOptions opt = {});
  // Judges another row from now on; the tiers' storage is reused row to row.
  void set_row(std::span<const double> x, double temperature);
  // The row's class target, for the ops that take one (cross_entropy; set
  // after set_row, which forgets it).
  void set_target(std::int64_t target);
  // The row's upstream gradient, for the backward ops (one entry per entry of
  // the row; set after set_row, which forgets it; the caller keeps it alive).
  void set_upstream(std::span<const double> g);
  // The row's q, K and V of head dimension d, for the attention op (the row
  // set_row gave is the score bias; set after set_row, which forgets them;
  // the caller keeps them alive), for the ops with a head dimension
  // (attention, relu_attention, linear_attention). Its row shape is
  // attention_op_row_shape's. A bounded window masks the keys outside it
  // (window_masked_bias): from then on the row is that masked bias row.
  // Throws std::invalid_argument for a window not valid for the row.
  void set_attention(std::span<const double> q, std::span<const double> K, std::span<const double> V,
                     std::int64_t d, const KeyWindow& window = {});

  // The verdict for `y`, output `output` of op d.op (spec(d.op).out[output]:
  // a row or one value for this input row), of a kernel with masked-row
  // policy `policy`, against that output's contract (OpDecl::contract_of).
  RowVerdict judge(const OpDecl& d, MaskedRowPolicy policy, std::span<const double> y, std::size_t output = 0);

  // The conditional mode of a backward op (docs/gradients.md): the error of
  // dx, output `output` of d.op (a softmax or log-softmax gradient), against
  // the exact backward of the kernel's own forward output `y` (its output 0)
  // rather than of the exact forward: the backward's error alone. In the
  // output's metric (scaled); none for a row without finite entries or a y
  // the backward cannot take (NaN, +inf). Needs set_upstream.
  std::optional<RowError> conditional_error(const OpDecl& d, std::span<const double> y, std::span<const double> dx,
                                            std::size_t output);

  // The MPFR row (computed on first use).
  const ExactRow& exact();
  // The exact values of output `output` of op d.op on this row (MPFR), and
  // their scales for a Metric::scaled output (else empty). Throws
  // std::logic_error for a cross-entropy output before set_target.
  std::span<const Real> exact_output(const OpDecl& d, std::size_t output);
  std::span<const Real> exact_scale(const OpDecl& d, std::size_t output);
  // A sparse op's exact row (computed on first use for its op and parameters).
  const SparseRow& sparse_exact(const OpDecl& d);
  // True once the MPFR row was needed for a row with finite entries.
  bool used_mpfr() const;
  // The format whose ULPs (and contributing cut-off) it judges in.
  Format format() const { return format_; }
  // Whether the fast tiers evaluate this output (a row output of an op with a fast tier).
  static bool has_fast_tier(const OpDecl& d, std::size_t output);
  // The row's status (from the first tier computed; else the tier the first
  // judge call needs, or the fast tier when none was asked yet).
  RowStatus status();

 private:
  template <class Row>
  bool decide_fast(const OpDecl& d, std::size_t output, std::span<const double> y, const Row& fast, Tier tier,
                   RowVerdict& v);
  void decide_exact(const OpDecl& d, std::size_t output, std::span<const double> y, RowVerdict& v);
  void decide_sparse(const OpDecl& d, MaskedRowPolicy policy, std::span<const double> y, RowVerdict& v);
  void measure_exactly(const OpDecl& d, std::size_t output, std::span<const double> y, std::span<const Real> ref,
                       RowVerdict& v);
  // The status from whatever is computed, else from the tier the output starts with.
  RowStatus status_for(const OpDecl& d, std::size_t output);
  // What decide_fast found of one result row before the contract's bound:
  // whether the tier decided it, the row's figures and each element's. Kept
  // for the filling of the tier's row (BasicFastRow::serial), the tier and
  // the output kind: a later result row the same bit for bit takes them
  // (kernels that share code hand the judge identical rows). Fewer than 16
  // for rows beyond 65,536 values: 32 MB of rows at most.
  struct FastFigures {
    std::uint64_t serial = 0;
    Tier tier = Tier::none;
    OutputKind kind = OutputKind::probabilities;
    bool scalar = false;
    std::vector<double> y;
    bool decided = false;
    RowError error;
    double uncertainty = 0;
    std::vector<double> element_error, element_signed, element_signed_rel;
  };
  std::array<FastFigures, 16> fast_figures_;
  std::size_t next_fast_figures_ = 0;  // the slot the next new row takes
  template <class Row>
  bool fast_figures(const Operand& out, std::span<const double> y, const Row& fast, FastFigures& k);

  std::span<const double> x_;
  double temperature_;
  Format format_;
  JudgeOptions opt_;
  // Each tier's row and whether it holds the current row's values.
  DoubleFastRow double_;
  FastRow extended_;
  DDFastRow dd_;
  bool has_double_ = false, has_extended_ = false, has_dd_ = false;
  std::optional<ExactRow> exact_;
  std::optional<std::int64_t> target_;
  // Per label smoothing (a judge may see kernels declaring different ones);
  // a deque keeps the spans handed out valid as smoothings are added.
  std::deque<std::pair<double, ExactCrossEntropy>> cross_entropy_;
  const ExactCrossEntropy& cross_entropy_exact(double label_smoothing);
  std::span<const double> upstream_;
  bool has_upstream_ = false;
  std::optional<ExactGradient> softmax_gradient_, log_softmax_gradient_;
  const ExactGradient& gradient_exact(OutputKind kind);
  std::span<const double> q_, K_, V_;
  std::int64_t head_dim_ = 0;
  // The row set_row gave, and, for a bounded window, the row with the keys
  // outside it masked (then x_).
  std::span<const double> given_row_;
  std::vector<double> window_row_;
  // Per op output kind (attention, relu or linear attention), softcap and
  // sink (kernels on one row may declare different ones); a deque keeps the
  // spans handed out valid.
  std::deque<std::pair<std::pair<OutputKind, OpParams>, ExactAttention>> attention_;
  const ExactAttention& attention_exact(const OpDecl& d);
  // The contract's row shape: row_shape, or attention_op_row_shape for op d.op.
  RowShape shape_for(const OpDecl& d) const;
  // row_shape of the current row, kept for the row's other verdicts (every
  // kernel of the format is judged on it); reset wherever x_ changes.
  mutable std::optional<RowShape> dense_shape_;
  void set_bound(const OpDecl& d, std::size_t output, RowVerdict& v) const;
  // By op and parameters; a deque, so that the references sparse_exact
  // returns stay valid when another sparse op's row is added.
  std::deque<std::pair<OpDecl, SparseRow>> sparse_;
  const DoubleFastRow& double_tier();
  const FastRow& extended_tier();
  const DDFastRow& dd_tier();
};

// The reference rule's decision on one row (docs/gating-your-kernel.md, "The
// reference rule"): max_i |y_i - g_i| <= k max_i |r_i - g_i| + slack u
// max(1, max_i |r_i|), y output `output` of d.op with verdict v, r the
// stable kernel's row of the same output with verdict vr, g the exact values
// of the judge's row x (at `temperature`), u the unit roundoff of f. Rows
// that are not ok, rows where the reference is broken and rows f cannot hold
// (row_fits_format) are not judged; a NaN/inf output on a judged row breaks
// the rule. The fast tiers' max |error| is within 2e-3 u max|g| (+ 2^-20 of
// itself) of MPFR's; a comparison that close is redone with MPFR.
struct ReferenceRuleVerdict {
  bool judged = false;
  bool violated = false;
  double ratio = -1;  // error / allowed (+inf for a broken output); -1 when not judged
};
ReferenceRuleVerdict reference_rule(RowJudge& judge, const OpDecl& d, std::size_t output, std::span<const double> x,
                                    double temperature, Format f, std::span<const double> y, const RowVerdict& v,
                                    std::span<const double> yr, const RowVerdict& vr, double k, double slack);

// The floor's no_nonfinite check (kernel.hpp) on one row of an output
// without a contract: a NaN/inf output where the exact value is finite (e,
// the row's errors), on a row x that f can hold, unless d opted out.
bool breaks_floor_no_nonfinite(const RowError& e, const OpDecl& d, std::span<const double> x, double temperature,
                               Format f);

// One line that says what decided a verdict, e.g. "max error 3.2 ulp at [4]
// (got 0x1.8p-3, exact 1.8750001e-01) <= bound 17.5 (2 + 1*n + 2*R), double tier".
std::string explain(const RowVerdict& v, const OpDecl& d, std::span<const double> y, RowJudge& judge,
                    std::size_t output = 0);

}  // namespace softcheck::oracle
