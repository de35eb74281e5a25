/* Version-2 descriptors with opt-outs (softcheck_opt_out), one build per
 * OPT_OUT_MODE (cli/tests/plugin_opt_outs.sh):
 *   0  optout_wrong_f32, every output 1e6 ulp high, opts out of the reference
 *      rule and sum_to_one with a reason: run shows the reasons, exits 0
 *   1  an unknown check name: refused at load time (exit 2)
 *   2  an empty reason: refused
 *   3  the header before opt_outs (struct_size without them), two
 *      descriptors packed at that size: both load, opting out of nothing, so
 *      the wrong kernels fail run
 */
#include <math.h>
#include <softcheck/softcheck_plugin.h>
#include <string.h>

#ifndef OPT_OUT_MODE
#error "define OPT_OUT_MODE (0 to 3)"
#endif

static int wrong_compute(const softcheck_call* call, void* ctx) {
  (void)ctx;
  const float* x = (const float*)call->in[0];
  float* y = (float*)call->out[0];
  const float t = (float)call->temperature;
  for (int64_t r = 0; r < call->rows; ++r) {
    const float* xr = x + r * call->cols;
    float* yr = y + r * call->cols;
    float a = -INFINITY, s = 0;
    for (int64_t i = 0; i < call->cols; ++i) a = xr[i] / t > a ? xr[i] / t : a;
    if (a == -INFINITY) a = 0;
    for (int64_t i = 0; i < call->cols; ++i) s += expf(xr[i] / t - a);
    for (int64_t i = 0; i < call->cols; ++i) yr[i] = s == 0 ? 0.0f : expf(xr[i] / t - a) / s * (1.0f + 1e6f * 0x1p-24f);
  }
  return 0;
}

#if OPT_OUT_MODE == 0
static const softcheck_opt_out opt_outs[] = {
    {"reference", "test: scaled by 1 + 1e6 u on purpose"},
    {"sum_to_one", "test: scaled by 1 + 1e6 u on purpose"},
};
#elif OPT_OUT_MODE == 1
static const softcheck_opt_out opt_outs[] = {{"no_such_check", "why"}};
#elif OPT_OUT_MODE == 2
static const softcheck_opt_out opt_outs[] = {{"reference", ""}};
#endif

#if OPT_OUT_MODE == 3
#define SIZE SOFTCHECK_KERNEL_V2_SIZE_WITHOUT_OPT_OUTS
/* The older header's descriptors: the fields up to flags, packed at that size. */
static _Alignas(softcheck_kernel_v2) unsigned char storage[2 * SIZE];
static const softcheck_kernel_v2* descriptors(void) {
  for (int i = 0; i < 2; ++i) {
    softcheck_kernel_v2 d = {.struct_size = SIZE, .name = i ? "optout_old2_f32" : "optout_wrong_f32",
                             .op = SOFTCHECK_OP_SOFTMAX, .format = SOFTCHECK_FORMAT_F32,
                             .masked_policy = SOFTCHECK_MASKED_ZEROS, .compute = wrong_compute};
    memcpy(storage + i * SIZE, &d, SIZE);
  }
  return (const softcheck_kernel_v2*)(const void*)storage;
}
SOFTCHECK_PLUGIN_EXTERN_C SOFTCHECK_PLUGIN_EXPORT int softcheck_plugin_kernels_v2(int abi_version,
                                                                                 const softcheck_kernel_v2** out,
                                                                                 int* count) {
  if (abi_version != SOFTCHECK_PLUGIN_ABI_VERSION_2) return SOFTCHECK_PLUGIN_ABI_VERSION_2;
  *out = descriptors();
  *count = 2;
  return 0;
}
#else
static const softcheck_kernel_v2 kernels[] = {
    {.struct_size = sizeof(softcheck_kernel_v2), .name = "optout_wrong_f32",
     .description = "shifted softmax x (1 + 1e6 u), no contract, opting out",
     .op = SOFTCHECK_OP_SOFTMAX, .format = SOFTCHECK_FORMAT_F32, .masked_policy = SOFTCHECK_MASKED_ZEROS,
     .compute = wrong_compute, .opt_outs = opt_outs, .opt_out_count = (int32_t)(sizeof opt_outs / sizeof opt_outs[0])},
};
SOFTCHECK_PLUGIN_DEFINE_KERNELS_V2(kernels)
#endif
