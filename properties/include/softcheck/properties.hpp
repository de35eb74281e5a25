// The property suite: the guarantees every softmax kernel is checked against
// (docs/properties.md states each one, its bound and when it is claimed).
//
//   check_kernel(kernel, options)        every property x op of one kernel, with
//                                        RapidCheck generation and shrinking
//   replay(kernel, op, property, case)   one case, e.g. from a printed repro line
//   parse_row / format_row               the hex-exact row syntax of repro lines
//   print_verdicts / print_kill_table    human-readable tables
//
// A property a kernel does not claim is reported as not_claimed, never passed.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::props {

// A value or an error message (std::expected is C++23; this is the subset used).
template <class T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit like std::expected
  static Expected failure(std::string message) { return Expected(Error{std::move(message)}); }

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  const T& value() const { return std::get<0>(v_); }  // throws std::bad_variant_access on error
  const T& operator*() const { return value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<1>(v_).message; }

 private:
  struct Error {
    std::string message;
  };
  explicit Expected(Error e) : v_(std::move(e)) {}
  std::variant<T, Error> v_;
};

// One test case: a row (values exact in the kernel's format) and a temperature,
// and for the ops that take more than the logits (op table, InputKind) their
// other inputs: the class target (cross_entropy: in [0, n) or ignore_index)
// and the upstream gradient (the backward ops: one finite entry per row
// entry, exact in the kernel's format). An op with a head dimension
// (attention, has_head_dim) reads the row as the score bias of one query
// (-inf masks a key) and takes q (head_dim values), K and V (row.size() x
// head_dim values each, key-major: keys[j * head_dim + i]), exact in the
// kernel's format; head_dim is 0 for every other op.
struct Case {
  Case() = default;
  Case(std::vector<double> r, double t = 1.0, std::optional<std::int64_t> target_index = std::nullopt,
       std::vector<double> g = {})
      : row(std::move(r)), temperature(t), target(target_index), upstream(std::move(g)) {}

  std::vector<double> row;
  double temperature = 1.0;
  std::optional<std::int64_t> target;
  std::vector<double> upstream;
  std::int64_t head_dim = 0;
  std::vector<double> query, keys, values;
  KeyWindow window{};  // attention: the query's position and window (unbounded: every key)
};

enum class CaseStatus { pass, fail, not_applicable };
std::string_view name(CaseStatus s);

// The outcome of checking one case. measured <= allowed on pass; for exact
// properties allowed is 0. unit: "ulp" (of the exact value in the output
// format), "u" (unit roundoff), "abs", "entries", "ratio".
struct CaseResult {
  CaseStatus status = CaseStatus::pass;
  double measured = 0;
  double allowed = 0;
  std::string unit;
  std::string message;  // what was compared and where (or why not applicable)
};

struct Claim {
  bool claimed = false;
  std::string reason;  // why claimed / why not
};

struct PropertyInfo {
  std::string_view name;
  std::string_view statement;
  std::string_view bound;  // the allowed error, as a formula
  std::string_view scope;  // which kernels/ops claim it
};

// The registry, in report order.
const std::vector<PropertyInfo>& property_list();
const PropertyInfo* find_property(std::string_view name);

// Whether `kernel` claims `property` for `op` (unknown property: not claimed).
Claim claim(const Kernel& kernel, Op op, std::string_view property);

// Checks one case; throws std::invalid_argument for an unknown property.
// Inputs outside the property's scope give CaseStatus::not_applicable.
CaseResult check_case(const Kernel& kernel, Op op, std::string_view property, const Case& c);

struct CheckOptions {
  int tests = 100;                 // RapidCheck max_success per property x op
  std::uint64_t seed = 0;          // base seed; each property runs with hash_mix(seed, name)
  int max_size = 100;              // RapidCheck max_size (small sizes give short rows)
  std::size_t max_cols = 65536;    // longest generated row
  double long_row_probability = 0.01;
  int max_shrink_evals = 2000;     // shrinking stops after this many evaluations
  bool shrink = true;
  std::vector<std::string> properties;  // empty: all
  std::vector<Op> ops;                  // empty: every op the kernel provides
  bool force = false;  // also run unclaimed properties (still reported not_claimed
                       // on pass; a failure is reported as failed with claimed=false)
};

// What the generated cases covered, as RapidCheck's classify reports it
// (docs/properties.md, "Coverage"). A case is in a class when its row
// (the generated one: not the shifted, permuted or batched rows a check
// derives from it) or its temperature has the feature:
//   masks              a -inf entry
//   ties               two equal finite entries
//   overflow_edge      an entry with |x_i / T| within [E - 2, max(E + 2, 1.13 E)],
//                      E = ln(max) of the format (88.72 in f32): the edge +- 2
//                      and XNNPACK's U(90, 100), as the generators draw them
//   subnormal_outputs  an exact softmax weight g_j that rounds to a subnormal
//                      of the format (eta/2 <= g_j < 2^emin)
//   t_not_1            T != 1
//   long_rows          n > 512 (the generators' rarer lengths, 513 .. max_cols)
enum class CaseClass { masks, ties, overflow_edge, subnormal_outputs, t_not_1, long_rows };
inline constexpr std::size_t case_class_count = 6;
std::string_view name(CaseClass c);
// The classes of one case of a kernel of format f, indexed by CaseClass. An
// attention case (head_dim > 0) is classified by its scores z_j =
// (q . K_j) / (T sqrt d) + x_j (masks, ties, the overflow edge, subnormal
// weights) and its T.
std::array<bool, case_class_count> classify(const Case& c, Format f);

// Counts of the passing cases of one property x op (the failing case and the
// shrinking after it are not counted), per class.
struct Coverage {
  int cases = 0;
  std::array<int, case_class_count> counts{};
  int operator[](CaseClass c) const { return counts[static_cast<std::size_t>(c)]; }
};

enum class Verdict { passed, failed, not_claimed, skipped, gave_up, error };
std::string_view name(Verdict v);

struct PropertyVerdict {
  std::string kernel;
  Op op = Op::softmax;
  std::string property;
  Verdict verdict = Verdict::not_claimed;
  bool claimed = false;
  std::string reason;       // claim reason, skip/give-up/error text
  int tests_passed = 0;     // cases that passed before the verdict
  int discarded = 0;        // cases outside the property's scope
  // The passing case closest to its bound: measured/allowed (0 for exact
  // properties) and its result (measured, allowed, unit, message).
  double closest_ratio = 0;
  CaseResult closest;
  std::uint64_t seed = 0;   // CheckOptions::seed
  std::uint64_t rc_seed = 0;  // the RapidCheck seed actually used
  // On failure: the shrunk counterexample and its measurement.
  std::optional<Case> counterexample;
  CaseResult failure;
  int shrink_steps = 0;           // accepted shrinks
  bool shrink_truncated = false;  // max_shrink_evals was reached
  std::string repro;              // one-line `softcheck repro ...` command
  std::optional<Coverage> coverage;  // what its cases covered; none when it did not run
};

// One property x op (ops the kernel does not provide: not_claimed).
// Not thread-safe: RapidCheck's implicit parameters are process-global, so run
// checks one at a time (or in separate processes). Deterministic in the seed.
PropertyVerdict check_property(const Kernel& kernel, Op op, std::string_view property,
                               const CheckOptions& options);
// Every selected property x every selected op the kernel provides.
std::vector<PropertyVerdict> check_kernel(const Kernel& kernel, const CheckOptions& options);
// True when no verdict is failed, gave_up or error.
bool all_held(std::span<const PropertyVerdict> verdicts);

// Replays one case (a repro line). Errors: unknown property, op not provided,
// empty row, a value not exactly representable in the kernel's format, a
// temperature that is not finite and > 0.
struct Replay {
  Claim claim;
  CaseResult result;
};
Expected<Replay> replay(const Kernel& kernel, Op op, std::string_view property, const Case& c);

// Human-readable replay result: the case, claim, status, measured vs allowed
// and the detail message. Suggested `softcheck repro` exit codes: 0 pass,
// 1 fail, 3 not applicable (2 stays usage/harness errors).
void print_replay(std::ostream& os, const Kernel& kernel, Op op, std::string_view property, const Case& c,
                  const Replay& r);

// "0x1p+0,-inf,nan, 2.5e-3" -> values. Accepts decimal and hex floats, inf,
// +inf, -inf, infinity, nan (any case), spaces around entries; rejects empty
// entries, junk, and decimals out of double range.
Expected<std::vector<double>> parse_row(std::string_view text);
Expected<double> parse_value(std::string_view text);
std::string format_value(double v);               // %a, or inf / -inf / nan
std::string format_row(std::span<const double> row);  // comma-separated format_value
// An attention query's window as repro lines write it: "position,left,right"
// (KeyWindow), three integers.
Expected<KeyWindow> parse_window(std::string_view text);
std::string format_window(const KeyWindow& w);
// softcheck repro [LOAD] --impl K --op OP --property P [--target=N] [--upstream=G1,...]
//                 [--head-dim=D --query=Q1,... --keys=K1,... --values=V1,...]
//                 --temperature=T --row=X1,X2,...
// LOAD: the options that load a plugin kernel (Kernel::load_options), empty for a built-in.
std::string repro_command(std::string_view kernel, Op op, std::string_view property, const Case& c,
                          std::string_view load_options = {});
// The case a repro line holds (its --target, --upstream, --head-dim, --query,
// --keys, --values, --temperature and --row options; the row is the line's
// last option).
Expected<Case> parse_repro_case(std::string_view line);

// Table of verdicts, then one block per failure (row, measured vs allowed,
// seed, repro line). Rows longer than `max_row_print` are elided in the block
// (the repro line is always complete).
void print_verdicts(std::ostream& os, std::span<const PropertyVerdict> verdicts,
                    std::size_t max_row_print = 64);
// What the cases of each verdict that ran covered: one line per verdict,
//   coverage KERNEL OP PROPERTY cases=N masks=N ties=N ... long_rows=N
// then, for a passed property whose cases never met a class it should meet
// (docs/properties.md, "Coverage": masks where its rows may hold -inf, ties
// where they hold finite entries, T != 1 always, and a few more), one line
//   never met: KERNEL OP PROPERTY: none of its N passing cases had CLASS, ...
void print_coverage(std::ostream& os, std::span<const PropertyVerdict> verdicts);
// The classes a passed `v` should have met and did not (empty for other verdicts).
std::vector<CaseClass> never_met(const PropertyVerdict& v);

// Mutation table: one line per kernel x op, one column per property:
// KILLED (claimed, failed), survived (claimed, held), n/c (not claimed); the
// last column says whether the kernel (any op) was caught.
void print_kill_table(std::ostream& os, std::span<const PropertyVerdict> verdicts);

}  // namespace softcheck::props
