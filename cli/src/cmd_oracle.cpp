// softcheck oracle: the exact value of any op of the op table on one row
// (softmax, log-softmax, lse, entropy, and the sparse ops (sparsemax, entmax15, entmax --alpha, topk_softmax --k,
// threshold_softmax --threshold; docs/sparse.md), for scripting.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <optional>
#include <cstdlib>
#include <stdexcept>

#include "commands.hpp"
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

// Decimal (or hex-float) text rounded once, directly to the dtype: strtof for
// f32 (no double rounding through f64), strtod for f64.
double parse_value(const std::string& text, Format f) {
  const std::string_view t = text;
  if (t == "nan" || t == "-nan" || t == "+nan" || t == "NaN" || t == "NAN")
    throw std::invalid_argument("NaN input '" + text + "': the softmax of a row with NaN is undefined");
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = f == Format::f32 ? static_cast<double>(std::strtof(begin, &end)) : std::strtod(begin, &end);
  if (end == begin || *end != '\0')
    throw std::invalid_argument("not a number: '" + text + "'");
  if (std::isnan(v)) throw std::invalid_argument("NaN input '" + text + "' is not allowed");
  if (v == INFINITY)
    throw std::invalid_argument("'" + text + "' is +inf in " + std::string(name(f)) +
                                ": the softmax of a row with +inf is undefined");
  if (v == -INFINITY && errno == ERANGE)
    throw std::invalid_argument("'" + text + "' overflows " + std::string(name(f)) +
                                " (write -inf explicitly to mask an entry)");
  return v;
}

// Shortest text that reads back to the same value of the format.
std::string shortest(double v, Format f) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[64];
  const auto r = f == Format::f32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                                  : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
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
      "then the gradient given g (`dx` lines).");
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
  sub->add_option("--dtype", a->dtype, "Format the inputs are rounded to and the outputs rounded to: f64 or f32")
      ->check(CLI::IsMember({"f64", "f32"}))->capture_default_str();
  sub->add_option("--digits", a->digits, "Significant digits of the exact values")->check(CLI::Range(1, 1000))->capture_default_str();
  auto* target_opt = sub->add_option("--target", a->target,
                                     "The class target of --op cross_entropy: an index in [0, n), or " +
                                         std::to_string(ignore_index) + " (ignore_index)");
  auto* upstream_opt = sub->add_option("--upstream", a->upstream,
                                       "The upstream gradient g of --op softmax_backward / log_softmax_backward: one "
                                       "finite value per entry of the row, comma-separated, rounded to --dtype")
                           ->delimiter(',');
  sub->add_option("values", a->values, "The row X1 X2 ...")->required();
  return [a, alpha_opt, k_opt, threshold_opt, label_smoothing_opt, target_opt, upstream_opt] {
    const Format f = *parse_format(a->dtype);
    const Op op = *parse_op(a->op);
    const OpParams params = op_params(op, *a, alpha_opt->count() > 0, k_opt->count() > 0, threshold_opt->count() > 0,
                                      label_smoothing_opt->count() > 0);
    if (!std::isfinite(a->temperature) || a->temperature <= 0)
      throw std::invalid_argument(fmt::format("--temperature must be finite and > 0, got {}", a->temperature));
    std::vector<double> x;
    for (const std::string& s : a->values) x.push_back(parse_value(s, f));
    // q, K and V have no command-line form yet: attention's exact values come
    // with `run --attention` (worst cases) and oracle::exact_attention.
    if (has_head_dim(op))
      throw std::invalid_argument(fmt::format("--op {} takes q, K and V, which `softcheck oracle` cannot read yet; "
                                              "`softcheck run --attention` measures it",
                                              name(op)));
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
    if (takes_target != (target_opt->count() > 0))
      throw std::invalid_argument(takes_target ? fmt::format("--op {} needs --target", name(op))
                                               : fmt::format("--target applies to --op {} only", users(InputKind::class_index)));
    if (takes_upstream != (upstream_opt->count() > 0))
      throw std::invalid_argument(takes_upstream ? fmt::format("--op {} needs --upstream", name(op))
                                                 : fmt::format("--upstream applies to --op {} only",
                                                               users(InputKind::upstream_gradient)));
    std::vector<double> g;
    for (const std::string& s : a->upstream) {
      g.push_back(parse_value(s, f));
      if (!std::isfinite(g.back())) throw std::invalid_argument("--upstream: '" + s + "' is not finite");
    }
    if (takes_upstream && g.size() != x.size())
      throw std::invalid_argument(fmt::format("--upstream has {} values for a row of {}", g.size(), x.size()));
    if (takes_target && a->target != ignore_index && (a->target < 0 || a->target >= static_cast<std::int64_t>(x.size())))
      throw std::invalid_argument(fmt::format("--target {} is outside [0, {}) and not {} (ignore_index)", a->target,
                                              x.size(), ignore_index));
    // Enough precision that the printed digits are exact: 256 bits or more.
    const unsigned bits = std::max(256u, static_cast<unsigned>(a->digits * 3.33 + 64));
    oracle::ExactRow exact;
    oracle::SparseRow sparse;
    if (is_sparse(op))
      sparse = oracle::exact_sparse(op, params, x, a->temperature, bits);
    else
      exact = oracle::exact_row(x, a->temperature, bits);
    // An ignored row's loss and gradient are 0 whatever x holds, a fully masked row too (docs/gradients.md).
    const bool ignored = takes_target && a->target == ignore_index;
    const oracle::RowStatus status = is_sparse(op) ? sparse.status : exact.status;
    if (status == oracle::RowStatus::all_masked && !ignored)
      throw std::invalid_argument(fmt::format("every entry is -inf: the {} is undefined (each kernel declares its own masked-row policy)", name(op)));
    if (status != oracle::RowStatus::ok && !ignored) throw std::invalid_argument(fmt::format("the row has no exact {}", name(op)));
    // One line per value: exact, then rounded to the dtype; an op with
    // several outputs (softmax_lse) prefixes each line with the output's name.
    std::string out;
    std::optional<oracle::ExactCrossEntropy> ce;
    if (takes_target)
      ce = ignored ? oracle::ignored_cross_entropy(x.size(), bits) : oracle::exact_cross_entropy(exact, a->target, bits, params.label_smoothing);
    std::optional<oracle::ExactGradient> backward;
    for (const Operand& o : spec(op).out) {
      if (is_gradient(o.kind) && takes_upstream) backward = oracle::exact_backward(exact, g, o.kind, bits);
      const std::span<const oracle::Real> values = is_sparse(op)          ? std::span<const oracle::Real>(sparse.p)
                                                   : ce                   ? oracle::exact_values(*ce, o.kind)
                                                   : is_gradient(o.kind) ? std::span<const oracle::Real>(backward->value)
                                                                          : oracle::exact_values(exact, o.kind);
      const std::string prefix = spec(op).several_outputs() ? std::string(o.name) + " " : "";
      for (const oracle::Real& v : values)
        out += fmt::format("{}{} {}\n", prefix, oracle::to_string(v, a->digits), shortest(oracle::round_to(v, f), f));
    }
    fmt::print("{}", out);
    return exit_ok;
  };
}

}  // namespace softcheck::cli
