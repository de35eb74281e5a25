// entmax_bisect: alpha-entmax for any alpha > 1 by bisection on tau, as in
// deep-spin/entmax's EntmaxBisectFunction (Peters, Niculae & Martins 2019;
// REFERENCE.md, "Entmax family"), with the iteration count a parameter:
//   X_i = (z_i - max z) (alpha - 1)   (max X = 0; shift invariance)
//   tau_lo = -1, tau_hi = -(1/n)^(alpha - 1)      (n = finite entries)
//   f(tau) = sum_i [X_i - tau]_+^(1/(alpha - 1)) - 1, f(tau_lo) >= 0 >= f(tau_hi)
//   repeat `iterations` times: dm /= 2; tau_m = tau_lo + dm; p = [X - tau_m]_+^(1/(alpha-1));
//     if f(tau_m) * f(tau_lo) >= 0: tau_lo = tau_m
//   y = p / sum p   (the reference's ensure_sum_one)
#include <string>

#include "sparse_util.hpp"

namespace softcheck::kernels {
namespace {

template <class T>
void entmax_bisect_core(double alpha, int iterations, std::span<T> z) {
  const T a = reduce_max<T>(z);
  if (zero_if_fully_masked(z, a)) return;
  const T am1 = static_cast<T>(alpha - 1);
  const T inv = T(1) / am1;
  std::size_t n = 0;
  for (T& v : z) {
    n += std::isfinite(v) ? 1 : 0;
    v = (v - a) * am1;
  }
  auto p_of = [&](T x, T tau) {
    const T d = x - tau;
    return d > T(0) ? std::pow(d, inv) : T(0);
  };
  auto f_of = [&](T tau) {
    T s = 0;
    for (T x : z) s += p_of(x, tau);
    return s - T(1);
  };
  T tau_lo = T(-1);
  const T tau_hi = -std::pow(T(1) / static_cast<T>(n), am1);
  const T f_lo = f_of(tau_lo);
  T dm = tau_hi - tau_lo;
  T tau_m = tau_lo;
  for (int it = 0; it < iterations; ++it) {
    dm /= T(2);
    tau_m = tau_lo + dm;
    if (f_of(tau_m) * f_lo >= T(0)) tau_lo = tau_m;
  }
  T s = 0;
  for (T& v : z) {
    v = p_of(v, tau_m);
    s += v;
  }
  divide_by(z, s);
}

// No componentwise ULP contract: after K halvings tau is known to within
// 2^-K (the bracket starts at width <= 1), and p_i = (X_i - tau)^(1/(alpha-1))
// moves by (1/(alpha-1)) p_i^(2-alpha) |d tau| (first order), which relative to
// p_i grows without bound as p_i -> 0 near the threshold; the normalisation
// y = p / sum p removes the common part. The error against iterations is
// measured (the report shows entmax_bisect_*_iK for several K), the floor is
// the pow/sum rounding, ~ (n + 2) u / (alpha - 1) absolute (docs/sparse.md).
Contract bisect_contract(int iterations) {
  return no_contract("bisection: |tau error| <= 2^-" + std::to_string(iterations) +
                     " after that many halvings; componentwise ULPs unbounded near the "
                     "threshold (docs/sparse.md)");
}

// "1.5" -> "1p5": kernel names stay [A-Za-z0-9_].
std::string alpha_label(double alpha) {
  std::string s = std::to_string(alpha);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  for (char& c : s)
    if (c == '.') c = 'p';
  return s;
}

}  // namespace

KernelFamily entmax_bisect_family(double alpha, int iterations) {
  if (!std::isfinite(alpha) || !(alpha > 1))
    throw std::invalid_argument("entmax_bisect: alpha must be finite and > 1, got " + std::to_string(alpha));
  if (iterations < 0) throw std::invalid_argument("entmax_bisect: iterations must be >= 0");
  OpDecl decl{Op::entmax, bisect_contract(iterations)};
  decl.params.alpha = alpha;
  return {
      .algorithm = "entmax_bisect_a" + alpha_label(alpha) + "_i" + std::to_string(iterations),
      .description = "alpha-entmax, alpha = " + alpha_label(alpha) + ", by " +
                     std::to_string(iterations) +
                     " bisection steps on tau (deep-spin/entmax's EntmaxBisect)",
      .masked_policy = MaskedRowPolicy::zeros,
      .ops = {decl},
      .f32 = [alpha, iterations](Op, std::span<float> z) { entmax_bisect_core<float>(alpha, iterations, z); },
      .f64 = [alpha, iterations](Op, std::span<double> z) { entmax_bisect_core<double>(alpha, iterations, z); },
  };
}

}  // namespace softcheck::kernels
