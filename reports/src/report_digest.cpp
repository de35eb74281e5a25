// The identifier of a report.json that its renderings carry (report.hpp).
#include <cstdint>
#include <string>
#include <string_view>

#include "softcheck/report.hpp"

namespace softcheck {

std::string report_digest(std::string_view report_json) {
  // FNV-1a 64: no dependency, stable across platforms and versions, and
  // enough to tell two runs' files apart; it is not a security measure.
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : report_json) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "fnv1a64:";
  for (int shift = 60; shift >= 0; shift -= 4) out += hex[(h >> shift) & 0xf];
  return out;
}

}  // namespace softcheck
