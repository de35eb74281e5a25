// shifted: the three-pass max-shifted softmax (REFERENCE.md, "shifted
// softmax" with the max term kept in the sum):
//   a = max_i z_i;  e_i = exp(z_i - a);  y_j = e_j / sum_i e_i
//   log-softmax_j = (z_j - a) - log(sum_i e_i)
//   lse = a + log(sum_i e_i)   (two passes; "shifted LSE" with the max term kept)
#include "kernel_util.hpp"

namespace softcheck::kernels {
namespace {

template <class T>
void shifted_core(Op op, std::span<T> zy) {
  const T a = reduce_max<T>(zy);  // -inf for a fully masked row: -inf - -inf = NaN below
  if (op == Op::softmax) {
    exp_shifted(zy, a);         // e_i = exp(z_i - a)
    divide_by(zy, sum<T>(zy));  // y_j = e_j / sum e
  } else {
    log_softmax_shifted(zy, a, std::log(sum_exp_shifted<T>(zy, a)));
  }
}

// lse, the two-pass shifted form: a + log(sum_i exp(z_i - a)).
template <class T>
T shifted_lse(Op, std::span<T> z) {
  const T a = reduce_max<T>(z);
  return lse_from_shift(a, std::log(sum_exp_shifted<T>(z, a)), a == minus_inf<T>);
}

// Softmax contract, first order in u (Blanchard-Higham-Higham "shifted
// softmax" n + 2 + 2R, made componentwise):
//  - fl(z_j - a) = (z_j - a)(1 + d), |d| <= u: an absolute argument error
//    u |z_j - a| <= uR, i.e. a relative error uR of exp(z_j - a);
//  - exp itself: glibc expf 0.502 ulp, exp (double) about 0.51 ulp
//    (REFERENCE.md "exp accuracy"); an ulp of v is up to 2u|v|, so 1.02u
//    relative covers both formats; each e_j carries (1.02 + R)u;
//  - S = sum e_i by recursive summation: (n - 1)u plus the terms' own
//    (1.02 + R)u;
//  - the division: u.
//  Total relative error of y_j: (1.02 + R) + (n - 1 + 1.02 + R) + 1
//    = n + 2.04 + 2R <= 3 + 1n + 2R (in units of u; the spare 0.96u is
//    what lowp_shifted.cpp's uncounted entries use).
//  - temperature: fl(T) and fl(x / T) give |dz_i| <= 2u|z_i| <= 2uM, and
//    softmax moves by dy_j / y_j = dz_j - sum_i y_i dz_i, at most 4uM: t = 4.
//  - relative error -> ULP error: ulp(v) > u|v|, so ulps <= rel / u.
//  - subnormal outputs: absolute error <= 1 denorm_min (rounding of e_j
//    and of the quotient, S >= 1) plus the relative part, which in ulps of
//    denorm_min is at most half the relative bound: covered since a >= 1.
//  Entries with z_j - a < -L_T (not "contributing", see RowShape) have an
//  exact value that rounds to 0 and a computed one <= denorm_min: <= 1 ulp.
Contract softmax_contract() {
  return declared_contract(3, 1, 2, 0, 4,
                           "shifted softmax (Blanchard-Higham-Higham n + 2 + 2R): z_j - a "
                           "costs uR in exp's argument, exp 0.51 ulp <= 1.02u, sum (n-1)u plus the "
                           "terms' errors, division u: n + 2.04 + 2R; temperature: "
                           "|dz| <= 2u|z| moves softmax by <= 4uM; ulp(v) > u|v|");
}

// Lse contract, absolute error in units of u (the op's metric), first order:
//  - S = sum_i exp(z_i - a) in [1, n]: each term (1.02 + R)u relative
//    (exp and its argument z_i - a), n - 1 additions: S(1 + e) with
//    |e| <= (n + 0.02 + R)u, so log S moves by at most |e| (absolute);
//  - log's own rounding (glibc, < 1 ulp <= 2u relative) on log S <= log n:
//    2u log n <= 0.74nu (log n <= n/e);
//  - a + log S rounds once: u|lse| <= u(M + log n) <= u(M + 0.37n)
//    (a is a contributing entry, so |a| <= M).
//  Total 2.11n + 0.02 + R + M <= 3n + R + M.
//  - temperature: |dz_i| <= 2u|z_i| <= 2uM moves lse by sum_i p_i dz_i, at
//    most 2uM: t = 2.
Contract lse_contract() {
  return declared_contract(0, 3, 1, 1, 2,
                           "absolute, units of u: S = sum exp(z_i - a) has relative error (n + 0.02 + R)u, "
                           "which log turns into absolute; log 2u log n <= 0.74nu; a + log S rounds by "
                           "u(M + log n): 2.11n + R + M; temperature 2uM");
}

}  // namespace

KernelFamily shifted_family() {
  return {
      .algorithm = "shifted",
      .description = "three passes: a = max z, e = exp(z - a), y = e / sum e; log-softmax "
                     "(z - a) - log(sum e)",
      // A fully masked row: a = -inf and z_i - a = -inf - -inf = NaN.
      .masked_policy = MaskedRowPolicy::nan,
      .ops = {{Op::softmax, softmax_contract()},
              {Op::log_softmax,
               no_contract("log(sum e) with sum e = 1 + s', s' < u, rounds to log(1) = 0 "
                           "while the exact value is ~ -s': the dominant entry's "
                           "log-softmax (~ -s') comes out as exactly 0, an unbounded ULP "
                           "error (Blanchard-Higham-Higham's reason for log1p, see "
                           "shifted_log1p)")},
              {Op::lse, lse_contract()}},
      .f32 = shifted_core<float>,
      .f64 = shifted_core<double>,
      .reduce_f32 = shifted_lse<float>,
      .reduce_f64 = shifted_lse<double>,
  };
}

}  // namespace softcheck::kernels
