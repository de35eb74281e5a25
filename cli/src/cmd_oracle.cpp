// softcheck oracle: exact softmax / log-softmax of one row, for scripting.
#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "commands.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck::cli {

namespace {

struct OracleArgs {
  std::string op = "softmax";
  double temperature = 1;
  std::string dtype = "f64";
  int digits = 40;
  std::vector<std::string> values;
};

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
      "Print the exact softmax (or log-softmax) of the values X1 X2 ..., one element per line:\n"
      "  <exact value, D significant digits> <correctly rounded value in --dtype>\n"
      "Each X is parsed as decimal (or hex float) and rounded ONCE to --dtype first; that\n"
      "rounded row is what the oracle sees. -inf masks an entry (put `--` before values\n"
      "that start with '-' and are not numbers, e.g. `softcheck oracle -- 1 -inf 2`).\n"
      "NaN and +inf are rejected (the result is undefined); so is an all -inf row.");
  auto a = std::make_shared<OracleArgs>();
  sub->add_option("--op", a->op, "softmax or log_softmax")->check(CLI::IsMember({"softmax", "log_softmax"}))->capture_default_str();
  sub->add_option("--temperature", a->temperature, "Computes softmax(x / T) with x / T exact (T > 0)")->capture_default_str();
  sub->add_option("--dtype", a->dtype, "Format the inputs are rounded to and the outputs rounded to: f64 or f32")
      ->check(CLI::IsMember({"f64", "f32"}))->capture_default_str();
  sub->add_option("--digits", a->digits, "Significant digits of the exact values")->check(CLI::Range(1, 1000))->capture_default_str();
  sub->add_option("values", a->values, "The row X1 X2 ...")->required();
  return [a] {
    const Format f = *parse_format(a->dtype);
    if (!std::isfinite(a->temperature) || a->temperature <= 0)
      throw std::invalid_argument(fmt::format("--temperature must be finite and > 0, got {}", a->temperature));
    std::vector<double> x;
    for (const std::string& s : a->values) x.push_back(parse_value(s, f));
    // Enough precision that the printed digits are exact: 256 bits or more.
    const unsigned bits = std::max(256u, static_cast<unsigned>(a->digits * 3.33 + 64));
    const oracle::ExactRow exact = oracle::exact_row(x, a->temperature, bits);
    if (exact.status == oracle::RowStatus::all_masked)
      throw std::invalid_argument("every entry is -inf: the softmax is undefined (each kernel declares its own masked-row policy)");
    if (exact.status != oracle::RowStatus::ok) throw std::invalid_argument("the row has no exact softmax");
    const auto& values = *parse_op(a->op) == Op::softmax ? exact.softmax : exact.log_softmax;
    std::string out;
    for (const oracle::Real& v : values)
      out += fmt::format("{} {}\n", oracle::to_string(v, a->digits), shortest(oracle::round_to(v, f), f));
    fmt::print("{}", out);
    return exit_ok;
  };
}

}  // namespace softcheck::cli
