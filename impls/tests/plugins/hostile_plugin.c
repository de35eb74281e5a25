/* A plugin whose one kernel, hostile_f32, computes a correct f32 softmax and
 * then does what the environment variable SOFTCHECK_HOSTILE says: the ways a
 * kernel under test can end, stall or change the harness process
 * (cli/tests/hostile_plugin.sh: none of them may turn into a pass).
 *
 *   exit0, exit3, _exit0   exit(0), exit(3), _exit(0) in the kernel
 *   ctor_exit0             exit(0) in the library's constructor
 *   atexit3                an exit handler that turns any exit status into 3
 *   loop                   never returns
 *   stop                   raise(SIGSTOP)
 *   setlocale              setlocale(LC_ALL, "C.UTF-8")
 *   round                  fesetround(FE_TOWARDZERO)
 *   ftz                    MXCSR flush-to-zero and denormals-are-zero on
 *   chdir                  chdir("/")
 *   signal                 signal(SIGINT, SIG_IGN)
 *   ctor_chdir             chdir("/") in the constructor (relative --out paths)
 *   ctor_ftz               FTZ/DAZ on in the constructor (as -ffast-math's crtfastmath)
 */
#define _GNU_SOURCE
#include <fenv.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include <softcheck/softcheck_plugin.h>

#include "shifted_f32.h"

static int mode_is(const char* m) {
  const char* v = getenv("SOFTCHECK_HOSTILE");
  return v != NULL && strcmp(v, m) == 0;
}

static void set_ftz(void) {
#if defined(__x86_64__)
  _mm_setcsr(_mm_getcsr() | 0x8040);
#endif
}

static void exit_three(void) { _exit(3); }

__attribute__((constructor)) static void on_load(void) {
  if (mode_is("ctor_exit0")) exit(0);
  if (mode_is("ctor_chdir")) (void)!chdir("/");
  if (mode_is("ctor_ftz")) set_ftz();
  if (mode_is("atexit3")) atexit(exit_three);
}

static int hostile(const void* xv, void* yv, int64_t rows, int64_t cols, double temperature, void* ctx) {
  (void)ctx;
  shifted((const float*)xv, (float*)yv, rows, cols, temperature, 0);
  if (mode_is("exit0")) exit(0);
  if (mode_is("exit3")) exit(3);
  if (mode_is("_exit0")) _exit(0);
  if (mode_is("loop"))
    for (volatile int spin = 0;; spin = spin + 1) {
    }
  if (mode_is("stop")) raise(SIGSTOP);
  if (mode_is("setlocale")) setlocale(LC_ALL, "C.UTF-8");
  if (mode_is("round")) fesetround(FE_TOWARDZERO);
  if (mode_is("ftz")) set_ftz();
  if (mode_is("chdir")) (void)!chdir("/");
  if (mode_is("signal")) signal(SIGINT, SIG_IGN);
  return 0;
}

static const softcheck_kernel kernels[] = {
    {.name = "hostile_f32", .description = "correct softmax, then SOFTCHECK_HOSTILE", .op = SOFTCHECK_OP_SOFTMAX,
     .format = SOFTCHECK_FORMAT_F32, .masked_policy = SOFTCHECK_MASKED_ZEROS,
     .contract = {1, 2, 1, 2, 0, 4, "shifted softmax"}, .run = hostile},
};

SOFTCHECK_PLUGIN_DEFINE_KERNELS(kernels)
