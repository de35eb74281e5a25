// The fit behind exp2_poly's coefficients (softcheck/exp_lab.hpp): the
// relative-error minimax polynomial for 2^f on [-1/2, 1/2] with its constant
// term pinned to 1 (Lawson's algorithm, then a Remez polish, in long
// double), rounded to f32; and the error bound of exp2_poly<degree> derived
// from those f32 coefficients (docs/exp-lab.md, "Error bounds").
// `exp_lab_fit` prints the tables impls/src/exp_lab.cpp stores;
// impls.ExpLabFit.* check they still agree.
#pragma once

#include <string>
#include <vector>

namespace softcheck::exp_lab {

struct Exp2Fit {
  int degree = 0;
  std::vector<long double> minimax;  // c_1 .. c_degree of the real minimax polynomial (c_0 = 1)
  long double minimax_error = 0;     // its levelled relative error |h|
  int iterations = 0;                // polishing exchanges that improved on Lawson (0: none did)
  std::vector<float> coefficients;   // c_0 = 1, c_1 .. c_degree rounded to nearest f32
  // max |p(f) / 2^f - 1| with the f32 coefficients, evaluated exactly (long
  // double, 2^-64 relative, against exp2l) on 2^20 + 1 points of the widened
  // interval |f| <= 1/2 + 2^-16 and refined by golden-section search around
  // each local maximum.
  long double rounded_error = 0;
};

// degree in 2..5 (std::invalid_argument otherwise).
Exp2Fit fit_exp2_minimax(int degree);

// The parts of exp2_poly's relative error before its final rounding (each a
// relative error of the value 2^f' that the last fma rounds; docs/exp-lab.md):
struct Exp2PolyErrorBudget {
  double polynomial = 0;  // rounded_error: the f32 polynomial against 2^f
  double reduction = 0;   // (2^Delta - 1), Delta = 2^-25 + 2^-40 + 2^-43.3: f against z log2 e - n
  double horner = 0;      // |f| e_1 / 2^f: the inner Horner roundings, e_1 by a running error bound
  double total = 0;       // R, the sum (with the products of the parts)
  // f32 ulps of e^z: max(1/2 + 2^24 R, 3/4 + 2^23 R) (normal results; the
  // subnormal results' double rounding through the scaling), for every z <= 0.
  double ulp_bound = 0;
};
Exp2PolyErrorBudget exp2_poly_error_budget(const std::vector<float>& coefficients, long double rounded_error);

// x rounded up to 3 significant decimal digits (how the stored bounds are kept).
double round_up_3_digits(double x);

// The C++ table exp_lab.cpp stores for degrees 2..5, as exp_lab_fit prints it.
std::string exp2_fit_table();

}  // namespace softcheck::exp_lab
