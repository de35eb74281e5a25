// Which kernels the numeric targets fuzz, and the size limits of a batch.
#pragma once

#include <string>
#include <vector>

#include "fuzz_case.hpp"
#include "plugin_kernels.hpp"

namespace softcheck::fuzz {

// Planted mode (fuzz/planted.sh): SOFTCHECK_FUZZ_PLANTED=name[,name...] makes
// the pool exactly those kernels, test-only ones included (the mutants, the
// careless cross-entropy), and plugin kernels (plugin_kernels.hpp) when
// SOFTCHECK_FUZZ_PLUGIN loads them. Unset or empty: every available built-in
// and gradient kernel, never a test-only one, then every plugin's kernels.
inline constexpr const char* planted_variable = "SOFTCHECK_FUZZ_PLANTED";

struct PoolChoice {
  Pool pool;
  bool planted = false;
  std::vector<FuzzPlugin> plugins;  // those SOFTCHECK_FUZZ_PLUGIN loaded, in its order
  std::string error;                // non-empty: an unknown or unavailable kernel was named, or a plugin is unusable
};

// The pool for the values of SOFTCHECK_FUZZ_PLANTED, SOFTCHECK_FUZZ_PLUGIN and
// SOFTCHECK_FUZZ_PLUGIN_ISOLATE (nullptr or "": unset). The plugins' kernels
// the fuzzers can run (available, with an op) join after the built-ins, in the
// variable's order and each plugin's descriptor order; a plugin that does not
// load or has no such kernel is an error, never a smaller pool.
PoolChoice choose_pool(const char* planted, const char* plugins = nullptr, const char* isolate = nullptr);

// The pool of this process (read once from the environment). On a bad
// variable prints the error and exits with status 2; the first time, prints
// to stderr which plugin kernels joined, and in planted mode a one-line banner.
const Pool& process_pool();

// Limits of this process: `defaults`, with SOFTCHECK_FUZZ_MAX_ROWS and
// SOFTCHECK_FUZZ_MAX_COLS (positive integers) overriding them.
Limits process_limits(Limits defaults);

// The shape every numeric target (fuzz_nan_inf, fuzz_differential) shares:
// init_target in LLVMFuzzerInitialize fixes the pool and this process's
// limits from the target's defaults once (a bad environment exits early, as
// does a pool, or a plugin, with no kernel the target's OpChoice takes);
// decode_input decodes one input against them.
void init_target(Limits defaults, OpChoice choice);
bool decode_input(std::span<const std::uint8_t> data, OpChoice choice, FuzzCase& out);

}  // namespace softcheck::fuzz
