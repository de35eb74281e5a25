// The attention properties (docs/properties.md, "Attention"): one query q
// against n keys K_j and values V_j of head dimension d, with the bias row x
// (Case::row; -inf masks a key), the op computing
//   z_j = (q . K_j) / (T sqrt(d)) + x_j,  p = softmax(z),
//   O = sum_j p_j V_j,  lse = log sum_j exp(z_j)
// (docs/attention.md). O is measured in the scaled metric: an entry's error
// in units of u s_i, s_i = sum_j p_j |V_ji| the exact scale the oracle gives
// with O (its components cancel when V has both signs, while every
// algorithm's first-order error is a multiple of u s_i); lse in the absolute
// metric, units of u. B is the kernel's declared contract on the attention
// row's shape (attention_row_shape: n, R, M of the scores, h = d and the
// dot-product mass D), as RowJudge::set_attention computes it: every check
// asks the judge `softcheck run` asks.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "attention_cases.hpp"
#include "checks.hpp"
#include "softcheck/judge.hpp"
#include "softcheck/oracle.hpp"
#include "support.hpp"

namespace softcheck::props::detail {

using oracle::Real;

namespace {

// Index of op's output of kind `kind` in spec(op).out (out.size() if none).
std::size_t output_of(Op op, OutputKind kind) {
  const auto& out = spec(op).out;
  for (std::size_t o = 0; o < out.size(); ++o)
    if (out[o].kind == kind) return o;
  return out.size();
}

// The judge of one case: the bias row, q, K and V. The case must outlive it
// (the judge keeps views of them).
oracle::RowJudge attention_judge(const Kernel& k, const Case& c) {
  oracle::RowJudge j(c.row, c.temperature, k.format, oracle::JudgeOptions::exact_only());
  j.set_attention(c.query, c.keys, c.values, c.head_dim, c.window);
  return j;
}

std::string_view domain_text(AttentionDomain d) {
  switch (d) {
    case AttentionDomain::visible: return "a query with at least one unmasked key";
    case AttentionDomain::masked: return "a query with masked and unmasked keys";
    case AttentionDomain::fully_masked: return "a query with every key masked";
    case AttentionDomain::exact_scores: return "a query whose scores are exact in double";
    case AttentionDomain::unit_values: return "a query with an unmasked key and V all ones";
  }
  return "?";
}

// Out of scope: inputs the op cannot take (sizes, values not exact in the
// kernel's format), a temperature the format cannot use, a case outside the
// property's domain, a q or an unmasked key's K or V that is not finite (no
// exact attention), or, where a key is visible, scores or their shifts the
// format cannot hold (attention_row_fits_format: no contract applies there).
std::optional<CaseResult> attention_scope(const Kernel& k, Op op, const Case& c, AttentionDomain domain) {
  if (!has_head_dim(op)) return not_applicable(std::string(name(op)) + " has no head dimension");
  if (c.row.empty()) return not_applicable("no keys");
  if (const std::string bad = extra_inputs_error(k, op, c); !bad.empty()) return not_applicable(bad);
  if (!temperature_ok(c.temperature, k.format))
    return not_applicable("temperature " + hex(c.temperature) + " is not a normal value of the format");
  for (double x : c.row)
    if (!std::isnan(x) && round_to_format(x, k.format) != x)
      return not_applicable("bias " + hex(x) + " not exact in format");
  if (!in_attention_domain(c, domain)) return not_applicable("needs " + std::string(domain_text(domain)));
  const auto d = static_cast<std::size_t>(c.head_dim);
  for (double v : c.query)
    if (!std::isfinite(v)) return not_applicable("q holds NaN or inf: no exact attention");
  const std::vector<double> bias = visible_bias(c);
  for (std::size_t j = 0; j < bias.size(); ++j) {
    if (bias[j] == -INFINITY) continue;
    for (std::size_t i = 0; i < d; ++i)
      if (!std::isfinite(c.keys[j * d + i]) || !std::isfinite(c.values[j * d + i]))
        return not_applicable("an unmasked key's K or V holds NaN or inf: no exact attention");
  }
  if (domain != AttentionDomain::fully_masked &&
      !attention_row_fits_format(bias, c.query, c.keys, c.head_dim, c.temperature, k.format,
                                 k.find(op)->params.softcap, k.find(op)->params.sink))
    return not_applicable("the scores or their shifts overflow the format");
  return std::nullopt;
}

// The scaled metric's unit for an entry of exact scale s: u s, or the
// smallest subnormal where u s is below it (metrics.hpp, Metric::scaled). A
// structural zero (s = 0: every visible V_ji is 0) has unit 0: O_i must be
// exactly 0 there.
double scaled_unit(const Real& s, Format f) {
  if (s == 0) return 0;
  return std::max((s * Real(unit_roundoff(f))).convert_to<double>(), denorm_min(f));
}

std::string first_values(std::span<const double> v) {
  std::string s;
  for (std::size_t j = 0; j < std::min<std::size_t>(v.size(), 4); ++j) s += (j ? ", " : "") + hex(v[j]);
  return s + (v.size() > 4 ? ", ..." : "");
}

// A permutation of n keys from the case's hash (Fisher-Yates, xorshift64),
// so that a repro line needs nothing but the case.
std::vector<std::size_t> key_permutation(const Case& c) {
  std::vector<std::size_t> p(c.row.size());
  std::iota(p.begin(), p.end(), std::size_t{0});
  std::uint64_t h = case_hash(c) | 1;
  for (std::size_t i = p.size(); i > 1; --i) {
    h ^= h << 13, h ^= h >> 7, h ^= h << 17;
    std::swap(p[i - 1], p[static_cast<std::size_t>(h % i)]);
  }
  return p;
}

// The case with its keys in the order `p`: key j of the result is key p[j]
// of c (its bias, K and V rows together).
Case permuted(const Case& c, const std::vector<std::size_t>& p) {
  const auto d = static_cast<std::size_t>(c.head_dim);
  Case out = c;
  for (std::size_t j = 0; j < p.size(); ++j) {
    out.row[j] = c.row[p[j]];
    std::copy_n(c.keys.begin() + static_cast<std::ptrdiff_t>(p[j] * d), d,
                out.keys.begin() + static_cast<std::ptrdiff_t>(j * d));
    std::copy_n(c.values.begin() + static_cast<std::ptrdiff_t>(p[j] * d), d,
                out.values.begin() + static_cast<std::ptrdiff_t>(j * d));
  }
  return out;
}

// Where two runs of the kernel differ bit for bit (NaN matches any NaN), as
// a result: pass when they agree everywhere.
CaseResult identical_outputs(Op op, const std::vector<std::vector<double>>& a,
                             const std::vector<std::vector<double>>& b, const std::string& what) {
  std::size_t wrong = 0;
  std::string first;
  for (std::size_t o = 0; o < a.size(); ++o)
    for (std::size_t i = 0; i < a[o].size(); ++i)
      if (!same_bits_or_both_nan(a[o][i], b[o][i]) && wrong++ == 0)
        first = std::string(spec(op).out[o].name) + "[" + std::to_string(i) + "]: " + hex(a[o][i]) + " vs " +
                hex(b[o][i]);
  if (wrong == 0) return pass(0, 0, "entries", what + ": outputs identical");
  return fail(static_cast<double>(wrong), 0, "entries", what + ": " + first + " (" + std::to_string(wrong) + " differ)");
}

std::string window_text(const KeyWindow& w) {
  return "(" + std::to_string(w.left) + ", " + std::to_string(w.right) + ") at position " +
         std::to_string(w.position);
}

}  // namespace

// ---- attention_accuracy -----------------------------------------------------------
// O and lse each within its own contract of the exact attention (MPFR,
// oracle::exact_attention): max_i |O_i - exact_i| / (u s_i) <= B_O and
// |lse - exact| / u <= B_lse. A NaN/inf where the exact value is finite
// fails whatever B is; the worst output is reported, prefixed by its name.
CaseResult check_attention_accuracy(const Kernel& k, Op op, const Case& c) {
  if (auto na = attention_scope(k, op, c, AttentionDomain::visible)) return *na;
  const std::vector<std::vector<double>> outs = run_case(k, op, c);
  oracle::RowJudge rj = attention_judge(k, c);
  return outputs_within_contracts(k, op, outs, rj);
}

// ---- attention_mass ---------------------------------------------------------------
// With every V_j = 1 the exact O_i is sum_j p_j = 1 (linear attention's
// weights w_j sum to 1 as well) and its scale s_i = sum_j p_j |1| = 1, so
// the O contract reads |O_i - 1| <= B_O u: probability
// mass is neither lost nor gained (FlashAttention's rescale of O when the
// running max grows, a P rounded before P.V while l sums the unrounded P).
// A case whose V holds anything but ones is not applicable (shrinking keeps
// them ones, so the printed case is the one that ran).
CaseResult check_attention_mass(const Kernel& k, Op op, const Case& c) {
  if (auto na = attention_scope(k, op, c, AttentionDomain::unit_values)) return *na;
  const std::size_t o = 0;  // O, the first output of every attention op
  const std::vector<double> O = run_case(k, op, c)[o];
  oracle::RowJudge rj = attention_judge(k, c);
  const OpDecl& d = *k.find(op);
  const oracle::RowVerdict v = rj.judge(d, k.masked_policy, O, o);
  // No O contract: the floor's generic tolerance on the row's shape (claimed
  // only then, registry.cpp attention_mass_contract).
  const double bound = d.contract_of(o).declared ? v.bound : floor_tolerance().bound_ulps(v.shape, k.format);
  const double u = unit_roundoff(k.format);
  double measured = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < O.size(); ++i) {
    const double e = std::isfinite(O[i]) ? std::fabs(O[i] - 1) / u : INFINITY;  // O_i - 1 exact for O_i in [1/2, 2]
    if (!(e <= measured)) measured = e, at = i;
  }
  return judge(measured, bound, "u",
               "V all ones: O[" + std::to_string(at) + "] = " + hex(O.empty() ? NAN : O[at]) + ", exact 1 (n = " +
                   std::to_string(c.row.size()) + ", d = " + std::to_string(c.head_dim) + ")");
}

namespace {

// Both runs within their contracts of the same exact attention (the
// property's transformation changes no exact output), so by the triangle
// inequality
//   |O_i(a) - O_i(b)| <= (B_O(a) + B_O(b)) u s_i,
//   |lse(a) - lse(b)| <= (B_lse(a) + B_lse(b)) u,
// s_i the exact scale of case a. `what` says what b is; outputs without a
// contract are not compared.
std::optional<CaseResult> agree_within_contracts(const Kernel& k, Op op, const Case& a_case, const Case& b_case,
                                                 const std::string& what) {
  const std::vector<std::vector<double>> a = run_case(k, op, a_case), b = run_case(k, op, b_case);
  oracle::RowJudge ja = attention_judge(k, a_case), jb = attention_judge(k, b_case);
  const OpDecl& d = *k.find(op);
  std::optional<CaseResult> result;
  for (std::size_t o = 0; o < a.size(); ++o) {
    if (!d.contract_of(o).declared) continue;
    const Operand& out = spec(op).out[o];
    const double allowed = ja.judge(d, k.masked_policy, a[o], o).bound + jb.judge(d, k.masked_policy, b[o], o).bound;
    const std::span<const Real> scale = ja.exact_scale(d, o);
    double measured = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < a[o].size(); ++i) {
      double e = INFINITY;
      if (std::isfinite(a[o][i]) && std::isfinite(b[o][i])) {
        const double diff = std::fabs(a[o][i] - b[o][i]);
        const double unit = scale.empty() ? unit_roundoff(k.format) : scaled_unit(scale[i], k.format);
        e = unit > 0 ? diff / unit : (diff == 0 ? 0 : INFINITY);
      }
      if (!(e <= measured)) measured = e, at = i;
    }
    CaseResult r = judge(measured, allowed, unit_of(out),
                         std::string(out.name) + ": " + what + ", [" + std::to_string(at) + "] " + hex(a[o][at]) +
                             " vs " + hex(b[o][at]) + " (n = " + std::to_string(a_case.row.size()) + ")");
    result = result ? worst(std::move(*result), std::move(r)) : std::move(r);
  }
  return result;
}

}  // namespace

// ---- attention_key_permutation ----------------------------------------------------
// Permuting the keys (the bias, K and V rows together) leaves the exact O
// and lse unchanged: the two runs agree within the sum of their contracts
// (agree_within_contracts). The permutation comes from the case's hash.
// A window is about positions: it is folded into the bias first
// (window_as_bias; attention_window_as_bias checks that fold).
CaseResult check_attention_key_permutation(const Kernel& k, Op op, const Case& windowed) {
  if (auto na = attention_scope(k, op, windowed, AttentionDomain::visible)) return *na;
  const Case c = window_as_bias(windowed);
  std::optional<CaseResult> r = agree_within_contracts(k, op, c, permuted(c, key_permutation(c)), "keys permuted");
  if (!r) return not_applicable("no output with a contract");
  return *r;
}

// ---- attention_masked_padding -----------------------------------------------------
// r masked keys (bias -inf, K = V = 0) inserted before key p leave the exact
// O and lse unchanged, while every tile boundary after p moves by r keys and
// the split-KV segments (contiguous by count) take other keys: a tile or a
// whole split may become fully masked, the -inf - -inf case of FlashAttention
// tiling (REFERENCE.md). A tiled kernel's output must not depend on where
// its tiles and splits cut the row beyond its contract: the two runs agree
// within the sum of their contracts (agree_within_contracts), each contract
// evaluated on its own row (n grows by r). r is 1, 7, 16, 63, 64 or n
// (n masked keys at p = 0 mask the first half of the row: two of four
// splits), and p in [0, n], both from the case's hash.
CaseResult check_attention_masked_padding(const Kernel& k, Op op, const Case& windowed) {
  if (auto na = attention_scope(k, op, windowed, AttentionDomain::visible)) return *na;
  const Case c = window_as_bias(windowed);  // as attention_key_permutation
  const std::size_t n = c.row.size(), d = static_cast<std::size_t>(c.head_dim);
  std::uint64_t h = case_hash(c) | 1;
  const auto next = [&h] { return h ^= h << 13, h ^= h >> 7, h ^= h << 17; };
  const std::size_t counts[] = {1, 7, 16, 63, 64, n};
  const std::size_t r = counts[next() % std::size(counts)], p = next() % (n + 1);
  Case padded = c;
  padded.row.insert(padded.row.begin() + static_cast<std::ptrdiff_t>(p), r, -INFINITY);
  padded.keys.insert(padded.keys.begin() + static_cast<std::ptrdiff_t>(p * d), r * d, 0.0);
  padded.values.insert(padded.values.begin() + static_cast<std::ptrdiff_t>(p * d), r * d, 0.0);
  std::optional<CaseResult> result = agree_within_contracts(
      k, op, c, padded, std::to_string(r) + " masked keys inserted before key " + std::to_string(p));
  if (!result) return not_applicable("no output with a contract");
  return *result;
}

// ---- attention_softcap_before_mask ------------------------------------------------
// The softcap c tanh(y / c) acts on the scores before the bias and the mask
// (Gemma 2, Grok; docs/attention.md): a masked key's score stays -inf. Capped
// after the mask, c tanh(-inf / c) = -c brings every masked key back with
// weight e^(-c) relative to a score of 0, and its V into O (the leak users
// report). The masked keys' K is set to 0 and their V to +-big (alternating
// by component, big = max_finite / (4 n): no partial sum can overflow), so
// that even e^-30 of a leaked V outweighs any contract; the exact O and lse
// (which never read masked keys) are unchanged, and the run must stay
// within its contracts of them.
CaseResult check_attention_softcap_before_mask(const Kernel& k, Op op, const Case& c) {
  if (auto na = attention_scope(k, op, c, AttentionDomain::masked)) return *na;
  const auto d = static_cast<std::size_t>(c.head_dim);
  const double big = round_to_format(max_finite(k.format) / (4.0 * static_cast<double>(c.row.size())), k.format);
  Case leaky = c;
  const std::vector<double> bias = visible_bias(c);  // the keys outside the window are masked too
  for (std::size_t j = 0; j < c.row.size(); ++j) {
    if (bias[j] != -INFINITY) continue;
    for (std::size_t i = 0; i < d; ++i) {
      leaky.keys[j * d + i] = 0;
      leaky.values[j * d + i] = i % 2 == 0 ? big : -big;
    }
  }
  const std::vector<std::vector<double>> outs = run_case(k, op, leaky);
  oracle::RowJudge rj = attention_judge(k, leaky);
  return outputs_within_contracts(k, op, outs, rj);
}

// ---- attention_masked_values ------------------------------------------------------
// A masked key (x_j = -inf, or outside the query's window) has p_j = 0
// exactly and its K and V are never read (docs/attention.md; the oracle does not read them either), so setting
// them to anything, NaN and inf included, leaves O and lse identical bit for
// bit (NaN matches any NaN: payloads are not compared). A kernel that forms
// 0 * V_j, or a score from K_j, for a masked key turns NaN or inf there into
// NaN. The replacement values come from the case's hash.
CaseResult check_attention_masked_values(const Kernel& k, Op op, const Case& c) {
  if (auto na = attention_scope(k, op, c, AttentionDomain::masked)) return *na;
  const double big = max_finite(k.format);
  const double replacements[] = {NAN, INFINITY, -INFINITY, big, -big, 0.0, -1.0, round_to_format(1e4, k.format)};
  const auto d = static_cast<std::size_t>(c.head_dim);
  Case alt = c;
  std::uint64_t h = case_hash(c) | 1;
  std::size_t masked = 0;
  const std::vector<double> bias = visible_bias(c);
  for (std::size_t j = 0; j < c.row.size(); ++j) {
    if (bias[j] != -INFINITY) continue;
    ++masked;
    for (std::size_t i = 0; i < d; ++i) {
      h ^= h << 13, h ^= h >> 7, h ^= h << 17;
      alt.keys[j * d + i] = replacements[h % std::size(replacements)];
      alt.values[j * d + i] = replacements[(h >> 8) % std::size(replacements)];
    }
  }
  return identical_outputs(op, run_case(k, op, c), run_case(k, op, alt),
                           std::to_string(masked) + " masked keys' K and V set to NaN, inf, +-max, 0, -1, 1e4");
}

// ---- attention_fully_masked -------------------------------------------------------
// A query with every key masked has no softmax (0/0): O and lse follow the
// kernel's declared masked-row policy (op.hpp, is_masked_row_value): zeros
// O = 0 and lse = -inf (FlashAttention), nan every output NaN (lse -inf
// accepted too, its exact value). uniform has no constant O (the mean of V)
// and is never accepted for attention. With a sink logit s the row is the
// softmax of the sink alone: the exact O = 0 (scale 0: exactly 0) and lse =
// s, judged by the contracts like any row (the judge's exact row has
// status ok).
CaseResult check_attention_fully_masked(const Kernel& k, Op op, const Case& c) {
  if (auto na = attention_scope(k, op, c, AttentionDomain::fully_masked)) return *na;
  const std::vector<std::vector<double>> outs = run_case(k, op, c);
  oracle::RowJudge rj = attention_judge(k, c);
  const OpDecl& d = *k.find(op);
  for (std::size_t o = 0; o < outs.size(); ++o) {
    const oracle::RowVerdict v = rj.judge(d, k.masked_policy, outs[o], o);
    if (!v.holds() || v.broken)
      return fail(1, 0, "outputs",
                  std::string(spec(op).out[o].name) + ": " + oracle::explain(v, d, outs[o], rj, o) + " (policy " +
                      std::string(name(k.masked_policy)) + "; got " + first_values(outs[o]) + ")");
  }
  return pass(0, 0, "outputs", "follows the " + std::string(name(k.masked_policy)) + " policy");
}

// ---- attention_lse_is_softmax_lse -------------------------------------------------
// The attention lse is the softmax op's lse of the scores z. On cases whose
// scores are exactly doubles (integer q and K, sqrt(d) and T powers of two,
// integer biases: exact_scores), the exact lse is the softmax oracle's
// exact_row(z).lse, an evaluation independent of exact_attention, and the
// lse contract bounds the kernel against it: |lse - lse(z)| / u <= B_lse.
// A kernel with a softcap (c tanh(y / c): no exact double) does not claim it.
CaseResult check_attention_lse_is_softmax_lse(const Kernel& k, Op op, const Case& c) {
  if (auto na = attention_scope(k, op, c, AttentionDomain::exact_scores)) return *na;
  if (k.find(op)->params.softcap != 0) return not_applicable("softcapped scores c tanh(y / c) are not exact doubles");
  std::optional<std::vector<double>> z = exact_scores(c);
  // A sink logit is one more score of the softmax (no value): exact, a double.
  if (const double sink = k.find(op)->params.sink; sink != -INFINITY) z->push_back(sink);
  const std::size_t o = output_of(op, OutputKind::log_sum_exp);
  const std::vector<double> lse = run_case(k, op, c)[o];
  oracle::RowJudge rj = attention_judge(k, c);
  const double bound = rj.judge(*k.find(op), k.masked_policy, lse, o).bound;
  const oracle::ExactRow softmax = oracle::exact_row(*z, 1.0);
  if (softmax.status != oracle::RowStatus::ok) return not_applicable("the scores have no softmax");
  const std::string what = "lse " + hex(lse[0]) + " against the softmax lse " + oracle::to_string(softmax.lse, 17) +
                           " of the " + std::to_string(z->size()) + " exact scores";
  if (!std::isfinite(lse[0])) return fail(INFINITY, bound, "u", what);
  oracle::PrecisionScope scope(2 * oracle::default_bits);
  const double measured = (abs(Real(lse[0]) - softmax.lse) / Real(unit_roundoff(k.format))).convert_to<double>();
  return judge(measured, bound, "u", what);
}


// ---- attention_window_as_bias -----------------------------------------------------
// The kernel computes the window's mask from the query's position
// (KeyWindow: keys position - left .. position + right); the same keys
// masked by -inf biases instead, with no window, must give O and lse
// identical bit for bit: a masked key is masked whichever way (its K and V
// unread, its score -inf, a tile of them skipped or absorbed as nothing).
// An off-by-one at either edge of the window (a key too many or too few)
// shows as a difference wherever that key carries weight.
CaseResult check_attention_window_as_bias(const Kernel& k, Op op, const Case& c) {
  if (auto na = attention_scope(k, op, c, AttentionDomain::visible)) return *na;
  if (!c.window.bounded()) return not_applicable("needs a query window");
  return identical_outputs(op, run_case(k, op, c), run_case(k, op, window_as_bias(c)),
                           "window " + window_text(c.window) + " against the same keys masked by the bias");
}

// ---- attention_causal_full_window -------------------------------------------------
// Causal attention is the sliding window of the full length: for a query
// at position p, the window (L, 0) with L >= p (key 0 inside it) sees the
// keys a causal query (-1, 0) sees, so O and lse are identical bit for bit
// (FlashAttention: causal is window_size (-1, 0)). L is p (the window
// reaching key 0 exactly: where an off-by-one drops key 0), p + 1 or n,
// from the case's hash.
CaseResult check_attention_causal_full_window(const Kernel& k, Op op, const Case& c) {
  if (auto na = attention_scope(k, op, c, AttentionDomain::visible)) return *na;
  if (c.window.left != -1 || c.window.right != 0) return not_applicable("needs a causal window (-1, 0)");
  const std::int64_t p = c.window.position, n = static_cast<std::int64_t>(c.row.size());
  const std::int64_t lengths[] = {p, p + 1, n};
  Case full = c;
  full.window.left = std::min(n, lengths[(case_hash(c) >> 5) % std::size(lengths)]);
  return identical_outputs(op, run_case(k, op, c), run_case(k, op, full),
                           "causal at position " + std::to_string(p) + " against the window " +
                               window_text(full.window));
}

}  // namespace softcheck::props::detail
