/* A version-2 plugin (softcheck_plugin.h, softcheck_kernel_v2): one f64
 * kernel with softmax and lse, computed by one compute function that reads
 * the operands from the call. Its lse contract is the shifted two-pass one
 * (impls/src/shifted.cpp): 3n + R + M, +2M when T != 1, in units of u. */
#include <math.h>
#include <softcheck/softcheck_plugin.h>

static int v2_compute(const softcheck_call* call, void* ctx) {
  (void)ctx;
  if (call->n_in != 1 || call->n_out != 1) return 1;
  const double* x = (const double*)call->in[0];
  double* out = (double*)call->out[0];
  for (int64_t r = 0; r < call->rows; ++r) {
    const double* xr = x + r * call->cols;
    double a = -INFINITY;
    for (int64_t i = 0; i < call->cols; ++i)
      if (xr[i] / call->temperature > a) a = xr[i] / call->temperature;
    double s = 0;
    for (int64_t i = 0; i < call->cols; ++i) s += exp(xr[i] / call->temperature - a);
    if (call->op == SOFTCHECK_OP_LSE) {
      out[r] = a == -INFINITY ? -INFINITY : a + log(s);
    } else {
      for (int64_t i = 0; i < call->cols; ++i) out[r * call->cols + i] = exp(xr[i] / call->temperature - a) / s;
    }
  }
  return 0;
}

static const softcheck_kernel_v2 kernels[] = {
    {.struct_size = sizeof(softcheck_kernel_v2), .name = "v2test_shifted_f64",
     .description = "test plugin, ABI version 2: shifted softmax and two-pass lse",
     .op = SOFTCHECK_OP_SOFTMAX, .format = SOFTCHECK_FORMAT_F64, .masked_policy = SOFTCHECK_MASKED_NAN,
     .contract = {.declared = 1, .a = 2, .b = 1, .c = 2, .d = 0, .t = 4, .why = "shifted softmax"},
     .compute = v2_compute},
    {.struct_size = sizeof(softcheck_kernel_v2), .name = "v2test_shifted_f64",
     .op = SOFTCHECK_OP_LSE, .format = SOFTCHECK_FORMAT_F64, .masked_policy = SOFTCHECK_MASKED_NAN,
     .contract = {.declared = 1, .a = 0, .b = 3, .c = 1, .d = 1, .t = 2, .why = "two-pass shifted lse"},
     .compute = v2_compute},
};
SOFTCHECK_PLUGIN_DEFINE_KERNELS_V2(kernels)
