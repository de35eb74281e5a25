// Numbers on the command line are read strictly, in one place for every
// option of every subcommand: a new option is covered by being declared with a
// numeric type. CLI11 on its own reads "nan" and "inf" as doubles (a NaN
// margin turned the gate's comparison off), lets strtoull wrap "-1" to
// 2^64 - 1, and saturates values beyond the type (strtoll's LLONG_MAX), so the
// message named a value nobody typed.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "commands.hpp"

namespace softcheck::cli {

namespace {

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Empty when `text` is a finite double, else what is wrong with it.
std::string check_finite(const std::string& text) {
  const std::string s = trimmed(text);
  if (s.empty()) return "expected a number, got an empty value";
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return "'" + text + "' is not a number";
  if (std::isnan(v)) return "'" + text + "' is not a number (NaN is not accepted)";
  if (std::isinf(v)) return "'" + text + "' is not finite" + (errno == ERANGE ? " (beyond the range of a double)" : "");
  return {};
}

// Empty when `text` is a whole number that a 64-bit integer of the given
// signedness holds, else what is wrong with it. Narrower targets are checked
// by CLI11's own conversion, which compares the value after the cast.
std::string check_integer(const std::string& text, bool is_unsigned) {
  const std::string s = trimmed(text);
  if (s.empty()) return "expected a whole number, got an empty value";
  if (is_unsigned && s.front() == '-') return "'" + text + "' is negative; expected a whole number >= 0";
  char* end = nullptr;
  errno = 0;
  if (is_unsigned)
    (void)std::strtoull(s.c_str(), &end, 0);
  else
    (void)std::strtoll(s.c_str(), &end, 0);
  if (end != s.c_str() + s.size()) return "'" + text + "' is not a whole number";
  if (errno == ERANGE) return "'" + text + "' is out of range of a 64-bit " + (is_unsigned ? "unsigned " : "") + "integer";
  return {};
}

void check_numbers_of(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_expected_max() == 0) continue;  // a flag
    const std::string type = opt->get_type_name();
    const auto is = [&](const char* t) { return type == t || type.starts_with(std::string(t) + ":"); };
    // An empty description keeps the help's type label as it was.
    if (is("FLOAT"))
      opt->check(CLI::Validator(check_finite, ""));
    else if (is("UINT"))
      opt->check(CLI::Validator([](std::string& s) { return check_integer(s, true); }, ""));
    else if (is("INT"))
      opt->check(CLI::Validator([](std::string& s) { return check_integer(s, false); }, ""));
  }
  for (CLI::App* sub : app.get_subcommands({})) check_numbers_of(*sub);
}

}  // namespace

void check_numbers_strictly(CLI::App& app) { check_numbers_of(app); }

}  // namespace softcheck::cli
