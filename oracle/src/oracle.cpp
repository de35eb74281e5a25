// The MPFR oracle. Every MPFR variable here gets an explicit precision: nothing
// depends on Boost's default precision, which in Boost 1.74 is process-wide
// (see PrecisionScope), so exact_row is safe to call from several threads.
#include "softcheck/oracle.hpp"

#include "mpfr_util.hpp"

#include <mpfr.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace softcheck::oracle {

namespace detail {

// MPFR keeps its exponent range per thread when built with TLS (REFERENCE.md,
// "MPFR through Boost.Multiprecision"). The default range (about 2^-2^30)
// would flush exp(-1e9) ~ 2^-1.44e9 to 0, so each thread widens it to the
// largest range once, before its first MPFR call here. Values still below that
// range (exp of about -3e18 and less) underflow to 0 in MPFR; every format
// here rounds them to 0 anyway. MPFR also keeps per-thread caches (constants,
// memory pools) that only mpfr_free_cache2 releases: done at thread exit, or
// every worker thread would leak them. The detail functions are declared again
// in metrics.cpp, their other user.
struct ThreadState {
  ThreadState() {
    // Without TLS MPFR's state is shared and exact_row could not be called from
    // several threads; Debian's MPFR has it, so this is a configuration check.
    if (!mpfr_buildopt_tls_p())
      throw std::runtime_error("softcheck oracle: MPFR was built without thread-local storage");
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
  }
  ~ThreadState() { mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE); }
  ThreadState(const ThreadState&) = delete;
  ThreadState& operator=(const ThreadState&) = delete;
};

void prepare_mpfr_thread() {
  thread_local const ThreadState state;
  (void)state;
}

}  // namespace detail

namespace {

using detail::prepare_mpfr_thread;

// ---------------------------------------------------------------- precision

// Boost 1.74 has only the process-wide default_precision; later versions add
// thread_default_precision, which is what PrecisionScope promises. Use it when
// it exists (the concept keeps this compiling on both).
template <class R>
concept HasThreadDefault = requires(unsigned d) { R::thread_default_precision(d); };

template <class R>
unsigned default_digits() {
  if constexpr (HasThreadDefault<R>)
    return R::thread_default_precision();
  else
    return R::default_precision();
}

template <class R>
void set_default_digits(unsigned digits) {
  if constexpr (HasThreadDefault<R>)
    R::thread_default_precision(digits);
  else
    R::default_precision(digits);
}

unsigned bits_for_digits(unsigned digits) {
  const Real probe(0, digits);
  return static_cast<unsigned>(mpfr_get_prec(probe.backend().data()));
}

// Smallest decimal precision whose MPFR precision is >= bits (Boost converts
// digits to bits with its own formula; asking it avoids copying that formula).
unsigned digits_for_bits(unsigned bits) {
  unsigned digits = std::max(1u, bits * 301u / 1000u);
  while (digits > 1 && bits_for_digits(digits - 1) >= bits) --digits;
  while (bits_for_digits(digits) < bits) ++digits;
  return digits;
}

using detail::raw;
using detail::real_with_bits;
using detail::Scratch;

// ---------------------------------------------------------------- exact_row

std::size_t index_of_max(std::span<const double> x) {
  return static_cast<std::size_t>(std::max_element(x.begin(), x.end()) - x.begin());
}

// Extra working bits (row status ok), so that every output ends within a few
// units of 2^-bits. d_i carries two roundings, an absolute error of at most
// 2 |d_i| 2^-w, which exp turns into a relative error of e_i of the same size:
// |d_i| up to 2^62 costs up to 62 bits (beyond, exp underflows MPFR's widest
// range to 0 exactly). s is a correctly rounded sum of the e_i, so its relative
// error is at most the largest of theirs plus 2^-w, whatever n. 8 more bits
// push the sum of these errors well below 2^-bits. Ordinary rows (|d_i| < 63)
// pay 14 bits or fewer.
mpfr_prec_t guard_bits(std::span<const double> x, double xmax, double temperature) {
  double widest = 0;  // max_i |d_i|, in double (only its size matters)
  for (double v : x)
    if (std::isfinite(v)) widest = std::max(widest, (xmax - v) / temperature);  // may be inf
  widest = std::min(widest, 0x1p62);
  return static_cast<mpfr_prec_t>(std::bit_width(static_cast<std::uint64_t>(std::ceil(widest))) + 8);
}

// d_i = z_i - a = (x_i - x_k) / T. Subtracting the exact doubles first, then
// dividing, keeps d_i's relative error at 2 roundings: forming z_i = x_i / T
// and a = x_k / T separately and subtracting would cancel their errors into d_i
// (shift invariance would be lost too). -inf entries give d_i = -inf exactly.
void shifted_logit(mpfr_ptr d, double xi, mpfr_srcptr xk, double temperature) {
  mpfr_d_sub(d, xi, xk, MPFR_RNDN);
  mpfr_div_d(d, d, temperature, MPFR_RNDN);
}

// Rounding to odd at v's precision p: v rounded toward zero (inexact: that
// rounding's ternary value) becomes, when inexact, the neighbour whose last
// bit is 1. Rounded to nearest from there, to any format of p - 2 bits or
// fewer, it gives what the exact value would (Boldo & Melquiond, "Emulation
// of FMA and correctly rounded sums: proved algorithms using rounding to
// odd", IEEE Trans. Computers 57(4), 2008). A log-softmax d_i - log s whose
// d_i is an f32 or f64 midpoint (x_i - x_k often is) and whose log s is
// below 2^-p |d_i| keeps its side of the midpoint so; rounded to nearest it
// would land on the midpoint and tie to even.
void round_to_odd(mpfr_ptr v, int inexact) {
  if (inexact == 0 || !mpfr_regular_p(v) || mpfr_min_prec(v) == mpfr_get_prec(v)) return;  // exact, or odd already
  if (mpfr_sgn(v) > 0)
    mpfr_nextabove(v);
  else
    mpfr_nextbelow(v);
}

// first[i]: the first index holding x[i]'s bit pattern. Equal inputs give
// equal outputs (each step is a function of x_i alone, given the row's x_k,
// s and log s), so exact_row computes each distinct entry once and copies
// the rest exactly: the suite's ties, all_equal and masked families repeat a
// few values over rows of up to 65,536 entries.
std::vector<std::size_t> first_occurrences(std::span<const double> x) {
  std::vector<std::size_t> first(x.size());
  std::unordered_map<std::uint64_t, std::size_t> seen;
  for (std::size_t i = 0; i < x.size(); ++i)
    first[i] = seen.try_emplace(std::bit_cast<std::uint64_t>(x[i]), i).first->second;
  return first;
}

ExactRow undefined_row(RowStatus status, unsigned bits) {
  ExactRow row;
  row.status = status;
  row.lse = real_with_bits(bits);
  row.entropy = real_with_bits(bits);
  mpfr_set_nan(raw(row.entropy));
  // log sum exp over an all -inf row is log 0 = -inf; +inf/NaN rows have none.
  if (status == RowStatus::all_masked)
    mpfr_set_inf(raw(row.lse), -1);
  else
    mpfr_set_nan(raw(row.lse));
  return row;
}

}  // namespace

// ---------------------------------------------------------------- PrecisionScope

PrecisionScope::PrecisionScope(unsigned bits) : saved_digits_(default_digits<Real>()) {
  set_default_digits<Real>(digits_for_bits(bits));
}

PrecisionScope::~PrecisionScope() { set_default_digits<Real>(saved_digits_); }

unsigned current_bits() {
  const Real fresh;
  return static_cast<unsigned>(mpfr_get_prec(fresh.backend().data()));
}

std::string_view name(RowStatus s) {
  switch (s) {
    case RowStatus::ok: return "ok";
    case RowStatus::all_masked: return "all_masked";
    case RowStatus::undefined: return "undefined";
  }
  return "?";
}

// Shifted softmax with the max term left out of the sum (REFERENCE.md,
// Blanchard, Higham & Higham, "their final form"), evaluated in w = bits +
// guard_bits working precision; each output is then rounded once to `bits`
// (log-softmax and lse to odd, round_to_odd, so that they round to a format
// as the exact values do beside a midpoint):
//   d_i = (x_i - x_k) / T           (x_k the max; d_k = 0, d_i <= 0)
//   e_i = exp(d_i)                  (e_k = 1 exactly; masked entries 0 exactly)
//   r = sum_{i != k} e_i            (mpfr_sum: correctly rounded)
//   log s = log1p(r), s = 1 + r     (log1p keeps log s accurate when r is tiny)
//   softmax_i = e_i / s,  log_softmax_i = d_i - log s,  lse = x_k / T + log s,
//   entropy = -sum p_i log p_i = log s + (sum_i e_i (-d_i)) / s.
// The entropy form is shift-free and sums non-negative terms (d_i <= 0), so no
// cancellation: each e_i (-d_i) carries the relative error of e_i, and the
// exact sum (mpfr_sum) keeps it. Masked entries (e_i = 0, d_i = -inf) add 0.
// Every output has relative error a few units of 2^-bits, except lse, whose
// error is of the order (|x_k / T| + log s) 2^-w.
ExactRow exact_row(std::span<const double> x, double temperature, unsigned bits) {
  detail::check_arguments(x, temperature, bits, "exact_row");
  prepare_mpfr_thread();
  const RowStatus status = detail::classify(x);
  if (status != RowStatus::ok) return undefined_row(status, bits);

  const std::size_t n = x.size();
  const std::size_t k = index_of_max(x);
  const mpfr_prec_t w = static_cast<mpfr_prec_t>(bits) + guard_bits(x, x[k], temperature);

  Scratch xk(53), d(w), rest(w), log_s(w), s(w);
  mpfr_set_d(xk.v, x[k], MPFR_RNDN);  // exact: inputs are binary doubles, never decimal text

  std::vector<Real> e;  // e_i in working precision
  e.reserve(n);
  std::vector<mpfr_ptr> others;  // e_i for i != k, summed by mpfr_sum
  others.reserve(n - 1);
  const std::vector<std::size_t> first = first_occurrences(x);
  for (std::size_t i = 0; i < n; ++i) {
    e.push_back(real_with_bits(w));
    if (first[i] != i) {
      mpfr_set(raw(e.back()), raw(e[first[i]]), MPFR_RNDN);  // same precision: exact
    } else {
      shifted_logit(d.v, x[i], xk.v, temperature);
      mpfr_exp(raw(e.back()), d.v, MPFR_RNDN);
    }
    if (i != k) others.push_back(raw(e.back()));
  }
  mpfr_sum(rest.v, others.data(), others.size(), MPFR_RNDN);
  mpfr_log1p(log_s.v, rest.v, MPFR_RNDN);
  mpfr_add_ui(s.v, rest.v, 1, MPFR_RNDN);

  ExactRow row;
  row.status = RowStatus::ok;
  row.softmax.reserve(n);
  row.log_softmax.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    row.softmax.push_back(real_with_bits(bits));
    row.log_softmax.push_back(real_with_bits(bits));
    if (first[i] != i) {
      mpfr_set(raw(row.softmax.back()), raw(row.softmax[first[i]]), MPFR_RNDN);
      mpfr_set(raw(row.log_softmax.back()), raw(row.log_softmax[first[i]]), MPFR_RNDN);
      continue;
    }
    mpfr_div(raw(row.softmax.back()), raw(e[i]), s.v, MPFR_RNDN);
    shifted_logit(d.v, x[i], xk.v, temperature);  // recomputed: cheaper than storing n of them
    mpfr_ptr l = raw(row.log_softmax.back());
    round_to_odd(l, mpfr_sub(l, d.v, log_s.v, MPFR_RNDZ));
  }
  row.lse = real_with_bits(bits);
  mpfr_div_d(d.v, xk.v, temperature, MPFR_RNDN);  // a = x_k / T
  round_to_odd(raw(row.lse), mpfr_add(raw(row.lse), d.v, log_s.v, MPFR_RNDZ));  // x_k / T may be a midpoint too

  // e_i (-d_i) into e_i's storage (e is not needed any more); masked entries
  // and the max (d_k = 0) contribute 0.
  std::vector<mpfr_ptr> terms;
  terms.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i == k || std::isinf(x[i])) continue;
    if (first[i] != i && first[i] != k) {  // e[first[i]] holds its term already (e[k] was left as 1)
      mpfr_set(raw(e[i]), raw(e[first[i]]), MPFR_RNDN);
    } else {
      shifted_logit(d.v, x[i], xk.v, temperature);
      mpfr_mul(raw(e[i]), raw(e[i]), d.v, MPFR_RNDN);
      mpfr_neg(raw(e[i]), raw(e[i]), MPFR_RNDN);
    }
    terms.push_back(raw(e[i]));
  }
  mpfr_sum(rest.v, terms.data(), terms.size(), MPFR_RNDN);
  mpfr_div(rest.v, rest.v, s.v, MPFR_RNDN);
  row.entropy = real_with_bits(bits);
  mpfr_add(raw(row.entropy), log_s.v, rest.v, MPFR_RNDN);
  return row;
}

std::span<const Real> exact_values(const ExactRow& row, OutputKind kind) {
  switch (kind) {
    case OutputKind::probabilities: return row.softmax;
    case OutputKind::log_probabilities: return row.log_softmax;
    case OutputKind::log_sum_exp: return {&row.lse, 1};
    case OutputKind::entropy: return {&row.entropy, 1};
    case OutputKind::cross_entropy_loss:
    case OutputKind::cross_entropy_gradient: break;  // need the target: exact_cross_entropy
    case OutputKind::softmax_gradient:
    case OutputKind::log_softmax_gradient: break;  // need g: exact_backward
    case OutputKind::attention_output:              // needs q, K, V: exact_attention
    case OutputKind::relu_attention_output:         // exact_relu_attention
    case OutputKind::linear_attention_output: break;  // exact_linear_attention
    case OutputKind::none: break;
  }
  throw std::invalid_argument("exact_values: not an output kind");
}

ExactCrossEntropy ignored_cross_entropy(std::size_t n, unsigned bits) {
  prepare_mpfr_thread();
  ExactCrossEntropy ce;
  ce.loss = real_with_bits(bits);
  mpfr_set_zero(raw(ce.loss), 1);
  ce.gradient.assign(n, ce.loss);
  ce.scale.assign(n, ce.loss);
  return ce;
}

namespace {

// A softmax value below MPFR's exponent range (z_j - max z under about
// -7.4e8, e.g. x / T with T ~ 1e-40) reads 0 though its entry is not masked.
// In a scaled metric's scale a 0 demands an exact 0 output (a structural
// zero: a masked entry, an ignored row); such an entry gets the smallest
// positive MPFR value there instead, so that the metric's denorm_min floor
// is its unit, as for any tiny probability.
bool underflowed(const ExactRow& row, std::size_t j) {
  return mpfr_zero_p(raw(row.softmax[j])) != 0 && j < row.log_softmax.size() &&
         mpfr_number_p(raw(row.log_softmax[j])) != 0;
}

void set_smallest_positive(mpfr_ptr v) {
  mpfr_set_zero(v, 1);
  mpfr_nextabove(v);
}

}  // namespace

namespace {

// Label smoothing eps > 0 (q_j = eps / n, q_t = 1 - eps + eps / n), every
// value formed over the common denominator n so that the sums are exact
// before their one rounding at `bits` + 64 and the division by n:
//   loss = [(n - eps (n - 1)) (-log p_t) + eps sum_{j != t} (-log p_j)] / n
//   dx_j = (n p_j - eps) / n,  dx_t = (eps (n - 1) - n sum_{j != t} p_j) / n
//   s_j  = p_j + q_j
// (-log p_j >= 0, so the loss's sum has no cancellation; +inf with a masked
// entry, whose q_j > 0 meets p_j = 0.)
ExactCrossEntropy smoothed_cross_entropy(const ExactRow& row, std::size_t t, double eps, unsigned bits) {
  const std::size_t n = row.softmax.size();
  // Guard bits: n p_j and eps (n - 1) are exact at `bits` + 64 + 64; the
  // rest (n - eps (n - 1), the sums' terms) round 2^-192 below `bits`.
  const auto wide = static_cast<mpfr_prec_t>(bits) + 192;
  static_assert(sizeof(unsigned long) == 8, "n must fit an unsigned long");
  Scratch nn(64), weight(53), q_num(wide), weight_t(wide), v(wide);
  mpfr_set_ui(nn.v, static_cast<unsigned long>(n), MPFR_RNDN);
  mpfr_set_d(weight.v, eps, MPFR_RNDN);
  mpfr_set_ui(q_num.v, static_cast<unsigned long>(n - 1), MPFR_RNDN);
  mpfr_mul_d(q_num.v, q_num.v, eps, MPFR_RNDN);    // eps (n - 1), exact
  mpfr_sub(weight_t.v, nn.v, q_num.v, MPFR_RNDN);  // n - eps (n - 1)

  ExactCrossEntropy ce;
  ce.loss = real_with_bits(bits);
  std::vector<Real> loss_terms, target_terms;  // the loss's and dx_t's numerators, term by term
  loss_terms.reserve(n);
  target_terms.reserve(n);
  Scratch q_off(wide), q_t(wide);  // eps / n and 1 - eps (n - 1) / n, for the scales
  mpfr_div(q_off.v, weight.v, nn.v, MPFR_RNDN);
  mpfr_div(q_t.v, weight_t.v, nn.v, MPFR_RNDN);
  ce.gradient.reserve(n);
  ce.scale.reserve(n);
  for (std::size_t j = 0; j < n; ++j) {
    loss_terms.push_back(real_with_bits(wide));
    mpfr_neg(raw(loss_terms.back()), raw(row.log_softmax[j]), MPFR_RNDN);
    mpfr_mul(raw(loss_terms.back()), raw(loss_terms.back()), j == t ? weight_t.v : weight.v, MPFR_RNDN);
    ce.gradient.push_back(real_with_bits(bits));
    ce.scale.push_back(real_with_bits(bits));
    mpfr_add(raw(ce.scale.back()), raw(row.softmax[j]), j == t ? q_t.v : q_off.v, MPFR_RNDN);
    if (j == t) continue;
    mpfr_mul(v.v, raw(row.softmax[j]), nn.v, MPFR_RNDN);  // n p_j, exact
    target_terms.push_back(real_with_bits(wide));
    mpfr_neg(raw(target_terms.back()), v.v, MPFR_RNDN);
    mpfr_sub(v.v, v.v, weight.v, MPFR_RNDN);
    mpfr_div(raw(ce.gradient.back()), v.v, nn.v, MPFR_RNDN);
  }
  target_terms.push_back(real_with_bits(wide));
  mpfr_set(raw(target_terms.back()), q_num.v, MPFR_RNDN);
  const auto sum_then_divide = [&](std::vector<Real>& terms, Real& into) {
    std::vector<mpfr_ptr> ptr;
    ptr.reserve(terms.size());
    for (Real& r : terms) ptr.push_back(raw(r));
    mpfr_sum(v.v, ptr.data(), ptr.size(), MPFR_RNDN);
    mpfr_div(raw(into), v.v, nn.v, MPFR_RNDN);
  };
  sum_then_divide(loss_terms, ce.loss);
  sum_then_divide(target_terms, ce.gradient[t]);
  return ce;
}

}  // namespace

ExactCrossEntropy exact_cross_entropy(const ExactRow& row, std::int64_t target, unsigned bits,
                                      double label_smoothing) {
  if (row.status != RowStatus::ok) throw std::invalid_argument("exact_cross_entropy: the row has no exact softmax");
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    throw std::invalid_argument("exact_cross_entropy: label smoothing must be in [0, 1]");
  const auto n = static_cast<std::int64_t>(row.softmax.size());
  if (target != ignore_index && (target < 0 || target >= n))
    throw std::invalid_argument("exact_cross_entropy: target " + std::to_string(target) + " outside [0, " +
                                std::to_string(n) + ") and not ignore_index");
  if (target == ignore_index) return ignored_cross_entropy(static_cast<std::size_t>(n), bits);
  prepare_mpfr_thread();
  if (label_smoothing > 0) return smoothed_cross_entropy(row, static_cast<std::size_t>(target), label_smoothing, bits);
  ExactCrossEntropy ce;
  ce.loss = real_with_bits(bits);
  ce.gradient.reserve(static_cast<std::size_t>(n));
  ce.scale.reserve(static_cast<std::size_t>(n));
  const auto t = static_cast<std::size_t>(target);
  mpfr_neg(raw(ce.loss), raw(row.log_softmax[t]), MPFR_RNDN);
  std::vector<mpfr_ptr> others;  // p_j, j != t: 1 - p_t as their exact sum (mpfr_sum only reads them)
  others.reserve(static_cast<std::size_t>(n) - 1);
  for (std::size_t j = 0; j < row.softmax.size(); ++j) {
    ce.gradient.push_back(real_with_bits(bits));
    ce.scale.push_back(real_with_bits(bits));
    if (j == t) continue;
    mpfr_set(raw(ce.gradient.back()), raw(row.softmax[j]), MPFR_RNDN);
    mpfr_set(raw(ce.scale.back()), raw(row.softmax[j]), MPFR_RNDN);
    if (underflowed(row, j)) set_smallest_positive(raw(ce.scale.back()));
    others.push_back(const_cast<mpfr_ptr>(raw(row.softmax[j])));
  }
  mpfr_sum(raw(ce.gradient[t]), others.data(), others.size(), MPFR_RNDN);
  mpfr_neg(raw(ce.gradient[t]), raw(ce.gradient[t]), MPFR_RNDN);
  mpfr_add_ui(raw(ce.scale[t]), raw(row.softmax[t]), 1, MPFR_RNDN);
  return ce;
}

ExactGradient exact_backward(const ExactRow& row, std::span<const double> g, OutputKind kind, unsigned bits,
                             double resolution) {
  if (row.status != RowStatus::ok) throw std::invalid_argument("exact_backward: the row has no exact softmax");
  if (kind != OutputKind::softmax_gradient && kind != OutputKind::log_softmax_gradient)
    throw std::invalid_argument("exact_backward: not a softmax or log-softmax gradient");
  const std::size_t n = row.softmax.size();
  if (g.size() != n) throw std::invalid_argument("exact_backward: g and the row differ in length");
  for (double v : g)
    if (!std::isfinite(v)) throw std::invalid_argument("exact_backward: a non-finite upstream gradient");
  prepare_mpfr_thread();
  const bool softmax = kind == OutputKind::softmax_gradient;
  // Products y_j g_j exact: bits of y plus the 53 of g.
  const auto wide = static_cast<mpfr_prec_t>(bits) + 64;
  // The scale's probabilities p'_j: p_j, at least `resolution` where the entry
  // is not masked (an MPFR underflow counts as not masked: underflowed());
  // a masked entry keeps 0.
  std::vector<Real> p_scale;
  p_scale.reserve(n);
  for (std::size_t j = 0; j < n; ++j) {
    p_scale.push_back(real_with_bits(wide));
    mpfr_set(raw(p_scale.back()), raw(row.softmax[j]), MPFR_RNDN);
    if (underflowed(row, j)) set_smallest_positive(raw(p_scale.back()));
    if (mpfr_sgn(raw(p_scale.back())) > 0 && mpfr_cmp_d(raw(p_scale.back()), resolution) < 0)
      mpfr_set_d(raw(p_scale.back()), resolution, MPFR_RNDN);
  }
  // terms: y_j g_j (softmax) or g_j; abs_terms their scale's form p'_j |g_j| or |g_j|.
  std::vector<Real> terms, abs_terms;
  terms.reserve(n);
  abs_terms.reserve(n);
  for (std::size_t j = 0; j < n; ++j) {
    terms.push_back(real_with_bits(wide));
    abs_terms.push_back(real_with_bits(wide + 64));
    if (softmax) {
      mpfr_mul_d(raw(terms.back()), raw(row.softmax[j]), g[j], MPFR_RNDN);
      mpfr_mul_d(raw(abs_terms.back()), raw(p_scale[j]), std::fabs(g[j]), MPFR_RNDN);
    } else {
      mpfr_set_d(raw(terms.back()), g[j], MPFR_RNDN);
      mpfr_set_d(raw(abs_terms.back()), std::fabs(g[j]), MPFR_RNDN);
    }
  }
  const auto sum_of = [&](std::vector<Real>& v) {
    std::vector<mpfr_ptr> ptr;
    ptr.reserve(v.size());
    for (Real& r : v) ptr.push_back(raw(r));
    Real s = real_with_bits(wide + 64);
    mpfr_sum(raw(s), ptr.data(), ptr.size(), MPFR_RNDN);
    return s;
  };
  const Real total = sum_of(terms), abs_total = sum_of(abs_terms);  // <y, g> or sum g; sum p'|g| or sum |g|
  Scratch t(wide + 128);
  ExactGradient out;
  out.value.reserve(n);
  out.scale.reserve(n);
  for (std::size_t j = 0; j < n; ++j) {
    out.value.push_back(real_with_bits(bits));
    out.scale.push_back(real_with_bits(bits));
    const mpfr_srcptr p = raw(row.softmax[j]);
    if (softmax) {
      mpfr_d_sub(t.v, g[j], raw(total), MPFR_RNDN);  // g_j - <y, g>
      mpfr_mul(raw(out.value.back()), t.v, p, MPFR_RNDN);
      mpfr_set_d(t.v, std::fabs(g[j]), MPFR_RNDN);
      mpfr_add(t.v, t.v, raw(abs_total), MPFR_RNDN);
      mpfr_mul(raw(out.scale.back()), t.v, raw(p_scale[j]), MPFR_RNDN);
    } else {
      mpfr_mul(t.v, p, raw(total), MPFR_RNDN);  // p_j sum g
      mpfr_d_sub(raw(out.value.back()), g[j], t.v, MPFR_RNDN);
      mpfr_mul(t.v, raw(p_scale[j]), raw(abs_total), MPFR_RNDN);
      mpfr_add_d(raw(out.scale.back()), t.v, std::fabs(g[j]), MPFR_RNDN);
    }
  }
  return out;
}

ExactGradient exact_backward_given(std::span<const double> y, std::span<const double> g, OutputKind kind,
                                   unsigned bits, double resolution, std::span<const double> x) {
  if (kind != OutputKind::softmax_gradient && kind != OutputKind::log_softmax_gradient)
    throw std::invalid_argument("exact_backward_given: not a softmax or log-softmax gradient");
  const bool log = kind == OutputKind::log_softmax_gradient;
  bool finite = false;
  for (double v : y) {
    if (std::isnan(v) || v == INFINITY || (!log && v == -INFINITY))
      throw std::invalid_argument("exact_backward_given: a forward output the backward cannot take");
    finite = finite || std::isfinite(v);
  }
  if (!finite) throw std::invalid_argument("exact_backward_given: no finite forward output");
  prepare_mpfr_thread();
  ExactRow given;
  given.softmax.reserve(y.size());
  for (double v : y) {
    given.softmax.push_back(real_with_bits(bits + 64));
    if (!log) {
      mpfr_set_d(raw(given.softmax.back()), v, MPFR_RNDN);  // exact: 53 <= bits + 64
    } else if (v == -INFINITY) {
      mpfr_set_zero(raw(given.softmax.back()), 1);
    } else {
      mpfr_set_d(raw(given.softmax.back()), v, MPFR_RNDN);
      mpfr_exp(raw(given.softmax.back()), raw(given.softmax.back()), MPFR_RNDN);
    }
  }
  ExactGradient out = exact_backward(given, g, kind, bits, resolution);
  // A 0 the kernel gives may be a probability that underflowed, not a mask:
  // its scale counts it at the resolution too (a tolerance: long double sums).
  if (resolution > 0) {
    long double sum_abs = 0;
    for (std::size_t j = 0; j < y.size(); ++j)
      sum_abs += std::fabs(static_cast<long double>(g[j])) * (log ? 1.0L : static_cast<long double>(y[j]));
    for (std::size_t j = 0; j < y.size(); ++j)
      if (mpfr_zero_p(raw(given.softmax[j])) != 0 && !(j < x.size() && x[j] == -INFINITY)) {
        const long double a = std::fabs(static_cast<long double>(g[j]));
        const long double r = resolution;
        out.scale[j] = Real(static_cast<double>(log ? a + r * sum_abs : r * (a + sum_abs)));
      }
  }
  return out;
}

std::span<const Real> exact_values(const ExactCrossEntropy& ce, OutputKind kind) {
  if (kind == OutputKind::cross_entropy_loss) return {&ce.loss, 1};
  if (kind == OutputKind::cross_entropy_gradient) return ce.gradient;
  throw std::invalid_argument("exact_values: not a cross-entropy output");
}

// ---------------------------------------------------------------- rounding

namespace detail {

// Correct rounding of v to format `fi`, ties to even, in one step. With 2^E <=
// |v| < 2^(E+1), the format's quantum there is 2^q, q = max(E, emin) - p + 1
// (the subnormal quantum denorm_min below 2^emin), so v keeps E - q + 1 bits:
// p for normals, fewer for subnormals. Rounding v straight to that many bits
// is the format's rounding with an unbounded exponent; past max_finite that
// result is +-inf (IEEE 754 overflow under round to nearest).
double round_to_format(mpfr_srcptr v, Format f) {
  prepare_mpfr_thread();
  const FormatInfo fi = info(f);
  if (!mpfr_regular_p(v)) return mpfr_get_d(v, MPFR_RNDN);  // NaN, +-inf, signed zero: kept
  const int sign = mpfr_signbit(v) ? -1 : 1;
  const mpfr_exp_t E = mpfr_get_exp(v) - 1;  // MPFR: |v| = 0.1xxx_2 * 2^exp
  const mpfr_exp_t q = std::max<mpfr_exp_t>(E, fi.emin) - fi.precision + 1;
  const mpfr_exp_t kept = E - q + 1;
  double out;
  if (kept >= 1) {
    thread_local Scratch t(64);
    mpfr_set_prec(t.v, static_cast<mpfr_prec_t>(kept));  // <= 53 bits: fits in its limb
    mpfr_set(t.v, v, MPFR_RNDN);                         // the single rounding
    out = mpfr_get_d(t.v, MPFR_RNDN);                    // exact (or inf past 2^1024)
  } else {
    // |v| < denorm_min = 2^q: to denorm_min above the midpoint 2^(q-1), to 0
    // at it (0 is even) or below.
    const bool above_half = kept == 0 && mpfr_cmp_si_2exp(v, sign, q - 1) != 0;
    out = above_half ? std::ldexp(1.0, static_cast<int>(q)) : 0.0;
  }
  if (std::fabs(out) > max_finite(f)) out = std::numeric_limits<double>::infinity();
  return std::copysign(std::fabs(out), static_cast<double>(sign));
}

// ulp exponent q of v in format fi: ulp_T(v) = 2^q (see ulp in oracle.hpp).
long ulp_exponent(mpfr_srcptr v, Format f) {
  const FormatInfo fi = info(f);
  if (mpfr_zero_p(v)) return fi.emin - fi.precision + 1;
  if (mpfr_inf_p(v)) return fi.emax - fi.precision + 1;
  const mpfr_exp_t E = mpfr_get_exp(v) - 1;
  return static_cast<long>(std::clamp<mpfr_exp_t>(E, fi.emin, fi.emax)) - fi.precision + 1;
}

std::string decimal_text(mpfr_srcptr v, int digits) {
  char* text = nullptr;
  if (mpfr_asprintf(&text, "%.*Re", digits - 1, v) < 0) throw std::runtime_error("to_string: mpfr_asprintf failed");
  std::string out(text);
  mpfr_free_str(text);
  return out;
}

void check_arguments(std::span<const double> x, double temperature, unsigned bits, const char* who) {
  const std::string w(who);
  if (!std::isfinite(temperature) || !(temperature > 0))
    throw std::invalid_argument(w + ": temperature must be finite and > 0");
  if (x.empty()) throw std::invalid_argument(w + ": empty row");
  if (bits < MPFR_PREC_MIN || bits > (1u << 24)) throw std::invalid_argument(w + ": bits must be in [1, 2^24]");
}

RowStatus classify(std::span<const double> x) {
  bool any_finite = false;
  for (double v : x) {
    if (std::isnan(v) || v == std::numeric_limits<double>::infinity()) return RowStatus::undefined;
    any_finite = any_finite || std::isfinite(v);
  }
  return any_finite ? RowStatus::ok : RowStatus::all_masked;
}

}  // namespace detail

double round_to(const Real& v, Format f) {
  return detail::round_to_format(raw(v), f);
}

std::optional<int> detail::read_toward_zero(const std::string& text, mpfr_ptr into) {
  prepare_mpfr_thread();
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  char* end = nullptr;
  const int inexact = mpfr_strtofr(into, text.c_str(), &end, 0, MPFR_RNDZ);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return inexact;
}

std::optional<double> detail::parse_to_precision(std::string_view text, int precision, long emin) {
  prepare_mpfr_thread();
  const std::string s(text);  // mpfr_strtofr reads a NUL-terminated string
  // The value's binade first: rounded toward zero, the exponent cannot carry
  // up a binade, so E is the text's own (MPFR: |v| = 0.1xxx_2 * 2^exp).
  Scratch probe(64);
  const std::optional<int> probe_inexact = read_toward_zero(s, probe.v);
  if (!probe_inexact) return std::nullopt;
  if (!mpfr_regular_p(probe.v)) return mpfr_get_d(probe.v, MPFR_RNDN);  // NaN, +-inf, signed zero
  const int sign = mpfr_signbit(probe.v) ? -1 : 1;
  const mpfr_exp_t E = mpfr_get_exp(probe.v) - 1;
  // The format's quantum at that binade (round_to_format's): 2^q, and the
  // bits the value keeps there.
  const mpfr_exp_t q = std::max<mpfr_exp_t>(E, emin) - precision + 1;
  const mpfr_exp_t kept = E - q + 1;
  double out = 0;
  if (kept >= 1) {
    Scratch t(static_cast<mpfr_prec_t>(kept));
    mpfr_strtofr(t.v, s.c_str(), nullptr, 0, MPFR_RNDN);  // the single rounding, from the text
    out = mpfr_get_d(t.v, MPFR_RNDN);                   // <= 53 bits: exact (inf past 2^1024)
  } else {
    // |v| < 2^q: to 2^q above the midpoint 2^(q-1), to 0 at it (0 is even)
    // or below. The probe (toward zero, 64 bits) is above the midpoint, or
    // equal to it with a discarded remainder, exactly when the text is.
    const int c = mpfr_cmp_si_2exp(probe.v, sign, q - 1);
    const bool above_half = kept == 0 && (c * sign > 0 || (c == 0 && *probe_inexact != 0));
    out = above_half ? std::ldexp(1.0, static_cast<int>(q)) : 0.0;
  }
  return std::copysign(std::fabs(out), static_cast<double>(sign));
}

std::optional<double> parse_rounded(std::string_view text, Format f) {
  const FormatInfo fi = info(f);
  std::optional<double> v = detail::parse_to_precision(text, fi.precision, fi.emin);
  if (v && std::isfinite(*v) && std::fabs(*v) > max_finite(f)) *v = std::copysign(INFINITY, *v);
  return v;
}

long ulp_exponent(const Real& v, Format f) {
  if (mpfr_nan_p(raw(v))) throw std::invalid_argument("ulp_exponent: NaN has no ulp");
  return detail::ulp_exponent(raw(v), f);
}

Real ulp(const Real& v, Format f) {
  prepare_mpfr_thread();
  Real u = real_with_bits(mpfr_get_prec(raw(v)));  // a power of two: any precision holds it
  if (mpfr_nan_p(raw(v)))
    mpfr_set_nan(raw(u));
  else
    mpfr_set_si_2exp(raw(u), 1, detail::ulp_exponent(raw(v), f), MPFR_RNDN);
  return u;
}

// MPFR's printf rounds the decimal digits correctly (to nearest, ties to even)
// and spells 0, -0, inf and nan like C's %e.
std::string to_string(const Real& v, int digits) {
  if (digits < 1) throw std::invalid_argument("to_string: digits must be >= 1");
  prepare_mpfr_thread();
  return detail::decimal_text(raw(v), digits);
}

}  // namespace softcheck::oracle
