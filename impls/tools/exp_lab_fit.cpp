// The minimax fit of 2^f on [-1/2, 1/2] for exp2_poly (docs/exp-lab.md, "The
// polynomials"), and the error budget of exp2_poly derived from the f32
// coefficients. Long double (64-bit significand, 2^-64 relative) is ample:
// the errors fitted are 1e-3 .. 1e-7, the arithmetic's own error ~1e-19, and
// exp2l is within an ulp of long double.
#include "exp_lab_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>

namespace softcheck::exp_lab {

namespace {

constexpr long double half_width = 0.5L;  // the reduced interval [-1/2, 1/2]
// exp2_poly's reduced argument reaches 1/2 + 2^-17 + 2^-25 (exp_lab.hpp):
// the f32 coefficients are measured on |f| <= 1/2 + 2^-16.
constexpr long double widened_half_width = 0.5L + 0x1p-16L;
constexpr long double u = 0x1p-24L;  // f32 unit roundoff

// p(f) = 1 + c_1 f + ... + c_d f^d by Horner (exact up to long double's 2^-64).
long double poly(const std::vector<long double>& c, long double f) {
  long double p = 0;
  for (std::size_t k = c.size(); k-- > 0;) p = (p + c[k]) * f;
  return p + 1;
}

// The relative error p(f) / 2^f - 1.
long double relative_error(const std::vector<long double>& c, long double f) {
  return poly(c, f) * std::exp2l(-f) - 1;
}

// Solves A x = b (n x n, row-major) by Gaussian elimination with partial pivoting.
std::vector<long double> solve(std::vector<long double> A, std::vector<long double> b) {
  const std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::fabs(A[r * n + col]) > std::fabs(A[pivot * n + col])) pivot = r;
    if (A[pivot * n + col] == 0) throw std::runtime_error("exp_lab fit: singular linear system");
    for (std::size_t k = 0; k < n; ++k) std::swap(A[col * n + k], A[pivot * n + k]);
    std::swap(b[col], b[pivot]);
    for (std::size_t r = col + 1; r < n; ++r) {
      const long double factor = A[r * n + col] / A[col * n + col];
      for (std::size_t k = col; k < n; ++k) A[r * n + k] -= factor * A[col * n + k];
      b[r] -= factor * b[col];
    }
  }
  std::vector<long double> x(n);
  for (std::size_t r = n; r-- > 0;) {
    long double s = b[r];
    for (std::size_t k = r + 1; k < n; ++k) s -= A[r * n + k] * x[k];
    x[r] = s / A[r * n + r];
  }
  return x;
}

// The point of [lo, hi] where sign * error is largest (|error| for sign 0),
// by golden-section search: [lo, hi] brackets one local maximum.
std::pair<long double, long double> refine_maximum(const std::vector<long double>& c, long double lo, long double hi,
                                                   long double sign = 0) {
  const auto height = [&](long double f) {
    const long double e = relative_error(c, f);
    return sign == 0 ? std::fabs(e) : sign * e;
  };
  const long double g = (std::sqrt(5.0L) - 1) / 2;
  long double a = lo, b = hi;
  long double x1 = b - g * (b - a), x2 = a + g * (b - a);
  long double f1 = height(x1), f2 = height(x2);
  for (int i = 0; i < 100 && b - a > 1e-18L; ++i) {
    if (f1 < f2) {
      a = x1, x1 = x2, f1 = f2;
      x2 = a + g * (b - a), f2 = height(x2);
    } else {
      b = x2, x2 = x1, f2 = f1;
      x1 = b - g * (b - a), f1 = height(x1);
    }
  }
  // The ends themselves may be the maximum (the interval's ends).
  long double best = f1 > f2 ? x1 : x2;
  for (long double end : {lo, hi})
    if (height(end) > height(best)) best = end;
  return {best, relative_error(c, best)};
}

// The local maxima of |error| on [-w, w] (ends included), located on a grid of
// `points` points and refined by golden-section search between the grid
// neighbours: (f, error(f)) in increasing f.
std::vector<std::pair<long double, long double>> local_maxima(const std::vector<long double>& c, long double w,
                                                              int points) {
  std::vector<long double> x(points), e(points);
  for (int i = 0; i < points; ++i) {
    x[i] = -w + 2 * w * i / (points - 1);
    e[i] = std::fabs(relative_error(c, x[i]));
  }
  std::vector<std::pair<long double, long double>> maxima;
  for (int i = 0; i < points; ++i) {
    const bool left = i == 0 || e[i] >= e[i - 1];
    const bool right = i == points - 1 || e[i] > e[i + 1];
    if (!left || !right || e[i] == 0) continue;
    maxima.push_back(refine_maximum(c, x[std::max(i - 1, 0)], x[std::min(i + 1, points - 1)]));
  }
  return maxima;
}

// max |error| on [-w, w]: the largest refined local maximum.
long double max_relative_error(const std::vector<long double>& c, long double w, int points) {
  long double m = 0;
  for (const auto& [x, e] : local_maxima(c, w, points)) m = std::max(m, std::fabs(e));
  return m;
}

}  // namespace

Exp2Fit fit_exp2_minimax(int degree) {
  if (degree < 2 || degree > 5) throw std::invalid_argument("fit_exp2_minimax: degree must be in 2..5");
  const std::size_t d = static_cast<std::size_t>(degree);
  Exp2Fit fit;
  fit.degree = degree;

  // 1. Lawson's algorithm (iteratively reweighted least squares; it converges
  // to the minimax on the grid for any linear basis): the basis f^k 2^-f,
  // k = 1..d, all 0 at f = 0, is not a Haar system, so the classical
  // alternation need not hold and a plain Remez exchange can settle on a
  // levelled but worse polynomial (for odd degrees the best error touches 0
  // at f = 0 without changing sign). Lawson finds the right extremal set.
  constexpr int grid = 2001;
  std::vector<long double> x(grid), target(grid), weight(grid, 1.0L / grid);
  std::vector<long double> basis(grid * d);
  for (int i = 0; i < grid; ++i) {
    x[i] = -half_width * std::cos(std::numbers::pi_v<long double> * i / (grid - 1));  // Chebyshev-dense ends
    const long double scale = std::exp2l(-x[i]);
    target[i] = 1 - scale;  // E = sum c_k x^k 2^-x - (1 - 2^-x)
    long double power = 1;
    for (std::size_t k = 0; k < d; ++k) basis[i * d + k] = (power *= x[i]) * scale;
  }
  std::vector<long double> c(d);
  for (int iteration = 0; iteration < 1500; ++iteration) {
    std::vector<long double> normal(d * d, 0), rhs(d, 0);
    for (int i = 0; i < grid; ++i)
      for (std::size_t a = 0; a < d; ++a) {
        rhs[a] += weight[i] * basis[i * d + a] * target[i];
        for (std::size_t b = 0; b < d; ++b) normal[a * d + b] += weight[i] * basis[i * d + a] * basis[i * d + b];
      }
    c = solve(normal, rhs);
    long double sum = 0;
    for (int i = 0; i < grid; ++i) sum += weight[i] *= std::fabs(relative_error(c, x[i]));
    for (long double& w : weight) w /= sum;
  }
  const long double lawson_error = max_relative_error(c, half_width, 20001);

  // 2. Polish: the d + 1 largest local maxima of |E| with their signs s_i,
  // then exchanges that solve E(x_i) = s_i h and move each x_i to the nearest
  // local maximum of s_i E, until max |E| is h to 1e-12 (quadratic
  // convergence once the extremal set is right). Kept only if it improves.
  std::vector<std::pair<long double, long double>> extrema = local_maxima(c, half_width, 20001);
  std::sort(extrema.begin(), extrema.end(),
            [](const auto& a, const auto& b) { return std::fabs(a.second) > std::fabs(b.second); });
  if (extrema.size() > d + 1) extrema.resize(d + 1);
  std::sort(extrema.begin(), extrema.end());
  std::vector<long double> polished = c;
  long double polished_error = lawson_error;
  if (extrema.size() == d + 1) {
    std::vector<long double> ref(d + 1), sign(d + 1), trial(d);
    for (std::size_t i = 0; i <= d; ++i) ref[i] = extrema[i].first, sign[i] = extrema[i].second < 0 ? -1 : 1;
    for (int iteration = 1; iteration <= 30; ++iteration) {
      std::vector<long double> A((d + 1) * (d + 1)), b(d + 1);
      for (std::size_t i = 0; i <= d; ++i) {
        const long double scale = std::exp2l(-ref[i]);
        long double power = 1;
        for (std::size_t k = 0; k < d; ++k) A[i * (d + 1) + k] = (power *= ref[i]) * scale;
        A[i * (d + 1) + d] = -sign[i];
        b[i] = 1 - scale;
      }
      const std::vector<long double> s = solve(A, b);
      std::copy(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(d), trial.begin());
      const long double h = std::fabs(s[d]);
      for (std::size_t i = 0; i <= d; ++i) {
        const long double lo = i == 0 ? -half_width : (ref[i - 1] + ref[i]) / 2;
        const long double hi = i == d ? half_width : (ref[i] + ref[i + 1]) / 2;
        ref[i] = refine_maximum(trial, lo, hi, sign[i]).first;
      }
      const long double worst = max_relative_error(trial, half_width, 20001);
      if (worst < polished_error) polished = trial, polished_error = worst, fit.iterations = iteration;
      if (worst - h <= 1e-12L * h) break;
    }
  }
  fit.minimax = polished;
  fit.minimax_error = polished_error;
  fit.coefficients.assign(1, 1.0f);
  std::vector<long double> rounded(d);
  for (std::size_t k = 0; k < d; ++k) {
    fit.coefficients.push_back(static_cast<float>(polished[k]));
    rounded[k] = fit.coefficients.back();
  }
  fit.rounded_error = max_relative_error(rounded, widened_half_width, (1 << 20) + 1);
  return fit;
}

Exp2PolyErrorBudget exp2_poly_error_budget(const std::vector<float>& coefficients, long double rounded_error) {
  if (coefficients.size() < 3 || coefficients.front() != 1.0f)
    throw std::invalid_argument("exp2_poly_error_budget: coefficients c_0 = 1, c_1 .. c_d with d >= 2");
  const std::size_t d = coefficients.size() - 1;
  const long double X = widened_half_width;
  Exp2PolyErrorBudget b;
  b.polynomial = static_cast<double>(rounded_error);
  // f = z log2 e - n within Delta: the last addition's half ulp (|f| < 1),
  // the rounding of s = fma(z, L_lo, t_lo) (|s| <= 104 * 2^-25.6 + 2^-17 <
  // 2^-16, rounded within 2^-40), L_lo's own rounding times |z| <= 104
  // (|L - L_hi - L_lo| <= 2^-50: 104 * 2^-50 < 2^-43). 2^Delta - 1 relative.
  const long double delta = 0x1p-25L + 0x1p-40L + 0x1p-43L;
  b.reduction = static_cast<double>(std::expm1(delta * std::numbers::ln2_v<long double>));
  // Running error bound of the inner Horner steps a_k = fl(a_{k+1} f + c_k),
  // k = d-1 .. 1, a_d = c_d exact: e_k (1 - u) <= X e_{k+1} + u A_k with
  // A_k = sum_{j >= k} |c_j| X^(j-k) >= |a_k|. The last step w = a_1 f + 1 is
  // rounded once more (the ulp bound's 1/2): before it |w - p(f)| <= |f| e_1,
  // relative to 2^f at most X 2^X e_1.
  long double e = 0;
  for (std::size_t k = d - 1; k >= 1; --k) {
    long double A = 0, power = 1;
    for (std::size_t j = k; j <= d; ++j, power *= X) A += std::fabs(static_cast<long double>(coefficients[j])) * power;
    e = (X * e + u * A) / (1 - u);
  }
  b.horner = static_cast<double>(X * std::exp2l(X) * e);
  const long double R = (1 + static_cast<long double>(b.polynomial)) * (1 + static_cast<long double>(b.reduction)) *
                            (1 + static_cast<long double>(b.horner)) -
                        1;
  b.total = static_cast<double>(R);
  // Normal results: 1/2 ulp for the last rounding plus R (e^z / ulp(e^z) <
  // 2^24); when R > 2^-24 the computed 2^f can cross 1 from below, where the
  // last rounding's half ulp is a whole ulp of the exact value: 1 instead of
  // 1/2. Subnormal results: 1/2 ulp for the scaling's rounding, 1/4 for the
  // f32 rounding before it (2^-24 2^n <= 2^-151), R e^z / 2^-149 < 2^23 R.
  const long double normal = (R > u ? 1.0L : 0.5L) + 0x1p24L * R;
  const long double subnormal = 0.75L + 0x1p23L * R;
  b.ulp_bound = static_cast<double>(std::max(normal, subnormal));
  return b;
}

double round_up_3_digits(double x) {
  if (!(x > 0)) return x;
  char text[64];
  const double magnitude = std::pow(10.0, std::floor(std::log10(x)) - 2);
  const double up = std::ceil(x / magnitude) * magnitude;  // 3 significant digits, up
  std::snprintf(text, sizeof text, "%.2e", up);            // printed as stored
  const double parsed = std::strtod(text, nullptr);
  return parsed >= x ? parsed : std::nextafter(parsed, INFINITY);
}

std::string exp2_fit_table() {
  std::string out;
  char line[256];
  out += "// exp_lab_fit (impls/tools/exp_lab_fit.cpp): relative minimax of 2^f on [-1/2, 1/2],\n"
         "// c_0 = 1, Lawson then a Remez polish in long double, coefficients rounded to nearest f32.\n";
  std::string accuracy = "constexpr Exp2PolyAccuracy exp2_poly_accuracy_table[] = {\n";
  for (int degree = 2; degree <= 5; ++degree) {
    const Exp2Fit fit = fit_exp2_minimax(degree);
    const Exp2PolyErrorBudget b = exp2_poly_error_budget(fit.coefficients, fit.rounded_error);
    std::snprintf(line, sizeof line,
                  "// degree %d: minimax %.6Le (%d polishing exchanges); f32 coefficients %.6Le; reduction %.3e, "
                  "Horner %.3e; R %.4e\n",
                  degree, fit.minimax_error, fit.iterations, fit.rounded_error, b.reduction, b.horner, b.total);
    out += line;
    std::snprintf(line, sizeof line, "constexpr float exp2_poly%d_coefficients[] = {", degree);
    out += line;
    for (std::size_t k = 0; k < fit.coefficients.size(); ++k) {
      std::snprintf(line, sizeof line, "%s%af", k == 0 ? "" : ", ", static_cast<double>(fit.coefficients[k]));
      out += line;
    }
    out += "};\n";
    std::snprintf(line, sizeof line, "    {%.2e, %.2e},  // degree %d\n",
                  round_up_3_digits(static_cast<double>(fit.rounded_error)), round_up_3_digits(b.ulp_bound), degree);
    accuracy += line;
  }
  return out + accuracy + "};\n";
}

}  // namespace softcheck::exp_lab
