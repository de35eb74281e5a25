// `softcheck sweep`: exhaustive checks of the kernels of one format over
// rows whose swept entries take every bit pattern of a small format
// (docs/low-precision.md, "`softcheck sweep`"). Three row spaces, one loop:
//   - one entry: the fixed f16 / bf16 row [x, context...], x every finite
//     pattern of the kernels' format;
//   - --pairs: every row [a, b] of two finite f16 / bf16 values;
//   - --elements: every row of length 2 or 3 whose entries are patterns of
//     an OCP element format (FP8 E4M3, E5M2; FP6 E2M3, E3M2; FP4 E2M1), fed
//     to kernels of a format that holds them exactly.
// Rows are taken in blocks of consecutive values of the first swept entry;
// each selected kernel runs a block in one batched call and is compared with
// the oracle, whose exact row is computed once per row and shared by every
// kernel and op. A shard takes a contiguous range of the first entry's values.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/minifloat.hpp"

namespace softcheck {

// The row [x, context...]: x at index 0, then 7 fixed values, exact in f16 and
// bf16, spread over [-3.5, 2]: x sweeps from fully dominated (softmax ~0),
// through comparable, to dominating (softmax ~1).
inline constexpr std::size_t sweep_position = 0;
const std::vector<double>& sweep_context();

// Every finite bit pattern of a 16-bit format, ascending (f16: 63,488 of the
// 65,536; bf16: 65,280): +-0, subnormals, normals; no inf, no NaN.
std::vector<std::uint16_t> finite_patterns(Format f);

// The OCP element formats --elements takes (minifloat.hpp): E4M3, E5M2,
// E2M3, E3M2, E2M1; by name, nullptr for another name.
const std::array<const MiniFloat*, 5>& sweep_element_formats();
const MiniFloat* sweep_element_format(std::string_view name);

// The patterns of an element format a row may hold, ascending: every pattern
// with an exact softmax row, i.e. all but NaN and +inf (a row holding one is
// RowStatus::undefined: the oracle has no value and the judge no verdict).
// -inf (E5M2's 0xFC) stays: a masked entry, and a row of -inf alone is judged
// by the kernel's masked-row policy. E4M3: 254 of 256 (not the NaNs 0x7F,
// 0xFF); E5M2: 249 (not +inf 0x7C nor the NaNs 0x7D-0x7F, 0xFD-0xFF); FP6
// and FP4 have no specials: all 64 or 16.
std::vector<std::uint16_t> element_patterns(const MiniFloat& f);
// The patterns left out, ascending.
std::vector<std::uint16_t> excluded_element_patterns(const MiniFloat& f);

// The shortest and longest rows --elements sweeps: FP8 256^3 = 16,777,216
// rows; a fourth entry would make it 4.3e9.
inline constexpr std::size_t min_element_length = 2, max_element_length = 3;

// The ops the sweep runs: one input, the swept row of logits, and one
// output, a row judged against the oracle's dense exact row (softmax,
// log_softmax). The others need what a sweep row has not got: operands
// besides the logits (attention's q, K, V and window, cross-entropy's
// target, a backward pass's upstream gradient), a judge of a scalar or of a
// second output (lse, entropy, softmax_lse), or the sparse oracle.
bool sweeps_op(Op op);
std::vector<Op> sweep_ops();  // in op-table order
// Empty when the sweep runs op; else why not, naming the ops it runs (the
// message of `sweep --op` and of run_sweep for such an op).
std::string sweep_op_refusal(Op op);

struct SweepOptions {
  Format format = Format::f16;          // of the kernels: f16 or bf16; with elements any format holding them
  std::vector<Op> ops;                  // empty: every op each kernel provides
  std::vector<std::uint16_t> patterns;  // values of x (pairs, elements: of the first entry); empty: all
  unsigned oracle_bits = 256;
  // The pair sweep: the rows [a, b] of length 2, a over `patterns`, b over
  // `seconds` (empty: every finite value): 63,488^2 = 4.0e9 rows in f16.
  bool pairs = false;
  std::vector<std::uint16_t> seconds;
  // The element sweep: every row of `length` entries, each entry an
  // element_patterns() pattern of `elements`; `patterns`, `seconds` and
  // `thirds` (empty: all) restrict the first, second and third entries.
  const MiniFloat* elements = nullptr;
  std::size_t length = 2;
  std::vector<std::uint16_t> thirds;
  // Only this shard's contiguous range of x (pairs, elements: of the first
  // entry's) values, index of count.
  std::size_t shard_index = 0, shard_count = 1;
};

// The row with the largest error of one (kernel, op): the first strictly
// largest, a NaN/inf result (or a wrong special value) counting as infinite.
struct SweepWorst {
  bool present = false;
  std::vector<std::uint16_t> patterns;  // of each swept entry: x; pairs: a, b; elements: one per entry
  double x = 0;                         // the first swept entry's value
  std::size_t element = 0;    // index of the worst output in the row
  double got = 0;
  std::string exact;          // 21 significant digits
  double ulp = 0;             // +inf for NaN/inf
  double bound = 0;           // the contract's bound on that row (+inf: none)
  std::string row;            // hex-exact row
  std::string repro;          // a `softcheck sweep` line for that row alone
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
  // Rows of -inf alone (E5M2): judged by the masked-row policy, as `run`
  // does, outside the error figures.
  std::uint64_t masked_rows = 0, policy_violations = 0;
  // Rows where a kernel without a contract returned NaN/inf for a finite
  // exact value: the floor's no_nonfinite (kernel.hpp), which `run` also
  // counts; unless the kernel opts out of it.
  std::uint64_t floor_violations = 0;
  SweepWorst worst;
  double kernel_seconds = 0;   // CPU: the kernel on every row (one batched call per block)
  double compare_seconds = 0;  // CPU: compare_row against the shared exact rows

  std::string status() const;  // "held", "violated" or "no_contract"
};

struct SweepReport {
  Format format = Format::f16;
  bool pairs = false;
  const MiniFloat* elements = nullptr;  // the element sweep: its format, its rows' length
  std::size_t length = 0;
  std::uint64_t rows_of_all = 0, excluded_rows = 0;  // elements: every pattern^length, those holding an excluded one
  std::size_t shard_index = 0, shard_count = 1;
  std::uint64_t first_values = 0, first_of_all = 0;  // x (pairs, elements: first entry) values swept, of how many
  std::string first_range;                          // pattern range of this shard's values of them
  std::vector<double> context;                      // empty for pairs and elements
  std::uint64_t rows = 0;
  unsigned oracle_bits = 0;
  double oracle_seconds = 0;  // CPU: exact_row over every row, once
  double total_seconds = 0;   // wall
  double total_cpu_seconds = 0;
  std::vector<SweepResult> results;

  double oracle_us_per_row() const;
  bool all_held() const;  // no declared contract violated
};

// The rows one shard of a sweep takes, known without running it: the values
// [first_begin, first_end) of the first swept entry's `first_of_all` (its
// patterns ascending), and the rows they hold. Over shards 0..N-1 the ranges
// are contiguous and disjoint and cover every value. Throws as run_sweep.
struct SweepShardRows {
  std::size_t first_begin = 0, first_end = 0, first_of_all = 0;
  std::uint64_t rows = 0;
  std::string range;  // "0x3C00..0x3FFF" (FP8: "0x00..0x7E"), or "none"
};
SweepShardRows sweep_shard_rows(const SweepOptions& opt);

// Throws std::invalid_argument for a format other than f16/bf16 (elements: one
// not holding every element value exactly), a length other than 2 or 3, a
// pattern not in the swept set, a kernel of another format or unavailable, an
// op in `ops` it does not run (sweep_op_refusal), or when no (kernel, op)
// pair is left.
SweepReport run_sweep(const std::vector<const Kernel*>& kernels, const SweepOptions& opt);

std::string sweep_json(const SweepReport& r);
std::string sweep_table(const SweepReport& r);

}  // namespace softcheck
