// Kernels from plugins: shared libraries written against the C ABI of
// softcheck/softcheck_plugin.h (docs/plugin-abi.md), loaded with dlopen,
// validated, and wrapped into Kernel objects that take part in every command
// like the built-in ones.
//
// Mapping: descriptors that share a name become one Kernel with one OpDecl
// per op (they must agree on format and masked-row policy), in the order of
// first appearance. Ops this softcheck cannot run yet (sparsemax, entmax) are
// accepted; a kernel with no other op is listed as unavailable.
//
// Names: a plugin kernel keeps its name (reports and baselines key on it); a
// name already used by a built-in, peer or test-only kernel, or by a plugin
// loaded earlier, is a load error.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck {

// A plugin that cannot be used: missing or unloadable file, missing entry
// point, ABI mismatch, invalid descriptors (every problem found is listed).
// Commands report it as a harness error (exit status 2).
struct PluginError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct PluginOptions {
  // Run every call of the plugin's kernels in a forked child process, so that
  // a crash (SIGSEGV, abort, ...) is a KernelFailure of that kernel instead of
  // the end of the harness. Without it a crashing kernel takes softcheck down.
  bool isolate = false;
  // Longest a single kernel call may take, in seconds; 0: no limit. Isolated:
  // the child is killed and the kernel fails ("timed out after N s"), and the
  // run goes on. In-process the call cannot be abandoned: softcheck reports
  // the kernel and ends with the harness-error status (2).
  double call_timeout_s = 60;
};

struct Plugin {
  std::string path;             // as given
  std::vector<Kernel> kernels;  // in the order of the descriptors' first appearance
};

// Loads one plugin. Names must not clash with the registry's (builtin, peer,
// mutant) kernels nor with `taken` (e.g. the kernels of plugins loaded
// before). Throws PluginError. The library is never unloaded.
Plugin load_plugin(const std::string& path, const PluginOptions& options,
                   const std::vector<const Kernel*>& taken = {});

// Loads several plugins in order; a name may appear in only one of them.
std::vector<Plugin> load_plugins(const std::vector<std::string>& paths, const PluginOptions& options);

}  // namespace softcheck
