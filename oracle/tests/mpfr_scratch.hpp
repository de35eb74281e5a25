// Scratch MPFR variables for tests that compute a value independently of
// the oracle (with their own precision, outside Boost's default).
#pragma once

#include <mpfr.h>

#include "softcheck/oracle.hpp"

namespace softcheck::oracle::testing {

inline mpfr_srcptr raw(const Real& r) { return r.backend().data(); }

// An MPFR variable with its own precision.
struct Mp {
  mpfr_t v;
  explicit Mp(mpfr_prec_t bits) { mpfr_init2(v, bits); }
  Mp(mpfr_prec_t bits, double d) : Mp(bits) { mpfr_set_d(v, d, MPFR_RNDN); }
  ~Mp() { mpfr_clear(v); }
  Mp(const Mp&) = delete;
  Mp& operator=(const Mp&) = delete;
};

}  // namespace softcheck::oracle::testing
