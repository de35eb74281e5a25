// Private helpers shared by the oracle's translation units (oracle.cpp,
// sparse.cpp, fast_text.cpp): argument checks and row classification, the
// raw mpfr_t inside a Real, a Real with an explicit precision, a plain owned
// mpfr_t, and the decimal text of a value.
#pragma once

#include <mpfr.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "softcheck/oracle.hpp"

namespace softcheck::oracle::detail {

void prepare_mpfr_thread();  // oracle.cpp: widest exponent range, TLS check

// Throws std::invalid_argument ("WHO: ...") unless temperature is finite and
// > 0, x is non-empty and bits is in [1, 2^24] (oracle.cpp).
void check_arguments(std::span<const double> x, double temperature, unsigned bits, const char* who);

// ok: a finite entry and no +inf/NaN; all_masked: every entry -inf;
// undefined: a +inf or NaN entry (oracle.cpp).
RowStatus classify(std::span<const double> x);

// The number `text` stands for (mpfr_strtofr, base 0: decimal, "0x" hex,
// inf, nan) correctly rounded to nearest (ties to even) in a binary format of
// `precision` bits whose smallest normal is 2^emin, subnormals below it, the
// exponent unbounded above (callers apply their overflow rule); the sign of
// zero kept. std::nullopt unless the whole text is one number (oracle.cpp).
std::optional<double> parse_to_precision(std::string_view text, int precision, long emin);

// `text` read whole (mpfr_strtofr, base 0) into `into` at its precision,
// toward zero: the ternary value (0 when exact), or std::nullopt unless the
// whole text is one number (no leading space, nothing after it). The one
// reading of number texts that parse_to_precision and parse_to_odd share
// (oracle.cpp).
std::optional<int> read_toward_zero(const std::string& text, mpfr_ptr into);

// v's decimal text with `digits` (>= 1) significant digits, rounded to
// nearest: to_string's, and exact_text_fast's for its interval's ends.
std::string decimal_text(mpfr_srcptr v, int digits);  // oracle.cpp

inline mpfr_ptr raw(Real& r) { return r.backend().data(); }
inline mpfr_srcptr raw(const Real& r) { return r.backend().data(); }

// A Real of exactly `bits` bits; NaN until the caller assigns it.
inline Real real_with_bits(mpfr_prec_t bits) {
  Real r;
  mpfr_set_prec(raw(r), bits);
  return r;
}

// A plain mpfr_t owned by one scope (hot paths reuse one per thread).
struct Scratch {
  mpfr_t v;
  explicit Scratch(mpfr_prec_t bits) { mpfr_init2(v, bits); }
  ~Scratch() { mpfr_clear(v); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

}  // namespace softcheck::oracle::detail
