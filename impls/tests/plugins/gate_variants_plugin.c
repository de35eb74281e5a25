/* One kernel, candidate_f32, built four ways (GATE_VARIANT) for the gate's
 * per-cell and bias checks (cli/tests/gate_cells.sh): the same name in each
 * build, as a kernel team's library is between two commits.
 *   0  the baseline: max-shifted softmax, expf, the sum in index order
 *   1  expf(z) as exp2f(z * log2 e): the rounding of the product costs up to
 *      |z| u more, felt on rows with a wide range (normal_s10), not elsewhere
 *   2  every output scaled by (1 + 2u): a bias of about 2 ulp, all one way
 *   3  the sum in reverse index order: a different rounding, no regression
 * Each declares the contract of softcheck's shifted kernel (docs/kernels.md):
 * 2 + n + 2R + 4M[T != 1] ulp, which all four hold. */
#include <math.h>

#include <softcheck/softcheck_plugin.h>

#ifndef GATE_VARIANT
#error "define GATE_VARIANT (0 to 3)"
#endif

static float exp_of(float z) {
#if GATE_VARIANT == 1
  return exp2f(z * 1.44269504088896340736f);
#else
  return expf(z);
#endif
}

static int candidate(const void* xv, void* yv, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)ctx;
  const float t = (float)temperature;
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = (const float*)xv + r * cols;
    float* out = (float*)yv + r * cols;
    float a = -INFINITY, sum = 0;
    for (int64_t i = 0; i < cols; ++i) a = in[i] / t > a ? in[i] / t : a;
    if (a == -INFINITY) a = 0;
#if GATE_VARIANT == 3
    for (int64_t i = cols - 1; i >= 0; --i) sum += exp_of(in[i] / t - a);
#else
    for (int64_t i = 0; i < cols; ++i) sum += exp_of(in[i] / t - a);
#endif
    for (int64_t i = 0; i < cols; ++i) {
      out[i] = sum == 0 ? 0.0f : exp_of(in[i] / t - a) / sum;
#if GATE_VARIANT == 2
      out[i] *= 1.0f + 2 * 0x1p-24f;
#endif
    }
  }
  return 0;
}

static const softcheck_kernel kernels[] = {
    {.name = "candidate_f32",
     .description = "max-shifted softmax in f32 (gate test variant)",
     .op = SOFTCHECK_OP_SOFTMAX,
     .format = SOFTCHECK_FORMAT_F32,
     .masked_policy = SOFTCHECK_MASKED_ZEROS,
     .contract = {.declared = 1, .a = 2, .b = 1, .c = 2, .d = 0, .t = 4,
                  .why = "softcheck's shifted kernel (docs/kernels.md)"},
     .run = candidate},
};

SOFTCHECK_PLUGIN_DEFINE_KERNELS(kernels)
