// Subcommands of the `softcheck` CLI. Each registers its options on the app and
// returns the callback that runs it; the callback returns the exit code
// (0 ok, 1 a contract was violated, 2 usage or harness error).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace softcheck::cli {

using Command = std::function<int()>;

Command add_list(CLI::App& app);
Command add_run(CLI::App& app);
Command add_oracle(CLI::App& app);

// Exit codes shared by every command.
inline constexpr int exit_ok = 0;
inline constexpr int exit_violation = 1;
inline constexpr int exit_error = 2;

}  // namespace softcheck::cli
