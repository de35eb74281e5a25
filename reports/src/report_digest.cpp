// The identifier of a report.json that its renderings carry (report.hpp).
#include <cstdint>
#include <string>
#include <string_view>

#include "softcheck/fnv1a.hpp"
#include "softcheck/report.hpp"

namespace softcheck {

std::string report_digest(std::string_view report_json) {
  return fnv1a64_text(fnv1a64_add(
      fnv1a64_start, {reinterpret_cast<const unsigned char*>(report_json.data()), report_json.size()}));
}

}  // namespace softcheck
