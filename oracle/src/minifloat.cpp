#include <cmath>
#include <stdexcept>
#include <string>

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

}  // namespace softcheck::oracle
