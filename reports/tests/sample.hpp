// A report with every field populated (NaN/inf where the schema allows them),
// shared by the reader, HTML and gate tests.
#pragma once

#include <cmath>

#include "softcheck/report.hpp"

namespace softcheck::testing {

inline ErrorBin bin(double key, double max_ulp, std::uint64_t nonfinite = 0) {
  ErrorBin b;
  b.key = key;
  b.rows = 4;
  b.measured = 400;
  b.max_ulp = max_ulp;
  b.mean_ulp = max_ulp / 4;
  b.nonfinite = nonfinite;
  return b;
}

inline KernelSummary kernel(const std::string& name, const std::string& algorithm, const std::string& format,
                            const std::string& op, double max_ulp) {
  KernelSummary k;
  k.kernel = name;
  k.algorithm = algorithm;
  k.format = format;
  k.op = op;
  k.description = "test kernel <" + name + "> & co";
  k.masked_policy = "nan";
  k.contract_declared = true;
  k.contract_formula = "2 + 1*n";
  k.contract_why = "because";
  k.status = "held";
  k.cases = 3;
  k.rows = 12;
  k.elements = 1200;
  k.measured = 1200;
  k.max_ulp = max_ulp;
  k.mean_ulp = max_ulp / 5;
  k.max_bits = 1.5;
  k.mean_bits = 0.25;
  k.max_rel = 1e-7;
  k.max_normwise = 0.5;
  k.max_bound_ratio = 0.1;
  k.worst.present = true;
  k.worst.family = "normal_s10";
  k.worst.cols = 8;
  k.worst.temperature = 0.7;
  k.worst.got = 0.125;
  k.worst.exact = "1.25000000000000000001e-01";
  k.worst.ulp = max_ulp;
  k.worst.bound = 10;
  k.worst.input = "0x1p+0,-inf";
  k.worst.repro = "softcheck repro --impl " + name;
  k.distribution.measured = 1200;
  k.distribution.mean_signed_ulp = -0.01;
  k.distribution.mean_signed_rel = -2e-9;
  k.distribution.above = 20;
  k.distribution.below = 22;
  k.distribution.p50_ulp = max_ulp / 10;
  k.distribution.p99_ulp = max_ulp / 2;
  k.distribution.max_ulp = max_ulp;
  k.distribution.p50_ratio = 0.01;
  k.distribution.p99_ratio = 0.05;
  k.distribution.max_ratio = 0.1;
  k.distribution.rows_above = 5;
  k.distribution.rows_below = 6;
  k.by_family = {{"normal_s10", 12, max_ulp, 0, 0, k.distribution}};
  // Two cells of 6 rows each (temperatures merged).
  for (std::int64_t cols : {8, 128}) {
    CellSummary c;
    c.family = "normal_s10";
    c.cols = cols;
    c.rows = 6;
    c.measured = 600;
    c.max_ulp = max_ulp;
    c.mean_ulp = max_ulp / 5;
    c.max_ratio = 0.1;
    c.mean_signed_ulp = -0.01;
    c.rows_above = 3;
    c.rows_below = 2;
    c.bound = 10 * max_ulp;
    k.cells.push_back(c);
  }
  k.ulp_histogram = {1000, 150, 50};
  k.by_size = {bin(1, 0), bin(8, max_ulp / 2), bin(128, max_ulp)};
  k.by_temperature = {bin(0.7, max_ulp), bin(1, max_ulp / 2)};
  k.by_magnitude = {bin(-3, 0.1), bin(0, max_ulp), bin(2, max_ulp / 3)};
  return k;
}

inline Report sample() {
  Report r;
  r.tool_version = "0.1.0";
  r.suite = "quick";
  r.seed = 7;
  r.oracle_bits = 256;
  r.families = {"normal_s10", "mask_neg_inf"};
  r.sizes = {1, 8, 128};
  r.temperatures = {1.0, 0.7};
  r.kernels.push_back(kernel("shifted_f32", "shifted", "f32", "softmax", 3.25));
  r.kernels.push_back(kernel("shifted_f64", "shifted", "f64", "softmax", 2.5));
  KernelSummary naive = kernel("naive_f32", "naive", "f32", "softmax", 1.5e7);
  naive.contract_declared = false;
  naive.contract_formula = "none";
  naive.status = "no_contract";
  naive.nonfinite = 42;
  naive.max_rel = INFINITY;
  naive.worst.got = NAN;
  naive.worst.ulp = INFINITY;
  naive.worst.bound = INFINITY;
  naive.by_size[2].nonfinite = 42;
  r.kernels.push_back(naive);
  KernelSummary masked = kernel("online_f32", "online", "f32", "softmax", 4);
  masked.worst.present = false;
  masked.properties = {{"shift_invariance", "passed", "", "", 100},
                       {"monotonicity", "not_claimed", "not claimed: online", "", 0},
                       {"exhaustive_f16", "skipped", "budget 0", "", 0}};
  r.kernels.push_back(masked);
  return r;
}

// The sample with the two entries of an op with two outputs: online_f32's
// softmax_lse, "y" then "lse" (copies of the first entry's figures).
inline Report sample_with_two_outputs() {
  Report r = sample();
  for (const char* output : {"y", "lse"}) {
    KernelSummary s = r.kernels[0];
    s.kernel = "online_f32";
    s.op = "softmax_lse";
    s.output = output;
    r.kernels.push_back(s);
  }
  return r;
}

inline Performance sample_performance() {
  Performance p;
  p.present = true;
  p.host = "testhost";
  p.cpus = 2;
  p.mhz_per_cpu = 2400;
  p.library_build_type = "release";
  p.min_time = 0.1;
  for (std::int64_t cols : {1024, 4096})
    p.results.push_back({"shifted_f32", "f32", "softmax", 1, cols, 1e9, 8e9, 16e9});
  p.results.push_back({"shifted_f64", "f64", "softmax", 1, 1024, 5e8, 8e9, 20e9});
  return p;
}

}  // namespace softcheck::testing
