// Which kernels the numeric targets fuzz, and the size limits of a batch.
#pragma once

#include <string>

#include "fuzz_case.hpp"

namespace softcheck::fuzz {

// Planted mode (fuzz/planted.sh): SOFTCHECK_FUZZ_PLANTED=name[,name...] makes
// the pool exactly those kernels, test-only ones included (the mutants, the
// careless cross-entropy). Unset or empty: every available built-in and
// gradient kernel, never a test-only one.
inline constexpr const char* planted_variable = "SOFTCHECK_FUZZ_PLANTED";

struct PoolChoice {
  Pool pool;
  bool planted = false;
  std::string error;  // non-empty: an unknown or unavailable kernel was named
};

// The pool for a value of SOFTCHECK_FUZZ_PLANTED (nullptr or "": built-ins).
PoolChoice choose_pool(const char* planted);

// The pool of this process (read once from the environment). On a bad
// SOFTCHECK_FUZZ_PLANTED prints the error and exits with status 2; in planted
// mode prints a one-line banner to stderr the first time.
const Pool& process_pool();

// Limits of this process: `defaults`, with SOFTCHECK_FUZZ_MAX_ROWS and
// SOFTCHECK_FUZZ_MAX_COLS (positive integers) overriding them.
Limits process_limits(Limits defaults);

// The shape every numeric target (fuzz_nan_inf, fuzz_differential) shares:
// init_target in LLVMFuzzerInitialize fixes the pool and this process's
// limits from the target's defaults once (a bad environment exits early);
// decode_input decodes one input against them.
void init_target(Limits defaults);
bool decode_input(std::span<const std::uint8_t> data, OpChoice choice, FuzzCase& out);

}  // namespace softcheck::fuzz
