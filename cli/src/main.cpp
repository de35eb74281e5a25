// softcheck: numerical verification and fuzzing harness for softmax kernels.
#include <fmt/format.h>

#include <exception>
#include <vector>

#include "commands.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  using namespace softcheck::cli;
  CLI::App app{"softcheck: checks softmax kernels against an MPFR oracle.\n"
               "Exit status: 0 every declared contract held, 1 a contract was violated, "
               "2 usage or harness error."};
  app.set_version_flag("--version", softcheck::softcheck_version);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, Command>> commands;
  for (Adder adder : all_commands) {
    const std::size_t before = app.get_subcommands({}).size();
    Command c = adder(app);
    commands.emplace_back(app.get_subcommands({})[before], std::move(c));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help/version (rc 0) or the usage error
    return rc == 0 ? exit_ok : exit_error;
  }
  try {
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "softcheck: error: {}\n", e.what());
    return exit_error;
  }
  return exit_error;
}
