// Number and word formatting shared by the Markdown and HTML writers.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace softcheck::text {

// 4 significant digits; nan / inf / -inf spelled out.
inline std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.4g}", v);
}

// Bytes or elements per second with an SI prefix: "12.3 G".
inline std::string si(double v) {
  const char* prefixes[] = {"", "k", "M", "G", "T"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 4) v /= 1000, ++i;
  return fmt::format("{:.3g} {}", v, prefixes[i]);
}

}  // namespace softcheck::text
