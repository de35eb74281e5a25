// Softmax kernels on the exp lab's primitives (softcheck/exp_lab.hpp,
// docs/exp-lab.md): the shifted softmax (REFERENCE.md, "shifted softmax":
// a = max, e_i = exp(z_i - a), y_j = e_j / sum e) with an approximate
// exponential in place of glibc's expf, the way fast kernels compute it
// (REFERENCE.md, "Approximate exponentials in fast kernels"):
//
//   shifted_expfold_f32          FlashAttention-2's fold on the raw scores:
//                                exp2f(fma(x_i, c, -fl(m c))), c = fl32(s log2 e),
//                                m = max x, s = 1/T (the temperature is folded
//                                into the scale, z = x/T is never rounded)
//   shifted_exp2poly<d>_f32      exp2_poly<d>(fl(z_i - a)), d = 2..5: Cody-Waite
//                                reduction and a degree-d minimax polynomial
//   shifted_expf_cuda_model_f32  expf_cuda_model(fl(z_i - a)): __expf under
//                                --use_fast_math, subnormal results flushed to +0
//
// Each kernel is the shifted kernel's steps (kernel_util.hpp: reduce_max,
// exp_shifted, sum, divide_by) with its primitive as the exponential, and its
// contract is shifted_f32's derivation (docs/kernels.md, "shifted /
// shifted_log1p softmax") with the primitive's error in place of glibc's.
// One fact is used throughout: an error of E ulp of the exact e^d is a
// relative error of up to 2E u (ulp(v) <= 2u|v| for normal v), so the
// primitives' bounds enter as relative errors, derived from the same
// pieces as their ulp bounds in docs/exp-lab.md ("Error bounds").
//
// Softmax only. The shifted algorithm's log-softmax, (z_j - a) - log(sum e),
// has no contract even with glibc's expf (log(1 + s') rounds to 0 for s' < u,
// shifted.cpp), so a log-softmax on these primitives would be the log1p
// form, another algorithm; and the kernels these primitives come from
// (FlashAttention's P, fast-math softmax) compute the probabilities and the
// lse, not log-probabilities.
#include "exp_lab_softmax.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <stdexcept>
#include <string>

#include "kernel_util.hpp"
#include "softcheck/exp_lab.hpp"

namespace softcheck::kernels {
namespace {

constexpr const char* exp_lab_algorithms[] = {"shifted_expfold", "shifted_exp2poly2", "shifted_exp2poly3",
                                              "shifted_exp2poly4", "shifted_exp2poly5",
                                              "shifted_expf_cuda_model"};

// -------------------------------------------------------- named steps

// v_i <- exp(s (v_i - m)) by FlashAttention-2's fold (exp_lab::exp_fold_fma:
// exp2f(fma(v_i, c, -fl(m c))), c = fl32(s log2 e), the shift 0 for m = -inf).
void exp_folded(std::span<float> v, float m, float s) {
  for (float& e : v) e = exp_lab::exp_fold_fma(e, m, s);
}

// |fl(m c)| from which the fold row shifts by the max first (below).
constexpr float fold_guard = 0x1p28f;

// The fold's softmax of one row of raw scores (xy: x in, y out), softmax
// scale s = 1/T: m = max x, P_i = exp(s (x_i - m)) folded, y = P / sum P.
// A fully masked row: m = -inf, every P_i = exp2f(-inf) = 0, y = 0/0 = NaN.
//
// One guard FlashAttention does not have: fl(m c) is off m c by up to half
// an ulp, gamma, and every P_i carries the factor 2^gamma (it cancels in
// P / sum P, see the contract). From |m c| = 2^31 on 2^gamma over- or
// underflows (every P_i inf or 0: a NaN row; FA gives NaN there) and well
// before that the P_i lose the bottom of the exponent range. So when
// |fl(m c)| >= 2^28 (|gamma| <= 8 below it) the row is shifted first,
// P_i = exp_fold_fma(fl(x_i - m), 0, s), as the shifted kernel does: P_k = 1
// exactly. Those rows have M >= 1.86e8 and the contract's 0.1M makes its
// bound vacuous there; the guard only keeps them finite and ordered.
void shifted_expfold_row(std::span<float> xy, float s) {
  const float m = reduce_max<float>(xy);
  const float c = static_cast<float>(static_cast<double>(s) * std::numbers::log2e);  // as exp_fold_fma
  if (m != minus_inf<float> && !(std::fabs(m * c) < fold_guard)) {
    subtract(xy, m);
    exp_folded(xy, 0.0f, s);
  } else {
    exp_folded(xy, m, s);
  }
  divide_by(xy, sum<float>(xy));
}

// The shifted softmax of z with exponential `exp` (z in, y out): the steps
// of shifted.cpp's softmax. A fully masked row: a = -inf, z_i - a = NaN.
template <class Exp>
void shifted_softmax_with(std::span<float> zy, Exp exp) {
  const float a = reduce_max<float>(zy);
  exp_shifted(zy, a, exp);
  divide_by(zy, sum<float>(zy));
}

// ----------------------------------------------------------- contracts

// shifted_expfold_f32 softmax, first order in u. The exact value is
// g_j = e^{d_j} / sum_i e^{d_i}, d_j = z_j - a = s (x_j - m), s = 1/T
// (m = max x, so a = m / T: the max is exact).
//  - c = fl32(fl64(s log2 e)) = s log2 e (1 + delta): at T = 1 (s = 1) c is
//    log2e_f32 and |delta| = 1.926e-8 / log2 e = 0.224u (docs/exp-lab.md,
//    "Constants"); at T != 1 s = fl32(1/T) (the double quotient rounded once)
//    and c rounds twice more: |delta| <= 2u (1 + 2^-28). (c normal, i.e.
//    T < 2^125; a subnormal c would make delta large.)
//  - q = fl(m c) = m c - gamma, |gamma| <= u |m c|; t_j = fma(x_j, c, -q)
//    rounds once, (1 + e2_j):
//      t_j = (d_j log2 e (1 + delta) + gamma)(1 + e2_j).
//    gamma is the same for every j: P_j = 2^{t_j} carries the common factor
//    2^gamma, which cancels in y_j = P_j / sum P_i. This is why the fold's
//    M-dependent error, 82.85 ulp for the primitive at m = 10 in the lab's
//    sweep (docs/exp-lab.md, "exp_fold_fma"), is not a softmax error: only
//    e2_j gamma survives, at most u |gamma| ln 2 <= u^2 |a| (natural-log
//    units; |a| <= M, a is a contributing entry).
//  - Without the common factor, P_j / 2^gamma = e^{d_j} (1 + theta_j) with
//    |theta_j| <= |delta| |d_j| + u |d_j| + u^2 M + 1.004u (exp2f: 0.502 ulp,
//    a relative 1.004u): at T = 1, theta <= (1.004 + 1.224R + uM)u.
//  - S = sum P_i (n - 1 recursive additions of positive terms): (n - 1)u
//    plus the terms' theta; the division: u.
//  Total: 2 (1.004 + 1.224R + uM) + (n - 1) + 1 = 2.008 + n + 2.448R + 2uM.
//  - T != 1: delta grows by at most (2 - 0.224)u (+ 2^-27 u) = 1.777u, times
//    |d_j| <= R <= 2M, in both theta: 2 * 1.777 * 2 M = 7.11M. There is no
//    rounding of x / T (the fold multiplies the raw x_j by c).
//  - ulps <= relative error / u for normal outputs (ulp(v) > u|v|).
//  - The exponent range (what 2^gamma does besides cancelling): in log2
//    units |gamma| <= ulp(m c)/2 = g. P_j lands 2^gamma away from y_j S, so
//    a P_j in the subnormal range (absolute error 0.502 denorm_min, or 0
//    below 2^-150) costs y_j up to 0.502 2^g + 1/2 ulp; that needs an
//    entry (126 - g) ln 2 below the max, R >= 81.8, K >= 203, whose
//    relative part reaches at most K/2 on a subnormal y_j (y_j < 2^23
//    denorm_min). For |m c| < 2^24 (g <= 1/2): 1.21 ulp, within K/2. For
//    2^24 <= |m c| < 2^28 (g <= 8, M >= 1.16e7): 129 ulp, which 0.1M
//    (>= 1.16e6) covers. From |fl(m c)| >= 2^28 on the kernel shifts first
//    (shifted_expfold_row; M >= 1.86e8 there) and 0.1M >= 1.86e7 > 2^24 makes
//    K u >= 1: no bound, only finite outputs. The linear form cannot say
//    "below this M", so 0.1M (>= 2uM, the surviving e2_j gamma) is the
//    M term: the smallest round coefficient with 0.1M >= 2^24 on every
//    guarded row (it needs >= 0.0902); 0.1 ulp per unit of |z|, 10 ulp at
//    M = 100.
//  - Non-contributing entries: the exact value rounds to 0, the computed
//    one is at most 2^g denorm_min / S: 1.5 ulp for g <= 1/2, 256 for
//    g <= 8 (within 0.1M there).
Contract expfold_contract() {
  return declared_contract(2.01, 1, 2.45, 0.1, 7.11,
                           "FlashAttention-2's fold exp2f(fma(x, c, -fl(m c))), c = fl32(s log2 e), s = 1/T: "
                           "fl(m c)'s error is a factor common to every P_j and cancels in P / sum P; what "
                           "survives (u^2 M, the exponent range shifted by up to 8) is within 0.1M, which "
                           "leaves no bound from |fl(m c)| = 2^28 on, where the row is shifted first; c is off "
                           "s log2 e by 0.224u at T = 1, the fma rounds u|d|, exp2f 1.004u: each P_j (1.004 + 1.224R + uM)u; sum (n-1)u, division u: "
                           "n + 2.008 + 2.448R; T != 1: c's 2u costs 1.777R <= 3.55M per P, twice; "
                           "docs/exp-lab.md, exp_lab_softmax.cpp");
}

// shifted_exp2poly<d>_f32 softmax. exp2_poly<d>'s relative error for a
// normal result (docs/exp-lab.md, "Error bounds"): before its last rounding
// the value is within a relative R_d of e^z (R_d = (1 + P)(1 + D)(1 + H) - 1:
// the f32 polynomial against 2^f, the reduction, the inner Horner steps),
// then one rounding (the last fma; 2^n is exact): R_d + u (1 + R_d). The
// lab's ulp bound is 1 + 2^24 R_d rounded up to 3 digits for every degree
// (R_d > 2^-24: 1.96e-3, 1.01e-4, 2.90e-6, 1.70e-7), which is that relative
// error in units of u (the R_d u term is second order): E_d =
// exp2_poly_accuracy(d).ulp_bound = 3.30e4, 1.71e3, 49.7, 3.86.
// Then shifted_f32's derivation with E_d in place of glibc's 1.004:
//  - fl(z_j - a): a relative error uR of e^{z_j - a}; the primitive E_d u:
//    each e_j carries (E_d + R)u;
//  - S: (n - 1)u plus the terms' errors (every e_i > 0); the division u:
//    (E_d + R) + (n - 1 + E_d + R) + 1 = 2E_d + n + 2R.
//  - the maximum's term is exp2_poly(0) = 1 exactly (c_0 = 1, f = 0), so S >= 1.
//  - temperature: fl(T) and fl(x / T) as shifted_f32: 4M.
//  - subnormal outputs: e_j subnormal has absolute error <= 3/4 denorm_min +
//    the relative part (the lab's subnormal case), the quotient 1/2: in units
//    of denorm_min at most K/2 + 1.25 <= K (K >= 2E_d >= 7.72).
//  - second order: with E_d u up to 1.97e-3 (degree 2) the products of the
//    relative errors are (K u)^2 / 2 at most, within K/(1 - Ku) - K.
Contract exp2poly_contract(int degree) {
  const double e_d = exp_lab::exp2_poly_accuracy(degree).ulp_bound;
  char e_text[32];
  std::snprintf(e_text, sizeof e_text, "%g", e_d);
  return declared_contract(2 * e_d, 1, 2, 0, 4,
                           "shifted softmax with exp2_poly<" + std::to_string(degree) +
                               ">: the primitive's relative error E = " + std::string(e_text) +
                               "u (1 + 2^24 R_d, docs/exp-lab.md) in place of glibc's 1.004u: each e_j (E + R)u, "
                               "sum (n-1)u, division u: 2E + n + 2R; temperature 4uM as shifted_f32");
}

// shifted_expf_cuda_model_f32 softmax: none. expf_cuda_model flushes every
// result below 2^-126 to +0 (the .ftz of --use_fast_math; libdevice's
// __nv_fast_expf: "flushed to sign preserving 0.0"). An entry with
// z_j - a < -126 ln 2 = -87.34 (within the model's argument error) gets
// e_j = 0, so y_j = 0 for an exact g_j up to 2^-126 / S: up to 2^23 ulp (a
// subnormal output's ulp is 2^-149). The only bound that holds on every row
// is therefore 2^23 ulp, or as the contract's linear shape (a flush needs
// R >= 87.33) 2^23 / 87.33 = 96,000 R: a gate of a million ulp on rows
// whose error is tens of ulp, not a useful bound. On rows with no flushed
// entry (R < 87.3) the shifted derivation holds with the model's argument
// rounding: t = fl(d log2e_f32) is off d log2 e by |d| 1.926e-8 (0.224u|d|
// in natural units) and u|t|, exp2f 1.004u, fl(z_j - a) uR: each e_j
// (1.004 + 2.224R)u, so n + 2.008 + 4.448R. The reference rule (absolute
// error against shifted_f32's, FlashAttention's test rule) stays claimed:
// a flushed output is off by less than 2^-126, far below its slack of 4u.
Contract cuda_model_contract() {
  return no_contract(
      "__expf under --use_fast_math flushes every exp below 2^-126 to +0: an entry with z_j - a < -87.34 gives "
      "y_j = 0 for an exact value up to 2^-126, 2^23 ulp (subnormal ulp 2^-149); the bound for every row is "
      "2^23 ulp (96,000 R as a linear term), not a useful one. Rows without a flushed entry (R < 87.3): "
      "n + 2.008 + 4.448R (fl(d log2e_f32) adds 1.224u|d| to fl(z - a)'s u|d|); exp_lab_softmax.cpp");
}

// ------------------------------------------------------------- kernels

Kernel softmax_only_f32(std::string algorithm, std::string description, OpDecl decl) {
  Kernel k;
  k.algorithm = std::move(algorithm);
  k.name = k.algorithm + "_f32";
  k.format = Format::f32;
  k.ops = {std::move(decl)};
  k.masked_policy = MaskedRowPolicy::nan;
  k.description = std::move(description);
  return k;
}

// Measured once (every f32 z in [-104, 0], exp2_poly<d>(z) against its
// predecessor's value): how often the polynomial exp steps down.
constexpr const char* poly_inversions[] = {"41,255 inversions", "35,053 inversions", "35,204 inversions",
                                           "35,343 inversions"};

template <int Degree>
Kernel exp2poly_kernel() {
  const std::string degree = std::to_string(Degree);
  // make_kernel: z = x / fl(T) (scale_by_temperature), then the core.
  Core<float> core = [](Op, std::span<float> zy) {
    shifted_softmax_with(zy, [](float d) { return exp_lab::exp2_poly<Degree>(d); });
  };
  OpDecl decl{Op::softmax, exp2poly_contract(Degree)};
  // A polynomial exp in f32 is not monotone (docs/kernels.md, shifted_simd's
  // exp16, for the same reason): where n = rint(z log2 e) switches, p(f) 2^n
  // just below the switch and p(f - 1) 2^(n+1) just above it are rounded
  // separately. Over every f32 z in [-104, 0], exp2_poly<d> steps down
  // 41,255 (d = 2), 35,053, 35,204 and 35,343 (d = 5) times, each by one ulp
  // (counted by exp_lab_softmax_test.cpp's DISABLED_CountTheStepsDownOverEveryArgument;
  // docs/exp-lab.md, "Softmax kernels on the primitives"), and y = e / S
  // keeps each inversion: a larger z_j can get a smaller y_j.
  decl.opt_outs.push_back({std::string(floor_ordering),
                           "exp2_poly<" + degree + "> is not monotone in f32: one-ulp steps down where the "
                           "Cody-Waite n switches (" + std::string(poly_inversions[Degree - 2]) +
                           " over every f32 z in [-104, 0]); y = e / S keeps them"});
  return make_kernel<float>("shifted_exp2poly" + degree + "_f32", "shifted_exp2poly" + degree,
                            "shifted softmax, exp by exp2_poly<" + degree +
                                ">: Cody-Waite reduction, degree-" + degree +
                                " minimax polynomial for 2^f (exp lab)",
                            MaskedRowPolicy::nan, {std::move(decl)}, core);
}

Kernel expfold_kernel() {
  OpDecl decl{Op::softmax, expfold_contract()};
  Kernel k = softmax_only_f32("shifted_expfold",
                              "FlashAttention-2's fold: P = exp2f(fma(x, s log2 e, -fl(max x * s log2 e))), "
                              "s = 1/T folded into the scale, y = P / sum P; a row with |max x * s log2 e| >= "
                              "2^28 shifted by the max first (exp lab)",
                              std::move(decl));
  k.compute = single_operand([kname = k.name](Op op, const void* xv, void* yv, std::int64_t rows,
                                              std::int64_t cols, double temperature) {
    if (op != Op::softmax) throw std::invalid_argument(kname + " does not provide " + std::string(name(op)));
    // FlashAttention's softmax_scale: a float (the caller's double rounded
    // once), here 1/T in double rounded to f32; T itself is never rounded.
    const float s = static_cast<float>(1.0 / temperature);
    const auto* x = static_cast<const float*>(xv);
    auto* y = static_cast<float*>(yv);
    const auto n = static_cast<std::size_t>(cols);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::span<float> row(y + r * cols, n);
      if (x != y) std::copy_n(x + r * cols, n, row.begin());
      shifted_expfold_row(row, s);
    }
  });
  return k;
}

Kernel cuda_model_kernel() {
  Core<float> core = [](Op, std::span<float> zy) {
    shifted_softmax_with(zy, [](float d) { return exp_lab::expf_cuda_model(d); });
  };
  return make_kernel<float>("shifted_expf_cuda_model_f32", "shifted_expf_cuda_model",
                            "shifted softmax, exp by a model of CUDA's __expf under --use_fast_math: "
                            "exp2f(fl(z log2e_f32)), exps below 2^-126 flushed to +0 (exp lab)",
                            MaskedRowPolicy::nan, {{Op::softmax, cuda_model_contract()}}, core);
}

}  // namespace

std::vector<Kernel> exp_lab_softmax_kernels() {
  return {expfold_kernel(),      exp2poly_kernel<2>(), exp2poly_kernel<3>(),
          exp2poly_kernel<4>(),  exp2poly_kernel<5>(), cuda_model_kernel()};
}

bool is_exp_lab_softmax(const Kernel& k) {
  return std::find(std::begin(exp_lab_algorithms), std::end(exp_lab_algorithms), k.algorithm) !=
         std::end(exp_lab_algorithms);
}

void shifted_exp2poly_softmax_row(int degree, std::span<float> zy) {
  switch (degree) {
    case 2: return shifted_softmax_with(zy, [](float d) { return exp_lab::exp2_poly<2>(d); });
    case 3: return shifted_softmax_with(zy, [](float d) { return exp_lab::exp2_poly<3>(d); });
    case 4: return shifted_softmax_with(zy, [](float d) { return exp_lab::exp2_poly<4>(d); });
    case 5: return shifted_softmax_with(zy, [](float d) { return exp_lab::exp2_poly<5>(d); });
    default: throw std::invalid_argument("exp2_poly degree " + std::to_string(degree) + " is not in 2..5");
  }
}

}  // namespace softcheck::kernels
