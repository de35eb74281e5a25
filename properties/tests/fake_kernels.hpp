// Test-only kernels of the property unit tests: a long-double reference that
// must pass every property, and one deliberately wrong variant per property
// that the property must catch (so no property is a test that cannot fail).
#pragma once

#include <string>
#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck::props::testing {

// Reference in format f: max-shifted softmax / log1p log-softmax evaluated in
// long double and rounded to f; masked rows give zeros; both ops with a
// contract. f16 and bf16 exercise the 16-bit storage paths of the runner.
const Kernel& reference_kernel(Format f = Format::f64);
// The f64 reference declaring the `uniform` masked-row policy; `off_by` ulps
// are added to its 1/n (-ln n) on fully masked rows (0: a correct kernel).
Kernel uniform_policy_kernel(int off_by);
// The reference in format f (f64, f32 or f16) declaring no contract: it
// claims the floor, judged by the generic tolerance, and must pass it.
const Kernel& no_contract_reference_kernel(Format f = Format::f64);
// Copies x to y (T ignored): checks the runner's storage conversions.
Kernel identity_kernel(Format f);

// Reference lse and entropy in format f (long double, one final rounding;
// zeros policy: lse -inf, entropy 0), both with a contract in units of u.
const Kernel& scalar_reference_kernel(Format f = Format::f64);
// softmax_lse from the long-double reference row and lse, each rounded once.
const Kernel& fused_reference_kernel(Format f = Format::f64);

struct Fake {
  std::string property;  // the property that must catch it
  Op op;
  Kernel kernel;
};
// One wrong kernel per property (f64, claiming the reference's contract).
const std::vector<Fake>& fakes();

}  // namespace softcheck::props::testing
