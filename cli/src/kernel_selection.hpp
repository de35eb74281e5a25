// The kernels a command works on: softcheck's own (builtin_kernels), the
// peers (peer_kernels), the kernels of the plugins given with --plugin, and,
// by name only, the test-only mutants. Shared by `run` and `list` (and the
// commands that select kernels the same way: `check`, `gate`).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "softcheck/kernel.hpp"
#include "softcheck/plugin.hpp"

namespace softcheck::cli {

struct PluginArgs {
  std::vector<std::string> paths;
  bool isolate = false;
  double call_timeout_s = 60;
};

// Adds --plugin PATH (repeatable), --isolate and --call-timeout to a subcommand.
void add_plugin_options(CLI::App& sub, PluginArgs& args);

class KernelSet {
 public:
  // Loads the plugins in order; throws PluginError (a harness error, exit 2).
  explicit KernelSet(const PluginArgs& args);
  KernelSet(KernelSet&&) = default;
  KernelSet(const KernelSet&) = delete;  // the Kernel pointers handed out point into it
  KernelSet& operator=(const KernelSet&) = delete;

  // Built-ins, peers, then each plugin's kernels in load order.
  std::vector<const Kernel*> all() const;
  // By name among all() and the test-only mutants; nullptr when unknown.
  const Kernel* find(std::string_view name) const;
  // The named kernels, each once, in the given order. When `names` is empty:
  // the built-ins and the plugins' kernels, plus the peers when `with_peers`
  // (peers are measured, not softcheck's to gate: they join a run on request).
  // Throws std::invalid_argument for an unknown name.
  // with_sparse: the sparse kernels (sparse_kernels(), docs/sparse.md) may be
  // named, and with no names are added; without it naming one is an error
  // (`run`, `check` and `repro` take them; `sweep` and the fuzzers do not).
  // with_gradients: with no names, the gradient kernels (gradient_kernels(),
  // the test-only one left out) are added; they can always be named.
  // with_attention: the same for the attention kernels (attention_kernels()).
  // with_quantised: the kernels whose outputs are quantised to a narrower
  // format or whose inputs are MX blocks (quantised_kernels(): `run` and
  // `check`) may be named, and with no names the quantised-output ones are
  // added (the test-only and MX-input ones left out); without it naming one
  // is an error (quantised_refusal).
  std::vector<const Kernel*> select(const std::vector<std::string>& names, bool with_peers = false,
                                    bool with_sparse = false, bool with_gradients = false,
                                    bool with_attention = false, bool with_quantised = false) const;

 private:
  std::vector<Plugin> plugins_;
};

// One stderr line per selected kernel that has no op this softcheck can run
// (e.g. a plugin's sparsemax kernel): such kernels take no part in a run.
void warn_kernels_without_ops(const std::vector<const Kernel*>& kernels);

}  // namespace softcheck::cli
