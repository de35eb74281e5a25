// Internal: the row "recipes" behind the RapidCheck generators, written against
// the deterministic Rng of families.hpp so that the property checks can also
// build rows (e.g. batch neighbours) from a seed without RapidCheck.
#pragma once

#include <cstddef>
#include <vector>

#include "softcheck/input_families.hpp"
#include "softcheck/format.hpp"
#include "softcheck/generators.hpp"

namespace softcheck::gen::detail {

// The exp overflow edge ln(max_finite) (88.72 in f32, REFERENCE.md "How the
// peers test softmax") and the underflow edge ln(denorm_min / 2) (-103.97 in
// f32): exp(x) rounds to +inf above the first and to 0 below the second.
double overflow_edge(Format f);
double underflow_edge(Format f);

// Row length: mostly short (1..72), sometimes up to 4096, rarely up to max_cols.
// `size` is RapidCheck's size parameter (0..100): small sizes give short rows.
std::size_t pick_length(Rng& rng, const RowOptions& opt, int size);

// Rows of length n, every value rounded to f.
std::vector<double> mixture_row(Rng& rng, Format f, std::size_t n);  // may contain -inf in f16
std::vector<double> finite_row(Rng& rng, Format f, std::size_t n);
std::vector<double> masked_row(Rng& rng, Format f, std::size_t n);   // n >= 2
std::vector<double> nonfinite_row(Rng& rng, Format f, std::size_t n);
std::vector<double> mask_1e9_row(Rng& rng, Format f, std::size_t n);
std::vector<double> underflow_row(Rng& rng, Format f, std::size_t n);
std::vector<double> overflow_edge_row(Rng& rng, Format f, std::size_t n);
std::vector<double> lattice_row(Rng& rng, Format f, std::size_t n);
std::vector<double> family_row(Rng& rng, Format f, std::size_t n, RowDomain domain);
std::vector<double> any_row(Rng& rng, Format f, std::size_t n);

// Makes every entry finite: -inf -> lowest(f), +inf -> max_finite(f), NaN -> 0.
void make_finite(std::vector<double>& row, Format f);

}  // namespace softcheck::gen::detail
