// The shifted softmax on f16 / bf16 storage (docs/low-precision.md): the
// shifted_log1p core (Blanchard, Higham & Higham's final form, REFERENCE.md
// "Their final form leaves the max term out of the sum") parametrised by the
// storage format and the arithmetic it runs in:
//
//   f16_shifted_f32acc   f16 in/out, max, exp, sum, division in f32, each
//   bf16_shifted_f32acc  output rounded once to the storage format (what
//                        production kernels do: FlashAttention keeps its
//                        statistics in f32, REFERENCE.md "What users keep
//                        reporting"; benchdnn expects f16/bf16 with f32
//                        accumulation to match the rounded reference)
//   f16_shifted_f16acc   every operation rounded to f16: the cautionary variant
//
//   softmax_j     = exp(z_j - a) / (1 + s'),  s' = sum_{i != k} exp(z_i - a)
//   log-softmax_j = (z_j - a) - log1p(s')     (the log1p form)
// A fully masked row shifts by 0 (FlashAttention): softmax 0, log-softmax -inf.
#include <cmath>
#include <string>

#include "lowp.hpp"
#include "shifted_log1p_core.hpp"

namespace softcheck::kernels {

// Contract of a result computed in f32 and rounded once to `out` (f16 or
// bf16), in units of u_out = 2^-p_out, from the f32 contract K32 of the same
// core (shifted_log1p.cpp, docs/kernels.md). First order, v the exact value:
//  - Inputs decode exactly to f32 and z = x / fl32(T) is the f32 kernel's
//    computation, so the f32 result y32 obeys |y32 - v| <= K32 ulp32(v).
//    (R and M come from row_shape in the output format: entries more than
//    L_out below the max (f16: 26 ln 2 ~ 18.0; bf16: 135 ln 2 ~ 93.6) are not
//    counted. Such an entry adds e_i (1.004 + d_i) u32 to the sum's error
//    (expf 0.502 ulp <= 1.004u), (1.004 + d_i) e^-d_i <= 2.9e-7 for
//    d_i > 18: n 2.9e-7 u32 in all, inside the f32 derivation's slack of
//    0.992u (a = 3 against n + 2.008 + 2R with expf) for n < 3.4e6.
//    Its own output: the exact softmax <= denorm_min_out / 4 rounds to 0,
//    and so does y32 <= (1 + K32 u32) denorm_min_out / 4: <= 0.25 ulp.)
//  - ulp32(v) <= (u32 / u_out) ulp_out(v): equal ratio for normal v of both;
//    below f16's normal range ulp16 = 2^-24 while ulp32(v) <= 2^-38; bf16 has
//    f32's exponent range, so the ratio is 2^-16 everywhere. Hence
//    |y32 - v| <= delta := K32 (u32 / u_out) ulp_out(v).
//  - r = round_out(y32). If ulp_out(y32) <= ulp_out(v): |r - y32| <= 0.5
//    ulp_out(v), so |r - v| <= 0.5 ulp + delta. Otherwise a power of two 2^E
//    (a value of the format) lies in (|v|, |y32|] and ulp_out(y32) = 2
//    ulp_out(v): r = 2^E gives |r - v| <= |y32 - v| <= delta; r one step
//    (2 ulp_out(v)) or more above 2^E needs |y32 - v| >= |y32| - 2^E >=
//    ulp_out(v), i.e. delta >= 1 ulp, and then |r - v| <= |r - y32| + delta
//    <= 1 ulp + delta <= 0.5 ulp + 1.5 delta.
//  => K_out = 0.5 + 1.5 K32 u32 / u_out bounds both cases (0.5 + K32 u32 / u_out
//    when delta < 1 ulp, which is every row of a few thousand entries; the
//    1.5 only matters once the f32 error could reach a whole ulp_out).
//  - bound_ulps' K / (1 - K u_out) covers K32's own second-order terms:
//    K u_out >= K32 u32, so K/(1 - K u_out) >= 0.5 + 1.5 (u32/u_out) K32/(1 - K32 u32).
// Every coefficient of K32 (including t, the temperature's) is scaled by
// 1.5 u32 / u_out: f16 1.5 * 2^-13, bf16 1.5 * 2^-16.
Contract rounded_once_from_f32(const Contract& f32, Format out) {
  const double scale = 1.5 * unit_roundoff(Format::f32) / unit_roundoff(out);
  return declared_contract(0.5 + f32.a * scale, f32.b * scale, f32.c * scale, f32.d * scale,
                           f32.t * scale,
                           "f32 result within K32 ulp32 (the f32 contract: " + f32.formula() +
                               ") rounded once to " + std::string(name(out)) +
                               ": 0.5 ulp + 1.5 K32 u32/u_" + std::string(name(out)) +
                               " (ulp32 <= (u32/u_out) ulp_out; the 1.5 covers a rounding "
                               "one binade up once the f32 error reaches a whole ulp_out)");
}

namespace {

// ------------------------------------------------------- f32 accumulation

// The f32 contracts of the core's row ops (shifted_log1p_f32), rounded once to `out`.
std::vector<OpDecl> f32acc_ops(Format out) {
  std::vector<OpDecl> ops;
  for (const OpDecl& d : shifted_log1p_family().ops)
    if (!spec(d.op).scalar_output() && !spec(d.op).several_outputs())  // make_kernel16 runs row cores only
      ops.push_back({d.op, rounded_once_from_f32(d.contract, out)});
  return ops;
}

Kernel shifted_f32acc(Format storage) {
  const std::string fmt(name(storage));
  return make_kernel16<float>(
      fmt + "_shifted_f32acc", "shifted_f32acc", storage,
      fmt + " in/out, max/exp/sum/division in f32 (the shifted_log1p core), each output "
            "rounded once to " + fmt + "; log-softmax (z - a) - log1p(s'); masked rows give 0",
      MaskedRowPolicy::zeros, f32acc_ops(storage), shifted_log1p_core<float>);
}

// ------------------------------------------------------- f16 accumulation

Contract f16acc_none(Op op) {
  std::string why =
      "none: every operation rounds to f16 (u = 2^-11). The shifted analysis in f16 gives "
      "n + 2 + 2R ulps at first order (about 1000 ulps at n = 1000) and nothing once "
      "(n - 1)u >= 1: the sum 1 + s' of terms <= 1 stalls at 2048 (2048 + 1 rounds back "
      "to 2048), so 4096 equal entries give 1/2048 for 1/4096 (1024 ulps) - it stalls "
      "before it could overflow. z = x / T overflows f16 once |x / T| > 65504 "
      "(x = 60000, T = 0.5): inf - inf = NaN. Reported, never gated";
  if (op == Op::log_softmax)
    why += "; log-softmax also pays u|z_j - a| for the rounding of z_j - a in f16";
  return no_contract(std::move(why));
}

// Cautionary by design: every step rounds to f16, far from the
// f32-accumulating reference of the reference rule.
std::vector<OptOut> f16acc_reference_opt_out() {
  return {{std::string(floor_reference),
           "every operation rounds to f16 (the sum stalls at 2048): cautionary; against the f32-accumulating "
           "reference (quick suite, k = 2, slack 1 u) its error is up to 126x (softmax) and 284x (log-softmax) "
           "what the rule allows"}};
}

Kernel shifted_f16acc() {
  using Half = Rounded<Format::f16>;
  return make_kernel16<Half>(
      "f16_shifted_f16acc", "shifted_f16acc", Format::f16,
      "f16 in/out, every operation (x/T, z - a, exp, each addition, division, log1p) "
      "rounded to f16 (the shifted_log1p core); cautionary: the sum stalls at 2048",
      MaskedRowPolicy::zeros,
      {{Op::softmax, f16acc_none(Op::softmax), {}, {}, f16acc_reference_opt_out()},
       {Op::log_softmax, f16acc_none(Op::log_softmax), {}, {}, f16acc_reference_opt_out()}},
      shifted_log1p_core<Half>);
}

}  // namespace

std::vector<Kernel> lowp_kernels() {
  return {shifted_f32acc(Format::f16), shifted_f32acc(Format::bf16), shifted_f16acc()};
}

}  // namespace softcheck::kernels
