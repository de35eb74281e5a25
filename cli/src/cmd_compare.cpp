// softcheck compare: outputs computed anywhere (NumPy .npy files of inputs x
// and outputs y), judged row by row by the same function as the Python
// module's softcheck.check (compare/: the row judge, the reference rule and
// the floor, as `run` judges a kernel), with the usual report files.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "npy.hpp"
#include "softcheck/compare.hpp"
#include "text_table.hpp"

namespace softcheck::cli {

namespace {

struct CompareArgs {
  std::string x, y;
  std::string op{name(Op::softmax)};
  std::string dtype;
  double temperature = 1;
  std::string contract;
  ReferenceRuleSettings reference_rule;
  std::string masked_policy = "nan";
  std::string out = "reports/compare";
  std::string kernel_name = "external";
  std::string oracle = "tiered";
  unsigned oracle_bits = 256;
  std::int64_t row = -1;
  std::size_t show = 5;
  bool quiet = false;
};

// A word for a shell command line: as it is when it needs no quoting.
std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_./-+=:,@%").find(c) != std::string_view::npos;
  });
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// --contract: a bound in ULPs (a number), or a built-in kernel whose derived
// contract applies.
Contract contract_of(const std::string& text, Op op, Format f, std::string& source) {
  double ulps = 0;
  const char* end = text.c_str() + text.size();
  char* stop = nullptr;
  ulps = std::strtod(text.c_str(), &stop);
  if (!text.empty() && stop == end) {
    source = fmt::format("{} ulps", text);
    return ulp_contract(ulps);
  }
  source = "the derived contract of kernel " + text;
  return kernel_contract(text, op, f);
}

MaskedRowPolicy policy_of(const std::string& s) {
  for (MaskedRowPolicy p : {MaskedRowPolicy::nan, MaskedRowPolicy::zeros, MaskedRowPolicy::uniform})
    if (name(p) == s) return p;
  throw std::invalid_argument("unknown --masked-policy '" + s + "'");
}

std::string number(double v) { return fmt::format("{:.4g}", v); }

}  // namespace

Command add_compare(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "compare",
      "Judge outputs computed anywhere: --x X.npy (inputs) and --y Y.npy (your kernel's outputs)\n"
      "are read as NumPy files, every row of y is judged against the exact op(x / T) the way `run`\n"
      "judges a kernel (the same row judge, reference rule and floor; docs/python.md), and\n"
      "report.json, report.md and report.html are written to --out.\n"
      "x is one row (n) or rows x n; y has x's shape for a row output (softmax, log_softmax) and\n"
      "one value per row for lse and entropy. Both hold values of --dtype: float64 (f64),\n"
      "float32 (f32), float16 (f16), or bf16 bit patterns as uint16/int16 (torch:\n"
      "t.view(torch.int16).numpy()). -inf in x masks an entry; a row of -inf is judged by\n"
      "--masked-policy; a row with NaN or +inf has no exact value and no verdict.\n"
      "What a row is held to: --contract ULPS (a bound in the output's metric) or --contract\n"
      "KERNEL (the derived contract of a built-in kernel of the same format, `softcheck list\n"
      "--wide`); without --contract the reference rule (max |y - exact| <= K x that of\n"
      "softcheck's stable kernel in the format + SLACK u max(1, max |output|)) and the floor\n"
      "(no NaN/inf where the exact value is finite).");
  sub->footer(
      "Exit status: 0 every row held, 1 a row violated its rule, 2 usage error (a bad file, a\n"
      "shape or dtype mismatch, an option out of range; nothing written).\n"
      "Example:\n"
      "  python3 -c 'import numpy as np, torch; x = torch.randn(64, 1000); np.save(\"x.npy\", x.numpy());\n"
      "              np.save(\"y.npy\", torch.softmax(x, -1).numpy())'\n"
      "  softcheck compare --x x.npy --y y.npy --op softmax --dtype f32 --out cmp/\n"
      "Each violated row's repro line reruns that row alone (--row R).");
  auto a = std::make_shared<CompareArgs>();
  std::vector<std::string> ops;
  for (Op op : compare_ops()) ops.emplace_back(name(op));
  sub->add_option("--x", a->x, "NumPy file of the inputs x (one row, or rows x n)")->required();
  sub->add_option("--y", a->y, "NumPy file of the outputs y to judge")->required();
  sub->add_option("--op", a->op, "What y computes: " + compare_op_names())
      ->check(CLI::IsMember(ops))
      ->capture_default_str();
  sub->add_option("--dtype", a->dtype, "Format of x and y: f64, f32, f16, bf16")
      ->check(CLI::IsMember({"f64", "f32", "f16", "bf16"}))
      ->required();
  sub->add_option("--temperature", a->temperature, "y = op(x / T); T a normal value of --dtype")->capture_default_str();
  sub->add_option("--contract", a->contract,
                  "The rule each row is held to: a bound in ULPs (units of u for lse and entropy), or the name "
                  "of a built-in kernel of --dtype whose derived contract applies (e.g. shifted_f32); default: "
                  "no contract (the reference rule and the floor)");
  sub->add_option("--reference-rule", a->reference_rule.scope,
                  "When the reference rule judges: no_contract (without --contract), all (also beside a "
                  "contract), off")
      ->check(CLI::IsMember({"no_contract", "all", "off"}))
      ->capture_default_str();
  sub->add_option("--reference-k", a->reference_rule.k, "K of the reference rule (>= 1)")
      ->check(CLI::Range(1.0, 1e12))
      ->capture_default_str();
  sub->add_option("--reference-slack", a->reference_rule.slack, "SLACK of the reference rule, in units of u (>= 0)")
      ->check(CLI::Range(0.0, 1e12))
      ->capture_default_str();
  sub->add_option("--masked-policy", a->masked_policy,
                  "What y holds on a row of x that is all -inf: nan (PyTorch's softmax), zeros, uniform")
      ->check(CLI::IsMember({"nan", "zeros", "uniform"}))
      ->capture_default_str();
  sub->add_option("--out", a->out, "Directory for report.json, report.md and report.html")->capture_default_str();
  sub->add_option("--name", a->kernel_name, "The kernel's name in the reports")->capture_default_str();
  sub->add_option("--oracle", a->oracle, "tiered (fast tiers, MPFR for what they leave) or mpfr (MPFR for every row)")
      ->check(CLI::IsMember({"tiered", "mpfr"}))
      ->capture_default_str();
  sub->add_option("--oracle-bits", a->oracle_bits, "MPFR working precision in bits")
      ->check(CLI::Range(64u, 4096u))
      ->capture_default_str();
  sub->add_option("--row", a->row,
                  "Judge row R only (from 0) and print why, with the oracle line of its values; writes no report")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--show", a->show, "Violated rows printed with their reason and repro line")->capture_default_str();
  sub->add_flag("--quiet", a->quiet, "No summary; exit status and files only");
  return [a] {
    const Format f = *parse_format(a->dtype);
    const Op op = *parse_op(a->op);
    if (!npy_reader_available()) throw std::invalid_argument("compare: " + npy_reader_unavailable_reason());
    if (!temperature_fits_format(a->temperature, f))
      throw std::invalid_argument(fmt::format("--temperature {} is not a normal {} value", a->temperature, a->dtype));
    CompareSpec s;
    s.op = op;
    s.format = f;
    s.temperature = a->temperature;
    s.masked_policy = policy_of(a->masked_policy);
    if (!a->contract.empty()) s.contract = contract_of(a->contract, op, f, s.contract_source);
    s.reference_rule = a->reference_rule;
    s.tiered = a->oracle == "tiered";
    s.oracle_bits = a->oracle_bits;
    s.kernel_name = a->kernel_name;
    s.explain_limit = a->show;
    const std::filesystem::path out = a->out;
    const std::vector<std::filesystem::path> outputs = {out / "report.json", out / "report.md", out / "report.html"};
    if (a->row < 0) check_outputs_against_inputs({a->x, a->y}, outputs);
    const NpyArray x = read_npy(a->x, f), y = read_npy(a->y, f);
    const std::int64_t cols = static_cast<std::int64_t>(x.shape.back());
    const std::int64_t rows = x.shape.size() == 2 ? static_cast<std::int64_t>(x.shape[0]) : 1;
    const bool row_output = spec(op).out[0].shape == OperandShape::row;
    const auto shape_text = [](const std::vector<std::size_t>& sh) {
      return sh.size() == 1 ? fmt::format("({},)", sh[0]) : fmt::format("({}, {})", sh[0], sh[1]);
    };
    const bool y_fits = row_output ? y.shape == x.shape
                                   : (x.shape.size() == 1 ? y.shape == std::vector<std::size_t>{1}
                                                          : y.shape == std::vector<std::size_t>{x.shape[0]});
    if (!y_fits)
      throw std::invalid_argument(fmt::format("shape mismatch: {} is {} but {} of x {} {} needs {}", a->y,
                                              shape_text(y.shape), name(op), a->x, shape_text(x.shape),
                                              row_output ? shape_text(x.shape)
                                                         : fmt::format("({},)", x.shape.size() == 1 ? 1 : x.shape[0])));
    // A violated row is replayed alone by this command with --row.
    std::string replay = fmt::format("softcheck compare --x {} --y {} --op {} --dtype {}",
                                     shell_word(std::filesystem::absolute(a->x).string()),
                                     shell_word(std::filesystem::absolute(a->y).string()), a->op, a->dtype);
    if (a->temperature != 1) replay += fmt::format(" --temperature {}", a->temperature);
    if (!a->contract.empty()) replay += " --contract " + shell_word(a->contract);
    const ReferenceRuleSettings defaults;
    if (a->reference_rule.scope != defaults.scope) replay += " --reference-rule " + a->reference_rule.scope;
    if (a->reference_rule.k != defaults.k) replay += fmt::format(" --reference-k {}", a->reference_rule.k);
    if (a->reference_rule.slack != defaults.slack) replay += fmt::format(" --reference-slack {}", a->reference_rule.slack);
    if (a->masked_policy != "nan") replay += " --masked-policy " + a->masked_policy;
    if (a->oracle != "tiered") replay += " --oracle " + a->oracle;

    const std::int64_t ycols = output_cols(spec(op).out[0], cols);
    if (a->row >= 0) {
      if (a->row >= rows) throw std::invalid_argument(fmt::format("--row {}: x has {} rows", a->row, rows));
      const std::int64_t r = a->row;
      s.repro = [&](std::int64_t, std::span<const double> xr) { return oracle_repro_line(op, f, a->temperature, xr); };
      const CompareResult res =
          judge_rows(std::span(x.values).subspan(static_cast<std::size_t>(r * cols), static_cast<std::size_t>(cols)),
                     std::span(y.values).subspan(static_cast<std::size_t>(r * ycols), static_cast<std::size_t>(ycols)),
                     1, cols, s);
      const CompareRow& row = res.rows[0];
      if (!a->quiet) {
        fmt::print("{}", wrapped(fmt::format("rule: {}", res.rule)));
        fmt::print("{}", wrapped(fmt::format("row {}: {}{}", r, row.verdict, row.explain.empty() ? "" : ": " + row.explain)));
        fmt::print("{}", wrapped("exact values: " + row.repro));
      }
      return res.held ? exit_ok : exit_violation;
    }
    s.repro = [&](std::int64_t r, std::span<const double>) { return fmt::format("{} --row {}", replay, r); };
    s.description = fmt::format("outputs {} of inputs {} ({}), judged by softcheck compare", a->y, a->x, a->dtype);
    ensure_writable_dir(out);
    const CompareResult res = judge_rows(x.values, y.values, rows, cols, s);
    write_files_atomically(report_files(res.report, out));
    if (!a->quiet) {
      const KernelSummary& k = res.report.kernels.at(0);
      fmt::print("{}", wrapped(fmt::format("compare: {} rows of {} ({}, {}, T = {}) from {} and {}", rows, cols,
                                           a->op, a->dtype, a->temperature, a->x, a->y)));
      fmt::print("{}", wrapped("rule: " + res.rule));
      const std::string unit = spec(op).out[0].metric == Metric::ulp ? "ulp" : "u";
      fmt::print("{}", wrapped(fmt::format("{}: {} of {} rows violated; max error {} {} (mean {}){}{}{}",
                                           res.held ? "held" : "VIOLATED", res.violated_rows, rows,
                                           number(res.max_error), unit, number(k.mean_ulp),
                                           k.reference.rows > 0 ? fmt::format(", reference rule max ratio {}",
                                                                              number(k.reference.max_ratio))
                                                                : "",
                                           res.masked_rows > 0 ? fmt::format(", {} fully masked rows", res.masked_rows)
                                                               : "",
                                           res.undefined_rows > 0
                                               ? fmt::format(", {} rows with NaN/+inf inputs (no verdict)",
                                                             res.undefined_rows)
                                               : "")));
      std::size_t shown = 0;
      for (std::size_t r = 0; r < res.rows.size() && shown < a->show; ++r) {
        const CompareRow& row = res.rows[r];
        if (row.holds) continue;
        shown++;
        fmt::print("{}", labelled(fmt::format("row {}: {}", r, row.verdict), row.explain + "; repro: " + row.repro));
      }
      if (res.violated_rows > shown) fmt::print("... and {} more violated rows (report.json)\n", res.violated_rows - shown);
      if (res.worst.present)
        fmt::print("{}", labelled(fmt::format("worst: row {}, element {} (exact {}):", res.worst.row,
                                              res.worst.element, res.worst.exact),
                                  fmt::format("{}; repro: {}", res.worst.explain, res.worst.repro)));
      fmt::print("{}", wrapped(fmt::format("wrote report.json, report.md and report.html in {}", out.string())));
    }
    return res.held ? exit_ok : exit_violation;
  };
}

}  // namespace softcheck::cli
