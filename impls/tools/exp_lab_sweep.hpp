// The exp lab's exhaustive sweep (docs/exp-lab.md, "The sweep"): every f32
// input of a domain (or every K-th), each primitive's result against the exact
// exponential, with a double-precision filter and MPFR certification of every
// figure the filter cannot decide. The engine of `exp_lab_sweep` and of the
// impls.ExpLabSweep.* tests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace softcheck::exp_lab {

// The inputs: every f32 x in [x_lo, x_hi] (ascending; +0 and -0 once, as 0),
// every `stride`-th from x_lo, and the exact value e^(s (x - m)). The z
// domain is m = 0, s = 1, [underflow_threshold, 0]: e^z over every z <= 0
// whose e^z does not round to 0.
struct SweepDomain {
  float m = 0, s = 1;
  float x_lo = 0, x_hi = 0;
  std::uint64_t stride = 1;
};
// [underflow_threshold, 0], m = 0, s = 1.
SweepDomain z_domain(std::uint64_t stride);
// The x <= m (s > 0) whose e^(s (x - m)) >= 2^-150: x_lo is the smallest f32
// with s (x - m) >= -150 ln 2 (MPFR, exactly), x_hi = m.
SweepDomain fold_domain(float m, float s, std::uint64_t stride);

struct SweepPrimitive {
  std::string name;
  std::string description;
  std::function<float(float)> compute;  // of the domain's input x
};
// expf_glibc, exp_fold_fma (s = 1, m = 0), exp2_poly2..5, expf_cuda_model.
std::vector<SweepPrimitive> z_domain_primitives();
// exp_fold_fma(x, m, s).
std::vector<SweepPrimitive> fold_domain_primitives(float m, float s);
// exp2_poly5 with one coefficient mistyped (c_3: 0x1.c6b752p-5 -> 0x1.c6b352p-5,
// one hex digit): the planted error the degree-5 bound must catch.
SweepPrimitive planted_coefficient_primitive();

// Bands of z = s (x - m), by |z|: [0, 1), [1, 2), [2, 4), ..., [32, 64),
// [64, 126 ln 2) and the subnormal band [126 ln 2, 150 ln 2] where the exact
// value is below 2^-126.
inline constexpr int band_count = 9;
std::string band_name(int band);
bool band_is_subnormal(int band);

struct MaxError {
  double ulp = 0;          // certified by MPFR (unless `certified` is false)
  float at = 0;            // the input x where it occurs (the smallest such x on a tie)
  float result = 0;        // the primitive's result there
  double exact = 0;        // the exact value rounded to double
  // true: `ulp` is the band's exact maximum (every input within 2
  // ulp_tolerance of the filter's largest recomputed with MPFR). false: it is
  // within 2 ulp_tolerance of it, where more inputs than the sweep recomputes
  // (4096) tie within the tolerance, or every filtered error of the band is
  // below 2^-16 ulp (then `ulp` is the filter's largest).
  bool certified = true;
};

struct ErrorStats {
  std::uint64_t inputs = 0;
  MaxError max;
  double mean_ulp = 0;               // from the filter: within ulp_tolerance of exact
  std::uint64_t not_correctly_rounded = 0;  // result != the correctly rounded e^(...) (certified)
  std::uint64_t flushes_to_zero = 0;        // result 0 where the correctly rounded value is not
};

struct PrimitiveResult {
  std::string name, description;
  ErrorStats all;
  ErrorStats bands[band_count];
  double max_ulp_normal_results() const;  // max over the bands but the subnormal one (certified)
};

struct SweepResult {
  SweepDomain domain;
  std::uint64_t inputs = 0;
  // The filter: exp in double of s (x - m) in double, within filter_relative_error
  // of the exact e^(s (x - m)); a ulp error from it is within ulp_tolerance.
  double filter_relative_error = 0;
  std::uint64_t mpfr_inline = 0;     // inputs the filter could not decide (midpoint, binade edge): MPFR
  std::uint64_t mpfr_certified = 0;  // candidates for a maximum recomputed with MPFR
  std::vector<PrimitiveResult> primitives;
};

// threads >= 1; the result is the same for every thread count.
SweepResult run_sweep(const SweepDomain& domain, const std::vector<SweepPrimitive>& primitives, unsigned threads);

nlohmann::json to_json(const SweepResult& result);
std::string text_table(const SweepResult& result);

// The lab's expectations (docs/exp-lab.md): expf_glibc below 1 ulp (and at
// glibc's 0.502), each exp2_poly<d> within exp2_poly_accuracy(d).ulp_bound,
// and a planted-coefficient primitive, when present, above the degree-5
// bound. One line per failed expectation; empty when all hold.
std::vector<std::string> check_expectations(const SweepResult& result);

}  // namespace softcheck::exp_lab
