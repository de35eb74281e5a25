// softcheck oracle: the exact value of any op of the op table on one row
// (softmax, log-softmax, lse, entropy, and the sparse ops (sparsemax, entmax15, entmax --alpha, topk_softmax --k,
// threshold_softmax --threshold; docs/sparse.md), for scripting.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "commands.hpp"
#include "softcheck/minifloat_oracle.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/sparse_oracle.hpp"

namespace softcheck::cli {

namespace {

struct OracleArgs {
  std::string op{name(Op::softmax)};
  double temperature = 1;
  std::string dtype = "f64";
  int digits = 40;
  double alpha = 0;
  std::int64_t k = 0;
  double threshold = 0;
  double label_smoothing = 0;
  std::int64_t target = 0;
  std::vector<std::string> upstream;
  std::vector<std::string> values;
  std::string rows;  // a file of rows, or "-" for standard input
};

// The op's parameter from --alpha / --k / --threshold / --label-smoothing:
// required by the op that uses it (label smoothing has a default, 0), refused
// by every other op (a parameter silently ignored would hide a typo in a
// script).
OpParams op_params(Op op, const OracleArgs& a, bool has_alpha, bool has_k, bool has_threshold,
                   bool has_label_smoothing) {
  const auto refuse = [&](bool given, const char* flag, OpParam param, bool required = true) {
    std::string users;  // the ops that take this parameter (op table)
    for (const OpSpec& o : op_table)
      if (o.param == param) users += (users.empty() ? "" : ", ") + std::string(o.name);
    if (given && spec(op).param != param)
      throw std::invalid_argument(fmt::format("{} applies to --op {} only", flag, users));
    if (required && !given && spec(op).param == param)
      throw std::invalid_argument(fmt::format("--op {} needs {}", name(op), flag));
  };
  refuse(has_alpha, "--alpha", OpParam::alpha);
  refuse(has_k, "--k", OpParam::k);
  refuse(has_threshold, "--threshold", OpParam::threshold);
  refuse(has_label_smoothing, "--label-smoothing", OpParam::label_smoothing, false);
  if (has_label_smoothing && !(a.label_smoothing >= 0 && a.label_smoothing <= 1))
    throw std::invalid_argument(fmt::format("--label-smoothing must be in [0, 1], got {}", a.label_smoothing));
  if (has_alpha && !(std::isfinite(a.alpha) && a.alpha > 1))
    throw std::invalid_argument(fmt::format("--alpha must be finite and > 1, got {}", a.alpha));
  if (has_k && a.k < 1) throw std::invalid_argument(fmt::format("--k must be >= 1, got {}", a.k));
  if (has_threshold && !(a.threshold >= 0 && a.threshold <= 1))
    throw std::invalid_argument(fmt::format("--threshold must be in [0, 1], got {}", a.threshold));
  OpParams p;
  p.alpha = a.alpha;
  p.k = a.k;
  p.threshold = a.threshold;
  p.label_smoothing = a.label_smoothing;
  return p;
}

// What --dtype names: an IEEE-style storage format (f64, f32, f16, bf16),
// one of the OCP element formats (FP8 E4M3 / E5M2, FP6 E2M3 / E3M2, FP4
// E2M1; softcheck/minifloat.hpp), non-saturating: past the largest finite
// value E5M2 gives inf, E4M3 NaN, and the FP6 / FP4 formats (no NaN or inf)
// their largest value; or a block format, whose scale a whole block decides:
// OCP MX (blocks of 32 with an E8M0 scale, elements in `mini`) or NVFP4
// (E2M1 in blocks of 16, an E4M3 block scale and an f32 tensor scale; the
// row is the tensor). Inputs and outputs are both rounded to it, once each;
// a block format's row (and each output operand) is one tensor.
enum class Blocks { none, mx, nvfp4 };
struct Dtype {
  std::string name;
  std::optional<Format> ieee;  // else mini
  MiniFloat mini{};
  Blocks blocks = Blocks::none;

  // A block format reads each value rounded to odd as a double (no rounding
  // to nearest before the block's own: minifloat_oracle.hpp, to_double_odd).
  std::optional<double> parse(const std::string& text) const {
    if (blocks != Blocks::none) return oracle::parse_to_odd(text);
    return ieee ? oracle::parse_rounded(text, *ieee) : oracle::parse_rounded(text, mini, Overflow::to_special);
  }
  // The values rounded as one tensor of the dtype (elementwise, but for the
  // block formats). Throws std::invalid_argument naming `what` where a block
  // format cannot hold them.
  std::vector<double> round(std::span<const oracle::Real> v, std::string_view what) const {
    std::vector<double> out;
    switch (blocks) {
      case Blocks::none:
        for (const oracle::Real& r : v)
          out.push_back(ieee ? oracle::round_to(r, *ieee) : oracle::round_to(r, mini, Overflow::to_special));
        return out;
      case Blocks::mx:
        out = oracle::mx_round(v, mini);
        for (std::size_t i = 0; i < out.size(); ++i)
          if (std::isnan(out[i])) {
            const std::size_t first = i / mx_block_size * mx_block_size;
            throw std::invalid_argument(fmt::format(
                "{}: the MX block of entries {} to {} has a NaN scale (an infinity in it, or its largest magnitude "
                "past 2^127 times {}'s largest binade): OCP MX makes every value of such a block NaN, so {} cannot "
                "hold it (a -inf mask included)",
                what, first, std::min(first + mx_block_size, out.size()) - 1, mini.name, name));
          }
        return out;
      case Blocks::nvfp4:
        try {
          return oracle::nvfp4_round(v);
        } catch (const std::domain_error&) {
          throw std::invalid_argument(fmt::format("{}: NVFP4 holds finite values within f32's range only (no -inf "
                                                  "mask)",
                                                  what));
        }
    }
    return out;
  }
  double largest() const {
    switch (blocks) {
      case Blocks::mx: return std::ldexp(max_finite(mini), e8m0_max_exponent);
      case Blocks::nvfp4: return FLT_MAX;
      case Blocks::none: break;
    }
    return ieee ? max_finite(*ieee) : max_finite(mini);
  }
};

std::vector<Dtype> dtypes() {
  std::vector<Dtype> d;
  for (Format f : {Format::f64, Format::f32, Format::f16, Format::bf16}) d.push_back({std::string(name(f)), f, {}});
  for (const MiniFloat& m : mini_formats) d.push_back({std::string(m.name), std::nullopt, m});
  for (const MiniFloat& m : mini_formats)
    d.push_back({mx_format_name(m), std::nullopt, m, Blocks::mx});
  d.push_back({"nvfp4", std::nullopt, fp4_e2m1, Blocks::nvfp4});
  return d;
}

std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (const Dtype& d : dtypes()) names.push_back(d.name);
  return names;
}

// Decimal (or hex-float) text rounded once, directly to the dtype from the
// text (oracle::parse_rounded: no double rounding through f64). -inf written
// as such masks an entry in every dtype (the oracle's row holds it); NaN,
// +inf and a finite value past the dtype's range are refused.
double parse_value(const std::string& text, const Dtype& d) {
  const std::string_view t = text;
  const std::optional<double> v = d.parse(text);
  if (!v) throw std::invalid_argument("not a number: '" + text + "'");
  const bool written_inf = t.find("inf") != std::string_view::npos || t.find("INF") != std::string_view::npos ||
                           t.find("Inf") != std::string_view::npos;
  if (std::isnan(*v)) {
    if (t.find("nan") != std::string_view::npos || t.find("NaN") != std::string_view::npos ||
        t.find("NAN") != std::string_view::npos)
      throw std::invalid_argument("NaN input '" + text + "': the softmax of a row with NaN is undefined");
    throw std::invalid_argument(fmt::format("'{}' overflows {} (largest finite {})", text, d.name, d.largest()));
  }
  if (*v == INFINITY)
    throw std::invalid_argument(written_inf ? "'" + text + "' is +inf: the softmax of a row with +inf is undefined"
                                            : fmt::format("'{}' overflows {} (largest finite {})", text, d.name,
                                                          d.largest()));
  if (*v == -INFINITY && !written_inf)
    throw std::invalid_argument(fmt::format("'{}' overflows {} (largest finite {}; write -inf explicitly to mask an "
                                            "entry)",
                                            text, d.name, d.largest()));
  return *v;
}

// Shortest text that reads back to the same value of the dtype: every f16,
// bf16 and OCP element value is a double, whose shortest text reads back to
// it in any of them.
std::string shortest(double v, const Dtype& d) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[64];
  const auto r = d.ieee == Format::f32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                                       : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// The rows of a --rows file (or standard input for "-"): one row per line,
// values separated by spaces, tabs or commas; blank lines and lines starting
// with '#' skipped. Each row's texts, with its line number.
std::vector<std::pair<std::size_t, std::vector<std::string>>> read_rows(const std::string& path) {
  std::ifstream file;
  if (path != "-") {
    file.open(path);
    if (!file) throw std::invalid_argument("--rows: cannot read '" + path + "'");
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::vector<std::pair<std::size_t, std::vector<std::string>>> rows;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    for (char& ch : line)
      if (ch == ',' || ch == '\t' || ch == '\r') ch = ' ';
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string w; words >> w;) row.push_back(w);
    if (row.empty() || row.front().starts_with('#')) continue;
    rows.emplace_back(number, std::move(row));
  }
  if (in.bad()) throw std::invalid_argument("--rows: error reading '" + path + "'");
  if (rows.empty()) throw std::invalid_argument("--rows: no row in '" + path + "'");
  return rows;
}

// The output lines of the op on one row x (already rounded to the dtype):
// `row_prefix` then, per value, the exact value and its rounding to f.
std::string exact_lines(Op op, const OpParams& params, const std::vector<double>& x, const OracleArgs& a,
                      const Dtype& f, bool has_target, bool has_upstream, const std::string& row_prefix) {
  // The class target: required by the ops that take one, refused by the others.
  // The other inputs (op table): required by the ops that take them, refused by the others.
  const auto users = [](InputKind k) {
    std::string s;
    for (const OpSpec& o : op_table)
      for (const Operand& i : o.in)
        if (i.input == k) s += (s.empty() ? "" : ", ") + std::string(o.name);
    return s;
  };
  const bool takes_target = spec(op).takes(InputKind::class_index),
             takes_upstream = spec(op).takes(InputKind::upstream_gradient);
  if (takes_target != has_target)
    throw std::invalid_argument(takes_target ? fmt::format("--op {} needs --target", name(op))
                                             : fmt::format("--target applies to --op {} only", users(InputKind::class_index)));
  if (takes_upstream != has_upstream)
    throw std::invalid_argument(takes_upstream ? fmt::format("--op {} needs --upstream", name(op))
                                               : fmt::format("--upstream applies to --op {} only",
                                                             users(InputKind::upstream_gradient)));
  std::vector<double> g;
  for (const std::string& s : a.upstream) {
    g.push_back(parse_value(s, f));
    if (!std::isfinite(g.back())) throw std::invalid_argument("--upstream: '" + s + "' is not finite");
  }
  if (takes_upstream && g.size() != x.size())
    throw std::invalid_argument(fmt::format("--upstream has {} values for a row of {}", g.size(), x.size()));
  if (takes_target && a.target != ignore_index && (a.target < 0 || a.target >= static_cast<std::int64_t>(x.size())))
    throw std::invalid_argument(fmt::format("--target {} is outside [0, {}) and not {} (ignore_index)", a.target,
                                            x.size(), ignore_index));
  // Enough precision that the printed digits are exact: 256 bits or more.
  const unsigned bits = std::max(256u, static_cast<unsigned>(a.digits * 3.33 + 64));
  oracle::ExactRow exact;
  oracle::SparseRow sparse;
  if (is_sparse(op))
    sparse = oracle::exact_sparse(op, params, x, a.temperature, bits);
  else
    exact = oracle::exact_row(x, a.temperature, bits);
  // An ignored row's loss and gradient are 0 whatever x holds, a fully masked row too (docs/gradients.md).
  const bool ignored = takes_target && a.target == ignore_index;
  const oracle::RowStatus status = is_sparse(op) ? sparse.status : exact.status;
  if (status == oracle::RowStatus::all_masked && !ignored)
    throw std::invalid_argument(fmt::format("every entry is -inf: the {} is undefined (each kernel declares its own masked-row policy)", name(op)));
  if (status != oracle::RowStatus::ok && !ignored) throw std::invalid_argument(fmt::format("the row has no exact {}", name(op)));
  // One line per value: exact, then rounded to the dtype; an op with
  // several outputs (softmax_lse) prefixes each line with the output's name.
  std::string out;
  std::optional<oracle::ExactCrossEntropy> ce;
  if (takes_target)
    ce = ignored ? oracle::ignored_cross_entropy(x.size(), bits) : oracle::exact_cross_entropy(exact, a.target, bits, params.label_smoothing);
  std::optional<oracle::ExactGradient> backward;
  for (const Operand& o : spec(op).out) {
    if (is_gradient(o.kind) && takes_upstream) backward = oracle::exact_backward(exact, g, o.kind, bits);
    const std::span<const oracle::Real> values = is_sparse(op)          ? std::span<const oracle::Real>(sparse.p)
                                                 : ce                   ? oracle::exact_values(*ce, o.kind)
                                                 : is_gradient(o.kind) ? std::span<const oracle::Real>(backward->value)
                                                                        : oracle::exact_values(exact, o.kind);
    const std::string prefix = row_prefix + (spec(op).several_outputs() ? std::string(o.name) + " " : "");
    const std::vector<double> rounded = f.round(values, "output " + std::string(o.name));
    for (std::size_t i = 0; i < values.size(); ++i)
      out += fmt::format("{}{} {}\n", prefix, oracle::to_string(values[i], a.digits), shortest(rounded[i], f));
  }
  return out;
}

}  // namespace

Command add_oracle(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "oracle",
      "Print the exact op (default softmax) of the values X1 X2 ..., one element per line:\n"
      "  <exact value, D significant digits> <correctly rounded value in --dtype>\n"
      "Each X is parsed as decimal (or hex float) and rounded ONCE to --dtype first; that\n"
      "rounded row is what the oracle sees. -inf masks an entry (put `--` before values\n"
      "that start with '-' and are not numbers, e.g. `softcheck oracle -- 1 -inf 2`).\n"
      "NaN and +inf are rejected (the result is undefined); so is an all -inf row.\n"
      "Sparse ops (docs/sparse.md) print the same two columns: --op sparsemax, entmax15,\n"
      "entmax --alpha A (A > 1; exact for 2 and 1.5, else certified bisection),\n"
      "topk_softmax --k K (ties at the K-th value all kept), threshold_softmax --threshold P.\n"
      "--op lse and --op entropy print one line: log sum exp(x / T), and -sum p log p of\n"
      "p = softmax(x / T). --op cross_entropy --target T [--label-smoothing E] prints the\n"
      "loss -sum q log p, q = (1 - E) onehot(T) + E / n (`loss` line), then the gradient\n"
      "p - q (`dx` lines); --op softmax_backward\n"
      "and log_softmax_backward --upstream G1,G2,... print the forward row (`y` lines),\n"
      "then the gradient given g (`dx` lines).\n"
      "--dtype: f64, f32, f16, bf16, or the OCP element formats e4m3, e5m2 (FP8), e2m3, e3m2\n"
      "(FP6), e2m1 (FP4), non-saturating (past the largest finite value e5m2 prints inf,\n"
      "e4m3 nan, FP6 and FP4 their largest value), or a block format: mxfp8_e4m3, mxfp8_e5m2,\n"
      "mxfp6_e2m3, mxfp6_e3m2, mxfp4_e2m1 (OCP MX: blocks of 32 from the row's first entry,\n"
      "an E8M0 scale each) and nvfp4 (E2M1 in blocks of 16, E4M3 block scales, an f32 tensor\n"
      "scale); the row, and each output, is one tensor, its values read and rounded to odd\n"
      "as doubles before the block conversion (no -inf masks: a block cannot hold them).\n"
      "--rows FILE (- for standard input) reads one row per line (values separated by\n"
      "spaces or commas; # comments) and prefixes each output line with the row's index,\n"
      "from 0; every row is checked before anything is printed.");
  auto a = std::make_shared<OracleArgs>();
  std::vector<std::string> op_names;
  for (const OpSpec& o : op_table) op_names.emplace_back(o.name);
  sub->add_option("--op", a->op, softcheck::op_names())
      ->check(CLI::IsMember(op_names))->capture_default_str();
  auto* alpha_opt = sub->add_option("--alpha", a->alpha, "entmax's alpha (> 1), --op entmax only");
  auto* k_opt = sub->add_option("--k", a->k, "entries kept by --op topk_softmax (>= 1)");
  auto* threshold_opt = sub->add_option("--threshold", a->threshold,
                                        "probability below which --op threshold_softmax drops an entry, in [0, 1]");
  auto* label_smoothing_opt =
      sub->add_option("--label-smoothing", a->label_smoothing,
                      "label smoothing E of --op cross_entropy, in [0, 1]: the target (1 - E) onehot(T) + E / n")
          ->capture_default_str();
  sub->add_option("--temperature", a->temperature, "Computes softmax(x / T) with x / T exact (T > 0)")->capture_default_str();
  sub->add_option("--dtype", a->dtype, "Format the inputs are rounded to and the outputs rounded to")
      ->check(CLI::IsMember(dtype_names()))->capture_default_str();
  sub->add_option("--digits", a->digits, "Significant digits of the exact values")->check(CLI::Range(1, 1000))->capture_default_str();
  auto* target_opt = sub->add_option("--target", a->target,
                                     "The class target of --op cross_entropy: an index in [0, n), or " +
                                         std::to_string(ignore_index) + " (ignore_index)");
  auto* upstream_opt = sub->add_option("--upstream", a->upstream,
                                       "The upstream gradient g of --op softmax_backward / log_softmax_backward: one "
                                       "finite value per entry of the row, comma-separated, rounded to --dtype")
                           ->delimiter(',');
  auto* values_opt = sub->add_option("values", a->values, "The row X1 X2 ...");
  auto* rows_opt = sub->add_option("--rows", a->rows,
                                   "Read the rows from FILE, one per line (- for standard input), instead of X1 X2 ...");
  return [a, alpha_opt, k_opt, threshold_opt, label_smoothing_opt, target_opt, upstream_opt, values_opt, rows_opt] {
    const Dtype f = [&] {
      for (const Dtype& d : dtypes())
        if (d.name == a->dtype) return d;
      throw std::invalid_argument("unknown --dtype '" + a->dtype + "'");
    }();
    const Op op = *parse_op(a->op);
    const OpParams params = op_params(op, *a, alpha_opt->count() > 0, k_opt->count() > 0, threshold_opt->count() > 0,
                                      label_smoothing_opt->count() > 0);
    if (!std::isfinite(a->temperature) || a->temperature <= 0)
      throw std::invalid_argument(fmt::format("--temperature must be finite and > 0, got {}", a->temperature));
    if ((values_opt->count() > 0) == (rows_opt->count() > 0))
      throw std::invalid_argument("give the row as X1 X2 ... or --rows FILE (one of them)");
    // The rows and their names in errors: the command line's one row, or the file's.
    std::vector<std::pair<std::string, std::vector<std::string>>> texts;
    if (rows_opt->count() > 0) {
      if (spec(op).several_inputs())
        throw std::invalid_argument(fmt::format("--rows takes the ops of one input row; --op {} takes more per row",
                                                name(op)));
      for (auto& [line, row] : read_rows(a->rows))
        texts.emplace_back(fmt::format("{} line {}: ", a->rows == "-" ? "standard input" : a->rows, line),
                           std::move(row));
    } else {
      texts.emplace_back("", a->values);
    }
    // q, K and V have no command-line form yet: attention's exact values come
    // with `run --attention` (worst cases) and oracle::exact_attention.
    if (has_head_dim(op))
      throw std::invalid_argument(fmt::format("--op {} takes q, K and V, which `softcheck oracle` cannot read yet; "
                                              "`softcheck run --attention` measures it",
                                              name(op)));
    std::string out;
    for (std::size_t r = 0; r < texts.size(); ++r) {
      const auto& [where, row] = texts[r];
      try {
        std::vector<double> x;
        for (const std::string& t : row) x.push_back(parse_value(t, f));
        if (f.blocks != Blocks::none) {  // the row is one tensor of the block format
          const std::vector<oracle::Real> read(x.begin(), x.end());
          x = f.round(read, "the row");
        }
        out += exact_lines(op, params, x, *a, f, target_opt->count() > 0, upstream_opt->count() > 0,
                           rows_opt->count() > 0 ? fmt::format("{} ", r) : std::string());
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(where + e.what());
      }
    }
    fmt::print("{}", out);
    return exit_ok;
  };
}

}  // namespace softcheck::cli
