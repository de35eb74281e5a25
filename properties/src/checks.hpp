// Internal: one function per property, checking ONE case. Bounds and their
// derivations are stated next to each function and in docs/properties.md.
#pragma once

#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::props::detail {

CaseResult check_sum_to_one(const Kernel& k, Op op, const Case& c);
CaseResult check_accuracy(const Kernel& k, Op op, const Case& c);
CaseResult check_shift_invariance(const Kernel& k, Op op, const Case& c);
CaseResult check_ordering(const Kernel& k, Op op, const Case& c);
CaseResult check_permutation(const Kernel& k, Op op, const Case& c);
CaseResult check_no_nonfinite(const Kernel& k, Op op, const Case& c);
CaseResult check_range(const Kernel& k, Op op, const Case& c);
CaseResult check_underflow(const Kernel& k, Op op, const Case& c);
CaseResult check_masked_entries(const Kernel& k, Op op, const Case& c);
CaseResult check_fully_masked(const Kernel& k, Op op, const Case& c);
CaseResult check_mask_1e9(const Kernel& k, Op op, const Case& c);
CaseResult check_temperature(const Kernel& k, Op op, const Case& c);
CaseResult check_log_softmax(const Kernel& k, Op op, const Case& c);
CaseResult check_batch_independence(const Kernel& k, Op op, const Case& c);

// The sparse ops' properties (sparse_checks.cpp; docs/properties.md, "Sparse ops").
CaseResult check_sparse_accuracy(const Kernel& k, Op op, const Case& c);
CaseResult check_sparse_sum_to_one(const Kernel& k, Op op, const Case& c);
CaseResult check_sparse_range(const Kernel& k, Op op, const Case& c);
CaseResult check_tau_consistency(const Kernel& k, Op op, const Case& c);
CaseResult check_entmax_identities(const Kernel& k, Op op, const Case& c);
CaseResult check_sparse_shift_invariance(const Kernel& k, Op op, const Case& c);
CaseResult check_sparse_permutation(const Kernel& k, Op op, const Case& c);
CaseResult check_sparse_ordering(const Kernel& k, Op op, const Case& c);
CaseResult check_sparse_masked_entries(const Kernel& k, Op op, const Case& c);
CaseResult check_sparse_fully_masked(const Kernel& k, Op op, const Case& c);

// The ops with one output per row, lse and entropy (scalar_checks.cpp;
// docs/properties.md, "lse and entropy"). Units of u (absolute error).
CaseResult check_scalar_shift(const Kernel& k, Op op, const Case& c);
CaseResult check_scalar_permutation(const Kernel& k, Op op, const Case& c);
CaseResult check_scalar_masked_entries(const Kernel& k, Op op, const Case& c);
CaseResult check_scalar_fully_masked(const Kernel& k, Op op, const Case& c);
CaseResult check_lse_bounds(const Kernel& k, Op op, const Case& c);
CaseResult check_entropy_range(const Kernel& k, Op op, const Case& c);
CaseResult check_entropy_uniform(const Kernel& k, Op op, const Case& c);
CaseResult check_entropy_cold(const Kernel& k, Op op, const Case& c);

// The gradient ops (gradient_checks.cpp; docs/properties.md, "Gradient ops"):
// cases with a class target or an upstream gradient, dx in the scaled metric.
CaseResult check_gradient_accuracy(const Kernel& k, Op op, const Case& c);
CaseResult check_gradient_sum_zero(const Kernel& k, Op op, const Case& c);
CaseResult check_upstream_shift(const Kernel& k, Op op, const Case& c);
CaseResult check_gradient_masked_entries(const Kernel& k, Op op, const Case& c);
CaseResult check_gradient_fully_masked(const Kernel& k, Op op, const Case& c);
CaseResult check_ce_signs(const Kernel& k, Op op, const Case& c);
CaseResult check_ce_confident(const Kernel& k, Op op, const Case& c);
CaseResult check_gradient_check(const Kernel& k, Op op, const Case& c);

// The attention op (attention_checks.cpp; docs/properties.md, "Attention"):
// cases with a bias row, q, K and V; O in the scaled metric (units of u s_i,
// s_i = sum_j p_j |V_ji|), lse in units of u.
CaseResult check_attention_accuracy(const Kernel& k, Op op, const Case& c);
CaseResult check_attention_mass(const Kernel& k, Op op, const Case& c);
CaseResult check_attention_key_permutation(const Kernel& k, Op op, const Case& c);
CaseResult check_attention_masked_padding(const Kernel& k, Op op, const Case& c);
CaseResult check_attention_softcap_before_mask(const Kernel& k, Op op, const Case& c);
CaseResult check_attention_masked_values(const Kernel& k, Op op, const Case& c);
CaseResult check_attention_fully_masked(const Kernel& k, Op op, const Case& c);
CaseResult check_attention_lse_is_softmax_lse(const Kernel& k, Op op, const Case& c);
CaseResult check_attention_window_as_bias(const Kernel& k, Op op, const Case& c);
CaseResult check_attention_causal_full_window(const Kernel& k, Op op, const Case& c);

// The case both shift-invariance properties compare with: c shifted by an
// exact nonzero shift derived from the row alone (every finite x_i + shift
// exact in f), c and the shifted case both in scope (finite or masked).
// Otherwise `not_applicable` holds the result that says why.
struct ShiftedCase {
  Case shifted;
  double shift = 0;
  std::optional<CaseResult> not_applicable;
};
ShiftedCase shifted_case(const Case& c, Format f);

}  // namespace softcheck::props::detail
