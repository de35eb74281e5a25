// Internal: the attention properties' cases (docs/properties.md, "Attention"):
// one query q against n keys K_j and values V_j of head dimension d, with the
// bias row x (Case::row; -inf masks a key), drawn with the deterministic Rng
// of input_families.hpp from RapidCheck's random stream, and shrunk by
// shrinkable_attention_case.
#pragma once

#include <rapidcheck.h>

#include <optional>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/generators.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::props::detail {

// What a generated or shrunk case must stay: every shrink is checked
// against it, so a shrunk counterexample is a case of the same kind.
enum class AttentionDomain {
  visible,       // at least one unmasked key (the contracts' scope)
  masked,        // at least one masked and one unmasked key
  fully_masked,  // every key masked
  exact_scores,  // visible, and every score (q . K_j) / (T sqrt d) + x_j exact in double
  unit_values,   // visible, and every V entry 1 (mass conservation)
};

// The bias row the exact attention sees: Case::row with the keys outside
// the query's window (Case::window) masked (window_masked_bias).
std::vector<double> visible_bias(const Case& c);
// The same case with the window folded into the bias and no window left:
// the exact attention is the same, and so is every kernel's output (the
// attention_window_as_bias property); for the properties that move keys
// (a window is about positions).
Case window_as_bias(Case c);

// Whether the case lies in the domain: q, K, V of the sizes head_dim and n
// give, a window valid for n, the bias free of +inf and NaN, and the
// domain's own condition on the visible keys (visible_bias).
bool in_attention_domain(const Case& c, AttentionDomain d);

// The scores z_j = (q . K_j) / (T sqrt d) + x_j (-inf for a masked key) when
// every one of them is exactly a double (every product, partial sum, the
// scale T sqrt(d) and the division by it and the addition of x_j exact);
// none otherwise. Exact scores make the exact attention lse the softmax
// oracle's lse of that row (exact_row(z).lse).
std::optional<std::vector<double>> exact_scores(const Case& c);

// The generators (every value exact in f). n in 1 .. 300 (at most
// o.max_cols; a masked case has 2 keys at least), growing with RapidCheck's
// size; d in {1, 2, 4, 8, 16, 64}; T in {1, 0.7, 2}; q, K ~
// N(0, sigma^2), sigma in {1, 4}; V ~ N(0, 1). Bias patterns: zeros, random
// -inf masks, causal, -inf runs on 16- and 64-key tile boundaries, a sink
// key at +10 .. 20, all masked; and windows the kernel applies: causal
// (-1, 0) and sliding (w - 1, 0), the position uniform or at a 16-key tile
// edge.
// The accuracy and permutation cases: every pattern but all masked.
rc::Gen<Case> attention_cases(Format f, const gen::RowOptions& o);
// The same with V all ones (mass conservation: O = 1).
rc::Gen<Case> attention_mass_cases(Format f, const gen::RowOptions& o);
// At least one masked and one unmasked key (random masks, causal, tile runs).
rc::Gen<Case> attention_masked_cases(Format f, const gen::RowOptions& o);
// Every key masked.
rc::Gen<Case> attention_fully_masked_cases(Format f, const gen::RowOptions& o);
// Scores exactly representable: q and K integers (N(0, sigma^2) rounded),
// d in {1, 4, 16, 64} (sqrt(d) a power of two), T in {1, 2, 0.5}, bias 0,
// -inf or an integer sink.
rc::Gen<Case> attention_exact_score_cases(Format f, const gen::RowOptions& o);
// Causal windows (-1, 0) over a zero bias (sometimes with random masks).
rc::Gen<Case> attention_causal_cases(Format f, const gen::RowOptions& o);

// A Shrinkable case: a smaller head dimension (q, K, V truncated to their
// first d' components), keys removed in chunks of halving length (bias, K
// and V rows together), T towards 1, q, K, V and the bias each simplified
// as a whole (truncated, rounded to 1 or 4 significant bits), then each bias
// entry (gen::shrink_value). Every candidate stays in `domain` and in f.
// Single entries of q, K and V are not shrunk one by one: n x d of them,
// each evaluation a kernel call and an MPFR oracle.
rc::Shrinkable<Case> shrinkable_attention_case(Case c, Format f, AttentionDomain domain);

}  // namespace softcheck::props::detail
