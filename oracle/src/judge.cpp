#include "softcheck/judge.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace softcheck::oracle {

namespace {

// y - g for a tier's value g: in long double, and for a double-double g as
// (y - hi) - lo, so that an f64 result's difference keeps g's low part.
template <class R>
long double difference(double y, const R& g) {
  return static_cast<long double>(y) - static_cast<long double>(g);
}
long double difference(double y, const DD& g) { return (static_cast<long double>(y) - g.hi) - g.lo; }
template <class R>
long double wide(const R& g) {
  return static_cast<long double>(g);
}
long double wide(const DD& g) { return static_cast<long double>(g.hi) + g.lo; }

}  // namespace

RowShape RowJudge::shape_for(const OpDecl& d) const {
  if (!has_head_dim(d.op)) {
    if (!dense_shape_) dense_shape_ = row_shape(x_, temperature_, format_);
    return *dense_shape_;
  }
  if (head_dim_ == 0) throw std::logic_error("RowJudge: an attention output judged before set_attention");
  return attention_op_row_shape(d.op, x_, q_, K_, head_dim_, temperature_, format_, d.params.softcap,
                                d.params.sink);
}

void RowJudge::set_bound(const OpDecl& d, std::size_t output, RowVerdict& v) const {
  const Contract& c = d.contract_of(output);
  v.shape = shape_for(d);
  v.bound = c.bound_ulps(v.shape, format_);
  v.broken = v.error.nonfinite > 0 || v.error.special_mismatch > 0;
  v.within = !c.declared || (!v.broken && v.error.max_ulp <= v.bound);
}

std::string_view name(Tier t) {
  switch (t) {
    case Tier::none: return "none";
    case Tier::fast_double: return "double tier";
    case Tier::fast_extended: return "long double tier";
    case Tier::fast_double_double: return "double-double tier";
    case Tier::mpfr: return "MPFR";
  }
  return "?";
}

RowJudge::RowJudge(Format f, JudgeOptions opt) : temperature_(1), format_(f), opt_(std::move(opt)) {}

RowJudge::RowJudge(std::span<const double> x, double temperature, Format f, JudgeOptions opt)
    : RowJudge(f, std::move(opt)) {
  set_row(x, temperature);
}

void RowJudge::set_row(std::span<const double> x, double temperature) {
  x_ = given_row_ = x;
  temperature_ = temperature;
  dense_shape_.reset();
  has_double_ = has_extended_ = has_dd_ = false;
  exact_.reset();
  sparse_.clear();
  target_.reset();
  cross_entropy_.clear();
  has_upstream_ = false;
  softmax_gradient_.reset();
  log_softmax_gradient_.reset();
  head_dim_ = 0;
  attention_.clear();
}

void RowJudge::set_attention(std::span<const double> q, std::span<const double> K, std::span<const double> V,
                             std::int64_t d, const KeyWindow& window) {
  const auto n = given_row_.size(), dim = static_cast<std::size_t>(d);
  if (d < 1 || q.size() != dim || K.size() != n * dim || V.size() != n * dim)
    throw std::invalid_argument("RowJudge::set_attention: q must hold d values, K and V cols x d (d >= 1)");
  if (!window.valid(static_cast<std::int64_t>(n)))
    throw std::invalid_argument("RowJudge::set_attention: the window's position must lie in [0, n), its bounds in [-1, n]");
  if (window.bounded()) {
    window_row_ = window_masked_bias(given_row_, window);
    x_ = window_row_;
  } else {
    x_ = given_row_;
  }
  dense_shape_.reset();
  has_double_ = has_extended_ = has_dd_ = false;
  exact_.reset();
  q_ = q;
  K_ = K;
  V_ = V;
  head_dim_ = d;
  attention_.clear();
}

const ExactAttention& RowJudge::attention_exact(const OpDecl& d) {
  if (head_dim_ == 0) throw std::logic_error("RowJudge: an attention output judged before set_attention");
  // The op's head-shaped output names which exact attention it is.
  const OutputKind kind = spec(d.op).out[0].kind;
  const OpParams& p = d.params;
  for (const auto& [key, a] : attention_)
    if (key.first == kind && key.second.softcap == p.softcap && key.second.sink == p.sink) return a;
  // The scale at the format's resolution (attention_oracle.hpp).
  const double rho = denorm_min(format_) / unit_roundoff(format_);
  ExactAttention a;
  switch (kind) {
    case OutputKind::relu_attention_output:
      a = exact_relu_attention(x_, q_, K_, V_, head_dim_, temperature_, opt_.bits, rho);
      break;
    case OutputKind::linear_attention_output:
      a = exact_linear_attention(x_, q_, K_, V_, head_dim_, temperature_, opt_.bits, rho);
      break;
    default: a = exact_attention(x_, q_, K_, V_, head_dim_, temperature_, opt_.bits, rho, p.softcap, p.sink);
  }
  attention_.emplace_back(std::pair{kind, p}, std::move(a));
  return attention_.back().second;
}

void RowJudge::set_upstream(std::span<const double> g) {
  upstream_ = g;
  has_upstream_ = true;
  softmax_gradient_.reset();
  log_softmax_gradient_.reset();
}

const ExactGradient& RowJudge::gradient_exact(OutputKind kind) {
  if (!has_upstream_) throw std::logic_error("RowJudge: a backward output judged before set_upstream");
  std::optional<ExactGradient>& slot = kind == OutputKind::softmax_gradient ? softmax_gradient_ : log_softmax_gradient_;
  // The scale's probabilities at the format's resolution (oracle.hpp, exact_backward).
  if (!slot) slot = exact_backward(exact(), upstream_, kind, opt_.bits, denorm_min(format_) / unit_roundoff(format_));
  return *slot;
}

std::optional<RowError> RowJudge::conditional_error(const OpDecl& d, std::span<const double> y,
                                                   std::span<const double> dx, std::size_t output) {
  if (output >= spec(d.op).out.size()) throw std::invalid_argument("RowJudge::conditional_error: no such output");
  const Operand& out = spec(d.op).out[output];
  if (out.kind != OutputKind::softmax_gradient && out.kind != OutputKind::log_softmax_gradient) return std::nullopt;
  if (!has_upstream_) throw std::logic_error("RowJudge: a backward output judged before set_upstream");
  if (std::none_of(x_.begin(), x_.end(), [](double v) { return std::isfinite(v); })) return std::nullopt;
  const bool log = out.kind == OutputKind::log_softmax_gradient;
  const bool usable = std::any_of(y.begin(), y.end(), [](double v) { return std::isfinite(v); }) &&
                      std::none_of(y.begin(), y.end(), [log](double v) {
                        return std::isnan(v) || v == INFINITY || (!log && v == -INFINITY);
                      });
  if (!usable) return std::nullopt;
  const ExactGradient given =
      exact_backward_given(y, upstream_, out.kind, opt_.bits, denorm_min(format_) / unit_roundoff(format_), x_);
  return compare_row(dx, given.value, format_, out, given.scale);
}

void RowJudge::set_target(std::int64_t target) {
  target_ = target;
  cross_entropy_.clear();
}

const ExactCrossEntropy& RowJudge::cross_entropy_exact(double label_smoothing) {
  if (!target_) throw std::logic_error("RowJudge: a cross-entropy output judged before set_target");
  for (const auto& [eps, ce] : cross_entropy_)
    if (eps == label_smoothing) return ce;
  cross_entropy_.emplace_back(label_smoothing, *target_ == ignore_index
                                                   ? ignored_cross_entropy(x_.size(), opt_.bits)
                                                   : exact_cross_entropy(exact(), *target_, opt_.bits, label_smoothing));
  return cross_entropy_.back().second;
}

namespace {
bool is_cross_entropy(OutputKind k) {
  return k == OutputKind::cross_entropy_loss || k == OutputKind::cross_entropy_gradient;
}
}  // namespace

std::span<const Real> RowJudge::exact_output(const OpDecl& d, std::size_t output) {
  const OutputKind kind = spec(d.op).out[output].kind;
  if (has_head_dim(d.op)) return exact_values(attention_exact(d), kind);
  if (is_cross_entropy(kind)) return exact_values(cross_entropy_exact(d.params.label_smoothing), kind);
  if (is_gradient(kind)) return gradient_exact(kind).value;
  return exact_values(exact(), kind);
}

std::span<const Real> RowJudge::exact_scale(const OpDecl& d, std::size_t output) {
  const OutputKind kind = spec(d.op).out[output].kind;
  if (spec(d.op).out[output].metric != Metric::scaled) return {};
  if (is_attention_output(kind)) return attention_exact(d).scale;
  if (kind == OutputKind::cross_entropy_gradient) return cross_entropy_exact(d.params.label_smoothing).scale;
  return gradient_exact(kind).scale;
}

bool RowJudge::used_mpfr() const {
  if (exact_ && exact_->status == RowStatus::ok) return true;
  if (std::any_of(attention_.begin(), attention_.end(), [](const auto& a) { return a.second.status == RowStatus::ok; }))
    return true;
  return std::any_of(sparse_.begin(), sparse_.end(), [](const auto& s) { return s.second.status == RowStatus::ok; });
}

const SparseRow& RowJudge::sparse_exact(const OpDecl& d) {
  for (const auto& [decl, row] : sparse_)
    if (decl.op == d.op && decl.params == d.params) return row;
  sparse_.emplace_back(d, exact_sparse(d.op, d.params, x_, temperature_, opt_.bits));
  return sparse_.back().second;
}

void RowJudge::decide_sparse(const OpDecl& d, MaskedRowPolicy policy, std::span<const double> y, RowVerdict& v) {
  const SparseRow& s = sparse_exact(d);
  v.status = s.status;
  if (v.status == RowStatus::undefined) return;
  if (v.status == RowStatus::all_masked) {
    const double n = static_cast<double>(x_.size()), u = unit_roundoff(format_);
    for (double out : y)
      if (!is_masked_row_value(out, spec(d.op).out[0].kind, policy, n, u)) v.follows_policy = false;
    return;
  }
  // The entries measured: both on the support, or a NaN/inf output anywhere.
  thread_local std::vector<double> ys;
  thread_local std::vector<Real> exact;
  ys.clear();
  exact.clear();
  for (std::size_t i = 0; i < y.size(); ++i) {
    const bool exact_on = s.support[i];
    const bool kernel_on = y[i] != 0;
    if (std::isfinite(y[i]) && exact_on && !kernel_on && round_to(s.p[i], format_) != 0) {
      v.false_zeros++;
      continue;
    }
    if (std::isfinite(y[i]) && !exact_on) {
      if (kernel_on) v.false_nonzeros++;
      continue;  // both 0: exact, nothing to measure
    }
    ys.push_back(y[i]);
    exact.push_back(s.p[i]);
    v.measured_index.push_back(i);
  }
  measure_exactly(d, 0, ys, exact, v);
}

const DoubleFastRow& RowJudge::double_tier() {
  if (!has_double_) double_fast_row(x_, temperature_, double_);
  has_double_ = true;
  return double_;
}

const FastRow& RowJudge::extended_tier() {
  if (!has_extended_) fast_row(x_, temperature_, extended_);
  has_extended_ = true;
  return extended_;
}

const DDFastRow& RowJudge::dd_tier() {
  if (!has_dd_) dd_fast_row(x_, temperature_, dd_);
  has_dd_ = true;
  return dd_;
}

const ExactRow& RowJudge::exact() {
  if (!exact_) exact_ = exact_row(x_, temperature_, opt_.bits);
  return *exact_;
}

// The first tier's status: every tier classifies the row by the same rules
// (fast_oracle.hpp), so whichever is computed first answers.
// An op without a fast tier starts with MPFR: no fast row is computed just
// for the status (every tier classifies the row by the same rules).
RowStatus RowJudge::status_for(const OpDecl& d, std::size_t output) {
  // q, K and V can leave a row undefined too.
  if (has_head_dim(d.op)) return attention_exact(d).status;
  if (!exact_ && !has_dd_ && !has_double_ && !(opt_.tiered && has_fast_tier(d, output))) return exact().status;
  return status();
}

RowStatus RowJudge::status() {
  if (exact_) return exact_->status;
  if (!opt_.tiered) return exact().status;
  return format_ == Format::f64 ? dd_tier().status : double_tier().status;
}

// The fast tier's verdict, or false (v untouched in what matters) when its
// enclosures cannot decide what the caller needs: every element's error to
// within the tolerance, each element's bin when asked, and the verdict
// against the bound (not inside the uncertainty).
template <class Row>
bool RowJudge::decide_fast(const OpDecl& d, std::size_t output, std::span<const double> y, const Row& fast, Tier tier,
                           RowVerdict& v) {
  if (fast.status != RowStatus::ok || !fast.usable) return false;
  const Operand& out = spec(d.op).out[output];
  const bool is_scalar = out.shape == OperandShape::scalar;
  // The figures of a result row the same bit for bit as one decided on this
  // filling of the tier's row for an output of the same kind (a tiled twin
  // and its base, a _mt kernel and its one-thread one, softmax_lse's y and a
  // softmax): everything below depends on nothing else until the bound.
  const auto same = [&](const FastFigures& k) {
    return k.serial == fast.serial && fast.serial != 0 && k.tier == tier && k.kind == out.kind &&
           k.scalar == is_scalar && k.y.size() == y.size() &&
           std::memcmp(k.y.data(), y.data(), y.size() * sizeof(double)) == 0;
  };
  // An entry holds 4 rows of doubles: at most 32 MB of them for long rows.
  const std::size_t slots =
      std::clamp<std::size_t>((std::size_t{1} << 20) / std::max<std::size_t>(y.size(), 1), 1, fast_figures_.size());
  const auto end = fast_figures_.begin() + static_cast<std::ptrdiff_t>(slots);
  const auto found = std::find_if(fast_figures_.begin(), end, same);
  FastFigures* kept = found != end ? &*found : nullptr;
  if (kept == nullptr) {
    if (next_fast_figures_ >= slots) next_fast_figures_ = 0;
    kept = &fast_figures_[next_fast_figures_];
    next_fast_figures_ = (next_fast_figures_ + 1) % slots;
    kept->serial = 0;  // until complete (compare_row_fast throws on a result that is not a value of the format)
    kept->decided = fast_figures(out, y, fast, *kept);
    kept->tier = tier, kept->kind = out.kind, kept->scalar = is_scalar;
    kept->y.assign(y.begin(), y.end());
    kept->serial = fast.serial;
  }
  if (!kept->decided) return false;
  if (opt_.element_bin) v.element_error = kept->element_error;
  if (opt_.signed_errors) {
    v.element_signed = kept->element_signed;
    v.element_signed_rel = kept->element_signed_rel;
  }
  v.error = kept->error;
  v.uncertainty = kept->uncertainty;
  const Contract& c = d.contract_of(output);
  set_bound(d, output, v);
  if (c.declared && !v.broken && v.error.max_ulp - v.uncertainty <= v.bound &&
      v.error.max_ulp + v.uncertainty > v.bound)
    return false;  // the verdict sits inside the uncertainty
  v.tier = tier;
  return true;
}

// decide_fast's figures of result row y on a tier's row, into k: false when
// the enclosures cannot decide what the caller needs (every element's error
// to within the tolerance, each element's bin when asked).
template <class Row>
bool RowJudge::fast_figures(const Operand& out, std::span<const double> y, const Row& fast, FastFigures& k) {
  thread_local FastRowError fe;  // storage reused row to row
  // A scalar output (lse, entropy: has_fast_tier) is compared on its
  // enclosure, formed here once: the error's sign below reads it too.
  using R = std::remove_cvref_t<decltype(fast.softmax[0])>;
  const bool is_scalar = out.shape == OperandShape::scalar;
  R scalar{}, scalar_err{};
  ZeroState scalar_zero = ZeroState::unknown;
  if (is_scalar) {
    if (y.size() != 1) throw std::invalid_argument("RowJudge::judge: a scalar output needs one value");
    if (!scalar_enclosure(fast, out.kind, scalar, scalar_err, scalar_zero) ||
        !compare_scalar_fast(y[0], scalar, scalar_err, scalar_zero, format_, fe, opt_.tolerance, opt_.bits))
      return false;
  } else if (!compare_row_fast(y, fast, format_, out.kind, fe, opt_.tolerance, opt_.bits)) {
    return false;
  }
  if (opt_.element_bin) {
    k.element_error.assign(fe.ulp.size(), NAN);
    for (std::size_t i = 0; i < fe.ulp.size(); ++i) {
      if (!fe.finite[i]) continue;
      // The bins are monotone: both ends in one bin puts the figure there too.
      if (opt_.element_bin(std::max(0.0, fe.ulp[i] - fe.ulp_err[i])) != opt_.element_bin(fe.ulp[i] + fe.ulp_err[i]))
        return false;
      k.element_error[i] = fe.ulp[i];
    }
  }
  if (opt_.signed_errors) {
    // The sign of r - v from the enclosure [g - e, g + e] of v; the figures
    // are the tier's (within its tolerance of MPFR's).
    const bool probabilities = out.kind == OutputKind::probabilities;
    const std::span<const R> g = is_scalar ? std::span<const R>(&scalar, 1)
                                 : probabilities ? std::span<const R>(fast.softmax)
                                                 : std::span<const R>(fast.log_softmax);
    const std::span<const R> ge = is_scalar ? std::span<const R>(&scalar_err, 1)
                                  : probabilities ? std::span<const R>(fast.softmax_err)
                                                  : std::span<const R>(fast.log_softmax_err);
    const std::span<const ZeroState> zeros = is_scalar       ? std::span<const ZeroState>(&scalar_zero, 1)
                                             : probabilities ? std::span<const ZeroState>(fast.softmax_zero)
                                                             : std::span<const ZeroState>(fast.log_softmax_zero);
    k.element_signed.assign(fe.ulp.size(), NAN);
    k.element_signed_rel.assign(fe.ulp.size(), NAN);
    for (std::size_t i = 0; i < fe.ulp.size(); ++i) {
      if (!fe.finite[i]) continue;
      const long double gi = wide(g[i]), diff = difference(y[i], g[i]);
      double sign = std::isinf(y[i]) || std::fabs(diff) <= wide(ge[i]) ? 0 : diff > 0 ? 1 : -1;
      double rel = gi == 0 ? NAN : static_cast<double>(std::fabs(diff / gi));
      // An infinite result decided right (a masked entry's -inf, an f64
      // overflow): sign and relative error 0, as compare_element has them.
      if (std::isinf(y[i])) rel = 0;
      // A value enclosed as 0 +- err that MPFR has non-zero (a softmax entry
      // or an lse below the tier's exp floor, an entropy that small): a
      // decided result there is 0 (else the compare gave the row up), off by
      // all of the value, relative error 1, signed against the value's sign
      // (a log-softmax is negative, the others positive), as MPFR has it.
      if (gi == 0 && y[i] == 0 && zeros[i] == ZeroState::positive) {
        sign = out.kind == OutputKind::log_probabilities ? 1 : -1;
        rel = 1;
      }
      k.element_signed[i] = sign * fe.ulp[i];
      k.element_signed_rel[i] = sign * rel;
    }
  }
  k.error = fe.error;
  k.uncertainty = fe.max_ulp_err;
  return true;
}

void RowJudge::decide_exact(const OpDecl& d, std::size_t output, std::span<const double> y, RowVerdict& v) {
  measure_exactly(d, output, y, exact_output(d, output), v);
}

// y against MPFR's values: the row's errors, each element's when asked, the bound.
void RowJudge::measure_exactly(const OpDecl& d, std::size_t output, std::span<const double> y,
                               std::span<const Real> ref, RowVerdict& v) {
  const Operand& out = spec(d.op).out[output];
  const std::span<const Real> scale = spec(d.op).sparse() ? std::span<const Real>{} : exact_scale(d, output);
  v.error = compare_row(y, ref, format_, out, scale);
  v.uncertainty = 0;
  if (opt_.element_bin || opt_.signed_errors) {
    if (opt_.element_bin) v.element_error.assign(ref.size(), NAN);
    if (opt_.signed_errors) {
      v.element_signed.assign(ref.size(), NAN);
      v.element_signed_rel.assign(ref.size(), NAN);
    }
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const ElementError e =
          scale.empty() ? compare_element(y[i], ref[i], format_, out) : compare_element(y[i], ref[i], format_, out, scale[i]);
      if (e.cls != ElementClass::finite) continue;
      if (opt_.element_bin) v.element_error[i] = e.ulp;
      if (opt_.signed_errors) {
        const double sign = std::isinf(y[i]) || ref[i] == y[i] ? 0 : ref[i] < y[i] ? 1 : -1;
        v.element_signed[i] = sign * e.ulp;
        v.element_signed_rel[i] = ref[i] == 0 || std::isinf(e.rel) ? NAN : sign * e.rel;
      }
    }
  }
  set_bound(d, output, v);
  v.tier = Tier::mpfr;
}

bool RowJudge::has_fast_tier(const OpDecl& d, std::size_t output) {
  const Operand& out = spec(d.op).out[output];
  // The ops of the row of logits alone: its softmax and log-softmax rows,
  // and its scalars lse and entropy (fast_oracle.hpp, scalar_enclosure).
  return spec(d.op).fast_tier && (out.shape == OperandShape::row || out.kind == OutputKind::log_sum_exp ||
                                  out.kind == OutputKind::entropy);
}

RowVerdict RowJudge::judge(const OpDecl& d, MaskedRowPolicy policy, std::span<const double> y, std::size_t output) {
  if (output >= spec(d.op).out.size())
    throw std::invalid_argument("RowJudge::judge: " + std::string(name(d.op)) + " has no output " +
                                std::to_string(output));
  RowVerdict v;
  if (spec(d.op).sparse()) {
    decide_sparse(d, policy, y, v);
    return v;
  }
  v.status = status_for(d, output);
  // An ignored row's loss and gradient are 0 whatever x holds, a fully
  // masked row's too: measured, not left to the masked-row policy.
  if (v.status == RowStatus::all_masked && is_cross_entropy(spec(d.op).out[output].kind) && target_ &&
      *target_ == ignore_index)
    v.status = RowStatus::ok;
  if (v.status == RowStatus::undefined) return v;
  if (v.status == RowStatus::all_masked) {
    const double n = static_cast<double>(x_.size()), u = unit_roundoff(format_);
    for (double out : y)
      if (!is_masked_row_value(out, spec(d.op).out[output].kind, policy, n, u)) v.follows_policy = false;
    return v;
  }
  // Tier order (docs/oracle.md): f64 results by the double-double tier only,
  // the others by double, then long double; MPFR for what they leave.
  if (opt_.tiered && has_fast_tier(d, output)) {
    if (format_ == Format::f64) {
      if (decide_fast(d, output, y, dd_tier(), Tier::fast_double_double, v)) return v;
    } else {
      if (decide_fast(d, output, y, double_tier(), Tier::fast_double, v)) return v;
      if (double_tier().status == RowStatus::ok &&
          decide_fast(d, output, y, extended_tier(), Tier::fast_extended, v))
        return v;
    }
  }
  if (!opt_.mpfr_fallback) {
    v = RowVerdict{};
    v.status = RowStatus::ok;
    v.tier = Tier::none;
    return v;
  }
  decide_exact(d, output, y, v);
  return v;
}

namespace {
std::string text(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
}  // namespace

std::string explain(const RowVerdict& v, const OpDecl& d, std::span<const double> y, RowJudge& judge,
                    std::size_t output) {
  switch (v.status) {
    case RowStatus::undefined: return "no exact value (a +inf or NaN input): no verdict";
    case RowStatus::all_masked:
      return std::string("fully masked row: outputs ") + (v.follows_policy ? "follow" : "do not follow") +
             " the declared masked-row policy";
    case RowStatus::ok: break;
  }
  const Operand& out = spec(d.op).out[output];
  const std::string unit = out.metric == Metric::absolute ? "u (absolute)"
                           : out.metric == Metric::scaled ? "u s (scaled)"
                                                          : "ulp";
  // The worst element's row position (sparse ops: of the measured ones).
  std::size_t w = v.error.worst_index;
  if (!v.measured_index.empty()) w = w < v.measured_index.size() ? v.measured_index[w] : y.size();
  const std::span<const Real> ref =
      spec(d.op).sparse() ? std::span<const Real>(judge.sparse_exact(d).p) : judge.exact_output(d, output);
  const std::string at = v.error.elements > 0 && w < y.size()
                             ? " at [" + std::to_string(w) + "] (got " + text(y[w]) + ", exact " + to_string(ref[w], 17) + ")"
                             : "";
  if (v.broken)
    return std::to_string(v.error.nonfinite + v.error.special_mismatch) +
           " outputs NaN/inf or a wrong special value" + at;
  std::string s = "max error " + text(v.error.max_ulp) + " " + unit + at;
  const Contract& c = d.contract_of(output);
  if (c.declared)
    s += (v.within ? " <= " : " > ") + std::string("bound ") + text(v.bound) + " (" + c.formula() + ")";
  else
    s += ", no contract";
  if (v.false_zeros + v.false_nonzeros > 0)
    s += ", " + std::to_string(v.false_zeros) + " false zeros, " + std::to_string(v.false_nonzeros) + " false non-zeros";
  return s + ", " + std::string(name(v.tier));
}


ReferenceRuleVerdict reference_rule(RowJudge& judge, const OpDecl& d, std::size_t output, std::span<const double> x,
                                    double temperature, Format f, std::span<const double> y, const RowVerdict& v,
                                    std::span<const double> yr, const RowVerdict& vr, double k, double slack) {
  ReferenceRuleVerdict r;
  if (v.status != RowStatus::ok || vr.status != RowStatus::ok || vr.broken) return r;
  if (!row_fits_format(x, temperature, f)) return r;
  r.judged = true;
  if (v.broken) {
    r.violated = true;
    r.ratio = INFINITY;
    return r;
  }
  double scale = 1;
  for (double ri : yr)
    if (std::isfinite(ri)) scale = std::max(scale, std::fabs(ri));
  const double u = unit_roundoff(f);
  double ek = v.error.max_abs, er = vr.error.max_abs;
  auto allowed = [&] { return k * er + slack * u * scale; };
  const double band = 8e-3 * u * scale * (1 + k) + 1e-8 * (ek + k * er);
  if ((v.tier != Tier::mpfr || vr.tier != Tier::mpfr) && std::fabs(ek - allowed()) <= band) {
    const auto exact = judge.exact_output(d, output);
    const auto scales = judge.exact_scale(d, output);
    const Operand& operand = spec(d.op).out[output];
    ek = compare_row(y, exact, f, operand, scales).max_abs;
    er = compare_row(yr, exact, f, operand, scales).max_abs;
  }
  r.ratio = allowed() > 0 ? ek / allowed() : ek > 0 ? INFINITY : 0;
  r.violated = ek > allowed();
  return r;
}

bool breaks_floor_no_nonfinite(const RowError& e, const OpDecl& d, std::span<const double> x, double temperature,
                               Format f) {
  return e.nonfinite > 0 && !d.opted_out(floor_no_nonfinite) && row_fits_format(x, temperature, f);
}

}  // namespace softcheck::oracle
