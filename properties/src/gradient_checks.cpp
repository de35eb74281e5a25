// The gradient ops' properties (docs/properties.md, "Gradient ops"):
// cross_entropy, softmax_backward and log_softmax_backward, whose cases carry
// a class target or an upstream gradient g besides the logits. Bounds are in
// the scaled metric of docs/gradients.md: a dx entry's error is measured in
// units of u s_i, s_i the exact per-entry scale the oracle returns with the
// exact gradient, and B is the kernel's declared dx contract (in the same
// units). Every check runs the kernel on one row with all its inputs
// (run_case) and asks the oracle through RowJudge, the decision `softcheck
// run` makes.
#include <algorithm>
#include <cmath>
#include <string>

#include "checks.hpp"
#include "softcheck/judge.hpp"
#include "softcheck/oracle.hpp"
#include "support.hpp"

namespace softcheck::props::detail {

using oracle::Real;

namespace {

// Index of the op's gradient output (dx) in spec(op).out.
std::size_t dx_output(Op op) {
  const auto& out = spec(op).out;
  for (std::size_t o = 0; o < out.size(); ++o)
    if (is_gradient(out[o].kind)) return o;
  return out.size();
}

// The judge of one case: the row, its target and upstream gradient. The case
// must outlive it (the judge keeps views of the row and of g).
oracle::RowJudge gradient_judge(const Kernel& k, const Case& c) {
  oracle::RowJudge j(c.row, c.temperature, k.format, oracle::JudgeOptions::exact_only());
  if (c.target) j.set_target(*c.target);
  if (!c.upstream.empty()) j.set_upstream(c.upstream);
  return j;
}

// Out of scope: the row (as for the forward properties) or inputs the op
// cannot take (extra_inputs_error).
std::optional<CaseResult> gradient_scope(const Kernel& k, Op op, const Case& c, Scope s) {
  if (dx_output(op) == spec(op).out.size()) return not_applicable(std::string(name(op)) + " has no gradient output");
  if (auto na = out_of_scope(c, k.format, s)) return na;
  if (const std::string bad = extra_inputs_error(k, op, c); !bad.empty()) return not_applicable(bad);
  return std::nullopt;
}

bool masked_target(const Case& c) {
  return c.target && *c.target != ignore_index && c.row[static_cast<std::size_t>(*c.target)] == -INFINITY;
}

// sum of the v_i as an exact MPFR value (every double sum exact at 2200 bits:
// 2^-1074 .. 2^1024 plus the carries of up to 2^100 terms).
Real exact_sum(std::span<const double> v) {
  oracle::PrecisionScope scope(2200);
  Real s = 0;
  for (double x : v) s += Real(x);
  return s;
}

// The scaled metric's unit for an entry of exact scale s: u s, or the
// smallest subnormal where u s is below it (metrics.hpp, Metric::scaled: an
// entry's error is |r - v| / max(u s, denorm_min) <= B).
// A structural zero (s = 0: a masked entry, an ignored row) has unit 0: the
// output must be exactly 0 there.
Real element_unit(const Real& s, Format f) {
  if (s == 0) return Real(0);
  const Real us = s * Real(unit_roundoff(f));
  const Real eta(denorm_min(f));
  return us > eta ? us : eta;
}

std::string at_index(std::size_t i, double got) { return " at [" + std::to_string(i) + "] (got " + hex(got) + ")"; }

// The kernel's dx on the case and the dx contract's bound B on this row; a
// non-finite dx fails the case whatever the property.
struct DxRun {
  std::vector<double> dx;
  double bound = INFINITY;
  std::optional<CaseResult> failure;
};

// A non-finite dx fails when the judge calls it broken (NaN, or inf where the
// exact value rounds to a finite one); an inf where the exact dx lies beyond
// the format's range is right (the judge accepts it), and the case is out of
// the property's scope (its sums need finite outputs).
DxRun run_dx(const Kernel& k, Op op, const Case& c, oracle::RowJudge& rj) {
  const std::size_t o = dx_output(op);
  DxRun r;
  r.dx = run_case(k, op, c)[o];
  const oracle::RowVerdict v = rj.judge(*k.find(op), k.masked_policy, r.dx, o);
  r.bound = v.bound;
  for (std::size_t i = 0; i < r.dx.size() && !r.failure; ++i)
    if (!std::isfinite(r.dx[i]))
      r.failure = v.broken ? fail(INFINITY, r.bound, "u s", "non-finite dx" + at_index(i, r.dx[i]))
                           : not_applicable("an exact dx beyond the format's range (the output's inf is right)");
  return r;
}

}  // namespace

// ---- gradient_accuracy ------------------------------------------------------------
// Every output within its own contract against the oracle: the loss and y in
// ULPs, dx in the scaled metric (|dx_i - exact_i| <= B u s_i; s_i = 0 demands
// an exact 0). A NaN/inf where the exact value is finite fails whatever B is.
CaseResult check_gradient_accuracy(const Kernel& k, Op op, const Case& c) {
  if (auto na = gradient_scope(k, op, c, Scope::finite_or_masked)) return *na;
  const std::vector<std::vector<double>> outs = run_case(k, op, c);
  oracle::RowJudge rj = gradient_judge(k, c);
  return outputs_within_contracts(k, op, outs, rj);
}

// ---- gradient_sum_zero ------------------------------------------------------------
// The exact gradient sums to 0 (softmax: <y, g> - <y, g> sum y; log-softmax:
// sum g - sum p sum g; cross-entropy: sum p - 1). So, with the scaled
// metric's unit w_i = max(u s_i, denorm_min),
//   |sum_i dx_i| <= sum_i |dx_i - exact_i| <= B sum_i w_i,
// measured in units of sum_i w_i; the sum of the outputs is formed exactly.
CaseResult check_gradient_sum_zero(const Kernel& k, Op op, const Case& c) {
  if (auto na = gradient_scope(k, op, c, Scope::finite_or_masked)) return *na;
  const std::size_t o = dx_output(op);
  oracle::RowJudge rj = gradient_judge(k, c);
  const OpDecl& d = *k.find(op);
  const DxRun run = run_dx(k, op, c, rj);
  if (run.failure) return *run.failure;
  const std::vector<double>& dx = run.dx;
  const double bound = run.bound;
  oracle::PrecisionScope scope(2200);
  const Real sum = exact_sum(dx);
  Real scale = 0;
  for (const Real& si : rj.exact_scale(d, o)) scale += element_unit(si, k.format);
  double measured = 0;
  if (scale > 0) measured = (abs(sum) / scale).convert_to<double>();
  else if (sum != 0) measured = INFINITY;
  return judge(measured, bound, "u s",
                      "sum of dx = " + oracle::to_string(sum, 4) + " against sum w = " + oracle::to_string(scale, 4) +
                          " (n = " + std::to_string(dx.size()) + ")");
}

// ---- upstream_shift ---------------------------------------------------------------
// softmax_backward: dx(g + c 1) = dx(g) exactly (sum y = 1), so for a shift c
// with every g_i + c exact in the format,
//   |dx(g)_i - dx(g + c)_i| <= B (w_i(g) + w_i(g + c)),  w_i = max(u s_i, denorm_min).
CaseResult check_upstream_shift(const Kernel& k, Op op, const Case& c) {
  if (op != Op::softmax_backward) return not_applicable("upstream_shift is a softmax_backward property");
  if (auto na = gradient_scope(k, op, c, Scope::finite_or_masked)) return *na;
  const std::optional<double> shift = exact_shift(c.upstream, k.format, case_hash(c));
  if (!shift) return not_applicable("no exact nonzero shift for this upstream gradient");
  Case shifted = c;
  for (double& g : shifted.upstream) g += *shift;
  const std::size_t o = dx_output(op);
  const std::vector<double> a = run_case(k, op, c)[o], b = run_case(k, op, shifted)[o];
  oracle::RowJudge ja = gradient_judge(k, c), jb = gradient_judge(k, shifted);
  const OpDecl& d = *k.find(op);
  const double bound = std::max(ja.judge(d, k.masked_policy, a, o).bound, jb.judge(d, k.masked_policy, b, o).bound);
  const std::span<const Real> sa = ja.exact_scale(d, o), sb = jb.exact_scale(d, o);
  double worst_ratio = 0;
  std::size_t at = 0;
  const bool broken = ja.judge(d, k.masked_policy, a, o).broken || jb.judge(d, k.masked_policy, b, o).broken;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
      if (!broken) return not_applicable("an exact dx beyond the format's range (the output's inf is right)");
      return fail(INFINITY, bound, "u s", "non-finite dx" + at_index(i, std::isfinite(a[i]) ? b[i] : a[i]));
    }
    const double diff = std::fabs(a[i] - b[i]);  // both in the kernel's format: exact in double
    const double scale = (element_unit(sa[i], k.format) + element_unit(sb[i], k.format)).convert_to<double>();
    const double ratio = scale > 0 ? diff / scale : (diff == 0 ? 0 : INFINITY);
    if (ratio > worst_ratio) worst_ratio = ratio, at = i;
  }
  return judge(worst_ratio, bound, "u s",
                      "g + " + hex(*shift) + ": dx [" + std::to_string(at) + "] " + hex(a[at]) + " vs " + hex(b[at]));
}

// ---- gradient_masked_entries ------------------------------------------------------
// A -inf entry has p_i = 0 exactly, so (exact, never NaN):
//   softmax_backward:      y_i = 0 and dx_i = 0
//   log_softmax_backward:  y_i = -inf and dx_i = g_i (g_i - 0 sum g)
//   cross_entropy:         dx_i = 0 off the target (a masked target: dx_t = -1,
//                          left to gradient_accuracy); with label smoothing
//                          eps, dx_i = -eps / n off the target: a rounded
//                          value, within 4u relative (as a policy's 1/n)
CaseResult check_gradient_masked_entries(const Kernel& k, Op op, const Case& c) {
  if (auto na = gradient_scope(k, op, c, Scope::masked)) return *na;
  const std::vector<std::vector<double>> outs = run_case(k, op, c);
  const std::vector<double>& dx = outs[dx_output(op)];
  const double eps = k.find(op)->params.label_smoothing, n = static_cast<double>(c.row.size());
  const bool smoothed = eps > 0 && c.target != ignore_index;  // an ignored row's gradient is 0
  std::size_t wrong = 0, first = 0;
  std::string what;
  for (std::size_t i = 0; i < c.row.size(); ++i) {
    if (c.row[i] != -INFINITY) continue;
    bool ok = true;
    std::string expect;
    switch (op) {
      case Op::softmax_backward:
        ok = outs[0][i] == 0 && dx[i] == 0;
        expect = "y = 0 and dx = 0";
        break;
      case Op::log_softmax_backward:
        ok = outs[0][i] == -INFINITY && dx[i] == c.upstream[i];
        expect = "y = -inf and dx = g = " + hex(c.upstream[i]);
        break;
      default:
        ok = (c.target && *c.target == static_cast<std::int64_t>(i)) ||
             (smoothed ? std::fabs(-dx[i] * n / eps - 1) <= 4 * unit_roundoff(k.format) : dx[i] == 0);
        expect = smoothed ? "dx = -eps / n = " + hex(-eps / n) + " within 4u" : "dx = 0";
        break;
    }
    if (!ok && wrong++ == 0) {
      first = i;
      what = "masked entry [" + std::to_string(i) + "]: expected " + expect + ", got " +
             (spec(op).out[0].shape == OperandShape::row ? "y = " + hex(outs[0][i]) + ", " : std::string()) +
             "dx = " + hex(dx[i]);
    }
  }
  (void)first;
  if (wrong == 0) return pass(0, 0, "entries", "every masked entry exact");
  return fail(static_cast<double>(wrong), 0, "entries", what + " (" + std::to_string(wrong) + " wrong)");
}

// ---- gradient_fully_masked --------------------------------------------------------
// An all -inf row: every output follows the declared masked-row policy (an
// ignored cross-entropy row: loss and dx exactly 0, whatever the policy).
CaseResult check_gradient_fully_masked(const Kernel& k, Op op, const Case& c) {
  if (auto na = gradient_scope(k, op, c, Scope::fully_masked)) return *na;
  const std::vector<std::vector<double>> outs = run_case(k, op, c);
  oracle::RowJudge rj = gradient_judge(k, c);
  const OpDecl& d = *k.find(op);
  for (std::size_t o = 0; o < outs.size(); ++o) {
    const oracle::RowVerdict v = rj.judge(d, k.masked_policy, outs[o], o);
    // broken: a NaN or wrong special value where an ignored row's exact 0
    // stands (holds() alone passes it for a kernel without a contract).
    if (!v.holds() || v.broken)
    {
      std::string got;
      for (std::size_t j = 0; j < std::min<std::size_t>(outs[o].size(), 4); ++j) got += (j ? ", " : "") + hex(outs[o][j]);
      return fail(1, 0, "outputs",
                  std::string(spec(op).out[o].name) + ": " + oracle::explain(v, d, outs[o], rj, o) + " (policy " +
                      std::string(name(k.masked_policy)) + "; got " + got + (outs[o].size() > 4 ? ", ..." : "") + ")");
    }
  }
  return pass(0, 0, "outputs", "follows the " + std::string(name(k.masked_policy)) + " policy");
}

// ---- ce_signs -----------------------------------------------------------------------
// loss = -sum q log p >= 0, dx_t = p_t - 1 <= 0, dx_j = p_j >= 0 (j != t); an
// ignored row: loss and dx exactly 0. Exact (never NaN). With label
// smoothing eps the gradient p_j - q_j has no fixed sign; its lower end
// -q_j (q_j = eps / n, q_t = 1 - eps + eps / n) is claimed within 4u
// relative (q rounded to the format).
CaseResult check_ce_signs(const Kernel& k, Op op, const Case& c) {
  if (op != Op::cross_entropy) return not_applicable("ce_signs is a cross_entropy property");
  if (auto na = gradient_scope(k, op, c, Scope::finite_or_masked)) return *na;
  const std::vector<std::vector<double>> outs = run_case(k, op, c);
  const double loss = outs[0][0];
  const std::vector<double>& dx = outs[1];
  const bool ignored = *c.target == ignore_index;
  const double eps = k.find(op)->params.label_smoothing, n = static_cast<double>(dx.size());
  if (ignored ? loss != 0 : !(loss >= 0))
    return fail(1, 0, "entries", "loss " + hex(loss) + (ignored ? ", expected 0 (ignored row)" : " is not >= 0"));
  for (std::size_t j = 0; j < dx.size(); ++j) {
    const bool is_t = !ignored && static_cast<std::int64_t>(j) == *c.target;
    const double q = is_t ? 1 - eps + eps / n : eps / n, floor = -q * (1 + 4 * unit_roundoff(k.format));
    const bool ok = ignored ? dx[j] == 0 : eps > 0 ? dx[j] >= floor : (is_t ? dx[j] <= 0 : dx[j] >= 0);
    if (!ok)
      return fail(1, 0, "entries",
                  "dx" + at_index(j, dx[j]) +
                      (ignored ? ", expected 0 (ignored row)"
                       : eps > 0 ? ", expected >= -q_j = " + hex(-q) + " (label smoothing " + hex(eps) + ")"
                       : is_t    ? ", expected <= 0 (the target)"
                                 : ", expected >= 0"));
  }
  return pass(0, 0, "entries", "signs hold");
}

// ---- ce_confident -------------------------------------------------------------------
// A correct confident prediction (the target the unique maximum) has
// loss = log1p(S) <= S, S = sum_{j != t} e^(z_j - z_t) = sum_{j != t} p_j / p_t,
// so the contract gives loss <= S + B ulp(S): the loss goes to 0 with S (a
// kernel that forms 1 - p_t or log of a rounded p_t returns u-sized losses
// where S is far smaller). Measured as (loss - S) / ulp(S), at least 0.
CaseResult check_ce_confident(const Kernel& k, Op op, const Case& c) {
  if (op != Op::cross_entropy) return not_applicable("ce_confident is a cross_entropy property");
  if (auto na = gradient_scope(k, op, c, Scope::finite_or_masked)) return *na;
  if (*c.target == ignore_index) return not_applicable("ignored row");
  const auto t = static_cast<std::size_t>(*c.target);
  for (std::size_t j = 0; j < c.row.size(); ++j)
    if (j != t && !(c.row[j] < c.row[t])) return not_applicable("the target is not the unique maximum");
  const std::vector<double> loss = run_case(k, op, c)[0];
  oracle::RowJudge rj = gradient_judge(k, c);
  const OpDecl& d = *k.find(op);
  const double bound = rj.judge(d, k.masked_policy, loss, 0).bound;
  if (std::isnan(loss[0])) return fail(INFINITY, bound, "ulp", "loss is NaN");
  const std::vector<Real>& p = rj.exact().softmax;
  oracle::PrecisionScope scope(512);
  Real rest = 0;
  for (std::size_t j = 0; j < p.size(); ++j)
    if (j != t) rest += p[j];
  const Real s = rest / p[t];
  const double excess = ((Real(loss[0]) - s) / Real(ulp_of(s, k.format))).convert_to<double>();
  return judge(std::max(excess, 0.0), bound, "ulp",
                      "loss " + hex(loss[0]) + " against S = " + oracle::to_string(s, 6) + " (loss <= log1p(S) <= S)");
}

// ---- gradient_check -----------------------------------------------------------------
// The backward kernel against the forward's definition, not against the
// oracle's gradient: the directional derivative of the exact forward,
//   D = d/dh L(z + h v) at h = 0,
//   L = lse(z) - sum_j q_j z_j (cross_entropy, q the smoothed target),
//   <g, softmax(z)>, <g, log_softmax(z)>,
// by a central difference at 1200 bits with h = 2^-400 (truncation
// <= 3 (1 + sum|g|) h^2, rounding <= (8n + 64) 2^-1200 A / h, A the size of
// the terms), against <dx, v> formed exactly, v in {-1, 0, 1}^n from the case
// hash (0 at masked entries):
//   |<dx, v> - D| <= B sum_i |v_i| w_i + E_fd,  w_i = max(u s_i, denorm_min).
// A case whose E_fd is not below 2^-10 of the allowance is not applicable.
CaseResult check_gradient_check(const Kernel& k, Op op, const Case& c) {
  if (auto na = gradient_scope(k, op, c, Scope::finite_or_masked)) return *na;
  if (masked_target(c)) return not_applicable("the loss is +inf at a masked target");
  const double eps = k.find(op)->params.label_smoothing;
  if (eps > 0 && std::find(c.row.begin(), c.row.end(), -INFINITY) != c.row.end())
    return not_applicable("the loss is +inf with label smoothing and a masked entry");
  if (c.target == ignore_index) return not_applicable("ignored row: its exact zeros are gradient_accuracy's");
  const std::size_t o = dx_output(op);
  oracle::RowJudge rj = gradient_judge(k, c);
  const OpDecl& d = *k.find(op);
  const DxRun run = run_dx(k, op, c, rj);
  if (run.failure) return *run.failure;
  const std::vector<double>& dx = run.dx;
  const double bound = run.bound;
  const std::span<const Real> s = rj.exact_scale(d, o);

  const std::size_t n = c.row.size();
  std::vector<int> v(n);
  std::uint64_t h64 = case_hash(c) | 1;
  for (std::size_t i = 0; i < n; ++i) {
    h64 ^= h64 << 13, h64 ^= h64 >> 7, h64 ^= h64 << 17;  // xorshift64
    v[i] = c.row[i] == -INFINITY ? 0 : static_cast<int>(h64 % 3) - 1;
  }
  constexpr unsigned bits = 1200;
  oracle::PrecisionScope scope(bits);
  const Real h = ldexp(Real(1), -400);
  const Real temperature(c.temperature);
  std::vector<Real> z(n);
  for (std::size_t i = 0; i < n; ++i)
    if (c.row[i] != -INFINITY) z[i] = Real(c.row[i]) / temperature;
  // L at z + sign h v (masked entries: z_i stays -inf).
  auto forward = [&](int sign) -> Real {
    std::vector<Real> w(n);
    Real m = 0;
    bool first = true;
    for (std::size_t i = 0; i < n; ++i) {
      if (c.row[i] == -INFINITY) continue;
      w[i] = z[i] + Real(sign * v[i]) * h;
      if (first || w[i] > m) m = w[i], first = false;
    }
    Real sum = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (c.row[i] != -INFINITY) sum += exp(w[i] - m);
    const Real lse = m + log(sum);
    Real l = 0;
    for (std::size_t i = 0; i < n; ++i) {
      // A masked entry's log-softmax is -inf, but g_i (z_i - lse) still moves
      // with lse: its finite part -g_i lse stays in L (dx_j = g_j - p_j sum g
      // sums over every g).
      if (c.row[i] == -INFINITY) {
        if (op == Op::log_softmax_backward) l -= Real(c.upstream[i]) * lse;
        continue;
      }
      switch (op) {
        case Op::cross_entropy: {  // -sum_j q_j (w_j - lse), sum q = 1
          const Real q = Real(eps) / Real(n) + (static_cast<std::int64_t>(i) == *c.target ? 1 - Real(eps) : Real(0));
          l += q * (lse - w[i]);
          break;
        }
        case Op::softmax_backward: l += Real(c.upstream[i]) * exp(w[i] - lse); break;
        default: l += Real(c.upstream[i]) * (w[i] - lse); break;
      }
    }
    return l;
  };
  const Real plus = forward(1), minus = forward(-1);
  const Real derivative = (plus - minus) / (2 * h);

  // The finite difference's error E_fd (above).
  Real g_abs = op == Op::cross_entropy ? Real(1) : Real(0), z_abs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!c.upstream.empty()) g_abs += abs(Real(c.upstream[i]));
    if (c.row[i] != -INFINITY) z_abs = std::max(z_abs, abs(z[i]));
  }
  const Real size = (1 + 2 * z_abs + abs(plus)) * (1 + g_abs);
  const Real fd_error = 3 * (1 + g_abs) * h * h + Real(8 * n + 64) * ldexp(Real(1), -static_cast<int>(bits)) * size / h;

  Real dot = 0, unit = 0;
  for (std::size_t i = 0; i < n; ++i) {
    dot += Real(dx[i]) * Real(v[i]);
    if (v[i] != 0) unit += element_unit(s[i], k.format);
  }
  const Real allowed_abs = Real(bound) * unit;
  if (std::isfinite(bound) && !(fd_error * 1024 <= allowed_abs))
    return not_applicable("the directional derivative is below the finite difference's resolution");
  const Real diff = abs(dot - derivative) - fd_error;
  double measured = 0;
  if (diff > 0) measured = unit > 0 ? (diff / unit).convert_to<double>() : INFINITY;
  return judge(measured, bound, "u s",
                      "<dx, v> = " + oracle::to_string(dot, 8) + ", dL/dh of the exact forward = " +
                          oracle::to_string(derivative, 8) + " (" + std::to_string(n) + " entries)");
}

}  // namespace softcheck::props::detail
