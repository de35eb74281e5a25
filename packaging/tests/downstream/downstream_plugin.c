/* The downstream project's kernel (packaging/tests/downstream): max-shifted f32
 * softmax, exp(z_j - a) / sum_i exp(z_i - a), as a softcheck plugin.
 *
 * Built with -DDOWNSTREAM_BROKEN it drops the max shift: exp overflows past
 * z ~ 88.7 and rows like U[90, 100] come out NaN. Same kernel name, so the gate
 * compares it with the correct build's baseline. */
#include <math.h>
#include <stdint.h>

#include <softcheck/softcheck_plugin.h>

static int softmax_f32(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)ctx;
  const float t = (float)temperature;
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = (const float*)x + r * cols;
    float* out = (float*)y + r * cols;
    float a = -INFINITY;
    for (int64_t i = 0; i < cols; ++i) {
      out[i] = in[i] / t;
      a = out[i] > a ? out[i] : a;
    }
    if (a == -INFINITY) { /* fully masked row: declared "zeros" */
      for (int64_t i = 0; i < cols; ++i) out[i] = 0;
      continue;
    }
#ifdef DOWNSTREAM_BROKEN
    a = 0;
#endif
    float sum = 0;
    for (int64_t i = 0; i < cols; ++i) {
      out[i] = expf(out[i] - a);
      sum += out[i];
    }
    for (int64_t i = 0; i < cols; ++i) out[i] = out[i] / sum;
  }
  return 0;
}

static const softcheck_kernel kernels[] = {
    {.name = "downstream_softmax_f32",
     .description = "downstream project: max-shifted f32 softmax",
     .op = SOFTCHECK_OP_SOFTMAX,
     .format = SOFTCHECK_FORMAT_F32,
     .masked_policy = SOFTCHECK_MASKED_ZEROS,
     /* softcheck's shifted kernel's contract (docs/kernels.md): 2 + n + 2R, +4M when T != 1. */
     .contract = {1, 2, 1, 2, 0, 4, "max-shifted softmax in f32 (Blanchard-Higham-Higham: n + 2 + 2R)"},
     .run = softmax_f32},
};

SOFTCHECK_PLUGIN_DEFINE_KERNELS(kernels)
