// The arbitrary-precision oracle: exact softmax, log-softmax and log-sum-exp of
// one row, computed with MPFR (through Boost.Multiprecision) from the exact
// binary values of the inputs. Deliberately small and boring (LLVM libc MPFR
// utilities, CORE-MATH): no shortcuts, no cleverness.
#pragma once

#include <boost/multiprecision/mpfr.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/op.hpp"

namespace softcheck::oracle {

// Variable-precision MPFR number without expression templates (REFERENCE.md:
// never `auto` with expression templates; et_off removes the trap entirely).
using Real = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<0>,
                                           boost::multiprecision::et_off>;

inline constexpr unsigned default_bits = 256;

// Sets the default precision of new Reals for its lifetime and restores the
// previous one. Every Real created inside carries `bits` bits (at least: Boost
// specifies precision in decimal digits; current_bits() tells the real figure).
// The default is the calling thread's where Boost has thread_default_precision;
// Boost 1.74 has only the process-wide default_precision, so there concurrent
// scopes in several threads race. The oracle's own functions never depend on
// it (every Real they make gets an explicit precision): a scope only matters
// for a caller's own arithmetic on Reals (Boost 1.74 gives the result of a + b
// the default precision, 20 digits = 68 bits without a scope).
class PrecisionScope {
 public:
  explicit PrecisionScope(unsigned bits);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  unsigned saved_digits_;
};

// Precision in bits that a Real created now actually gets.
unsigned current_bits();

enum class RowStatus {
  ok,          // at least one finite entry; -inf entries are masked (exact 0 / -inf)
  all_masked,  // every entry -inf: softmax undefined, kernels follow their policy
  undefined,   // a +inf or NaN entry: no exact value exists
};
std::string_view name(RowStatus s);

struct ExactRow {
  RowStatus status = RowStatus::ok;
  std::vector<Real> softmax;      // exp(z_i - lse); masked entries exactly 0
  std::vector<Real> log_softmax;  // z_i - lse;      masked entries -inf
  Real lse;                       // log sum exp(z_i), z = x / temperature
  Real entropy;                   // -sum p_i log p_i over p = softmax (masked entries add 0)
};

// The exact values an op's output is compared with (the op table's output
// kind): the softmax or log-softmax entries, or the one lse or entropy value.
std::span<const Real> exact_values(const ExactRow& row, OutputKind kind);

// Exact results for softmax(x / temperature), never rounded to any working
// format. Computed internally with guard bits beyond `bits` (see oracle.cpp) and
// rounded once to `bits`: every Real returned carries exactly `bits` bits and
// softmax/log_softmax entries have relative error a few units of 2^-bits.
// temperature must be finite and > 0, x non-empty, bits in [1, 2^24] (throws
// std::invalid_argument otherwise). Safe to call from several threads. For
// status != ok the vectors are empty, lse is -inf (all_masked) or NaN
// (undefined) and entropy NaN (p is undefined; kernels follow their policy).
ExactRow exact_row(std::span<const double> x, double temperature = 1.0,
                   unsigned bits = default_bits);

// The exact cross-entropy of a row against its class target t with label
// smoothing eps in [0, 1] (docs/gradients.md): the target distribution
// q = (1 - eps) onehot(t) + eps / n (PyTorch's label_smoothing), the loss
// -sum_j q_j log p_j (+inf where an entry with q_j > 0 is masked: x_t = -inf,
// or any -inf entry when eps > 0), the gradient dL/dz_j = p_j - q_j and the
// scaled metric's scale s_j = p_j + q_j. With eps = 0, p_t - 1 is formed as
// -sum_{j != t} p_j (no cancellation); with eps > 0 every value is formed
// over the denominator n from exact sums of the row's `bits`-bit p_j and
// log p_j (oracle.cpp): p_j - q_j may cancel, so a gradient entry is
// accurate to a few 2^-bits of its scale s_j (as exact_backward's), the
// loss (a sum of terms >= 0) relative to itself. An ignored row
// (target == ignore_index) has loss, gradient and scale exactly 0. `row`
// must have status ok, `target` be ignore_index or in [0, n) and eps in
// [0, 1] (std::invalid_argument otherwise); every value carries `bits` bits.
struct ExactCrossEntropy {
  Real loss;
  std::vector<Real> gradient, scale;
};
ExactCrossEntropy exact_cross_entropy(const ExactRow& row, std::int64_t target, unsigned bits = default_bits,
                                      double label_smoothing = 0);
// An ignored row's (target ignore_index) values for a row of n entries,
// whatever they hold (a fully masked row too): every value 0.
ExactCrossEntropy ignored_cross_entropy(std::size_t n, unsigned bits = default_bits);
// The loss (one value) or the gradient.
std::span<const Real> exact_values(const ExactCrossEntropy& ce, OutputKind kind);

// The exact backward pass of softmax or log-softmax (kind softmax_gradient
// or log_softmax_gradient) of a row given the upstream gradient g (one entry
// per entry of the row, finite), with the scaled metric's scales
// (docs/gradients.md):
//   softmax:     dx_i = y_i (g_i - sum_j y_j g_j),  s_i = y_i (|g_i| + sum_j y_j |g_j|)
//   log-softmax: dx_i = g_i - p_i sum_j g_j,        s_i = |g_i| + p_i sum_j |g_j|
// from the row's MPFR softmax; sums exact (mpfr_sum), each value rounded
// once to `bits`. `row` must have status ok (std::invalid_argument otherwise,
// also for a g of another length or with a non-finite entry).
// `resolution`: in the scale (only), a probability y_i = p_i below it counts
// as `resolution` (masked entries stay 0). The judge passes denorm_min / u of
// the kernel's format: a probability held in the format carries an absolute
// error of up to denorm_min / 2, a relative one of u only above that, and dx
// inherits it times |g_i - <y, g>| (softmax) or |sum g| (log-softmax) -- the
// ULP metric's subnormal floor, in the scaled metric (docs/gradients.md).
struct ExactGradient {
  std::vector<Real> value, scale;
};
ExactGradient exact_backward(const ExactRow& row, std::span<const double> g, OutputKind kind,
                             unsigned bits = default_bits, double resolution = 0);
// The same backward pass from a given forward output instead of the exact
// one: y the kernel's own softmax (kind softmax_gradient) or log-softmax
// (log_softmax_gradient: p = exp(y), -inf giving 0), as its format holds it.
// The conditional mode of docs/gradients.md: dx against this measures the
// backward's error alone, the forward's error taken as given. y must hold a
// finite entry and no NaN or +inf (a softmax y no -inf either), and be as
// long as g (std::invalid_argument otherwise). A 0 the kernel gives counts
// at `resolution` in the scale (it may be an underflow), except where the
// row's logits `x` (when given) are -inf: a masked entry keeps a zero scale.
ExactGradient exact_backward_given(std::span<const double> y, std::span<const double> g, OutputKind kind,
                                   unsigned bits = default_bits, double resolution = 0,
                                   std::span<const double> x = {});

// Correct rounding (to nearest, ties to even) of an exact value to `f`, NaN
// kept, the sign of zero kept (also when a tiny value rounds to zero),
// subnormal-aware, overflowing to +-inf past max + ulp/2; done in one step from
// the exact value (no double rounding). Returned as the double that holds it
// (every format here embeds exactly in f64).
double round_to(const Real& v, Format f);

// The number a decimal (or hex-float, "0x...") text stands for, correctly
// rounded to f in one step from the text (MPFR's mpfr_strtofr at the
// precision the value's binade has in f: no double rounding through f64),
// with round_to's rules: subnormals kept, +-inf past max + ulp/2. "inf",
// "-inf" and "nan" read as themselves. std::nullopt when the text is not
// entirely a number.
std::optional<double> parse_rounded(std::string_view text, Format f);

// ulp_T(v) = 2^(max(e, emin) - p + 1) where 2^e <= |v| < 2^(e+1); for v = 0 the
// smallest subnormal; past the largest binade (and for +-inf) the ulp of
// max_finite (REFERENCE.md, "Error metrics in use"). NaN for NaN. Carries v's
// precision.
Real ulp(const Real& v, Format f);
// The exponent k of that ulp, ulp(v, f) = 2^k (v not NaN).
long ulp_exponent(const Real& v, Format f);

// Decimal text of v with `digits` significant digits (>= 1, else throws
// std::invalid_argument), correctly rounded, in C's %.*e layout
// ("5.922e-01"); "0.000e+00", "-0.000e+00", "inf", "-inf", "nan" for specials.
std::string to_string(const Real& v, int digits);

}  // namespace softcheck::oracle
