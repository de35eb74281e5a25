// exact_text_fast (fast_oracle.hpp): an exact value's decimal text from the
// double-double tier's enclosure, MPFR only to print the enclosure's ends.
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "mpfr_util.hpp"
#include "softcheck/fast_oracle.hpp"

namespace softcheck::oracle {

namespace {

// The double-word v = hi + lo into `into`, rounded in direction rnd.
void set_word_pair(mpfr_ptr into, const DD& v, mpfr_rnd_t rnd) {
  mpfr_set_d(into, v.hi, rnd);  // exact: into has more than 53 bits
  mpfr_add_d(into, into, v.lo, rnd);
}

}  // namespace

std::optional<std::string> exact_text_fast(const DDFastRow& row, OutputKind kind, std::size_t element, int digits,
                                           unsigned bits) {
  if (digits < 1) throw std::invalid_argument("exact_text_fast: digits must be >= 1");
  if (bits < 1 || bits > (1u << 24)) throw std::invalid_argument("exact_text_fast: bits must be in [1, 2^24]");
  if (kind != OutputKind::probabilities && kind != OutputKind::log_probabilities) return std::nullopt;
  const bool sm = kind == OutputKind::probabilities;
  if (row.status != RowStatus::ok || !row.usable || element >= row.softmax.size()) return std::nullopt;
  const DD v = (sm ? row.softmax : row.log_softmax)[element];
  const DD err = (sm ? row.softmax_err : row.log_softmax_err)[element];
  if (!std::isfinite(v.hi) || !std::isfinite(v.lo) || !std::isfinite(err.hi) || !std::isfinite(err.lo))
    return std::nullopt;  // a masked log-softmax (-inf), or f64's overflow mark

  detail::prepare_mpfr_thread();
  const mpfr_prec_t p = static_cast<mpfr_prec_t>(std::max(bits, 64u)) + 64;
  detail::Scratch lo(p), hi(p), r(p), shrink(p), grow(p);
  // [v - err, v + err] holds the exact value (fast_oracle.hpp), its ends
  // rounded outwards.
  set_word_pair(r.v, err, MPFR_RNDU);
  set_word_pair(lo.v, v, MPFR_RNDD);
  mpfr_sub(lo.v, lo.v, r.v, MPFR_RNDD);
  set_word_pair(hi.v, v, MPFR_RNDU);
  mpfr_add(hi.v, hi.v, r.v, MPFR_RNDU);
  // One sign throughout, or no relative widening holds: a value that may be
  // 0 (a masked softmax entry, one below the tier's exp floor) goes to MPFR.
  const int sign = mpfr_sgn(lo.v);
  if (sign == 0 || sign != mpfr_sgn(hi.v)) return std::nullopt;
  // exact_row's softmax and log-softmax entries are within a few units of
  // 2^-bits of the exact value, relative (oracle.hpp; compare_row_fast
  // allows 4): 16 of them widen both ends away from the value's middle,
  // by 1 -+ 2^(4 - bits) (exact at p > bits bits).
  mpfr_set_ui_2exp(r.v, 1, 4 - static_cast<long>(bits), MPFR_RNDN);
  mpfr_ui_sub(shrink.v, 1, r.v, MPFR_RNDN);
  mpfr_add_ui(grow.v, r.v, 1, MPFR_RNDN);
  mpfr_mul(lo.v, lo.v, sign > 0 ? shrink.v : grow.v, MPFR_RNDD);
  mpfr_mul(hi.v, hi.v, sign > 0 ? grow.v : shrink.v, MPFR_RNDU);
  std::string text = detail::decimal_text(lo.v, digits);
  if (text != detail::decimal_text(hi.v, digits)) return std::nullopt;
  return text;
}

}  // namespace softcheck::oracle
