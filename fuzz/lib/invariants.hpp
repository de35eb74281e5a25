// fuzz_nan_inf's checks: the invariants every kernel declares, checked cheaply
// on each row of a batch, and confirmed by the property suite before a report.
//
//   no_nonfinite  finite row (x/T finite) -> finite outputs (log-softmax may be
//                 -inf where the exact value is below the lowest value)
//   range         softmax in [0, 1], log-softmax <= 0 (NaN is out of range)
//   sum_to_one    |sum y - 1| <= B (2u + n denorm_min), B = the contract bound
//   fully_masked  an all -inf row follows the declared masked-row policy
// The first three are claimed by ops with a declared contract, fully_masked by
// every kernel (properties/src/registry.cpp); bounds as in checks.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_case.hpp"
#include "violation.hpp"

namespace softcheck::fuzz {

enum class RowKind {
  finite,        // every entry finite
  masked,        // finite entries and -inf masks
  fully_masked,  // every entry -inf
  nonfinite,     // some +inf or NaN: no invariant, only "no crash"
};
RowKind classify(std::span<const double> row);

// The temperatures the properties accept for format f: kernel.hpp's
// temperature_fits_format, as support.cpp's temperature_ok.
bool temperature_in_scope(double t, Format f);

// The property suite's scope for a row (support.cpp's out_of_scope, less the
// row kind): the temperature is accepted and z = x/T stays a finite value of
// f, max |x_i/T| (1 + 4u) <= max_finite (the kernel divides by fl(T)).
bool in_property_scope(std::span<const double> x, double t, Format f);

// Runs `k` (op) on the whole batch of `c` (its logits and the other inputs
// the op takes) and returns its outputs as doubles: every output of the op in
// op-table order, each rows x output_cols values, one after the other (an op
// with one output: just that output; output_row finds a row's values). The
// output buffers start as NaN so that an entry never written reads as NaN.
std::vector<double> run_batch(const Kernel& k, Op op, const FuzzCase& c);

// The same into `out`, with the packed inputs and outputs kept in `scratch`:
// the targets call it once or twice per input and reuse them, so a fuzz run
// allocates them once (under ASan an allocation and its quarantine cost more
// than a kernel call on a short row).
struct BatchScratch {
  std::vector<unsigned char> x, targets, upstream;
  std::vector<std::vector<unsigned char>> y;  // one per output of the op
};
void run_batch(const Kernel& k, Op op, const FuzzCase& c, BatchScratch& scratch, std::vector<double>& out);

// Row r of output `output` of op in run_batch's outputs `y` for the batch c.
std::span<const double> output_row(const FuzzCase& c, Op op, std::span<const double> y, std::size_t output,
                                   std::int64_t r);

// The first invariant whose cheap check fails on one row (x, its outputs y),
// or none. Only claimed invariants are checked; out of scope rows pass.
std::optional<std::string_view> suspect_row(const Kernel& k, Op op, std::span<const double> x,
                                            std::span<const double> y, double temperature);

// Every row of the batch: a suspected invariant is confirmed with the property
// suite on that row alone (the ops with more inputs than the logits have
// checks of their own, gradient_checks.hpp). When the suite does not confirm it but the row
// computed alone differs bitwise from the batched one, that is a
// batch_independence violation.
std::optional<Violation> check_invariants(const FuzzCase& c, const Kernel& k, Op op,
                                          std::span<const double> y);

// Confirmation for a row flagged by a cheap check (shared with fuzz_differential).
std::optional<Violation> confirm_row(const FuzzCase& c, const Kernel& k, Op op, std::int64_t r,
                                     std::string_view property, std::span<const double> y_row);

// Whether a and b hold the same bit patterns (any NaN matching any NaN): a
// kernel's two runs on one row (batch independence, determinism).
bool same_bits(std::span<const double> a, std::span<const double> b);
// "<the case>, row r", for a violation's context.
std::string context_of(const FuzzCase& c, std::int64_t r);

}  // namespace softcheck::fuzz
