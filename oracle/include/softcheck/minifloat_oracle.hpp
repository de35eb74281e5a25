// The oracle's rounding to the small OCP formats (softcheck/minifloat.hpp):
// MPFR at the format's precision (man_bits + 1 bits) with its subnormals
// (mpfr_subnormalize over the format's exponent range) and an unbounded
// exponent above, then the overflow rule of minifloat.hpp. The independent
// reference for the storage layer's bit-level encode (tested exhaustively
// against it: oracle/tests/minifloat_test.cpp).
#pragma once

#include "softcheck/minifloat.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck::oracle {

// v correctly rounded to f (nearest, ties to even), as a double (exact):
// +-max_finite, +-inf (E5M2) or NaN (E4M3) past the largest finite value
// per `overflow`; NaN for a NaN v (std::domain_error for a format without NaN).
double round_to(const Real& v, const MiniFloat& f, Overflow overflow);

}  // namespace softcheck::oracle
