#include "pool.hpp"

#include <optional>

#include <cstdio>
#include <cstdlib>
#include <string_view>

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

// Splits "a,b,,c" into {"a", "b", "c"}.
std::vector<std::string_view> split_names(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const std::size_t comma = s.find(',');
    const std::string_view item = s.substr(0, comma);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
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

PoolChoice choose_pool(const char* planted) {
  PoolChoice c;
  if (planted == nullptr || *planted == '\0') {
    c.pool = builtin_pool();
    return c;
  }
  c.planted = true;
  for (std::string_view n : split_names(planted)) {
    const Kernel* k = find_kernel(n);
    if (k == nullptr || !k->available) {
      c.error = "unknown or unavailable kernel '" + std::string(n) + "' in " + planted_variable;
      return c;
    }
    c.pool.push_back(k);
  }
  if (c.pool.empty()) c.error = std::string(planted_variable) + " names no kernel";
  return c;
}

const Pool& process_pool() {
  static const Pool pool = [] {
    PoolChoice c = choose_pool(std::getenv(planted_variable));
    if (!c.error.empty()) {
      std::fprintf(stderr, "softcheck-fuzz: %s\n", c.error.c_str());
      std::exit(2);
    }
    if (c.planted) {
      std::string names;
      for (const Kernel* k : c.pool) names += (names.empty() ? "" : ", ") + k->name;
      std::fprintf(stderr, "softcheck-fuzz: PLANTED MODE, fuzzing only: %s\n", names.c_str());
    }
    return c.pool;
  }();
  return pool;
}

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

void init_target(Limits defaults) {
  (void)process_pool();
  if (!target_limits()) target_limits() = process_limits(defaults);
}

bool decode_input(std::span<const std::uint8_t> data, OpChoice choice, FuzzCase& out) {
  return decode(data, process_pool(), target_limits().value(), choice, out);
}

}  // namespace softcheck::fuzz
