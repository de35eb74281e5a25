#include "pool.hpp"

#include <algorithm>
#include <optional>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "softcheck/plugin.hpp"

namespace softcheck::fuzz {

namespace {

// The built-in kernels, then the gradient kernels (their ops take more than
// the logits: docs/gradients.md); the test-only careless one only in planted
// mode. The order matters only to pick_partner: the circle is by name.
Pool builtin_pool() {
  Pool p;
  for (const std::vector<Kernel>* registry : {&builtin_kernels(), &gradient_kernels()})
    for (const Kernel& k : *registry)
      if (k.available && !k.test_only) p.push_back(&k);
  return p;
}

// Whether the fuzzers can run k: available, with an op (a plugin kernel whose
// only op this softcheck cannot run yet is listed as unavailable).
bool runnable(const Kernel& k) { return k.available && !k.ops.empty(); }

const Kernel* plugin_kernel(const std::vector<FuzzPlugin>& plugins, std::string_view name) {
  for (const FuzzPlugin& p : plugins)
    for (const Kernel* k : p.kernels)
      if (k->name == name) return k;
  return nullptr;
}

// The plugins of SOFTCHECK_FUZZ_PLUGIN into `out` (none when it is unset or
// empty); the error, or "".
std::string load_plugins_of(const char* plugins, const char* isolate, std::vector<FuzzPlugin>& out) {
  const std::string_view isolate_text = isolate == nullptr ? "" : isolate;
  if (isolate_text != "" && isolate_text != "0" && isolate_text != "1")
    return std::string(plugin_isolate_variable) + " must be 0 or 1, got '" + std::string(isolate_text) + "'";
  if (plugins == nullptr || *plugins == '\0') return {};
  const std::vector<std::string> paths = split_plugin_paths(plugins);
  if (paths.empty()) return std::string(plugin_variable) + " names no plugin (paths are separated by ':')";
  try {
    out = load_fuzz_plugins(paths, isolate_text == "1");
  } catch (const PluginError& e) {
    return std::string(plugin_variable) + ": " + e.what();
  }
  for (const FuzzPlugin& p : out) {
    if (std::any_of(p.kernels.begin(), p.kernels.end(), [](const Kernel* k) { return runnable(*k); })) continue;
    std::string why;
    for (const Kernel* k : p.kernels) why += (why.empty() ? "" : ", ") + k->name + ": " + k->unavailable_reason;
    return std::string(plugin_variable) + ": plugin '" + p.path + "' has no kernel the fuzzers can run (" + why + ")";
  }
  return {};
}

std::int64_t positive_from_env(const char* variable, std::int64_t fallback) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (*end != '\0' || v <= 0 || v > (1 << 20)) {
    std::fprintf(stderr, "softcheck-fuzz: %s must be an integer in [1, 2^20], got '%s'\n", variable, text);
    std::exit(2);
  }
  return v;
}

}  // namespace

PoolChoice choose_pool(const char* planted, const char* plugins, const char* isolate) {
  PoolChoice c;
  c.error = load_plugins_of(plugins, isolate, c.plugins);
  if (!c.error.empty()) return c;
  if (planted == nullptr || *planted == '\0') {
    c.pool = builtin_pool();
    for (const FuzzPlugin& p : c.plugins)
      for (const Kernel* k : p.kernels)
        if (runnable(*k)) c.pool.push_back(k);
    return c;
  }
  c.planted = true;
  for (std::string_view n : split_nonempty(planted, ',')) {
    const Kernel* k = plugin_kernel(c.plugins, n);
    if (k == nullptr) k = find_kernel(n);
    if (k == nullptr || !runnable(*k)) {
      c.error = "unknown or unavailable kernel '" + std::string(n) + "' in " + planted_variable;
      return c;
    }
    if (const std::string why = quantised_refusal(*k, "the fuzzers"); !why.empty()) {
      c.error = std::string(planted_variable) + ": " + why;
      return c;
    }
    c.pool.push_back(k);
  }
  if (c.pool.empty()) c.error = std::string(planted_variable) + " names no kernel";
  return c;
}

namespace {

bool in_pool(const Pool& pool, const Kernel* k) { return std::find(pool.begin(), pool.end(), k) != pool.end(); }

// Whether the decoder can pick k under `choice` (it sits on the kernel circle).
bool takes_kernel(const Kernel& k, OpChoice choice) {
  return std::any_of(k.ops.begin(), k.ops.end(), [&](const OpDecl& d) { return eligible(d, choice); });
}

// Which plugin kernels joined, once per plugin, and which were left out.
void announce_plugins(const PoolChoice& c) {
  for (const FuzzPlugin& p : c.plugins) {
    std::string joined, left_out;
    std::size_t count = 0;
    for (const Kernel* k : p.kernels) {
      if (in_pool(c.pool, k)) {
        ++count;
        const bool contract = takes_kernel(*k, OpChoice::contract_only);
        joined += (joined.empty() ? "" : ", ") + k->name + (contract ? "" : " (no contract: not in fuzz_differential)");
      } else if (!runnable(*k)) {
        left_out += (left_out.empty() ? "" : ", ") + k->name + " (" + k->unavailable_reason + ")";
      }
    }
    const bool isolated = !p.kernels.empty() && p.kernels.front()->load_options.find("--isolate") != std::string::npos;
    std::fprintf(stderr, "softcheck-fuzz: plugin %s (%s): %zu kernel%s joined the pool: %s\n", p.path.c_str(),
                 isolated ? "each call in a child process" : "called in process", count, count == 1 ? "" : "s",
                 joined.empty() ? "none" : joined.c_str());
    if (!left_out.empty())
      std::fprintf(stderr, "softcheck-fuzz: plugin %s: not run (no op the fuzzers can run): %s\n", p.path.c_str(),
                   left_out.c_str());
  }
}

const PoolChoice& process_choice() {
  static const PoolChoice choice = [] {
    PoolChoice c = choose_pool(std::getenv(planted_variable), std::getenv(plugin_variable),
                               std::getenv(plugin_isolate_variable));
    if (!c.error.empty()) {
      std::fprintf(stderr, "softcheck-fuzz: %s\n", c.error.c_str());
      std::exit(2);
    }
    if (c.planted) {
      std::string names;
      for (const Kernel* k : c.pool) names += (names.empty() ? "" : ", ") + k->name;
      std::fprintf(stderr, "softcheck-fuzz: PLANTED MODE, fuzzing only: %s\n", names.c_str());
    }
    announce_plugins(c);
    return c;
  }();
  return choice;
}

// A target that could never pick a kernel of the pool, or of a plugin the
// user gave, would run without fuzzing it: exit 2 instead.
void require_kernels_for(const PoolChoice& c, OpChoice choice) {
  const char* what = choice == OpChoice::contract_only
                         ? "an op with a declared contract (this target checks kernels within their contracts)"
                         : "an op the fuzzers take";
  if (std::none_of(c.pool.begin(), c.pool.end(), [&](const Kernel* k) { return takes_kernel(*k, choice); })) {
    std::fprintf(stderr, "softcheck-fuzz: no kernel of the pool has %s\n", what);
    std::exit(2);
  }
  if (c.planted) return;  // the pool is what the user named
  for (const FuzzPlugin& p : c.plugins)
    if (std::none_of(p.kernels.begin(), p.kernels.end(),
                     [&](const Kernel* k) { return in_pool(c.pool, k) && takes_kernel(*k, choice); })) {
      std::fprintf(stderr, "softcheck-fuzz: %s: no kernel of plugin %s has %s\n", plugin_variable, p.path.c_str(),
                   what);
      std::exit(2);
    }
}

}  // namespace

const Pool& process_pool() { return process_choice().pool; }

Limits process_limits(Limits defaults) {
  defaults.max_rows = positive_from_env("SOFTCHECK_FUZZ_MAX_ROWS", defaults.max_rows);
  defaults.max_cols = positive_from_env("SOFTCHECK_FUZZ_MAX_COLS", defaults.max_cols);
  return defaults;
}

namespace {
std::optional<Limits>& target_limits() {
  static std::optional<Limits> limits;
  return limits;
}
}  // namespace

void init_target(Limits defaults, OpChoice choice) {
  require_kernels_for(process_choice(), choice);
  if (!target_limits()) target_limits() = process_limits(defaults);
}

bool decode_input(std::span<const std::uint8_t> data, OpChoice choice, FuzzCase& out) {
  return decode(data, process_pool(), target_limits().value(), choice, out);
}

}  // namespace softcheck::fuzz
