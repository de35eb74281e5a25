// The fuzz checks of the ops that take more than the logits (docs/gradients.md):
// cross_entropy (one class target per row) and softmax_backward /
// log_softmax_backward (an upstream gradient g per row). As for the other
// ops, a cheap check that fails is confirmed by the property suite on the row
// alone, with its target or g (props::check_case, what `softcheck repro
// --target/--upstream` runs: docs/properties.md, "Gradient ops"), and only a
// confirmed failure is reported, so every reported line replays.
//
// fuzz_nan_inf, on each row in the suite's scope (finite entries, -inf masks
// or every entry -inf; in_property_scope), the first that fails, named by the
// property that confirms it:
//   ce_signs                 a cross_entropy row with target ignore_index
//                            and a finite entry: loss 0 and dx all 0
//   gradient_fully_masked    every entry -inf: each output is its kind's
//                            value under the declared masked-row policy
//                            (is_masked_row_value, the row judge's rule); an
//                            ignored cross_entropy row all 0 instead
//   gradient_masked_entries  at an entry x_j = -inf, where p_j = 0 exactly:
//                            softmax_backward y_j = 0 and dx_j = 0;
//                            log_softmax_backward y_j = -inf and dx_j = g_j
//                            (g_j - 0 sum g); cross_entropy dx_j = 0 off the
//                            target (a masked target's dx_t = -1 is left to
//                            the contract)
//   gradient_accuracy        a row with a finite entry (g is always finite):
//                            no NaN in any output (every exact value is a
//                            number: +inf for the loss of a masked target,
//                            -inf for a masked log-softmax entry)
// fuzz_differential: every output of the op against its own contract with
// the MPFR oracle through the row judge (JudgeOptions::exact_only: these ops
// have no fast tier, and MPFR on rows of up to 256 entries is affordable),
// the decision `softcheck run` makes, for the kernel and its partner; a
// fully masked row by its masked-row policy; confirmed by gradient_accuracy.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "fuzz_case.hpp"
#include "violation.hpp"

namespace softcheck::fuzz {

// The first cheap check row r fails (above), with the property that confirms
// it and what failed, or none. y: run_batch's outputs of op on the batch.
struct GradientSuspect {
  std::string_view property;
  std::string message;
};
std::optional<GradientSuspect> gradient_suspect(const FuzzCase& c, const Kernel& k, Op op, std::span<const double> y,
                                                std::int64_t r);

// fuzz_nan_inf's checks on every row of the batch.
std::optional<Violation> check_gradient_invariants(const FuzzCase& c, const Kernel& k, Op op,
                                                   std::span<const double> y);

// fuzz_differential's check on every row of the batch, for c.kernel (outputs
// y) and, when set, c.partner (outputs y_partner).
std::optional<Violation> check_gradient_differential(const FuzzCase& c, std::span<const double> y,
                                                     std::span<const double> y_partner);

// Row r as a case of the property suite: the logits, the temperature and
// the op's other inputs.
props::Case gradient_case(const FuzzCase& c, std::int64_t r);

// Confirmation of a cheap check that failed on row r of the batch (outputs
// y of kernel k), `output` naming the output that failed ("" for the row):
// the property suite's `property` on the row alone, else batch independence
// (the row alone giving other bits), as confirm_row does for the other ops.
std::optional<Violation> confirm_gradient_row(const FuzzCase& c, const Kernel& k, std::int64_t r,
                                              std::string_view property, std::span<const double> y,
                                              std::string output);

}  // namespace softcheck::fuzz
