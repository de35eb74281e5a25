/* The correct kernel the test plugins start from: max-shifted softmax /
 * log-softmax in f32; masked rows give zeros / -inf. */
#pragma once

#include <math.h>
#include <stdint.h>

static void shifted(const float* x, float* y, int64_t rows, int64_t cols, double temperature, int log_form) {
  const float t = (float)temperature;
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    float a = -INFINITY, sum = 0;
    for (int64_t i = 0; i < cols; ++i) a = in[i] / t > a ? in[i] / t : a;
    if (a == -INFINITY) a = 0;
    for (int64_t i = 0; i < cols; ++i) sum += expf(in[i] / t - a);
    for (int64_t i = 0; i < cols; ++i)
      out[i] = log_form ? (in[i] / t - a) - logf(sum) : expf(in[i] / t - a) / sum;
    if (sum == 0)
      for (int64_t i = 0; i < cols; ++i) out[i] = log_form ? -INFINITY : 0.0f;
  }
}
