/* Kernels that declare no contract (most kernel teams cannot derive one),
 * for the floor checks every kernel gets anyway (docs/gating-your-kernel.md,
 * "The floor"; cli/tests/no_contract_plugin.sh):
 *   nc_shifted_f32    max-shifted softmax: correct, passes the floor
 *   nc_unshifted_f32  softmax without the max shift: expf overflows past
 *                     x ~ 88.7 and the row turns to NaN on ordinary inputs
 *   nc_wrong_f32      every output too large by 1e6 ulp (6 % relative: finite
 *                     and ordered, so the floor's exact checks miss it)
 *   nc_droptail_f32   a vector loop without its remainder: the last n mod 8
 *                     entries are neither summed nor written (left 0)
 */
#include <math.h>

#include <softcheck/softcheck_plugin.h>

#include "shifted_f32.h"

static int shifted_softmax(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)ctx;
  shifted((const float*)x, (float*)y, rows, cols, temperature, 0);
  return 0;
}

static int unshifted_softmax(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)ctx;
  const float t = (float)temperature;
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = (const float*)x + r * cols;
    float* out = (float*)y + r * cols;
    float sum = 0;
    for (int64_t i = 0; i < cols; ++i) sum += expf(in[i] / t);
    for (int64_t i = 0; i < cols; ++i) out[i] = expf(in[i] / t) / sum;
  }
  return 0;
}

static int wrong_softmax(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)ctx;
  float* out = (float*)y;
  shifted((const float*)x, out, rows, cols, temperature, 0);
  for (int64_t i = 0; i < rows * cols; ++i) out[i] *= 1.0f + 1e6f * 0x1p-24f;
  return 0;
}

static int droptail_softmax(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)ctx;
  const int64_t body = cols - cols % 8;
  for (int64_t r = 0; r < rows; ++r) {
    float* out = (float*)y + r * cols;
    for (int64_t i = 0; i < cols; ++i) out[i] = 0;
    /* The body as a row of its own: the tail is never seen. */
    if (body > 0) shifted((const float*)x + r * cols, out, 1, body, temperature, 0);
  }
  return 0;
}

/* .contract left zero: declared = 0, "no contract". */
static const softcheck_kernel kernels[] = {
    {.name = "nc_shifted_f32", .description = "max-shifted softmax, no contract declared", .op = SOFTCHECK_OP_SOFTMAX,
     .format = SOFTCHECK_FORMAT_F32, .masked_policy = SOFTCHECK_MASKED_ZEROS, .run = shifted_softmax},
    {.name = "nc_unshifted_f32", .description = "softmax without the max shift, no contract declared",
     .op = SOFTCHECK_OP_SOFTMAX, .format = SOFTCHECK_FORMAT_F32, .masked_policy = SOFTCHECK_MASKED_NAN,
     .run = unshifted_softmax},
    {.name = "nc_wrong_f32", .description = "max-shifted softmax times (1 + 1e6 u), no contract declared",
     .op = SOFTCHECK_OP_SOFTMAX, .format = SOFTCHECK_FORMAT_F32, .masked_policy = SOFTCHECK_MASKED_ZEROS,
     .run = wrong_softmax},
    {.name = "nc_droptail_f32", .description = "max-shifted softmax over the first n - n mod 8 entries only, no contract declared",
     .op = SOFTCHECK_OP_SOFTMAX, .format = SOFTCHECK_FORMAT_F32, .masked_policy = SOFTCHECK_MASKED_ZEROS,
     .run = droptail_softmax},
};

SOFTCHECK_PLUGIN_DEFINE_KERNELS(kernels)
