/* Plugins that misbehave, one library per mode (impls/CMakeLists.txt builds
 * this file once per TEST_PLUGIN_<MODE>): every failure mode of
 * docs/plugin-abi.md, for impls/tests/plugin_test.cpp and the CLI tests.
 *
 *   MISBEHAVING   loads fine; kernels that work, fail, write NaN, crash, exit,
 *                 an op softcheck does not know yet, one kernel with two ops
 *   NO_ENTRY      exports no softcheck_plugin_kernels
 *   ABI_V2        speaks ABI version 2
 *   ENTRY_FAILS   the entry point returns -5
 *   NO_KERNELS    declares zero kernels
 *   NULL_NAME, BAD_NAME, DUPLICATE, MISMATCH, BAD_ENUMS, BAD_CONTRACT, CLASH
 *                 one kind of invalid descriptor each (next to a valid one)
 */
#include <math.h>
#include <signal.h>
#include <stdlib.h>

#include <softcheck/softcheck_plugin.h>

#include "shifted_f32.h"

static int ok_softmax(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)ctx;
  shifted((const float*)x, (float*)y, rows, cols, temperature, 0);
  return 0;
}

#if defined(TEST_PLUGIN_MISBEHAVING) || defined(TEST_PLUGIN_MISMATCH)
static int ok_log_softmax(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)ctx;
  shifted((const float*)x, (float*)y, rows, cols, temperature, 1);
  return 0;
}

#endif

#if defined(TEST_PLUGIN_MISBEHAVING)
/* ctx points to the value to return. */
static int returns_ctx(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)x, (void)y, (void)rows, (void)cols, (void)temperature;
  return *(const int*)ctx;
}

static int writes_nan(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)x, (void)temperature, (void)ctx;
  for (int64_t i = 0; i < rows * cols; ++i) ((float*)y)[i] = NAN;
  return 0;
}

/* ctx points to the signal to raise. */
static int raises_ctx(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)x, (void)y, (void)rows, (void)cols, (void)temperature;
  raise(*(const int*)ctx);
  return 0;
}

static int exits(const void* x, void* y, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)x, (void)y, (void)rows, (void)cols, (void)temperature, (void)ctx;
  exit(3);
}

static int seven = 7, sigsegv = SIGSEGV, sigabrt = SIGABRT;
#endif

#define CONTRACT_2N2R {1, 2, 1, 2, 0, 4, "shifted softmax"}
#define KERNEL(NAME, OP, RUN, CTX)                                                        \
  {.name = NAME, .op = OP, .format = SOFTCHECK_FORMAT_F32, .masked_policy = SOFTCHECK_MASKED_ZEROS, \
   .contract = CONTRACT_2N2R, .run = RUN, .ctx = CTX}
#define OK_KERNEL(NAME) KERNEL(NAME, SOFTCHECK_OP_SOFTMAX, ok_softmax, NULL)

#if defined(TEST_PLUGIN_MISBEHAVING)
static const softcheck_kernel kernels[] = {
    OK_KERNEL("tp_ok_f32"),
    {.name = "tp_ok_f32", .op = SOFTCHECK_OP_LOG_SOFTMAX, .format = SOFTCHECK_FORMAT_F32,
     .masked_policy = SOFTCHECK_MASKED_ZEROS, .run = ok_log_softmax}, /* no contract */
    KERNEL("tp_fails_f32", SOFTCHECK_OP_SOFTMAX, returns_ctx, &seven),
    KERNEL("tp_nan_f32", SOFTCHECK_OP_SOFTMAX, writes_nan, NULL),
    KERNEL("tp_segv_f32", SOFTCHECK_OP_SOFTMAX, raises_ctx, &sigsegv),
    KERNEL("tp_abort_f32", SOFTCHECK_OP_SOFTMAX, raises_ctx, &sigabrt),
    KERNEL("tp_exit_f32", SOFTCHECK_OP_SOFTMAX, exits, NULL),
    KERNEL("tp_sparsemax_f32", SOFTCHECK_OP_SPARSEMAX, ok_softmax, NULL),
    {.name = "tp_entmax_f32", .op = SOFTCHECK_OP_ENTMAX, .entmax_alpha = 1.5, .format = SOFTCHECK_FORMAT_F32,
     .masked_policy = SOFTCHECK_MASKED_ZEROS, .run = ok_softmax},
    {.name = "tp_serial_f32", .description = "not thread-safe", .op = SOFTCHECK_OP_SOFTMAX,
     .format = SOFTCHECK_FORMAT_F32, .masked_policy = SOFTCHECK_MASKED_ZEROS, .contract = CONTRACT_2N2R,
     .run = ok_softmax, .flags = SOFTCHECK_KERNEL_NOT_THREAD_SAFE},
};
#elif defined(TEST_PLUGIN_NULL_NAME)
static const softcheck_kernel kernels[] = {OK_KERNEL("tp_ok_f32"), OK_KERNEL(NULL)};
#elif defined(TEST_PLUGIN_BAD_NAME)
static const softcheck_kernel kernels[] = {OK_KERNEL("tp ok"), OK_KERNEL("")};
#elif defined(TEST_PLUGIN_DUPLICATE)
static const softcheck_kernel kernels[] = {OK_KERNEL("tp_ok_f32"), OK_KERNEL("tp_other_f32"), OK_KERNEL("tp_ok_f32")};
#elif defined(TEST_PLUGIN_MISMATCH)
static const softcheck_kernel kernels[] = {
    OK_KERNEL("tp_ok_f32"),
    {.name = "tp_ok_f32", .op = SOFTCHECK_OP_LOG_SOFTMAX, .format = SOFTCHECK_FORMAT_F64,
     .masked_policy = SOFTCHECK_MASKED_ZEROS, .run = ok_log_softmax}};
#elif defined(TEST_PLUGIN_BAD_ENUMS)
static const softcheck_kernel kernels[] = {
    OK_KERNEL("tp_ok_f32"),
    {.name = "tp_zeroed", .run = ok_softmax},
    {.name = "tp_bad_f32", .op = 9, .format = 7, .masked_policy = 4, .run = ok_softmax, .flags = 0x10},
    {.name = "tp_entmax", .op = SOFTCHECK_OP_ENTMAX, .entmax_alpha = 1.0, .format = SOFTCHECK_FORMAT_F32,
     .masked_policy = SOFTCHECK_MASKED_ZEROS, .run = ok_softmax}};
#elif defined(TEST_PLUGIN_BAD_CONTRACT)
static const softcheck_kernel kernels[] = {
    {.name = "tp_contract_f32", .op = SOFTCHECK_OP_SOFTMAX, .format = SOFTCHECK_FORMAT_F32,
     .masked_policy = SOFTCHECK_MASKED_ZEROS, .contract = {1, 2, -1, 0, 0, 0, "negative b"}, .run = ok_softmax},
    {.name = "tp_declared_f32", .op = SOFTCHECK_OP_SOFTMAX, .format = SOFTCHECK_FORMAT_F32,
     .masked_policy = SOFTCHECK_MASKED_ZEROS, .contract = {2, 0, 0, 0, 0, 0, NULL}, .run = NULL}};
#elif defined(TEST_PLUGIN_CLASH)
static const softcheck_kernel kernels[] = {OK_KERNEL("tp_ok_f32"), OK_KERNEL("shifted_f32")};
#else
static const softcheck_kernel kernels[] = {OK_KERNEL("tp_ok_f32")};
#endif

#if defined(TEST_PLUGIN_NO_ENTRY)
SOFTCHECK_PLUGIN_EXPORT int softcheck_plugin_kernel(int abi_version, const softcheck_kernel** out, int* count) {
  (void)abi_version;
  *out = kernels;
  *count = 1;
  return 0;
}
#elif defined(TEST_PLUGIN_ABI_V2)
SOFTCHECK_PLUGIN_EXPORT int softcheck_plugin_kernels(int abi_version, const softcheck_kernel** out, int* count) {
  if (abi_version != 2) return 2;
  *out = kernels;
  *count = 1;
  return 0;
}
#elif defined(TEST_PLUGIN_ENTRY_FAILS)
SOFTCHECK_PLUGIN_EXPORT int softcheck_plugin_kernels(int abi_version, const softcheck_kernel** out, int* count) {
  (void)abi_version, (void)out, (void)count, (void)kernels;
  return -5;
}
#elif defined(TEST_PLUGIN_NO_KERNELS)
SOFTCHECK_PLUGIN_EXPORT int softcheck_plugin_kernels(int abi_version, const softcheck_kernel** out, int* count) {
  (void)abi_version;
  *out = kernels;
  *count = 0;
  return 0;
}
#else
SOFTCHECK_PLUGIN_DEFINE_KERNELS(kernels)
#endif
