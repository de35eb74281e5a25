#include "kernel_selection.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <stdexcept>

#include "softcheck/peers.hpp"

namespace softcheck::cli {

void add_plugin_options(CLI::App& sub, PluginArgs& args) {
  sub.add_option("--plugin", args.paths,
                 "Load kernels from this plugin shared library (repeatable; docs/plugin-abi.md)");
  sub.add_flag("--isolate", args.isolate,
               "Run every call of a plugin kernel in a child process: a crash fails that kernel "
               "instead of ending softcheck");
  sub.add_option("--call-timeout", args.call_timeout_s,
                 "Seconds one plugin kernel call may take (0: no limit). With --isolate a call past it fails "
                 "its kernel (\"timed out\") and the run goes on; without, softcheck stops with status 2")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
}

namespace {

// Without --isolate a crashing plugin kernel ends softcheck: say so on the way
// down (write(2) only: async-signal-safe), then die of the same signal.
void crash_hint(int sig) {
  static const char hint[] =
      "softcheck: crashed while running plugin kernels in-process; rerun with --isolate to report the "
      "crashing kernel as a failure and go on\n";
  (void)!::write(STDERR_FILENO, hint, sizeof hint - 1);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_crash_hint() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, crash_hint);
}

}  // namespace

KernelSet::KernelSet(const PluginArgs& args)
    : plugins_(load_plugins(args.paths, {.isolate = args.isolate, .call_timeout_s = args.call_timeout_s})) {
  if (!plugins_.empty() && !args.isolate) install_crash_hint();
}

std::vector<const Kernel*> KernelSet::all() const {
  std::vector<const Kernel*> ks;
  for (const auto* list : {&builtin_kernels(), &peer_kernels()})
    for (const Kernel& k : *list) ks.push_back(&k);
  for (const Plugin& p : plugins_)
    for (const Kernel& k : p.kernels) ks.push_back(&k);
  return ks;
}

const Kernel* KernelSet::find(std::string_view name) const {
  for (const Plugin& p : plugins_)
    for (const Kernel& k : p.kernels)
      if (k.name == name) return &k;
  return find_kernel(name);  // built-ins, peers, mutants
}

std::vector<const Kernel*> KernelSet::select(const std::vector<std::string>& names, bool with_peers,
                                             bool with_sparse, bool with_gradients, bool with_attention,
                                             bool with_quantised) const {
  if (names.empty()) {
    std::vector<const Kernel*> ks = all();
    if (!with_peers)
      std::erase_if(ks, [](const Kernel* k) {
        const auto& peers = peer_kernels();
        return k >= peers.data() && k < peers.data() + peers.size();
      });
    if (with_sparse)
      for (const Kernel& k : sparse_kernels()) ks.push_back(&k);
    if (with_gradients)
      for (const Kernel& k : gradient_kernels())
        if (!k.test_only) ks.push_back(&k);
    if (with_attention)
      for (const Kernel& k : attention_kernels())
        if (!k.test_only) ks.push_back(&k);
    // The MX-input kernels only when named: rows of their own double the
    // oracle's work on every case (0.24 s of the quick suite's 5).
    if (with_quantised)
      for (const Kernel& k : quantised_kernels())
        if (!k.test_only && !k.mx_inputs) ks.push_back(&k);
    return ks;
  }
  std::vector<const Kernel*> ks;
  for (const std::string& n : names) {
    const Kernel* k = find(n);
    if (!k && find_sparse_kernel(n)) {
      if (!with_sparse)
        throw std::invalid_argument("'" + n + "' is a sparse kernel (docs/sparse.md): `softcheck run`, `check` and `repro` take it");
      k = find_sparse_kernel(n);
    }
    if (!k) throw std::invalid_argument("unknown kernel '" + n + "' (see `softcheck list`)");
    if (!with_quantised)
      if (const std::string why = quantised_refusal(*k, "this command"); !why.empty())
        throw std::invalid_argument(why);
    if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  }
  return ks;
}

void warn_kernels_without_ops(const std::vector<const Kernel*>& kernels) {
  for (const Kernel* k : kernels)
    if (k->ops.empty())
      fmt::print(stderr, "softcheck: kernel {} takes no part: {}\n", k->name, k->unavailable_reason);
}

}  // namespace softcheck::cli
