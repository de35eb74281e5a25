// The bounds of sparse_bounds.hpp; derivations: the contract comments of
// sparsemax.cpp, entmax15.cpp, entmax_bisect.cpp, topk_softmax.cpp,
// threshold_softmax.cpp and docs/sparse.md, "Error bounds".
#include "softcheck/sparse_bounds.hpp"

#include <cmath>
#include <limits>
#include <string>

namespace softcheck {

namespace {

// Largest |x_i / T| over the finite entries (the temperature term's M).
double max_abs_scaled(std::span<const double> x, double temperature) {
  double m = 0;
  for (double v : x)
    if (std::isfinite(v)) m = std::max(m, std::fabs(v / temperature));
  return m;
}

// K of an entmax_bisect_a<alpha>_i<K> kernel (its registered algorithm name).
int bisection_iterations(const Kernel& k) {
  const auto at = k.algorithm.rfind("_i");
  if (k.algorithm.rfind("entmax_bisect", 0) != 0 || at == std::string::npos) return -1;
  return std::stoi(k.algorithm.substr(at + 2));
}

}  // namespace

double sparse_abs_bound(const Kernel& k, const OpDecl& d, std::span<const double> x, double temperature) {
  const double u = unit_roundoff(k.format);
  const double n = static_cast<double>(x.size());
  // fl(x / T): |dz| <= 2uM (docs/kernels.md, "Temperature"); sparsemax and the
  // entmax maps move by at most 2 max|dz| (|dp_i| <= |dz_i| + |dtau|, |dtau| <= max|dz|).
  const double temp = temperature == 1 ? 0 : 4 * max_abs_scaled(x, temperature);
  switch (d.op) {
    case Op::sparsemax: return (n + 5 + temp) * u;           // sparsemax.cpp
    case Op::entmax15: return (4 * n * n + 4 + temp) * u;    // entmax15.cpp
    case Op::entmax: {                                        // entmax_bisect.cpp
      const int K = bisection_iterations(k);
      const double a = d.params.alpha - 1;
      if (K < 0 || !(a > 0) || a > 1) return std::numeric_limits<double>::infinity();  // alpha <= 2 only
      return (n + 1) / a * std::ldexp(1.0, -K) + (4 * n + 8 + temp) / a * u;
    }
    // Shifted softmax on the kept entries (shifted.cpp), made absolute: with
    // d_i = a - z_i >= 0 and S = sum e_i >= 1, y_j carries (1.02 + d_j)u from
    // its own exp (0.51 ulp <= 1.02u, shifted.cpp), (n - 1)u + sum_i e_i
    // (1.02 + d_i)u / S from the sum and u from the division; y_j d_j =
    // e^-d_j d_j / S <= 1/e and sum_i e_i d_i / S <= n/e, so |y_j - p_j| <=
    // (n + 2.04 + n/e) u + u/e <= (1.5 n + 2.41) u (p <= 1); the rest of 4
    // is a safety margin.
    case Op::topk_softmax:
    case Op::threshold_softmax: return (1.5 * n + 4 + temp) * u;
    default: break;  // the dense ops have ULP contracts (Contract::bound_ulps)
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace softcheck
