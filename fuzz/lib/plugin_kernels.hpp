// Users' kernels in the numeric fuzz targets: the plugins SOFTCHECK_FUZZ_PLUGIN
// names (docs/plugin-abi.md), loaded by the plugin loader the CLI uses, each
// kernel wrapped so that a failure inside it is reported with the kernel, its
// plugin, the rows of the call and `softcheck repro` lines that load the
// plugin: a non-zero return or an isolated crash (KernelFailure), and, in
// process, a crash signal or exit() during the call.
//
// Why a crash is attributed in process rather than by isolating every call:
// a fork per call costs far more than a kernel call on a short row, and the
// child's coverage counters and sanitizer state never reach the fuzzer, so the
// plugin's own code (built with -fsanitize=fuzzer-no-link,address) would no
// longer guide the search nor be checked by ASan in the fuzzer's process.
// In process the call that crashes is known (each plugin call marks itself in
// flight), so a handler chained in front of the fuzzer's (libFuzzer's, ASan's,
// or the default action in the replay driver) prints the report and then lets
// the fuzzer save the input as usual. Only _exit() and hangs escape it (the
// latter are libFuzzer's -timeout, or the loader's 60 s call limit);
// SOFTCHECK_FUZZ_PLUGIN_ISOLATE=1 runs every call in a child (softcheck's
// --isolate) for those.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck::fuzz {

// SOFTCHECK_FUZZ_PLUGIN=PATH[:PATH...]: the plugins whose kernels join the
// pool, ':'-separated as in PATH (empty items are skipped; a path holding ':'
// cannot be named).
inline constexpr const char* plugin_variable = "SOFTCHECK_FUZZ_PLUGIN";
// SOFTCHECK_FUZZ_PLUGIN_ISOLATE=1: every call of a plugin kernel in a forked
// child (softcheck's --isolate); 0 or unset: in process.
inline constexpr const char* plugin_isolate_variable = "SOFTCHECK_FUZZ_PLUGIN_ISOLATE";

// The non-empty items of `s` between the separators `sep`, in order
// ("a,b,,c" -> a, b, c): the lists of the fuzzers' environment variables.
std::vector<std::string_view> split_nonempty(std::string_view s, char sep);

// The paths of a value of SOFTCHECK_FUZZ_PLUGIN, in order.
std::vector<std::string> split_plugin_paths(std::string_view value);

struct FuzzPlugin {
  std::string path;                    // absolute, as the repro lines load it
  std::vector<const Kernel*> kernels;  // every kernel it declares, in descriptor order (unavailable ones too)
};

// Loads the plugins in order (a kernel name in two of them is a load error)
// and wraps their kernels as above; the kernels live until the process exits
// (the loader never unloads a plugin). Throws PluginError.
std::vector<FuzzPlugin> load_fuzz_plugins(const std::vector<std::string>& paths, bool isolate);

// The absolute path of the plugin kernel `k` came from (load_fuzz_plugins),
// or nullptr for any other kernel.
const std::string* fuzz_plugin_path(const Kernel& k);

// The report of plugin kernel `k` failing on one call of `op` on `rows` x
// `cols` values x (row-major) at `temperature`: the kernel, its plugin, the
// failure, then each row with a `softcheck repro` line that runs the kernel
// on that row alone (loading the plugin; with --isolate added when
// `crashed`, so that the replay reports the crash instead of dying of it).
std::string plugin_failure_text(const Kernel& k, Op op, std::string_view failure, std::span<const double> x,
                                std::int64_t rows, std::int64_t cols, double temperature, bool crashed);

}  // namespace softcheck::fuzz
