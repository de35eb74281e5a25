// Runs an f32 or f64 kernel from doubles, for the kernel tests.
#pragma once

#include <cstdint>
#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck::testing {

// Runs `k` (f32 or f64) on rows x cols values given as doubles (exact in its
// format); returns each output operand of the op (op table: a row op's one
// output per input, lse / entropy one per row, softmax_lse both) as doubles.
inline std::vector<std::vector<double>> run_outputs(const Kernel& k, Op op, const std::vector<double>& x,
                                                    std::int64_t rows = 1, double temperature = 1.0) {
  const auto cols = static_cast<std::int64_t>(x.size()) / rows;
  std::vector<std::vector<double>> y;
  std::vector<std::vector<float>> yf;
  std::vector<void*> out;
  for (const Operand& o : spec(op).out) {
    const auto n = static_cast<std::size_t>(rows * output_cols(o, cols));
    y.emplace_back(n);
    yf.emplace_back(n);
  }
  for (std::size_t i = 0; i < y.size(); ++i)
    out.push_back(k.format == Format::f32 ? static_cast<void*>(yf[i].data()) : y[i].data());
  if (k.format == Format::f32) {
    std::vector<float> xf(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) xf[i] = static_cast<float>(x[i]);
    k.run(op, xf.data(), out, rows, cols, temperature);
    for (std::size_t i = 0; i < y.size(); ++i) y[i].assign(yf[i].begin(), yf[i].end());
  } else {
    k.run(op, x.data(), out, rows, cols, temperature);
  }
  return y;
}

}  // namespace softcheck::testing
