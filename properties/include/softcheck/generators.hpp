// RapidCheck generators for the float rows that break softmax kernels, with
// format-aware shrinking. Reusable by the property suite, the fuzzers and users:
// this header depends on RapidCheck and the format vocabulary only (no gtest).
//
// Every generated value is exactly representable in the requested Format (held
// in a double), so a row can be handed to a kernel of that format unchanged and
// printed exactly with %a. Shrinking stays inside the generator's RowDomain and
// inside the format: a shrunk row is still a valid input of the same kind.
//
// Typical use:
//   rc::check([] {
//     const std::vector<double> row = *softcheck::gen::finite_row(softcheck::Format::f32);
//     ...
//   });
#pragma once

#include <rapidcheck.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "softcheck/format.hpp"

namespace softcheck::gen {

// What a row may contain; shrinking never leaves the domain.
enum class RowDomain {
  any,               // anything, at least one entry
  finite,            // every entry finite
  finite_or_masked,  // finite entries and -inf masks, at least one finite entry
  masked,            // at least one -inf and at least one finite entry, no +inf/NaN
  fully_masked,      // every entry -inf
  nonfinite,         // at least one +inf or NaN entry
  no_nan_or_pos_inf  // finite entries and -inf, possibly all -inf
};

std::string_view name(RowDomain d);
// True when `row` (values of any format) lies in domain `d`.
bool in_domain(std::span<const double> row, RowDomain d);

struct RowOptions {
  std::size_t max_cols = 65536;        // hard cap on the row length
  double long_row_probability = 0.01;  // chance of a row longer than 4096 (if max_cols allows)
};

// ---- single values ---------------------------------------------------------
// One value of format f from the whole mixture (normal, huge, tiny, subnormal,
// +-0, +-inf, NaN, -1e9, the lowest value, the exp overflow/underflow edges).
rc::Gen<double> value(Format f);
// A temperature: mostly 1, otherwise a listed or log-uniform value in
// [1e-2, 1e2] (a plain double: kernels round it, contracts cover that).
// Shrinks towards 1.
rc::Gen<double> temperature();

// ---- rows --------------------------------------------------------------------
// Finite rows: element mixtures (normal, huge, tiny, subnormal, ties, values at
// the overflow edge ln(max) (88.72 in f32) and far beyond, at the underflow edge
// ln(denorm_min/2) (-103.97 in f32), -1e9 and the lowest value as finite masks,
// one dominant entry), the finite input families of families.hpp, underflow
// rows and overflow-edge rows. Lengths are mostly short; long rows (up to
// max_cols) are rare.
rc::Gen<std::vector<double>> finite_row(Format f, RowOptions opt = {});
// Finite rows with -inf masks (one entry, about a quarter, or all but one).
rc::Gen<std::vector<double>> masked_row(Format f, RowOptions opt = {});
// finite_row or masked_row (the scope of an accuracy contract).
rc::Gen<std::vector<double>> contract_row(Format f, RowOptions opt = {});
// Every entry -inf (length 1 .. max_cols).
rc::Gen<std::vector<double>> fully_masked_row(Format f, RowOptions opt = {});
// Rows with at least one +inf or NaN (and possibly -inf).
rc::Gen<std::vector<double>> nonfinite_row(Format f, RowOptions opt = {});
// Rows masked with finite "masks": -1e9, the format's lowest value, -1e30,
// -max/2 (rounded to f: -1e9 becomes -inf in f16). Sometimes every entry.
rc::Gen<std::vector<double>> mask_1e9_row(Format f, RowOptions opt = {});
// A maximum a and entries near a + ln(denorm_min/2) and a + ln(min normal):
// exact softmax values around the smallest subnormal and the smallest normal.
rc::Gen<std::vector<double>> underflow_row(Format f, RowOptions opt = {});
// Values b + m * 2^k (common offset, integers m of few bits): rows that admit
// many exact shifts x + c (shift invariance), sometimes with -inf masks.
rc::Gen<std::vector<double>> lattice_row(Format f, RowOptions opt = {});
// A named input family of families.hpp with a random seed and length (fixed
// families keep their length). `domain` selects the families whose rows lie in
// it (finite, finite_or_masked, fully_masked or any).
rc::Gen<std::vector<double>> family_row(Format f, RowDomain domain = RowDomain::finite_or_masked,
                                        RowOptions opt = {});
// Any of the above.
rc::Gen<std::vector<double>> any_row(Format f, RowOptions opt = {});

// ---- shrinking ---------------------------------------------------------------
// Strictly simpler values of f than v (0, 1, -1, |v|, trunc(v), v with fewer
// significand bits, v moved towards the binade of 1), finite when v is finite.
// "Simpler" is a well-founded order, so shrinking always terminates.
std::vector<double> shrink_value(double v, Format f);
// A Shrinkable row: removes chunks, simplifies the whole row, then each entry;
// every shrink stays in `domain` and in format f.
rc::Shrinkable<std::vector<double>> shrinkable_row(std::vector<double> row, Format f,
                                                   RowDomain domain);

}  // namespace softcheck::gen
