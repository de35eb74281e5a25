// Scratch MPFR variables for tests that compute a value independently of
// the oracle (with their own precision, outside Boost's default).
#pragma once

#include <mpfr.h>

#include "softcheck/oracle.hpp"

namespace softcheck::oracle::testing {

inline mpfr_srcptr raw(const Real& r) { return r.backend().data(); }
inline mpfr_ptr raw(Real& r) { return r.backend().data(); }

// An MPFR variable with its own precision.
struct Mp {
  mpfr_t v;
  explicit Mp(mpfr_prec_t bits) { mpfr_init2(v, bits); }
  Mp(mpfr_prec_t bits, double d) : Mp(bits) { mpfr_set_d(v, d, MPFR_RNDN); }
  Mp(mpfr_prec_t bits, const char* text) : Mp(bits) { mpfr_set_str(v, text, 10, MPFR_RNDN); }
  ~Mp() { mpfr_clear(v); }
  Mp(const Mp&) = delete;
  Mp& operator=(const Mp&) = delete;
};

// |a - b| <= 2^e s. The difference is rounded at 4096 bits, far finer than
// any 2^e s the tests check.
inline bool within(mpfr_srcptr a, mpfr_srcptr b, mpfr_srcptr s, long e) {
  Mp diff(4096), bound(64);
  mpfr_sub(diff.v, a, b, MPFR_RNDN);
  mpfr_abs(diff.v, diff.v, MPFR_RNDN);
  mpfr_mul_2si(bound.v, s, e, MPFR_RNDU);
  return mpfr_lessequal_p(diff.v, bound.v);
}

// |a - b| <= 2^e |b|.
inline bool relatively_within(mpfr_srcptr a, mpfr_srcptr b, long e) {
  Mp abs_b(mpfr_get_prec(b));
  mpfr_abs(abs_b.v, b, MPFR_RNDN);
  return within(a, b, abs_b.v, e);
}

}  // namespace softcheck::oracle::testing
