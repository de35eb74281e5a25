#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "mpfr_util.hpp"
#include "softcheck/minifloat_oracle.hpp"

namespace softcheck::oracle {

using detail::raw;
using detail::Scratch;

namespace {

// Sets MPFR's minimum exponent for this thread's scope and restores it.
class MinExponentScope {
 public:
  explicit MinExponentScope(mpfr_exp_t emin) : saved_(mpfr_get_emin()) {
    if (mpfr_set_emin(emin) != 0) throw std::logic_error("mpfr_set_emin failed");
  }
  ~MinExponentScope() { mpfr_set_emin(saved_); }
  MinExponentScope(const MinExponentScope&) = delete;
  MinExponentScope& operator=(const MinExponentScope&) = delete;

 private:
  mpfr_exp_t saved_;
};

}  // namespace

double round_to(const Real& v, const MiniFloat& f, Overflow overflow) {
  detail::prepare_mpfr_thread();
  if (mpfr_nan_p(raw(v)) != 0) {
    if (f.specials == MiniSpecials::none) throw std::domain_error(std::string(f.name) + " has no NaN");
    return NAN;
  }
  double rounded = 0;
  {
    // MPFR's documented pattern (mpfr_subnormalize): round to the format's
    // precision in the full exponent range, then raise emin and let
    // mpfr_check_range and mpfr_subnormalize finish from the ternary value
    // (no double rounding). MPFR's values are m 2^e with m in [1/2, 1): the
    // smallest subnormal 2^(min_exponent - man_bits) has e = min_exponent -
    // man_bits + 1.
    Scratch t(f.man_bits + 1);
    int inexact = mpfr_set(t.v, raw(v), MPFR_RNDN);
    const MinExponentScope scope(f.min_exponent() - f.man_bits + 1);
    inexact = mpfr_check_range(t.v, inexact, MPFR_RNDN);  // underflow: 0 up to min_subnormal / 2 (ties to 0)
    mpfr_subnormalize(t.v, inexact, MPFR_RNDN);
    rounded = mpfr_get_d(t.v, MPFR_RNDN);  // at most 4 bits: exact
  }
  const double max = max_finite(f);
  if (std::fabs(rounded) <= max) return rounded;
  if (overflow == Overflow::saturate || f.specials == MiniSpecials::none) return std::copysign(max, rounded);
  return f.specials == MiniSpecials::ieee ? std::copysign(INFINITY, rounded) : NAN;
}

std::optional<double> parse_rounded(std::string_view text, const MiniFloat& f, Overflow overflow) {
  std::optional<double> v = detail::parse_to_precision(text, f.man_bits + 1, f.min_exponent());
  if (!v || std::isnan(*v) || std::isinf(*v)) return v;
  const double max = max_finite(f);
  if (std::fabs(*v) <= max) return v;
  if (overflow == Overflow::saturate || f.specials == MiniSpecials::none) return std::copysign(max, *v);
  return f.specials == MiniSpecials::ieee ? std::copysign(INFINITY, *v) : NAN;
}

namespace {

// The exact value of a double.
Real exact(double v) {
  Real r = detail::real_with_bits(53);
  mpfr_set_d(raw(r), v, MPFR_RNDN);
  return r;
}

// a / b with 256 bits (minifloat_oracle.hpp says why that decides the one
// rounding after it).
Real quotient(const Real& a, const Real& b) {
  Real q = detail::real_with_bits(256);
  mpfr_div(raw(q), raw(a), raw(b), MPFR_RNDN);
  return q;
}

// The largest |v| as an MPFR number (exact: the comparison is MPFR's).
Real max_magnitude(std::span<const double> values) {
  Real amax = exact(0.0);
  for (double v : values) {
    const Real a = exact(v);
    if (mpfr_cmpabs(raw(a), raw(amax)) > 0) mpfr_abs(raw(amax), raw(a), MPFR_RNDN);
  }
  return amax;
}

}  // namespace

MxReference mx_reference(std::span<const double> block, const MiniFloat& element) {
  detail::prepare_mpfr_thread();
  if (block.empty() || block.size() > mx_block_size) throw std::invalid_argument("mx_reference: 1 to 32 values");
  MxReference out;
  out.elements.assign(block.size(), 0.0);
  for (double v : block)
    if (!std::isfinite(v)) return out;  // a NaN or infinite value: NaN scale
  const Real amax = max_magnitude(block);
  // MPFR's exponent e has amax = m 2^e, m in [1/2, 1): floor(log2 amax) = e - 1.
  long shared = mpfr_zero_p(raw(amax)) != 0 ? e8m0_min_exponent
                                           : static_cast<long>(mpfr_get_exp(raw(amax))) - 1 - element.max_exponent();
  if (shared > e8m0_max_exponent) return out;  // NaN scale
  if (shared < e8m0_min_exponent) shared = e8m0_min_exponent;
  out.scale = static_cast<std::uint8_t>(shared + e8m0_bias);
  for (std::size_t i = 0; i < block.size(); ++i) {
    Real scaled = exact(block[i]);
    mpfr_div_2si(raw(scaled), raw(scaled), shared, MPFR_RNDN);  // exact: a power of two
    out.elements[i] = round_to(scaled, element, Overflow::saturate);
  }
  return out;
}

Nvfp4Reference nvfp4_reference(std::span<const double> values) {
  detail::prepare_mpfr_thread();
  for (double v : values)
    if (!(std::fabs(v) <= FLT_MAX)) throw std::domain_error("nvfp4_reference: values must be finite, within f32's range");
  Nvfp4Reference out;
  out.tensor_scale = round_to(quotient(max_magnitude(values), exact(448.0 * 6.0)), Format::f32);
  const Real st = exact(out.tensor_scale);
  Real six_st = detail::real_with_bits(64);
  mpfr_mul_ui(raw(six_st), raw(st), 6, MPFR_RNDN);  // exact
  out.elements.resize(values.size());
  for (std::size_t start = 0; start < values.size(); start += nvfp4_block_size) {
    const auto block = values.subspan(start, std::min(nvfp4_block_size, values.size() - start));
    const double sb = out.tensor_scale == 0 ? 0.0
                                            : round_to(quotient(max_magnitude(block), six_st), fp8_e4m3,
                                                       Overflow::saturate);
    out.block_scales.push_back(sb);
    Real scale = detail::real_with_bits(64);
    mpfr_mul_d(raw(scale), raw(st), sb, MPFR_RNDN);  // exact: 24 + 4 bits
    for (std::size_t i = 0; i < block.size(); ++i)
      out.elements[start + i] = sb == 0 ? std::copysign(0.0, block[i])
                                        : round_to(quotient(exact(block[i]), scale), fp4_e2m1, Overflow::saturate);
  }
  return out;
}

namespace {

// d, the toward-zero double of v, made odd when it was inexact.
double made_odd(double d, bool inexact) {
  if (!inexact || (bits_of_double(d) & 1) != 0) return d;
  return std::nextafter(d, std::copysign(INFINITY, d));  // away from zero; from +-0 to +-denorm_min
}

}  // namespace

double to_double_odd(const Real& v) {
  detail::prepare_mpfr_thread();
  const double d = mpfr_get_d(raw(v), MPFR_RNDZ);
  if (!std::isfinite(d)) return d;  // NaN, +-inf (a finite v never rounds toward zero to inf)
  return made_odd(d, mpfr_cmp_d(raw(v), d) != 0);
}

std::optional<double> parse_to_odd(std::string_view text) {
  // Toward zero at 64 bits, and the text's remainder as a sticky bit: the
  // double's rounding to odd from there is the text's own (rounding to odd
  // at 64 bits, then at 53 or fewer, is rounding to odd at the latter).
  Scratch t(64);
  const std::optional<int> inexact = detail::read_toward_zero(std::string(text), t.v);
  if (!inexact) return std::nullopt;
  const double d = mpfr_get_d(t.v, MPFR_RNDZ);
  if (!std::isfinite(d)) return d;
  return made_odd(d, *inexact != 0 || mpfr_cmp_d(t.v, d) != 0);
}

std::vector<double> mx_round(std::span<const Real> v, const MiniFloat& element) {
  std::vector<double> out;
  out.reserve(v.size());
  for (std::size_t start = 0; start < v.size(); start += mx_block_size) {
    std::vector<double> block;
    for (std::size_t i = start; i < std::min(v.size(), start + mx_block_size); ++i) block.push_back(to_double_odd(v[i]));
    const MxReference q = mx_reference(block, element);
    const double scale = e8m0_decode(q.scale);  // NaN for the NaN scale
    for (double p : q.elements) out.push_back(scale * p);  // exact: at most 4 bits, within a double's range
  }
  return out;
}

std::vector<double> nvfp4_round(std::span<const Real> v) {
  std::vector<double> odd;
  odd.reserve(v.size());
  for (const Real& r : v) odd.push_back(to_double_odd(r));
  const Nvfp4Reference q = nvfp4_reference(odd);
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = q.tensor_scale * q.block_scales[i / nvfp4_block_size] * q.elements[i];  // exact: at most 31 bits
  return out;
}

}  // namespace softcheck::oracle
