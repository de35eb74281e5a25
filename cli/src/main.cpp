// softcheck: numerical verification and fuzzing harness for softmax kernels.
#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "supervisor.hpp"
#include "text_table.hpp"
#include "softcheck/version.hpp"

namespace {

using namespace softcheck::cli;

// A subcommand's description up to its first ". ", ": " or "; " (the rest
// is for its own --help), on one line of at most `width` columns.
std::string summary_of(std::string d, std::size_t width) {
  std::replace(d.begin(), d.end(), '\n', ' ');
  std::size_t end = d.size();
  for (const char* stop : {". ", ": ", "; "}) end = std::min(end, d.find(stop));
  d.resize(end);
  if (d.size() > width) d = d.substr(0, d.rfind(' ', width - 4)) + " ...";
  return d;
}

// One line per subcommand, within the terminal's width (text_table.hpp).
std::string subcommand_lines(const CLI::App& app) {
  std::string out;
  for (const CLI::App* sub : app.get_subcommands({}))
    out += fmt::format("  {:<8} {}\n", sub->get_name(), summary_of(sub->get_description(), terminal_width - 11));
  return out;
}

std::string short_help(const CLI::App& app) {
  return fmt::format("usage: softcheck SUBCOMMAND [OPTIONS]   (softcheck SUBCOMMAND --help for its options)\n\n"
                     "Subcommands:\n{}\n"
                     "Exit status: 0 every declared contract held, 1 a contract was violated, 2 usage or\n"
                     "harness error (nothing written); `repro` uses 3 for \"not applicable\".\n",
                     subcommand_lines(app));
}

// A first word that is neither an option nor a subcommand: CLI11 would say
// "A subcommand is required", which hides the typo.
bool is_unknown_subcommand(const CLI::App& app, std::string_view word) {
  if (word.empty() || word.front() == '-') return false;
  for (const CLI::App* sub : app.get_subcommands({}))
    if (sub->check_name(std::string(word))) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // The suite allocates and frees row and output buffers of up to a few MB
  // per case. glibc's defaults hand such blocks back to the kernel and take
  // them again as fresh zeroed pages: a fixed mmap threshold of 32 MiB
  // (glibc's largest) and no trimming below 1 GiB free keep them in the heap
  // (docs/measurements.md, "The quick suite, change by change").
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  CLI::App app{"softcheck: checks softmax kernels against an MPFR oracle."};
  app.set_version_flag("--version", softcheck::softcheck_version);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, Command>> commands;
  for (Adder adder : all_commands) {
    const std::size_t before = app.get_subcommands({}).size();
    Command c = adder(app);
    commands.emplace_back(app.get_subcommands({})[before], std::move(c));
  }
  check_numbers_strictly(app);
  if (argc < 2) {
    fmt::print(stderr, "{}", short_help(app));
    return exit_error;
  }
  if (is_unknown_subcommand(app, argv[1])) {
    std::string known;
    for (const CLI::App* sub : app.get_subcommands({})) known += (known.empty() ? "" : ", ") + sub->get_name();
    fmt::print(stderr, "softcheck: unknown subcommand '{}' (known: {}; softcheck --help)\n", argv[1], known);
    return exit_error;
  }
  if (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h") {
    fmt::print("{}", short_help(app));
    return finish_stdout(exit_ok);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints a subcommand's help / the version (rc 0) or the usage error
    return rc == 0 ? finish_stdout(exit_ok) : exit_error;
  }
  for (auto& [sub, run] : commands)
    if (sub->parsed()) return run_supervised(run);
  return exit_error;
}
