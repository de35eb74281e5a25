/* softcheck_plugin.h: the C ABI of softcheck kernel plugins (docs/plugin-abi.md).
 *
 * A plugin is a shared library that exports one function,
 *
 *   int softcheck_plugin_kernels(int abi_version, const softcheck_kernel** out, int* count);
 *
 * which hands softcheck an array of kernel descriptors. Plain C (C99), no
 * dependency on softcheck's C++ code: `#include <softcheck/softcheck_plugin.h>`
 * and build a shared library. The smallest plugin:
 *
 *   static int my_run(const void* x, void* y, int64_t rows, int64_t cols,
 *                     double temperature, void* ctx) { ...; return 0; }
 *   static const softcheck_kernel kernels[] = {{
 *       .name = "acme_softmax_f32", .op = SOFTCHECK_OP_SOFTMAX,
 *       .format = SOFTCHECK_FORMAT_F32, .masked_policy = SOFTCHECK_MASKED_ZEROS,
 *       .run = my_run}};
 *   SOFTCHECK_PLUGIN_DEFINE_KERNELS(kernels)
 *
 * Versioning: SOFTCHECK_PLUGIN_ABI_VERSION changes whenever the layout or the
 * meaning of anything below changes. softcheck calls the entry point with the
 * version it speaks; a plugin built for another version returns its own
 * version (> 0) instead of 0, and softcheck reports the mismatch (or, when it
 * also speaks that version, asks again with it).
 */
#ifndef SOFTCHECK_PLUGIN_H
#define SOFTCHECK_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SOFTCHECK_PLUGIN_ABI_VERSION 1

/* Name of the exported entry point (for dlsym). */
#define SOFTCHECK_PLUGIN_ENTRY_POINT "softcheck_plugin_kernels"

/* Every enumeration starts at 1: a field left zero by mistake is rejected at
 * load time instead of silently meaning "softmax" or "f64". */

/* What a kernel computes on each row (x scaled by 1/temperature first). */
enum softcheck_op {
  SOFTCHECK_OP_SOFTMAX = 1,
  SOFTCHECK_OP_LOG_SOFTMAX = 2,
  SOFTCHECK_OP_SPARSEMAX = 3,
  SOFTCHECK_OP_ENTMAX = 4, /* with entmax_alpha > 1 (alpha = 1.5: entmax15) */
  /* Version 2 only (softcheck_kernel_v2): one output value per row. */
  SOFTCHECK_OP_LSE = 5,    /* log sum_j exp(x_j / T) */
  SOFTCHECK_OP_ENTROPY = 6 /* -sum_j p_j log p_j, p = softmax(x / T) */
};

/* Element format of x and y (both the same). f16 and bf16 elements are
 * uint16_t bit patterns (IEEE binary16; the upper half of a binary32). */
enum softcheck_format {
  SOFTCHECK_FORMAT_F64 = 1,
  SOFTCHECK_FORMAT_F32 = 2,
  SOFTCHECK_FORMAT_F16 = 3,
  SOFTCHECK_FORMAT_BF16 = 4
};

/* What the kernel returns for a row whose entries are all -inf. */
enum softcheck_masked_policy {
  SOFTCHECK_MASKED_NAN = 1,    /* every output NaN */
  SOFTCHECK_MASKED_ZEROS = 2,  /* softmax 0, log-softmax -inf */
  SOFTCHECK_MASKED_UNIFORM = 3 /* softmax 1/n, log-softmax -log n */
};

/* softcheck_kernel.flags */
/* The run function must not be called from two threads at once: softcheck
 * serialises its calls (otherwise it may call it concurrently, on distinct
 * buffers). */
#define SOFTCHECK_KERNEL_NOT_THREAD_SAFE 0x1u

/* Accuracy contract, the same form as softcheck's built-in kernels
 * (docs/kernels.md): the largest componentwise error in ULPs of the output
 * format on a row with finite entries (-inf masks allowed) is at most
 *   K = a + b*n + c*R + (d + t*[temperature != 1]) * M,  bound = K / (1 - K*u)
 * with n the row length, R the range and M the largest magnitude of the
 * contributing x/temperature, u = 2^-precision. declared = 0: no contract
 * (the report shows the errors, the kernel is never gated on them). */
typedef struct softcheck_contract {
  int32_t declared;
  double a, b, c, d, t; /* finite, >= 0 */
  const char* why;      /* derivation or source of the numbers; may be NULL */
} softcheck_contract;

/* Runs the kernel on rows x cols elements, row-major: y = op(x / temperature)
 * row by row. rows >= 1, cols >= 1, temperature finite and > 0. x and y do not
 * overlap unless x == y (in place). Returns 0 on success; any other value is
 * reported as a failure of this kernel (y is then ignored). */
typedef int (*softcheck_run_fn)(const void* x, void* y, int64_t rows, int64_t cols,
                                double temperature, void* ctx);

/* One kernel x one op. Several descriptors may share a name (one per op, same
 * format and masked-row policy): softcheck shows them as one kernel with
 * several ops, like its built-ins (e.g. softmax and log_softmax). */
typedef struct softcheck_kernel {
  const char* name;         /* [A-Za-z0-9_.-]+, unique among every kernel softcheck knows */
  const char* description;  /* one line; may be NULL */
  int32_t op;               /* enum softcheck_op */
  double entmax_alpha;      /* SOFTCHECK_OP_ENTMAX only (> 1); ignored otherwise */
  int32_t format;           /* enum softcheck_format */
  int32_t masked_policy;    /* enum softcheck_masked_policy */
  softcheck_contract contract;
  softcheck_run_fn run;     /* not NULL */
  void* ctx;                /* passed to run as is; owned by the plugin */
  uint32_t flags;           /* SOFTCHECK_KERNEL_* bits; 0 by default */
} softcheck_kernel;

/* ---- ABI version 2: operands ------------------------------------------
 * A version-2 plugin exports softcheck_plugin_kernels_v2 (and may also export
 * the version-1 entry point for older softcheck builds); softcheck looks for
 * the version-2 entry point first. Version-1 plugins load and run unchanged.
 * A version-2 kernel receives all of the op's operands in one call: in[i] and
 * out[i] in the order of docs/plugin-abi.md's operand table, each row-major in
 * the kernel's format; a row operand holds rows x cols elements, a scalar
 * operand (lse, entropy) one element per row. */
#define SOFTCHECK_PLUGIN_ABI_VERSION_2 2
#define SOFTCHECK_PLUGIN_ENTRY_POINT_V2 "softcheck_plugin_kernels_v2"

typedef struct softcheck_call {
  int32_t op;            /* enum softcheck_op, the descriptor's */
  int32_t n_in, n_out;   /* number of entries of in and out */
  const void* const* in; /* inputs (x) */
  void* const* out;      /* outputs (y, or lse / entropy: one per row) */
  int64_t rows, cols;    /* >= 1; cols is the length of an input row */
  double temperature;    /* finite, > 0 */
} softcheck_call;

/* Returns 0 on success; any other value fails this kernel (outputs ignored). */
typedef int (*softcheck_compute_fn)(const softcheck_call* call, void* ctx);

/* A floor check a kernel does not claim, and why (docs/gating-your-kernel.md,
 * "The floor"). check: "no_nonfinite", "range", "ordering", "sum_to_one",
 * "shift_invariance", "permutation" or "reference"; reason: shown in the
 * report, not empty. Both strings are copied at load time. */
typedef struct softcheck_opt_out {
  const char* check;
  const char* reason;
} softcheck_opt_out;

typedef struct softcheck_kernel_v2 {
  uint32_t struct_size;     /* sizeof(softcheck_kernel_v2): checked at load time */
  const char* name;         /* as in version 1 */
  const char* description;  /* one line; may be NULL */
  int32_t op;               /* enum softcheck_op, 1..6 */
  double entmax_alpha;      /* SOFTCHECK_OP_ENTMAX only (> 1); ignored otherwise */
  int32_t format;           /* enum softcheck_format */
  int32_t masked_policy;    /* enum softcheck_masked_policy (lse: -inf under every policy, NaN also under nan;
                               entropy: NaN, 0, log n) */
  softcheck_contract contract; /* ULPs; for lse and entropy the absolute error in units of u */
  softcheck_compute_fn compute; /* not NULL */
  void* ctx;                /* passed to compute as is; owned by the plugin */
  uint32_t flags;           /* SOFTCHECK_KERNEL_* bits; 0 by default */
  /* Floor checks this kernel does not claim, each with its reason; NULL and 0
   * for none. Appended after the first version-2 header: a plugin built with
   * that header (struct_size == SOFTCHECK_KERNEL_V2_SIZE_WITHOUT_OPT_OUTS)
   * loads unchanged and opts out of nothing. */
  const softcheck_opt_out* opt_outs;
  int32_t opt_out_count;    /* 0 to 64 */
} softcheck_kernel_v2;

#define SOFTCHECK_KERNEL_V2_SIZE_WITHOUT_OPT_OUTS offsetof(softcheck_kernel_v2, opt_outs)

/* With abi_version == SOFTCHECK_PLUGIN_ABI_VERSION_2: sets *out to *count
 * descriptors and returns 0 (lifetime rules as for version 1); otherwise
 * returns the version it speaks (> 0), or < 0 when its own set-up failed. */
typedef int (*softcheck_plugin_kernels_v2_fn)(int abi_version, const softcheck_kernel_v2** out, int* count);

/* The entry point. With abi_version == SOFTCHECK_PLUGIN_ABI_VERSION: sets
 * *out to an array of *count descriptors and returns 0. The array, its
 * strings and every ctx stay valid and unchanged until the process exits
 * (softcheck copies the strings but never unloads a plugin). Otherwise
 * returns the version the plugin speaks (> 0); a negative value is a failure
 * of the plugin's own set-up. */
typedef int (*softcheck_plugin_kernels_fn)(int abi_version, const softcheck_kernel** out, int* count);

#if defined(_WIN32)
#define SOFTCHECK_PLUGIN_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
#define SOFTCHECK_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define SOFTCHECK_PLUGIN_EXPORT
#endif

/* The plugin's side of the entry point (defined by the plugin, e.g. with
 * SOFTCHECK_PLUGIN_DEFINE_KERNELS below; softcheck looks it up with dlsym). */
SOFTCHECK_PLUGIN_EXPORT int softcheck_plugin_kernels(int abi_version, const softcheck_kernel** out,
                                                     int* count);

SOFTCHECK_PLUGIN_EXPORT int softcheck_plugin_kernels_v2(int abi_version, const softcheck_kernel_v2** out,
                                                        int* count);

#ifdef __cplusplus
#define SOFTCHECK_PLUGIN_EXTERN_C extern "C"
#else
#define SOFTCHECK_PLUGIN_EXTERN_C
#endif

/* Defines the entry point for a static array of descriptors, with the version
 * handshake: SOFTCHECK_PLUGIN_DEFINE_KERNELS(my_kernels) */
#define SOFTCHECK_PLUGIN_DEFINE_KERNELS(array)                                                  \
  SOFTCHECK_PLUGIN_EXTERN_C SOFTCHECK_PLUGIN_EXPORT int softcheck_plugin_kernels(               \
      int abi_version, const softcheck_kernel** out, int* count) {                              \
    if (abi_version != SOFTCHECK_PLUGIN_ABI_VERSION) return SOFTCHECK_PLUGIN_ABI_VERSION;        \
    *out = (array);                                                                             \
    *count = (int)(sizeof(array) / sizeof((array)[0]));                                         \
    return 0;                                                                                   \
  }

/* The version-2 entry point for a static array of softcheck_kernel_v2:
 * SOFTCHECK_PLUGIN_DEFINE_KERNELS_V2(my_kernels) */
#define SOFTCHECK_PLUGIN_DEFINE_KERNELS_V2(array)                                               \
  SOFTCHECK_PLUGIN_EXTERN_C SOFTCHECK_PLUGIN_EXPORT int softcheck_plugin_kernels_v2(            \
      int abi_version, const softcheck_kernel_v2** out, int* count) {                           \
    if (abi_version != SOFTCHECK_PLUGIN_ABI_VERSION_2) return SOFTCHECK_PLUGIN_ABI_VERSION_2;    \
    *out = (array);                                                                             \
    *count = (int)(sizeof(array) / sizeof((array)[0]));                                         \
    return 0;                                                                                   \
  }

#ifdef __cplusplus
}
#endif

#endif /* SOFTCHECK_PLUGIN_H */
