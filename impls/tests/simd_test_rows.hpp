// The rows the SIMD kernels' tests run (backward_simd_test.cpp,
// shifted_log1p_simd_test.cpp): what their max-out-of-the-sum forms and
// 16-lane sums must get right.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace softcheck::kernels::test_rows {

// rows x cols entries N(0, sd), 1 in 10 masked (-inf); every fifth row has
// its max repeated (a tie), every seventh a dominant entry 120 above the
// rest (rest below 2^-64 and subnormal terms: the double pass), every
// eleventh is fully masked.
inline std::vector<float> random_rows(std::mt19937& rng, std::int64_t rows, std::int64_t cols, float sd) {
  std::normal_distribution<float> normal(0.0f, sd);
  std::uniform_int_distribution<int> mask(0, 9);
  std::uniform_int_distribution<std::int64_t> entry(0, cols - 1);
  const auto n = static_cast<std::size_t>(cols);
  std::vector<float> x(static_cast<std::size_t>(rows) * n);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = x.data() + static_cast<std::size_t>(r) * n;
    for (std::size_t j = 0; j < n; ++j) row[j] = mask(rng) == 0 || r % 11 == 10 ? -INFINITY : normal(rng);
    if (r % 11 == 10) continue;
    std::size_t hi = 0;
    for (std::size_t j = 1; j < n; ++j)
      if (row[j] > row[hi]) hi = j;
    if (r % 5 == 4 && n > 1) row[(hi + 1) % n] = row[hi];
    if (r % 7 == 6) row[entry(rng)] = (row[hi] == -INFINITY ? 0.0f : row[hi]) + 120.0f;
  }
  return x;
}

}  // namespace softcheck::kernels::test_rows
