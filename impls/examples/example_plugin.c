/* An example softcheck plugin in plain C (docs/plugin-abi.md): two f32
 * softmax kernels that claim the same accuracy contract.
 *
 *   example_softmax_f32  max-shifted softmax, exp(z_j - a) / sum_i exp(z_i - a):
 *                        keeps its contract.
 *   example_flawed_f32   the same without the max shift, exp(z_j) / sum_i exp(z_i):
 *                        exp overflows past z ~ 88.7, so rows like XNNPACK's
 *                        U[90, 100] give inf / inf = NaN. softcheck catches it.
 *
 * Build: cc -shared -fPIC -O2 -ffp-contract=off example_plugin.c -lm -o libexample.so
 * Use:   softcheck run --plugin ./libexample.so --impl example_softmax_f32
 */
#include <math.h>
#include <stddef.h>

#include <softcheck/softcheck_plugin.h>

/* The contract of softcheck's own `shifted` kernel (docs/kernels.md), whose
 * formula this is: 2 + 1*n + 2*R, plus 4*M when the temperature is not 1. */
#define SHIFTED_CONTRACT \
  {1, 2, 1, 2, 0, 4, "max-shifted softmax in f32 (Blanchard-Higham-Higham: n + 2 + 2R)"}

/* z = x / T in f32, into y (x and y may be the same buffer). */
static void scale_row(const float* x, float* y, int64_t n, double temperature) {
  const float t = (float)temperature;
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / t;
}

static float row_max(const float* z, int64_t n) {
  float a = -INFINITY;
  for (int64_t i = 0; i < n; ++i) a = z[i] > a ? z[i] : a;
  return a;
}

/* y_i <- exp(y_i - shift) / sum: the only difference between the two kernels
 * is the shift they pass. */
static void exp_and_normalise(float* y, int64_t n, float shift) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = expf(y[i] - shift);
    sum += y[i];
  }
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] / sum;
}

static int shifted_softmax(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)ctx;
  for (int64_t r = 0; r < rows; ++r) {
    float* out = (float*)y + r * cols;
    scale_row((const float*)x + r * cols, out, cols, temperature);
    const float a = row_max(out, cols);
    if (a == -INFINITY) { /* fully masked row: declared "zeros" */
      for (int64_t i = 0; i < cols; ++i) out[i] = 0;
      continue;
    }
    exp_and_normalise(out, cols, a);
  }
  return 0;
}

static int unshifted_softmax(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)ctx;
  for (int64_t r = 0; r < rows; ++r) {
    float* out = (float*)y + r * cols;
    scale_row((const float*)x + r * cols, out, cols, temperature);
    exp_and_normalise(out, cols, 0.0f); /* the flaw: no max shift */
  }
  return 0;
}

static const softcheck_kernel kernels[] = {
    {.name = "example_softmax_f32",
     .description = "example plugin: max-shifted f32 softmax",
     .op = SOFTCHECK_OP_SOFTMAX,
     .format = SOFTCHECK_FORMAT_F32,
     .masked_policy = SOFTCHECK_MASKED_ZEROS,
     .contract = SHIFTED_CONTRACT,
     .run = shifted_softmax},
    {.name = "example_flawed_f32",
     .description = "example plugin: f32 softmax without the max shift (overflows past 88.7)",
     .op = SOFTCHECK_OP_SOFTMAX,
     .format = SOFTCHECK_FORMAT_F32,
     .masked_policy = SOFTCHECK_MASKED_ZEROS,
     .contract = SHIFTED_CONTRACT,
     .run = unshifted_softmax},
};

SOFTCHECK_PLUGIN_DEFINE_KERNELS(kernels)
