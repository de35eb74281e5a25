// Judging outputs computed anywhere: rows of inputs x and a kernel's outputs
// y, given as values (read from .npy files by `softcheck compare`, passed as
// arrays by the Python module's softcheck.check), judged row by row the way
// `run` judges a kernel's rows -- the row judge (oracle/judge.hpp: RowJudge,
// the contract's bound, the masked-row policy), the reference rule against
// softcheck's stable kernel of the same format and the floor, all through
// the same functions -- and summed into the usual report (reports/).
// docs/python.md and docs/gating-your-kernel.md ("Outputs computed
// elsewhere") describe the rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/op.hpp"
#include "softcheck/report.hpp"

namespace softcheck {

// The ops compare judges: one row of logits in, one output (a row, or one
// value per row), no parameter, a dense exact value (from the op table:
// softmax, log_softmax, lse, entropy).
bool compare_takes(Op op);
std::vector<Op> compare_ops();
// "softmax, log_softmax, ..." for help and errors.
std::string compare_op_names();

// A bound given in the output's metric (ULPs; units of u for lse and
// entropy), as a contract: the constant contract K = `ulps`, whose bound is
// Contract's K / (1 - K u) (Higham's gamma_K, the form every contract has).
// Throws std::invalid_argument unless ulps is finite and > 0.
Contract ulp_contract(double ulps);

// The derived contract a built-in kernel declares for op in format f (what
// `softcheck list --wide` prints). Throws std::invalid_argument for an
// unknown kernel, one of another format, one without the op, or one that
// declares no contract for it.
Contract kernel_contract(std::string_view kernel, Op op, Format f);

struct CompareSpec {
  Op op = Op::softmax;
  Format format = Format::f32;  // of x and y
  double temperature = 1;       // the outputs are op(x / temperature)
  // Fully masked rows (every entry -inf): what y must hold there.
  MaskedRowPolicy masked_policy = MaskedRowPolicy::nan;
  // Declared (ulp_contract, kernel_contract): each row against its bound;
  // not declared: no contract (the reference rule and the floor judge).
  Contract contract;
  std::string contract_source;  // where the contract came from, e.g. "4 ulps", "kernel shifted_f32"
  // The reference rule's settings: scope no_contract (it judges when there is
  // no contract), all (also beside a contract), off.
  ReferenceRuleSettings reference_rule;
  bool tiered = true;        // the fast tiers first (docs/oracle.md), MPFR for what they leave
  unsigned oracle_bits = 256;
  std::string kernel_name = "external";  // the report entry's kernel
  std::string description = "outputs computed outside softcheck";
  // Violated rows given an explain line (oracle::explain), in row order; the
  // worst row always gets one. Each costs the row's MPFR values.
  std::size_t explain_limit = 16;
  // The line that replays row `row` (x its values); empty: oracle_repro_line.
  std::function<std::string(std::int64_t row, std::span<const double> x)> repro;
};

// One row's verdict.
struct CompareRow {
  // What the row came to, rows.csv's words (docs/report-schema.md): held,
  // violated, broken (a NaN/inf output where the exact value is finite),
  // reference_held, reference_violated, no_contract (nothing judged it),
  // policy_held, policy_violated (fully masked rows); and undefined (a NaN
  // or +inf input: no exact value, no verdict).
  std::string verdict;
  bool holds = true;
  // Ok rows: the largest error in the output's metric (ULPs; units of u for
  // lse and entropy), at `element` (the first NaN/inf output if any, else
  // the first largest), whose output was `got`.
  double max_error = std::numeric_limits<double>::quiet_NaN();
  std::int64_t element = -1;
  double got = std::numeric_limits<double>::quiet_NaN();
  double bound = std::numeric_limits<double>::infinity();  // the contract's for this row; +inf without
  // The reference rule's error / allowed on this row; NaN where it did not judge.
  double reference_ratio = std::numeric_limits<double>::quiet_NaN();
  double R = 0, M = 0;  // the row's shape (kernel.hpp RowShape)
  std::string tier;     // which oracle tier decided (judge.hpp Tier)
  std::string explain;  // violated rows up to explain_limit, and the worst row
  std::string repro;
};

// The row that broke its rule most (run's worst case: NaN/inf and policy
// breaks first, then error / bound, or the reference rule's ratio).
struct CompareWorst {
  bool present = false;
  std::int64_t row = 0, element = 0;
  double got = 0;
  std::string exact;           // the exact value, 21 significant digits (MPFR)
  double exact_rounded = 0;    // the exact value correctly rounded to the format
  double error = 0;            // in the output's metric
  double bound = std::numeric_limits<double>::infinity();
  double reference_ratio = std::numeric_limits<double>::quiet_NaN();
  std::string explain, repro;
};

struct CompareResult {
  std::vector<CompareRow> rows;
  CompareWorst worst;
  bool held = true;  // no row violated
  std::uint64_t violated_rows = 0, undefined_rows = 0, masked_rows = 0;
  double max_error = 0;  // over the measured outputs (ok rows)
  // What judged the rows, in one line: the contract and its bound, or the
  // reference rule with its stable kernel, k and slack.
  std::string rule;
  Report report;  // one entry, family "compare", one case: report.json's data
};

// Judges y = op(x / T) row by row: x holds rows x cols values, y rows x
// output_cols(op's output, cols), both values of spec.format held in
// doubles. Throws std::invalid_argument for an op compare does not take, a
// size or shape that does not fit, a value that is not one of the format
// (naming its position), a temperature that is not a normal value of the
// format, or a contract or reference rule that cannot apply.
CompareResult judge_rows(std::span<const double> x, std::span<const double> y, std::int64_t rows, std::int64_t cols,
                         const CompareSpec& spec);

// The exact op(x / T) of each row, correctly rounded to f: rows x
// output_cols values. A fully masked row gets masked_row_value under
// `policy`, a row with a NaN or +inf entry NaN (no exact value).
std::vector<double> exact_rows(std::span<const double> x, std::int64_t rows, std::int64_t cols, Op op, Format f,
                               double temperature, MaskedRowPolicy policy = MaskedRowPolicy::nan,
                               unsigned bits = 256);

// Throws std::invalid_argument naming the first entry of v (as row, column
// of `cols` per row) that is not a value of f (NaN and +-inf are values).
void check_format_values(std::span<const double> v, std::int64_t cols, Format f, std::string_view what);

// `softcheck oracle --op OP --dtype F [--temperature T] -- x1 x2 ...`: the
// exact values of a row given by its values (each printed so that it reads
// back to itself in f).
std::string oracle_repro_line(Op op, Format f, double temperature, std::span<const double> x);

// The shortest text that reads back to v in f ("-inf", "nan" as such).
std::string format_value_text(double v, Format f);

}  // namespace softcheck
