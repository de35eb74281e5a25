#include "registry.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "attention_cases.hpp"
#include "checks.hpp"
#include "support.hpp"

namespace softcheck::props::detail {

namespace {

// ---- claim rules ------------------------------------------------------------------
// A kernel claims what its declarations imply: a declared accuracy contract
// implies every accuracy-derived property; every kernel declares a masked-row
// policy and the batched interface, so the structural properties (fully_masked,
// batch_independence) are claimed by all, including contract "none" baselines.

Claim provided(const Kernel& k, Op op) {
  if (k.find(op) == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  // The properties above sparse_* are stated for softmax / log_softmax.
  if (is_sparse(op)) return {false, "sparse op: checked by the sparse properties (docs/sparse.md)"};
  // The properties below are stated for a row of outputs per row of inputs.
  if (spec(op).scalar_output()) return {false, "one output per row: checked by the run suite against the oracle"};
  return {true, ""};
}

// ---- sparse ops (docs/sparse.md) ---------------------------------------------------
Claim sparse(const Kernel& k, Op op) {
  if (k.find(op) == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  if (!is_sparse(op)) return {false, "sparse-op property"};
  return {true, "sparse op with the absolute bound of docs/sparse.md"};
}

// tau consistency: the entmax family with 1 < alpha <= 2 (the derivation's range).
Claim entmax_form(const Kernel& k, Op op) {
  if (Claim c = sparse(k, op); !c.claimed) return c;
  const double alpha = entmax_alpha(op, k.find(op)->params);
  if (alpha > 1 && alpha <= 2)
    return {true, spec(op).param == OpParam::alpha ? "entmax form, alpha <= 2" : "entmax form"};
  return {false, "tau consistency is stated for sparsemax / entmax with alpha <= 2"};
}

// alpha = 2 <-> sparsemax, alpha = 1.5 <-> entmax15.
Claim entmax_identity(const Kernel& k, Op op) {
  if (Claim c = sparse(k, op); !c.claimed) return c;
  const double alpha = spec(op).param == OpParam::alpha ? k.find(op)->params.alpha : 0;
  if (alpha == 2 || alpha == 1.5) return {true, "entmax with alpha = " + std::to_string(alpha)};
  return {false, "identity stated for entmax with alpha 2 or 1.5"};
}

Claim contract(const Kernel& k, Op op) {
  if (Claim p = provided(k, op); !p.claimed) return p;
  const Contract& c = k.find(op)->contract;
  if (!c.declared) return {false, "contract none: only the floor and the structural properties are claimed"};
  return {true, "declared contract " + c.formula()};
}

Claim softmax_contract(const Kernel& k, Op op) {
  if (op != Op::softmax) return {false, "softmax-only property"};
  return contract(k, op);
}

Claim log_contract(const Kernel& k, Op op) {
  if (op != Op::log_softmax) return {false, "log_softmax-only property"};
  return contract(k, op);
}

// accuracy against the oracle: every dense op with a declared contract, row
// or scalar output (the row judge compares either in the op's metric); an op
// with several outputs when one of them has one.
Claim dense_contract(const Kernel& k, Op op) {
  const OpDecl* d = k.find(op);
  if (d == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  if (is_sparse(op)) return {false, "sparse op: checked by the sparse properties (docs/sparse.md)"};
  if (!spec(op).several_outputs()) {
    if (!d->contract.declared) return {false, "contract none: only the floor and the structural properties are claimed"};
    return {true, "declared contract " + d->contract.formula()};
  }
  std::string contracts;
  bool any = false;
  for (std::size_t o = 0; o < spec(op).out.size(); ++o) {
    const Contract& c = d->contract_of(o);
    any = any || c.declared;
    contracts += (o ? ", " : "") + std::string(spec(op).out[o].name) + ": " + (c.declared ? c.formula() : "none");
  }
  if (!any) return {false, "contracts none (" + contracts + "): only the floor and the structural properties are claimed"};
  return {true, "declared contracts " + contracts};
}

// ---- ops with one output per row (lse, entropy; docs/ops.md) ------------------------
Claim scalar(const Kernel& k, Op op) {
  if (k.find(op) == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  if (!spec(op).scalar_output()) return {false, "property of the ops with one output per row"};
  return {true, "declared masked-row policy " + std::string(name(k.masked_policy))};
}

Claim scalar_contract(const Kernel& k, Op op) {
  if (Claim c = scalar(k, op); !c.claimed) return c;
  return dense_contract(k, op);
}

Claim scalar_contract_of(const Kernel& k, Op op, OutputKind kind, const char* what) {
  if (spec(op).out[0].kind != kind) return {false, what};
  return scalar_contract(k, op);
}

Claim lse_contract(const Kernel& k, Op op) {
  return scalar_contract_of(k, op, OutputKind::log_sum_exp, "lse-only property");
}

Claim entropy_contract(const Kernel& k, Op op) {
  return scalar_contract_of(k, op, OutputKind::entropy, "entropy-only property");
}

// The floor (kernel.hpp; docs/gating-your-kernel.md): exact properties every
// kernel claims for its row ops whatever it declares, unless it opted out of
// the check (with a reason). A kernel with a contract gives its contract as
// the reason, as the contract-derived properties do.
Claim floor_check(const Kernel& k, Op op, std::string_view check) {
  if (Claim p = provided(k, op); !p.claimed) return p;
  const OpDecl& d = *k.find(op);
  if (const OptOut* o = d.opted_out(check)) return {false, "opted out: " + o->reason};
  if (d.contract.declared) return contract(k, op);
  return {true, std::string(floor_claim_prefix) + "claimed without a contract"};
}
Claim floor_no_nonfinite_claim(const Kernel& k, Op op) { return floor_check(k, op, floor_no_nonfinite); }
Claim floor_range_claim(const Kernel& k, Op op) { return floor_check(k, op, floor_range); }
Claim floor_ordering_claim(const Kernel& k, Op op) { return floor_check(k, op, floor_ordering); }

// The floor's properties with a tolerance: a kernel with a contract claims
// them by its contract, as before; one without claims them with the floor's
// generic tolerance (support.hpp, floor_tolerance) unless it opted out of the
// check.
Claim floor_tolerance_check(const Kernel& k, Op op, std::string_view check) {
  if (Claim p = provided(k, op); !p.claimed) return p;
  const OpDecl& d = *k.find(op);
  if (d.contract.declared) return contract(k, op);
  if (const OptOut* o = d.opted_out(check)) return {false, "opted out: " + o->reason};
  return {true, std::string(floor_claim_prefix) + floor_tolerance_text(op) + ", no contract"};
}
Claim floor_sum_to_one_claim(const Kernel& k, Op op) {
  if (op != Op::softmax) return {false, "softmax-only property"};
  return floor_tolerance_check(k, op, floor_sum_to_one);
}
Claim floor_shift_claim(const Kernel& k, Op op) { return floor_tolerance_check(k, op, floor_shift_invariance); }
Claim floor_permutation_claim(const Kernel& k, Op op) { return floor_tolerance_check(k, op, floor_permutation); }

Claim policy(const Kernel& k, Op op) {
  if (Claim p = provided(k, op); !p.claimed) return p;
  return {true, "declared masked-row policy " + std::string(name(k.masked_policy))};
}

Claim structural(const Kernel& k, Op op) {
  if (Claim p = provided(k, op); !p.claimed) return p;
  return {true, "batched interface: rows are independent"};
}

// ---- gradient ops (docs/gradients.md) -------------------------------------------------
Claim gradient_op(const Kernel& k, Op op) {
  if (k.find(op) == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  return {true, "every kernel's " + std::string(name(op)) + " (exact)"};
}

Claim gradient_policy(const Kernel& k, Op op) {
  if (k.find(op) == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  return {true, "declared masked-row policy " + std::string(name(k.masked_policy))};
}

// The dx output's declared contract (the scaled metric's B).
Claim dx_contract(const Kernel& k, Op op) {
  const OpDecl* d = k.find(op);
  if (d == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  for (std::size_t o = 0; o < spec(op).out.size(); ++o)
    if (is_gradient(spec(op).out[o].kind)) {
      const Contract& c = d->contract_of(o);
      if (!c.declared) return {false, "dx has no contract: checked by the reference rule of `softcheck run`"};
      return {true, "declared dx contract " + c.formula() + " (u s)"};
    }
  return {false, "op without a gradient output"};
}

Claim softmax_backward_contract(const Kernel& k, Op op) {
  if (op != Op::softmax_backward) return {false, "softmax_backward-only property"};
  return dx_contract(k, op);
}

Claim cross_entropy_op(const Kernel& k, Op op) {
  if (op != Op::cross_entropy) return {false, "cross_entropy-only property"};
  return gradient_op(k, op);
}

Claim loss_contract(const Kernel& k, Op op) {
  if (op != Op::cross_entropy) return {false, "cross_entropy-only property"};
  const OpDecl* d = k.find(op);
  if (d == nullptr) return {false, "kernel does not provide cross_entropy"};
  if (!d->contract_of(0).declared) return {false, "loss has no contract"};
  return {true, "declared loss contract " + d->contract_of(0).formula()};
}

// ce_confident's limit (loss -> 0) is that of the one-hot target: with label
// smoothing the loss of a confident prediction grows with the logits' spread.
Claim unsmoothed_loss_contract(const Kernel& k, Op op) {
  if (Claim c = loss_contract(k, op); !c.claimed) return c;
  if (k.find(op)->params.label_smoothing > 0)
    return {false, "label smoothing: a confident prediction's loss does not go to 0"};
  return loss_contract(k, op);
}

// ---- attention (docs/attention.md) ----------------------------------------------------
// Claimed by the ops with a head dimension (cannot_claim keeps them
// off the others). The masked keys' values and the masked-row policy are
// exact and claimed by every kernel with the op; the rest by its contracts.
Claim attention_op(const Kernel& k, Op op) {
  if (k.find(op) == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  return {true, "every attention kernel: the K and V of a masked key are never read (exact)"};
}

Claim attention_window(const Kernel& k, Op op) {
  if (k.find(op) == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  return {true, "every attention kernel: the window masks the keys outside it as -inf biases would (exact)"};
}

Claim attention_policy(const Kernel& k, Op op) {
  if (k.find(op) == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  return {true, "declared masked-row policy " + std::string(name(k.masked_policy))};
}

// The contract of op's output of kind `kind` (O or lse).
Claim attention_output_contract(const Kernel& k, Op op, OutputKind kind) {
  const OpDecl* d = k.find(op);
  if (d == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  for (std::size_t o = 0; o < spec(op).out.size(); ++o) {
    if (spec(op).out[o].kind != kind) continue;
    const std::string out(spec(op).out[o].name);
    const Contract& c = d->contract_of(o);
    if (!c.declared) return {false, out + " has no contract: checked by the reference rule of `softcheck run`"};
    return {true, "declared " + out + " contract " + c.formula()};
  }
  return {false, std::string(name(op)) + " has no such output"};
}
// attention_mass: the ops whose O is a weighted mean of V (softmax and
// linear attention: V = 1 gives O = 1); relu attention's weights relu(z_j) /
// n do not sum to 1.
Claim attention_o_contract(const Kernel& k, Op op) {
  if (spec(op).out[0].kind == OutputKind::linear_attention_output)
    return attention_output_contract(k, op, OutputKind::linear_attention_output);
  if (spec(op).out[0].kind == OutputKind::relu_attention_output)
    return {false, "relu attention's weights relu(z_j) / n do not sum to 1: V = 1 gives no fixed O"};
  return attention_output_contract(k, op, OutputKind::attention_output);
}
// Mass conservation (V = 1 gives O = 1) without a sink: a sink logit takes
// its share p_s of the mass, O = 1 - p_s (attention_accuracy checks that).
// A kernel without an O contract claims it as the floor's sum_to_one, with
// the generic tolerance: whatever P it computes, a kernel that divides by the
// sum of the P it used has O = 1 to within its summation's rounding (the
// renormalised FP8 P kernels); one that loses mass opts out with the reason.
Claim attention_mass_contract(const Kernel& k, Op op) {
  const OpDecl* d = k.find(op);
  if (d != nullptr && d->params.sink != -INFINITY)
    return {false, "sink logit " + num(d->params.sink) + ": V = 1 gives O = 1 - p_sink, not 1"};
  Claim by_contract = attention_o_contract(k, op);
  if (by_contract.claimed || d == nullptr || spec(op).out[0].kind == OutputKind::relu_attention_output)
    return by_contract;
  if (const OptOut* o = d->opted_out(floor_sum_to_one)) return {false, "opted out: " + o->reason};
  return {true, std::string(floor_claim_prefix) + "no O contract: O = 1 within the " + floor_tolerance_text(op)};
}
// attention_masked_padding: the ops whose exact output masked keys leave
// alone; relu attention divides by the row length n, masked keys included,
// so inserting keys changes its exact O.
Claim attention_padding_contract(const Kernel& k, Op op) {
  if (spec(op).out[0].kind == OutputKind::relu_attention_output)
    return {false, "relu attention divides by n, masked keys included: inserted keys change the exact O"};
  return dense_contract(k, op);
}
Claim attention_lse_contract(const Kernel& k, Op op) {
  return attention_output_contract(k, op, OutputKind::log_sum_exp);
}

// The softmax lse of exactly representable scores: none are exact under a
// softcap (c tanh(y / c) of a nonzero y is irrational).
Claim attention_uncapped_lse_contract(const Kernel& k, Op op) {
  if (const OpDecl* d = k.find(op); d != nullptr && d->params.softcap != 0)
    return {false, "softcap " + num(d->params.softcap) + ": the capped scores are never exact doubles"};
  return attention_lse_contract(k, op);
}

// The softcap's place before the mask: claimed by the kernels that cap
// their scores and declare an O contract (the check judges O and lse).
Claim attention_softcap_contract(const Kernel& k, Op op) {
  const OpDecl* d = k.find(op);
  if (d == nullptr) return {false, "kernel does not provide " + std::string(name(op))};
  if (d->params.softcap == 0) return {false, "no softcap"};
  return attention_o_contract(k, op);
}

// ---- case generators ----------------------------------------------------------------

rc::Gen<Case> with_temperature(rc::Gen<std::vector<double>> rows) {
  return rc::gen::map(rc::gen::pair(std::move(rows), gen::temperature()),
                      [](std::pair<std::vector<double>, double> p) { return Case{std::move(p.first), p.second}; });
}

rc::Gen<Case> contract_cases(Format f, const gen::RowOptions& o) { return with_temperature(gen::contract_row(f, o)); }

rc::Gen<Case> accuracy_cases(Format f, const gen::RowOptions& o) {
  return with_temperature(rc::gen::weightedOneOf<std::vector<double>>({{6, gen::contract_row(f, o)},
                                                                      {2, gen::underflow_row(f, o)},
                                                                      {1, gen::mask_1e9_row(f, o)},
                                                                      {1, gen::lattice_row(f, o)}}));
}

rc::Gen<Case> lattice_cases(Format f, const gen::RowOptions& o) { return with_temperature(gen::lattice_row(f, o)); }
rc::Gen<Case> finite_cases(Format f, const gen::RowOptions& o) { return with_temperature(gen::finite_row(f, o)); }

rc::Gen<Case> underflow_cases(Format f, const gen::RowOptions& o) {
  return with_temperature(rc::gen::weightedOneOf<std::vector<double>>(
      {{3, gen::underflow_row(f, o)}, {1, gen::contract_row(f, o)}}));
}

rc::Gen<Case> masked_cases(Format f, const gen::RowOptions& o) { return with_temperature(gen::masked_row(f, o)); }
rc::Gen<Case> fully_masked_cases(Format f, const gen::RowOptions& o) {
  return with_temperature(gen::fully_masked_row(f, o));
}
rc::Gen<Case> mask_1e9_cases(Format f, const gen::RowOptions& o) { return with_temperature(gen::mask_1e9_row(f, o)); }

rc::Gen<Case> log_cases(Format f, const gen::RowOptions& o) {
  return with_temperature(rc::gen::weightedOneOf<std::vector<double>>(
      {{2, gen::contract_row(f, o)}, {1, gen::underflow_row(f, o)}}));
}

rc::Gen<Case> any_cases(Format f, const gen::RowOptions& o) { return with_temperature(gen::any_row(f, o)); }

// The gradient ops' cases: a row and temperature, with a class target and an
// upstream gradient of the row's length (the driver keeps what the op takes:
// inputs_for). Targets: an unmasked entry (6/8), any entry (1/8; masked ones
// included), ignore_index (1/8). Upstream g: independent entries (3/5; steps
// of 1/16 in [-4, 4], or k 2^e / 1024 with |k| <= 1024, |e| <= 12, or 0,
// +-1), one constant (1/5: the softmax gradient is 0 and g - <y, g> cancels
// completely) or one-hot (1/5). Shrinking keeps g's length.
rc::Gen<double> upstream_value(Format f) {
  return rc::gen::map(
      rc::gen::weightedOneOf<double>(
          {{4, rc::gen::map(rc::gen::inRange(-64, 65), [](int k) { return k / 16.0; })},
           {2, rc::gen::map(rc::gen::pair(rc::gen::inRange(-1024, 1025), rc::gen::inRange(-12, 13)),
                            [](std::pair<int, int> p) { return std::ldexp(p.first / 1024.0, p.second); })},
           {1, rc::gen::element(0.0, 1.0, -1.0)}}),
      [f](double v) { return round_to_format(v, f); });
}

rc::Gen<std::vector<double>> upstream_row(Format f, std::size_t n) {
  return rc::gen::weightedOneOf<std::vector<double>>(
      {{3, rc::gen::container<std::vector<double>>(n, upstream_value(f))},
       {1, rc::gen::map(upstream_value(f), [n](double v) { return std::vector<double>(n, v); })},
       {1, rc::gen::map(rc::gen::pair(rc::gen::inRange<std::size_t>(0, n), upstream_value(f)),
                        [n](std::pair<std::size_t, double> p) {
                          std::vector<double> g(n, 0.0);
                          g[p.first] = p.second;
                          return g;
                        })}});
}

rc::Gen<std::int64_t> class_target(const std::vector<double>& row) {
  std::vector<std::int64_t> unmasked;
  for (std::size_t i = 0; i < row.size(); ++i)
    if (row[i] != -INFINITY) unmasked.push_back(static_cast<std::int64_t>(i));
  const auto n = static_cast<std::int64_t>(row.size());
  if (unmasked.empty()) unmasked.push_back(0);
  return rc::gen::weightedOneOf<std::int64_t>({{6, rc::gen::elementOf(unmasked)},
                                               {1, rc::gen::inRange<std::int64_t>(0, n)},
                                               {1, rc::gen::just(ignore_index)}});
}

rc::Gen<Case> with_gradient_inputs(rc::Gen<std::vector<double>> rows, Format f) {
  return rc::gen::mapcat(rc::gen::pair(std::move(rows), gen::temperature()),
                         [f](std::pair<std::vector<double>, double> p) {
                           const std::size_t n = p.first.size();
                           return rc::gen::map(rc::gen::pair(class_target(p.first), upstream_row(f, n)),
                                               [p](std::pair<std::int64_t, std::vector<double>> in) {
                                                 return Case{p.first, p.second, in.first, std::move(in.second)};
                                               });
                         });
}

rc::Gen<Case> gradient_cases(Format f, const gen::RowOptions& o) {
  return with_gradient_inputs(rc::gen::weightedOneOf<std::vector<double>>({{6, gen::contract_row(f, o)},
                                                                          {2, gen::underflow_row(f, o)},
                                                                          {1, gen::lattice_row(f, o)}}),
                              f);
}
rc::Gen<Case> gradient_masked_cases(Format f, const gen::RowOptions& o) {
  return with_gradient_inputs(gen::masked_row(f, o), f);
}
rc::Gen<Case> gradient_fully_masked_cases(Format f, const gen::RowOptions& o) {
  return with_gradient_inputs(gen::fully_masked_row(f, o), f);
}

// Correct confident predictions: a finite or masked row whose entry t is
// raised to the maximum plus a gap (0.25 .. 800, so that S = sum_{j != t}
// e^(z_j - z_t) spans from about 1 down past the format's underflow), t the target.
rc::Gen<Case> confident_cases(Format f, const gen::RowOptions& o) {
  return rc::gen::mapcat(rc::gen::pair(gen::contract_row(f, o), gen::temperature()),
                         [f](std::pair<std::vector<double>, double> p) {
                           const std::size_t n = p.first.size();
                           return rc::gen::map(
                               rc::gen::pair(rc::gen::inRange<std::size_t>(0, n),
                                             rc::gen::element(0.25, 1.0, 4.0, 12.0, 20.0, 30.0, 40.0, 60.0, 90.0,
                                                              120.0, 200.0, 400.0, 800.0)),
                               [p, f](std::pair<std::size_t, double> tg) {
                                 Case c{p.first, p.second, static_cast<std::int64_t>(tg.first), {}};
                                 double top = -INFINITY;
                                 for (std::size_t j = 0; j < c.row.size(); ++j)
                                   if (j != tg.first) top = std::max(top, c.row[j]);
                                 const double base = std::isfinite(top) ? top : 0.0;
                                 c.row[tg.first] = round_to_format(base + tg.second * p.second, f);
                                 return c;
                               });
                         });
}

// Coverage a property should meet (PropertyDef::expected) when its rows are
// finite (no masks to meet; mask_1e9's masks are finite too) or all -inf (no ties).
constexpr unsigned finite_rows = class_bit(CaseClass::ties) | class_bit(CaseClass::t_not_1);
constexpr unsigned masked_rows = class_bit(CaseClass::masks) | class_bit(CaseClass::t_not_1);
// Attention cases are classified by their scores (coverage.cpp); ties among
// Gaussian scores are rare, so masks and T != 1 are what they should meet.
constexpr unsigned attention_classes = masked_rows;

}  // namespace

const std::vector<PropertyDef>& registry() {
  static const std::vector<PropertyDef> all = {
      {{"sum_to_one", "the softmax outputs sum to 1", "|sum y - 1| <= B (2u + n eta)",
        "softmax: B the contract's bound, without one the floor's generic tolerance, unless opted out"},
       floor_sum_to_one_claim, contract_cases, check_sum_to_one},
      {{"accuracy", "every output within the contract's componentwise bound of the exact value",
        "max_j |y_j - g_j| / ulp(g_j) <= B; NaN/inf where exact is finite fails", "ops with a declared contract"},
       dense_contract, accuracy_cases, check_accuracy},
      {{"shift_invariance", "softmax(x + c) = softmax(x) for shifts c exact in the format",
        "|y(x)_j - y(x+c)_j| <= (B(x) + B(x+c)) ulp(g_j)",
        "row ops: B the contract's bound, without one the floor's generic tolerance, unless opted out"},
       floor_shift_claim, lattice_cases, check_shift_invariance},
      {{"ordering", "x_i <= x_j implies y_i <= y_j; ties give equal outputs", "exact",
        "every kernel's row ops (the floor), unless opted out"},
       floor_ordering_claim, contract_cases, check_ordering},
      {{"permutation", "permuting the row permutes the outputs",
        "|y(Px)_i - y(x)_pi(i)| <= (B(x) + B(Px)) ulp(g_pi(i))",
        "row ops: B the contract's bound, without one the floor's generic tolerance, unless opted out"},
       floor_permutation_claim, contract_cases, check_permutation},
      {{"no_nonfinite", "finite input (incl. the exp overflow edge and far beyond) gives finite output",
        "exact (log-softmax may be -inf where the exact value is below the lowest value)",
        "every kernel's row ops (the floor), unless opted out"},
       floor_no_nonfinite_claim, finite_cases, check_no_nonfinite, finite_rows | class_bit(CaseClass::overflow_edge)},
      {{"range", "softmax outputs in [0, 1]; log-softmax outputs <= 0", "exact",
        "every kernel's row ops (the floor), unless opted out"},
       floor_range_claim, contract_cases, check_range},
      {{"underflow", "an output is 0 (or log-softmax -inf) only where the exact value rounds to it",
        "g_j / ulp(g_j) <= max(1/2, B) for every zero output", "ops with a declared contract"},
       contract, underflow_cases, check_underflow, masks_ties_t | class_bit(CaseClass::subnormal_outputs)},
      {{"masked_entries", "-inf entries give exactly 0 / -inf; the rest is the softmax of the unmasked entries",
        "exact for masked entries; B vs oracle; B(x) + B(x_unmasked) vs the compacted row",
        "ops with a declared contract"},
       contract, masked_cases, check_masked_entries},
      {{"fully_masked", "an all -inf row follows the declared masked-row policy",
        "exact for nan/zeros; uniform within B of an all-equal row (1 ulp without contract)", "every kernel"},
       policy, fully_masked_cases, check_fully_masked, masked_rows},
      {{"mask_1e9", "finite masks (-1e9, lowest) behave as the format makes them: like the oracle, or like -inf",
        "as accuracy (B), or the -inf rules where the mask rounds to -inf", "ops with a declared contract"},
       contract, mask_1e9_cases, check_mask_1e9, finite_rows},
      {{"temperature", "T -> 0 gives one-hot (ties split), T -> inf uniform, max weight non-increasing in T",
        "monotone: 2u (B(T) + B(2T)); limits: B + exact deviation", "softmax with a declared contract"},
       softmax_contract, finite_cases, check_temperature, finite_rows},
      {{"log_softmax", "log-softmax <= 0, finite where the exact value is finite, consistent with softmax",
        "|e^l_hat - s_hat| <= g expm1(B_l ulp(l)) + B_s ulp(g)", "log_softmax with a declared contract"},
       log_contract, log_cases, check_log_softmax},
      {{"batch_independence", "a row's result is bitwise the same alone or among other rows", "exact",
        "every kernel"},
       structural, any_cases, check_batch_independence},
      // lse and entropy (docs/ops.md): one output per row, B in units of u (absolute).
      {{"scalar_shift", "lse(x + c) = lse(x) + c/T, entropy(x + c) = entropy(x), c exact in the format",
        "|v(x + c) - v(x) - d| / u <= B(x) + B(x + c) + 1", "lse and entropy with a declared contract"},
       scalar_contract, lattice_cases, check_scalar_shift},
      {{"scalar_permutation", "permuting the row leaves lse and entropy unchanged",
        "|v(Px) - v(x)| / u <= B(x) + B(Px)", "lse and entropy with a declared contract"},
       scalar_contract, contract_cases, check_scalar_permutation},
      {{"scalar_masked_entries", "-inf entries change neither lse nor entropy",
        "|v(x) - v(x without masks)| / u <= B(x) + B(x without masks)", "lse and entropy with a declared contract"},
       scalar_contract, masked_cases, check_scalar_masked_entries},
      {{"scalar_fully_masked", "an all -inf row follows the declared masked-row policy",
        "exact (lse -inf; entropy NaN / 0 / log n within 4u)", "every kernel with lse or entropy"},
       scalar, fully_masked_cases, check_scalar_fully_masked, masked_rows},
      {{"lse_bounds", "max z <= lse <= max z + log n", "excess / u <= B + 1", "lse with a declared contract"},
       lse_contract, contract_cases, check_lse_bounds},
      {{"entropy_range", "0 <= H <= log n", "excess / u <= B + 1", "entropy with a declared contract"},
       entropy_contract, contract_cases, check_entropy_range},
      {{"entropy_uniform", "n equal entries give H = log n", "|H - log n| / u <= B + 1",
        "entropy with a declared contract"},
       entropy_contract, contract_cases, check_entropy_uniform},
      {{"entropy_cold", "H -> 0 as T -> 0 on a unique maximum (T0 = gap / (log n + 60))", "H(T0) / u <= B(T0) + 1",
        "entropy with a declared contract"},
       entropy_contract, contract_cases, check_entropy_cold},
      // Gradient ops (docs/gradients.md): cases with a class target or an upstream
      // gradient g; dx in the scaled metric (units of u s_i, s_i the exact scale).
      {{"gradient_accuracy", "every output of a gradient op within its contract of the exact value",
        "loss, y: ULP <= B; dx: |dx_i - exact_i| <= B u s_i; NaN/inf where exact is finite fails",
        "gradient ops with a declared contract"},
       dense_contract, gradient_cases, check_gradient_accuracy, masks_ties_t, CaseInputs::gradient},
      {{"gradient_sum_zero", "the gradient sums to 0 (softmax / log-softmax backward, cross-entropy)",
        "|sum dx_i| <= B sum w_i, w_i = max(u s_i, denorm_min)", "gradient ops with a declared dx contract"},
       dx_contract, gradient_cases, check_gradient_sum_zero, masks_ties_t, CaseInputs::gradient},
      {{"upstream_shift", "softmax backward: dx(g + c 1) = dx(g) for shifts c exact in the format",
        "|dx(g)_i - dx(g + c)_i| <= B (w_i(g) + w_i(g + c))", "softmax_backward with a declared dx contract"},
       softmax_backward_contract, gradient_cases, check_upstream_shift, masks_ties_t, CaseInputs::gradient},
      {{"gradient_masked_entries",
        "-inf entries give exactly 0 gradient (log-softmax: dx_i = g_i; smoothed cross-entropy: -eps/n), never NaN",
        "exact (-eps/n within 4u)", "every kernel's gradient ops"},
       gradient_op, gradient_masked_cases, check_gradient_masked_entries, masked_rows, CaseInputs::gradient},
      {{"gradient_fully_masked", "an all -inf row follows the declared masked-row policy (ignored rows: zeros)",
        "exact for nan/zeros; uniform within the contract", "every kernel's gradient ops"},
       gradient_policy, gradient_fully_masked_cases, check_gradient_fully_masked, masked_rows, CaseInputs::gradient},
      {{"ce_signs",
        "cross-entropy loss >= 0, dx_t <= 0, dx_j >= 0 off the target (label smoothing: dx_j >= -q_j); ignored rows "
        "exactly 0",
        "exact (-q_j within 4u)", "every kernel's cross_entropy"},
       cross_entropy_op, gradient_cases, check_ce_signs, masks_ties_t, CaseInputs::gradient},
      {{"ce_confident", "the loss of a correct confident prediction goes to 0 with S = sum_{j!=t} e^(z_j - z_t)",
        "loss <= S + B ulp(S) (loss = log1p(S) <= S)",
        "cross_entropy with a declared loss contract and no label smoothing"},
       unsmoothed_loss_contract, confident_cases, check_ce_confident, class_bit(CaseClass::t_not_1), CaseInputs::gradient},
      {{"gradient_check", "dx agrees with the directional derivative of the exact forward (MPFR, 1200 bits)",
        "|<dx, v> - dL(z + h v)/dh| <= B sum_{v_i != 0} w_i + finite-difference error",
        "gradient ops with a declared dx contract"},
       dx_contract, gradient_cases, check_gradient_check, masks_ties_t, CaseInputs::gradient},
      // Attention (docs/attention.md): cases with q, K, V of head dimension d and the
      // bias row; O in units of u s_i (s_i = sum_j p_j |V_ji|), lse in units of u.
      {{"attention_accuracy", "O and lse within their declared contracts of the exact attention",
        "O: max_i |O_i - exact_i| / (u s_i) <= B_O; lse: |lse - exact| / u <= B_lse; NaN/inf where exact is finite "
        "fails",
        "attention ops with a declared contract"},
       dense_contract, attention_cases, check_attention_accuracy, attention_classes, CaseInputs::attention},
      {{"attention_mass", "V all ones gives O = 1 (mass conservation)", "max_i |O_i - 1| / u <= B_O (s_i = 1)",
        "attention ops with no sink logit: by their O contract, else by the floor's generic tolerance"},
       attention_mass_contract, attention_mass_cases, check_attention_mass, attention_classes, CaseInputs::attention},
      {{"attention_key_permutation", "permuting the keys (K, V and the bias together) leaves O and lse unchanged",
        "O: |O_i - O'_i| / (u s_i) <= B_O(x) + B_O(Px); lse: |lse - lse'| / u <= B_lse(x) + B_lse(Px)",
        "attention ops with a declared contract"},
       dense_contract, attention_cases, check_attention_key_permutation, attention_classes, CaseInputs::attention},
      {{"attention_masked_padding",
        "masked keys inserted anywhere (moving every later tile and split boundary) leave O and lse unchanged",
        "O: |O_i - O'_i| / (u s_i) <= B_O(x) + B_O(x'); lse: |lse - lse'| / u <= B_lse(x) + B_lse(x')",
        "attention ops with a declared contract whose exact output masked keys leave alone (not relu attention)"},
       attention_padding_contract, attention_cases, check_attention_masked_padding, attention_classes, CaseInputs::attention},
      {{"attention_softcap_before_mask",
        "the softcap acts before the mask: masked keys with K = 0 and V = +-max/(4n) leave O and lse within "
        "their contracts",
        "O: max_i |O_i - exact_i| / (u s_i) <= B_O; lse: |lse - exact| / u <= B_lse",
        "attention ops with a softcap and a declared O contract"},
       attention_softcap_contract, attention_masked_cases, check_attention_softcap_before_mask, attention_classes,
       CaseInputs::attention},
      {{"attention_masked_values", "the K and V of masked keys (NaN, inf, anything) change neither O nor lse",
        "exact (bitwise)", "every attention kernel"},
       attention_op, attention_masked_cases, check_attention_masked_values, attention_classes, CaseInputs::attention},
      {{"attention_fully_masked", "a query with every key masked follows the declared masked-row policy",
        "exact (zeros: O = 0, lse = -inf; nan: NaN)", "every attention kernel"},
       attention_policy, attention_fully_masked_cases, check_attention_fully_masked, attention_classes,
       CaseInputs::attention},
      {{"attention_lse_is_softmax_lse",
        "lse is the softmax lse of the scores: on exactly representable scores, exact_row(z).lse",
        "|lse - lse(z)| / u <= B_lse", "attention ops with a declared lse contract and no softcap"},
       attention_uncapped_lse_contract, attention_exact_score_cases, check_attention_lse_is_softmax_lse,
       attention_classes,
       CaseInputs::attention},
      {{"attention_window_as_bias",
        "the kernel's mask from the query's position and window equals the same keys masked by -inf biases",
        "exact (bitwise)", "every attention kernel"},
       attention_window, attention_cases, check_attention_window_as_bias, attention_classes, CaseInputs::attention},
      {{"attention_causal_full_window",
        "causal (window (-1, 0)) equals the sliding window (L, 0) of the full length, L >= the query's position",
        "exact (bitwise)", "every attention kernel"},
       attention_window, attention_causal_cases, check_attention_causal_full_window, attention_classes,
       CaseInputs::attention},
      // Sparse ops (docs/sparse.md). B: the kernel's absolute bound (sparse_bounds.hpp).
      {{"sparse_accuracy", "every output within B of the oracle's; support mismatches only within B of the threshold",
        "max_i |y_i - p_i| <= B (false zeros / non-zeros counted)", "sparse ops"},
       sparse, contract_cases, check_sparse_accuracy},
      {{"sparse_sum_to_one", "the outputs sum to 1", "|sum y - 1| <= n B", "sparse ops"},
       sparse, contract_cases, check_sparse_sum_to_one},
      {{"sparse_range", "every output finite and in [0, 1]", "exact", "sparse ops"},
       sparse, finite_cases, check_sparse_range, finite_rows},
      {{"tau_consistency", "one tau explains every output: sum [(alpha-1) z - tau]_+^(1/(alpha-1)) = 1",
        "(n / (alpha-1)) |d tau|, |d tau| <= (alpha-1) n^(1-alpha') B + 2(alpha-1) u M",
        "sparsemax, entmax15, entmax with alpha <= 2"},
       entmax_form, contract_cases, check_tau_consistency},
      {{"entmax_identities", "entmax at alpha = 2 equals sparsemax, at 1.5 the exact entmax15",
        "B(kernel) + B(sort-based kernel)", "entmax with alpha 2 or 1.5"},
       entmax_identity, contract_cases, check_entmax_identities},
      {{"sparse_shift_invariance", "y(x + c) = y(x) for shifts c exact in the format", "B(x) + B(x + c)",
        "sparse ops"},
       sparse, lattice_cases, check_sparse_shift_invariance},
      {{"sparse_permutation", "permuting the row permutes the outputs", "2 B", "sparse ops"},
       sparse, contract_cases, check_sparse_permutation},
      {{"sparse_ordering", "x_i < x_j implies y_i <= y_j; ties give equal outputs", "exact", "sparse ops"},
       sparse, contract_cases, check_sparse_ordering},
      {{"sparse_masked_entries", "-inf entries give 0 and the same result as dropping them", "exact (bitwise)",
        "sparse ops"},
       sparse, masked_cases, check_sparse_masked_entries},
      {{"sparse_fully_masked", "an all -inf row follows the declared masked-row policy", "exact", "sparse ops"},
       sparse, fully_masked_cases, check_sparse_fully_masked, masked_rows},
  };
  return all;
}

CaseInputs case_inputs(Op op) {
  if (has_head_dim(op)) return CaseInputs::attention;
  return spec(op).several_inputs() ? CaseInputs::gradient : CaseInputs::logits;
}

namespace {

// Why `def` cannot be claimed for `op` when the two take different inputs.
std::optional<Claim> other_inputs(const PropertyDef& def, Op op) {
  const CaseInputs takes = case_inputs(op);
  if (takes == def.inputs) return std::nullopt;
  const std::string op_name(name(op));
  switch (def.inputs) {
    case CaseInputs::logits:
      if (takes == CaseInputs::attention)
        return Claim{false, "stated for the logits alone; " + op_name +
                                " takes q, K and V: checked by the attention properties (docs/properties.md)"};
      return Claim{false, "stated for the logits alone; " + op_name +
                              " takes more inputs: checked by the gradient properties (docs/properties.md)"};
    case CaseInputs::gradient:
      if (takes == CaseInputs::attention)
        return Claim{false, "gradient-op property: " + op_name + " takes q, K and V, no target or upstream gradient"};
      return Claim{false, "gradient-op property: " + op_name + " takes the logits alone"};
    case CaseInputs::attention:
      return Claim{false, "attention property: " + op_name + " has no head dimension (no q, K, V)"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<Claim> cannot_claim(const PropertyDef& def, const Kernel& kernel, Op op) {
  if (std::optional<Claim> c = other_inputs(def, op)) return c;
  const auto listed = [&](const auto& names) { return std::ranges::find(names, def.info.name) != std::end(names); };
  if (kernel.mx_inputs && !listed(stated_on_the_row_as_given))
    return Claim{false, "the rows are read as " + mx_format_name(*kernel.mx_inputs) +
                            " blocks: this property runs the kernel on rows made from the case's row, which are "
                            "no MX rows (docs/low-precision.md)"};
  if (kernel.quantised_outputs && !listed(stated_in_output_format))
    return Claim{false, "the outputs are quantised to " + std::string(name(kernel.output_format())) +
                            ": this property's tolerance is stated in the storage format (docs/low-precision.md)"};
  return std::nullopt;
}

const PropertyDef* find_def(std::string_view name) {
  for (const PropertyDef& d : registry())
    if (d.info.name == name) return &d;
  return nullptr;
}

}  // namespace softcheck::props::detail
