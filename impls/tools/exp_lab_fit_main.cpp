// exp_lab_fit: prints the coefficient and accuracy tables impls/src/exp_lab.cpp
// stores for exp2_poly (docs/exp-lab.md, "The polynomials"). Deterministic;
// impls.ExpLabFit.StoredCoefficientsAreTheFit checks the stored ones agree.
#include <cstdio>
#include <exception>

#include "exp_lab_fit.hpp"

int main() {
  try {
    std::fputs(softcheck::exp_lab::exp2_fit_table().c_str(), stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exp_lab_fit: %s\n", e.what());
    return 1;
  }
  return 0;
}
