// Subcommands of the `softcheck` CLI. Each registers its options on the app and
// returns the callback that runs it; the callback returns the exit code
// (0 ok, 1 a contract was violated, 2 usage or harness error).
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <functional>

namespace softcheck::cli {

using Command = std::function<int()>;

Command add_list(CLI::App& app);
Command add_run(CLI::App& app);
Command add_oracle(CLI::App& app);
Command add_check(CLI::App& app);
Command add_repro(CLI::App& app);
Command add_report(CLI::App& app);
Command add_gate(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_sweep(CLI::App& app);  // cmd_sweep.cpp: exhaustive f16/bf16 sweep
Command add_compare(CLI::App& app);  // cmd_compare.cpp: outputs computed elsewhere (.npy)

// Every subcommand, in the order `softcheck --help` lists them: main.cpp
// builds the CLI from this, and so does the fuzz_inputs target.
using Adder = Command (*)(CLI::App&);
inline constexpr Adder all_commands[] = {&add_list,   &add_run,  &add_oracle, &add_check, &add_repro,
                                         &add_report, &add_gate, &add_bench,  &add_sweep, &add_compare};

// Every numeric option of `app` and its subcommands rejects NaN, +-inf,
// negative values for unsigned options and values beyond 64 bits, naming the
// value as typed (number_options.cpp). main.cpp and the fuzz_inputs target
// call it after adding all_commands.
void check_numbers_strictly(CLI::App& app);

// Progress of a long run on stderr, as a bar; empty (no output) unless enabled
// and stderr is a terminal. Defined in cmd_run.cpp.
std::function<void(std::size_t done, std::size_t total)> progress_bar(bool enabled);

// Exit codes shared by every command.
inline constexpr int exit_ok = 0;
inline constexpr int exit_violation = 1;
inline constexpr int exit_error = 2;

}  // namespace softcheck::cli
