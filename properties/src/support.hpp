// Internal helpers of the property checks: running a kernel on rows of doubles,
// contract bounds, ULPs, scope tests and result constructors.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/judge.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::props::detail {

// 0, 1, ..., n - 1: the identity permutation of a row of n.
std::vector<std::size_t> identity(std::size_t n);

// Thrown when a kernel's run function throws KernelFailure: the case fails
// (any other exception is a harness error).
struct KernelThrew {
  std::string what;
};

// Runs `kernel` on rows x cols values (exact in its format) and returns each
// output operand of the op (spec(op).out order) as doubles. Output buffers are
// pre-filled with a NaN canary so that an entry a kernel never writes reads as
// NaN, deterministically.
std::vector<std::vector<double>> run_outputs(const Kernel& kernel, Op op, std::span<const double> x,
                                             std::int64_t rows, std::int64_t cols, double temperature);
// The op's first output (its row for softmax_lse).
std::vector<double> run_rows(const Kernel& kernel, Op op, std::span<const double> x, std::int64_t rows,
                             std::int64_t cols, double temperature);
std::vector<double> run_row(const Kernel& kernel, Op op, std::span<const double> row, double temperature);
// Runs `kernel` on one case of an op with any inputs (Case::target and
// Case::upstream feed the op's class-index and upstream-gradient inputs,
// Case::query, keys, values and head_dim attention's q, K, V and d): each
// output operand as doubles, NaN canaries as run_outputs.
std::vector<std::vector<double>> run_case(const Kernel& kernel, Op op, const Case& c);
// Why the case cannot feed the op's inputs (empty when it can): a missing or
// out-of-range target, an upstream gradient of another length, non-finite or
// not exact in the kernel's format, q, K or V of the wrong size or not exact
// in the format (NaN and inf are allowed: the scopes of the attention
// properties decide), or an input the op does not take.
std::string extra_inputs_error(const Kernel& kernel, Op op, const Case& c);
// The case with only the inputs op takes (a gradient case generator makes
// both a target and an upstream gradient; a repro line carries what the op uses).
Case inputs_for(Op op, Case c);

// Element i of a buffer in the batched interface's storage of format f
// (double, float, or uint16 bit patterns for f16/bf16); store rounds v to f.
double load_value(const void* base, std::size_t i, Format f);
void store_value(void* base, std::size_t i, double v, Format f);

// The contract's componentwise bound (ULPs of the output format) for this row;
// +inf when the op has no declared contract or the bound is vacuous.
double bound_ulps(const Kernel& kernel, Op op, std::span<const double> row, double temperature);
bool has_contract(const Kernel& kernel, Op op);

// The floor's generic tolerance (docs/properties.md, "The floor's generic
// tolerance"): a componentwise bound in the shape of a contract, derived from
// the error analyses every stable softmax meets, that sum_to_one,
// shift_invariance and permutation judge an op without a contract by.
const Contract& floor_tolerance();
// The floor's tolerance of a log-softmax is in ULPs of max(|l_j|, 1), not of
// l_j: the max-shifted (z_j - a) - log(sum) has an absolute error of a few u
// where l_j ~ 0 (shifted.cpp's reason for declaring no contract).
bool floor_tolerance_at_one(Op op);
std::string floor_tolerance_text(Op op);  // "generic tolerance 64 + 12n + ... ulps"
// The bound a property judges by: the contract's (bound_ulps) or, for an op
// without one, the floor's generic tolerance.
double tolerance_ulps(const Kernel& kernel, Op op, std::span<const double> row, double temperature);
// True when tolerance_ulps counts ULPs of max(|l_j|, 1) (an op without a
// contract whose output is a log-softmax).
bool tolerance_at_one(const Kernel& kernel, Op op);

// ulp_T(v) (REFERENCE.md "Error metrics in use"): 2^(max(e, emin) - p + 1),
// denorm_min for v = 0.
double ulp_of(double v, Format f);
double ulp_of(const oracle::Real& v, Format f);
// |a - b| / 2^k, rounded once: the difference in MPFR where a double would
// round it (k a ulp_T exponent, oracle::ulp_exponent).
double ulps_apart(double a, double b, long k);

// What max_spread measures in: the ULP exponent of each exact output of op's
// first output on a row (oracle::ulp_exponents: of max(1, |v|) with at_one,
// ulp_exponent_infinite for -inf), and the row's status (exact_row's rules).
struct UlpScales {
  oracle::RowStatus status = oracle::RowStatus::ok;
  std::vector<long> exponent;
};
// From the fast tier the judge uses for f (double-double for f64, double
// for the others) where its enclosures decide every binade, else from
// MPFR's row (shared_exact_row): the same exponents either way. Kept
// for the next call on the same long row, as shared_exact_row keeps its rows
// (the DD tier on the 62,886-entry lattice row, once per kernel, was half
// of shift invariance's time).
std::shared_ptr<const UlpScales> ulp_scales(std::span<const double> row, double temperature, Op op, Format f,
                                            bool at_one);
// MPFR's alone, for the tests that hold the two to each other.
UlpScales exact_ulp_scales(std::span<const double> row, double temperature, Op op, Format f, bool at_one);

// A temperature a kernel of format f can use: finite, > 0, and rounding to a
// normal value of f (kernels round T to their format; the contracts' t term
// assumes a relative rounding error of u, which subnormals do not have).
bool temperature_ok(double t, Format f);

// Scope of a property: returns a not_applicable result when the case is out of it.
enum class Scope { finite, finite_or_masked, masked, fully_masked, any };
std::optional<CaseResult> out_of_scope(const Case& c, Format f, Scope s);

// Stable hash of a case (row bits and temperature): derives shifts,
// permutations and batch neighbours deterministically from the row alone, so a
// repro line needs nothing but the row.
std::uint64_t case_hash(const Case& c);
// A nonzero shift c with every finite v_i + c exact in f (and finite), picked
// among powers of two (times 1 or 3) around the values' magnitude and a few
// round numbers, starting at `hash`; none when no candidate is exact.
std::optional<double> exact_shift(std::span<const double> values, Format f, std::uint64_t hash);

bool same_bits_or_both_nan(double a, double b);

CaseResult pass(double measured, double allowed, std::string unit, std::string message = {});
CaseResult fail(double measured, double allowed, std::string unit, std::string message);
CaseResult not_applicable(std::string why);
// measured <= allowed ? pass : fail; a non-finite measurement always fails.
CaseResult judge(double measured, double allowed, std::string unit, std::string message);
// The result with the larger measured/allowed ratio (a failure beats a pass).
CaseResult worst(CaseResult a, CaseResult b);

// Shrinking's order on doubles: significant bits of a finite nonzero v; the
// well-founded complexity (kind, negative, significant bits, |binade|),
// compared lexicographically, 0 the simplest (every shrink candidate is
// strictly below its origin, so shrinking terminates); v rounded to k
// significant bits (to nearest).
int significant_bits(double v);
std::tuple<int, int, int, int> complexity(double v);
double round_to_bits(double v, int k);

// The unit of an output's metric in messages: "ulp", "u" (absolute) or "u s" (scaled).
std::string unit_of(const Operand& out);
// Every output of op (outs[o] is output o) within its own declared contract
// as `judge` decides it; a NaN/inf where the exact value is finite fails
// whatever the bound; the worst output, prefixed by its name.
CaseResult outputs_within_contracts(const Kernel& k, Op op, const std::vector<std::vector<double>>& outs,
                                    oracle::RowJudge& judge);

// What was computed from a long row, kept per thread for the next calls on
// the same row (every bit) and key: several properties and every kernel of a
// format draw the same long rows. Rows of long_row entries or more are kept,
// most recent first, up to kept_entries entries in all (`check --tests 10
// --seed 1 --jobs 1` on the quick suite's kernels peaks at 56 MB resident
// with it; with 4 rows kept, the rows of the four formats pushed each other
// out between two kernels' checks and the 62,886-entry lattice row was
// computed 7 times). A shorter row costs less than a lookup: never kept.
template <class Key, class Value>
class LongRowMemo {
 public:
  static constexpr std::size_t long_row = 1024, kept_entries = std::size_t{1} << 19;
  template <class Compute>
  Value get(std::span<const double> row, const Key& key, Compute compute) {
    if (row.size() < long_row) return compute();
    for (std::size_t i = 0; i < recent_.size(); ++i) {
      const Entry& e = recent_[i];
      if (!(e.key == key) || e.row.size() != row.size() ||
          std::memcmp(e.row.data(), row.data(), row.size() * sizeof(double)) != 0)
        continue;
      std::rotate(recent_.begin(), recent_.begin() + static_cast<std::ptrdiff_t>(i),
                  recent_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      return recent_.front().value;
    }
    Value value = compute();
    std::size_t entries = row.size();
    for (std::size_t i = 0; i < recent_.size(); ++i) {
      entries += recent_[i].row.size();
      if (entries > kept_entries) {
        recent_.resize(i);
        break;
      }
    }
    recent_.insert(recent_.begin(), Entry{std::vector<double>(row.begin(), row.end()), key, value});
    return value;
  }

 private:
  struct Entry {
    std::vector<double> row;
    Key key;
    Value value;
  };
  std::vector<Entry> recent_;
};

// oracle::exact_row(row, temperature), kept for the next calls on the same
// row (bit for bit) and temperature in this thread: several properties and
// every kernel of a format draw the same rows (a long lattice row of 62,886
// entries cost 0.25 s of MPFR per kernel). The most recent rows of 1,024
// entries or more are kept, up to 2^19 entries in all.
std::shared_ptr<const oracle::ExactRow> shared_exact_row(std::span<const double> row, double temperature);

// %a text of a double and a short decimal for messages.
std::string hex(double v);
std::string num(double v);

}  // namespace softcheck::props::detail
