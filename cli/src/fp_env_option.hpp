// --fp-env for the commands that run kernels in a chosen floating-point
// environment (softcheck/fp_env.hpp, docs/fp-env.md): run, check, repro.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "softcheck/fp_env.hpp"

namespace softcheck::cli {

// Adds --fp-env to a subcommand, its help listing every environment.
void add_fp_env_option(CLI::App& sub, std::string& flag);

// The environment the flag names; throws std::invalid_argument (exit 2)
// when this machine cannot set it.
FpEnv fp_env_of(const std::string& flag);

}  // namespace softcheck::cli
