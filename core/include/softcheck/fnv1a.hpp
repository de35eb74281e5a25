// FNV-1a 64 (Fowler, Noll, Vo): the hash softcheck names its files and
// inputs by (the report digest, the run's inputs digest). No dependency,
// stable across platforms and versions; not a security measure.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace softcheck {

inline constexpr std::uint64_t fnv1a64_start = 0xcbf29ce484222325ull;

// The hash h continued over `bytes`.
constexpr std::uint64_t fnv1a64_add(std::uint64_t h, std::span<const unsigned char> bytes) {
  for (const unsigned char b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

// "fnv1a64:" and h in 16 lower-case hex digits.
inline std::string fnv1a64_text(std::uint64_t h) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "fnv1a64:";
  for (int shift = 60; shift >= 0; shift -= 4) out += hex[(h >> shift) & 0xf];
  return out;
}

}  // namespace softcheck
