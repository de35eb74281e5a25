// `softcheck sweep`: exhaustive check of the f16 / bf16 kernels over one input
// entry (docs/low-precision.md, "Exhaustive sweep"). A fixed row of 8
// entries, x followed by a small context, with x taking every finite bit
// pattern of the format in turn; each selected kernel runs on every such row
// and is compared with the oracle, whose exact row is computed once per x and
// shared by all kernels and ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck {

// The row [x, context...]: x at index 0, then 7 fixed values, exact in f16 and
// bf16, spread over [-3.5, 2]: x sweeps from fully dominated (softmax ~0),
// through comparable, to dominating (softmax ~1).
inline constexpr std::size_t sweep_position = 0;
const std::vector<double>& sweep_context();

// Every finite bit pattern of a 16-bit format, ascending (f16: 63,488 of the
// 65,536; bf16: 65,280): +-0, subnormals, normals; no inf, no NaN.
std::vector<std::uint16_t> finite_patterns(Format f);

struct SweepOptions {
  Format format = Format::f16;          // f16 or bf16
  std::vector<Op> ops;                  // empty: every op each kernel provides
  std::vector<std::uint16_t> patterns;  // values of x (pairs: of a); empty: finite_patterns(format)
  unsigned oracle_bits = 256;
  // The pair sweep: the rows [a, b] of length 2, a over `patterns`, b over
  // `seconds` (empty: every finite value): 63,488^2 = 4.0e9 rows in f16.
  bool pairs = false;
  std::vector<std::uint16_t> seconds;
  // Only this shard's contiguous range of x (pairs: of a) values, index of count.
  std::size_t shard_index = 0, shard_count = 1;
};

// The row with the largest error of one (kernel, op): the first strictly
// largest, a NaN/inf result (or a wrong special value) counting as infinite.
struct SweepWorst {
  bool present = false;
  std::uint16_t pattern = 0;  // of x (pairs: of a)
  std::uint16_t second = 0;   // pairs: of b
  double x = 0;
  std::size_t element = 0;    // index of the worst output in the row
  double got = 0;
  std::string exact;          // 21 significant digits
  double ulp = 0;             // +inf for NaN/inf
  double bound = 0;           // the contract's bound on that row (+inf: none)
  std::string row;            // hex-exact row
  std::string repro;          // a `softcheck sweep` line for that x alone
};

struct SweepResult {
  std::string kernel;
  Op op = Op::softmax;
  bool declared = false;
  std::string contract;  // formula or "none"
  std::uint64_t rows = 0, elements = 0, measured = 0;
  std::uint64_t nonfinite = 0, special_mismatch = 0;  // NaN/inf results, wrong special values
  std::uint64_t violations = 0;                       // rows over the bound (declared only)
  double max_ulp = 0, mean_ulp = 0, max_bits = 0;     // over measured (finite) elements
  double max_bound = 0;                               // largest finite bound over the rows
  std::uint64_t vacuous_rows = 0;                     // rows whose bound is +inf (declared only)
  SweepWorst worst;
  double kernel_seconds = 0;   // CPU: the kernel on every row (one batched call)
  double compare_seconds = 0;  // CPU: compare_row against the shared exact rows

  std::string status() const;  // "held", "violated" or "no_contract"
};

struct SweepReport {
  Format format = Format::f16;
  bool pairs = false;
  std::size_t shard_index = 0, shard_count = 1;
  std::uint64_t first_values = 0, first_of_all = 0;  // x (pairs: a) values swept, of how many
  std::string first_range;                          // pattern range of this shard's x (a) values
  std::vector<double> context;                      // empty for pairs
  std::uint64_t rows = 0;
  unsigned oracle_bits = 0;
  double oracle_seconds = 0;  // CPU: exact_row over every row, once
  double total_seconds = 0;   // wall
  double total_cpu_seconds = 0;
  std::vector<SweepResult> results;

  double oracle_us_per_row() const;
  bool all_held() const;  // no declared contract violated
};

// Throws std::invalid_argument for a format other than f16/bf16, a kernel of
// another format or unavailable, or when no (kernel, op) pair is left.
SweepReport run_sweep(const std::vector<const Kernel*>& kernels, const SweepOptions& opt);

std::string sweep_json(const SweepReport& r);
std::string sweep_table(const SweepReport& r);

}  // namespace softcheck
