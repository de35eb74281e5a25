// --shard I/N and the schedulers' variables (softcheck/shard.hpp,
// docs/scaling.md), for the commands that split their work: run, check, sweep.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "softcheck/kernel.hpp"
#include "softcheck/shard.hpp"

namespace softcheck::cli {

// Adds --shard to a subcommand; its help names the variables read without it.
void add_shard_option(CLI::App& sub, std::optional<std::string>& flag);

// The shard of this process (resolve_shard over the process environment);
// touches GoogleTest's status file when one is named. A sharded run says on
// stderr which shard it is and where that came from, unless `quiet`.
// Throws std::invalid_argument (exit 2) for a bad flag or variable.
Shard this_shard(const std::optional<std::string>& flag, bool quiet);

// The kernels whose properties this shard checks (`check`, and the property
// verdicts of `run`): split longest-first by their number of ops, in kernel
// order. A kernel's verdicts do not depend on the kernels checked beside it.
std::vector<const Kernel*> kernels_of_shard(const std::vector<const Kernel*>& kernels, const Shard& shard);

}  // namespace softcheck::cli
