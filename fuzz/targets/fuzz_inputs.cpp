// fuzz_inputs: every text parser the CLI has. The first byte picks the parser,
// the rest is its text. Each must return a value or a clear (non-empty) error,
// never crash or hang; what is accepted must survive a print/parse round trip
// (rows bit for bit, reports as the same JSON).
//   0  props::parse_row        the hex-exact row syntax of repro lines (--row=...)
//   1  props::parse_value      one value of it (--temperature=...)
//   2  the CLI's argument parser (CLI11 with every subcommand's options and
//      validators): NUL- or newline-separated argv; the cheap commands that
//      parse values themselves (oracle and repro on short rows, list) are run
//      too (repro: parse_row/parse_value and replay's errors, as users reach them)
//   3  the name lookups behind --impl, --op, --dtype, --property, --family
//   4  from_json               report.json and baselines (report, gate)
//   5  performance_from_json   bench.json
//   6  gate::parse_reference_rule   gate's --reference KERNEL:K
//   7  a printed command line, e.g. a `softcheck repro ...` line from a report
//      or a fuzzer: space-separated words (a leading "softcheck" dropped),
//      then as 2
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "softcheck/input_families.hpp"
#include "softcheck/format.hpp"
#include "softcheck/gate.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"
#include "softcheck/report.hpp"

namespace {

using softcheck::props::Expected;

[[noreturn]] void fail(std::string_view what, std::string_view input) {
  std::fprintf(stderr, "==softcheck-fuzz== PARSER INVARIANT VIOLATED: %.*s\n  input (%zu bytes): %.*s\n",
               static_cast<int>(what.size()), what.data(), input.size(), static_cast<int>(input.size()),
               input.data());
  std::abort();
}

bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

template <class T>
void require_clear_error(const Expected<T>& r, std::string_view input) {
  if (!r.has_value() && r.error().empty()) fail("error without a message", input);
}

void fuzz_row(std::string_view text) {
  using namespace softcheck::props;
  const Expected<std::vector<double>> row = parse_row(text);
  require_clear_error(row, text);
  if (!row) return;
  const std::string printed = format_row(*row);
  const Expected<std::vector<double>> again = parse_row(printed);
  if (!again || again->size() != row->size()) fail("format_row output does not parse back", text);
  for (std::size_t i = 0; i < row->size(); ++i)
    if (!same_value((*row)[i], (*again)[i])) fail("format_row/parse_row round trip changed a value", text);
}

void fuzz_value(std::string_view text) {
  using namespace softcheck::props;
  const Expected<double> v = parse_value(text);
  require_clear_error(v, text);
  if (!v) return;
  const Expected<double> again = parse_value(format_value(*v));
  if (!again || !same_value(*v, *again)) fail("format_value/parse_value round trip changed the value", text);
}

// argv from NUL- or newline-separated words (empty words kept: "" is an argument).
std::vector<std::string> split_args(std::string_view text) {
  std::vector<std::string> args;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == '\0' || text[i] == '\n') {
      args.emplace_back(text.substr(start, i - start));
      start = i + 1;
    }
  return args;
}

// Count of an option of `sub` (0 when it has no such option).
std::size_t count_of(const CLI::App& sub, const std::string& option) {
  const CLI::Option* o = sub.get_option_no_throw(option);
  return o == nullptr ? 0 : o->count();
}

// The commands cheap enough to run on every input: `list`, `oracle` on short
// rows with few digits (a long row or 1000 digits costs milliseconds), and
// `repro` on short rows; never with --plugin (it would dlopen whatever path
// the input names).
bool cheap_to_run(const CLI::App& sub) {
  if (count_of(sub, "--plugin") > 0) return false;
  if (sub.get_name() == "list") return true;
  if (sub.get_name() == "repro") {
    const CLI::Option* row = sub.get_option_no_throw("--row");
    return row != nullptr && row->count() == 1 && row->as<std::string>().size() <= 512;
  }
  if (sub.get_name() != "oracle") return false;
  const CLI::Option* digits = sub.get_option_no_throw("--digits");
  if (count_of(sub, "values") > 16) return false;
  return digits == nullptr || digits->count() == 0 || digits->as<int>() <= 60;
}

// Words of a printed command line; the program name is dropped.
std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < text.size() && text[i] != ' ') ++i;
    if (i > start) words.emplace_back(text.substr(start, i - start));
  }
  if (!words.empty() && words.front() == "softcheck") words.erase(words.begin());
  return words;
}

using softcheck::cli::Adder;
using softcheck::cli::all_commands;

// The CLI as cli/src/main.cpp builds it (cli::all_commands), or with only some
// of its subcommands.
struct Cli {
  CLI::App app{"softcheck"};
  std::vector<std::pair<CLI::App*, softcheck::cli::Command>> commands;
  explicit Cli(std::span<const Adder> adders = all_commands) {
    app.require_subcommand(1);
    for (Adder adder : adders) {
      softcheck::cli::Command c = adder(app);
      commands.emplace_back(app.get_subcommands({}).back(), std::move(c));
    }
    softcheck::cli::check_numbers_strictly(app);
  }
};

// Parses `argv` (CLI11 takes it reversed and consumes it); false (after
// checking the message) on a parse error.
bool parse_cli(Cli& cli, std::vector<std::string> argv, std::string_view text) {
  std::reverse(argv.begin(), argv.end());
  try {
    cli.app.parse(std::move(argv));
  } catch (const CLI::ParseError& e) {
    if (std::strlen(e.what()) == 0 && e.get_exit_code() != 0) fail("CLI parse error without a message", text);
    return false;
  }
  return true;
}

// Building the CLI costs more than parsing, so one instance parses every input
// (CLI11 clears it before each parse; whether a parse succeeds depends on the
// arguments only). Running a command needs the values of this input alone:
// a fresh instance with only the parsed subcommand (exactly one is required,
// and the argv that parsed names it, so the parse is the same; building all
// nine cost 15 % of the target's time) parses again (the words split again:
// the first parse consumed them) and runs it. The shared instance is cleared before
// returning, so that the strings this input left in it are freed within the
// same run: libFuzzer reruns every input that allocates more than it frees
// to look for a leak (-detect_leaks, on by default), which doubled the cost
// of nearly every CLI input.
void fuzz_cli(std::string_view text, std::vector<std::string> (*split)(std::string_view)) {
  std::vector<std::string> args = split(text);
  if (args.size() > 64) return;
  static Cli shared;
  if (!parse_cli(shared, std::move(args), text)) {
    shared.app.clear();
    return;
  }
  const auto parsed = std::find_if(shared.commands.begin(), shared.commands.end(),
                                   [](const auto& c) { return c.first->parsed(); });
  const bool runs = parsed != shared.commands.end() && cheap_to_run(*parsed->first);
  const std::size_t which = static_cast<std::size_t>(parsed - shared.commands.begin());
  shared.app.clear();
  if (!runs) return;
  Cli fresh({&all_commands[which], 1});
  if (!parse_cli(fresh, split(text), text)) fail("argv parsed by the whole CLI but not by its subcommand", text);
  for (auto& [sub, run] : fresh.commands) {
    if (!sub->parsed() || !cheap_to_run(*sub)) continue;
    try {
      (void)run();
    } catch (const std::exception& e) {
      if (std::strlen(e.what()) == 0) fail("command error without a message", text);
    }
  }
}

void fuzz_names(std::string_view text) {
  const std::string s(text);
  (void)softcheck::parse_format(s);
  (void)softcheck::parse_op(s);
  (void)softcheck::find_kernel(s);
  (void)softcheck::props::find_property(s);
  (void)softcheck::find_input_family(s);
}

// Runs parse(text): a ReportFormatError (or invalid_argument) must carry a
// message; anything else escaping is a crash. Returns whether it parsed.
template <class Parse>
bool parses_or_explains(Parse parse, std::string_view text) {
  try {
    parse();
    return true;
  } catch (const softcheck::ReportFormatError& e) {
    if (std::strlen(e.what()) == 0) fail("ReportFormatError without a message", text);
  } catch (const std::invalid_argument& e) {
    if (std::strlen(e.what()) == 0) fail("invalid_argument without a message", text);
  }
  return false;
}

// An accepted report prints to JSON that reads back to the same JSON, and
// renders as Markdown and HTML.
void fuzz_report(std::string_view text) {
  softcheck::Report r;
  if (!parses_or_explains([&] { r = softcheck::from_json(text); }, text)) return;
  const std::string once = softcheck::to_json(r);
  softcheck::Report again;
  if (!parses_or_explains([&] { again = softcheck::from_json(once); }, text)) fail("to_json output does not read back", text);
  if (softcheck::to_json(again) != once) fail("report JSON round trip changed the report", text);
  (void)softcheck::to_markdown(r);
  (void)softcheck::to_html(r);
}

void fuzz_performance(std::string_view text) {
  softcheck::Performance p;
  if (!parses_or_explains([&] { p = softcheck::performance_from_json(text); }, text)) return;
  const std::string once = softcheck::performance_to_json(p);
  softcheck::Performance again;
  if (!parses_or_explains([&] { again = softcheck::performance_from_json(once); }, text))
    fail("performance_to_json output does not read back", text);
  if (softcheck::performance_to_json(again) != once) fail("bench JSON round trip changed it", text);
}

void fuzz_reference_rule(std::string_view text) {
  (void)parses_or_explains([&] { (void)softcheck::gate::parse_reference_rule(std::string(text)); }, text);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The commands print their results to stdout: discard them (libFuzzer and
  // every report of this target use stderr).
  if (std::freopen("/dev/null", "w", stdout) == nullptr) std::perror("fuzz_inputs: /dev/null");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 8) {
    case 0: fuzz_row(text); break;
    case 1: fuzz_value(text); break;
    case 2: fuzz_cli(text, split_args); break;
    case 3: fuzz_names(text); break;
    case 4: fuzz_report(text); break;
    case 5: fuzz_performance(text); break;
    case 6: fuzz_reference_rule(text); break;
    default: fuzz_cli(text, split_words); break;
  }
  return 0;
}
