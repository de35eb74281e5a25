// XNNPACK as a peer: the softmax_nc operator (rows x channels, row-major,
// single-threaded: no thread pool) in f32, and f16 where the installed
// XNNPACK has an f16 softmax operator (Debian 12's 2022-02 snapshot has none;
// probed at start-up).
//
// Declared contracts: none. XNNPACK's own test (softmax operator tester)
// requires |y - ref| <= 1e-5 * ref against a double reference on rows drawn
// from U[90, 100] (REFERENCE.md, "How the peers test softmax"): 1e-5 =
// 167.8 u, 168 ULP on normal outputs. Its rows have a range of at most 10, so
// they never reach what breaks that form on wider rows:
//   - xnn_run_operator hands the work to pthreadpool with
//     PTHREADPOOL_FLAG_DISABLE_DENORMALS, and pthreadpool sets MXCSR FTZ and
//     DAZ (_mm_setcsr(_mm_getcsr() | 0x8040)) around the call, on the
//     calling thread too when there is no pool (pthreadpool's
//     pthreadpool_parallelize_* and its fpu state helpers; XNNPACK's
//     src/operator-run.c). Every subnormal result is flushed to 0: an output
//     whose exact value is below 2^-126 comes back 0.
//   - The f32 exp of x_i - max (src/f32-raddstoreexpminusmax/, in this build
//     xnn_f32_raddstoreexpminusmax_ukernel__sse2_rr2_p5_x20_acc2) builds
//     s = 2^n from exponent bits and returns +0 where x_i - max <
//     -0x1.5D589Ep6 (~ -87.3365, ln 2^-126). Above that its last step
//     s + (t s) p, |t| <= ln 2 / 2, loses t s wherever t s is subnormal
//     (FTZ): the exp comes back as the bare power of two s, off by up to
//     2^(-126 - n) relative, 41 % (e^(ln 2 / 2) - 1) for n <= -125.
//     Measured on rows [0, -d]: more than 168 ULP on outputs up to 2^-112.
// A flushed output costs v / 2^-149 ULPs (up to 2^23), a bare power of two
// up to 0.41 * 2^23: no term of the contract form (n, R, M) bounds that, and
// a bound that holds only on outputs above 2^-100 or so is not one the
// Contract can state. The `why` gives the measured figures; the floor and
// `run`'s reference rule (absolute, so blind to both effects) judge it. f16:
// the tester's max(1e-4, 5e-3 |ref|) has an absolute part, so no
// componentwise ULP form either.
//
// Masked rows: measured, every output of an all -inf row is -inf (the max is
// -inf, and the operator's exp of -inf - -inf does not give NaN). No policy of
// softcheck's (nan, zeros, uniform) describes that; declared nan, the
// "undefined output" policy, so the report flags those rows.
//
// XNNPACK may read up to XNN_EXTRA_BYTES past the end of its input: the
// adapter always passes a padded copy.
#include <string>

#include "peer_util.hpp"
#include "softcheck/kernel_failure.hpp"

#if SOFTCHECK_HAVE_XNNPACK
#include <dlfcn.h>
#include <xnnpack.h>

#include <memory>
#endif

namespace softcheck::peers {

namespace {

Contract xnnpack_promise(Format f) {
  Contract c;
  if (f == Format::f32) {
    c.why = "none: XNNPACK runs with FTZ and DAZ set (xnn_run_operator passes PTHREADPOOL_FLAG_DISABLE_DENORMALS) "
            "and its exp(x - max) is +0 below x - max = -0x1.5D589Ep6 (ln 2^-126): outputs below 2^-126 come back "
            "0, and exp values above it lose their polynomial correction where that is subnormal (a bare power of "
            "two, up to 41 % off; over 168 ULP on outputs up to 2^-112). ULP errors up to 2^23 that no n, R, M "
            "term bounds; its test's relative 1e-5 (168 ULP, rows from U[90, 100]) never meets them. Measured "
            "(libxnnpack0 git20220216, x86), `sweep --dtype f32 --elements e4m3 --length 2`: 1,568 of the 64,516 "
            "rows over 168 ULP, 1,460 with an output flushed ([0.625, 88]: exact 1.13e-38, got 0, 8.1e6 ULP), 108 "
            "with one returned as a bare 2^-126 to 2^-123 ([0.6875, 88]: exact 1.20e-38, got 2^-126, 2.0e5 ULP); "
            "also 190 ULP with no flush on the quick suite's ties row of 65,536 entries. Reported, not gated.";
  } else {
    c.why = "XNNPACK's f16 softmax test allows max(1e-4, 5e-3 |ref|): the absolute part has no componentwise "
            "ULP form; reported, not gated.";
  }
  return c;
}

Kernel describe_xnnpack(Format f) {
  Kernel k;
  k.name = "xnnpack_" + std::string(name(f));
  k.algorithm = "xnnpack";
  k.format = f;
  k.masked_policy = MaskedRowPolicy::nan;  // measured: -inf everywhere, which no policy describes (see above)
  k.ops.push_back({Op::softmax, xnnpack_promise(f)});
  k.description = "XNNPACK softmax_nc, single-threaded, with FTZ and DAZ set for the call (subnormal outputs "
                  "flushed to 0); fully masked rows give -inf in every output; ";
  k.description += temperature_note;
  return k;
}

#if SOFTCHECK_HAVE_XNNPACK

// xnn_initialize once per process; its status decides availability.
xnn_status initialize_once() {
  static const xnn_status status = xnn_initialize(nullptr);
  return status;
}

using OperatorPtr = std::unique_ptr<xnn_operator, decltype(&xnn_delete_operator)>;

void check(xnn_status s, const std::string& who, const char* step) {
  if (s != xnn_status_success) throw KernelFailure(who + ": " + step + " failed with status " + std::to_string(s));
}

void run_xnnpack_f32(const std::string& kernel, const void* x, void* y, std::int64_t rows, std::int64_t cols,
                     double temperature) {
  const std::string who = kernel + " (softmax)";
  const auto n = static_cast<std::size_t>(cols);
  const std::vector<unsigned char> z =
      scaled_copy(Format::f32, x, static_cast<std::size_t>(rows) * n, temperature, XNN_EXTRA_BYTES);
  xnn_operator_t raw = nullptr;
  check(xnn_create_softmax_nc_f32(n, n, n, 0, &raw), who, "xnn_create_softmax_nc_f32");
  const OperatorPtr op(raw, &xnn_delete_operator);
  check(xnn_setup_softmax_nc_f32(op.get(), static_cast<std::size_t>(rows), reinterpret_cast<const float*>(z.data()),
                                 static_cast<float*>(y), nullptr),
        who, "xnn_setup_softmax_nc_f32");
  check(xnn_run_operator(op.get(), nullptr), who, "xnn_run_operator");
}

// Empty when the format can run here, else why not.
std::string missing_support(Format f) {
  if (initialize_once() != xnn_status_success)
    return "XNNPACK does not run on this CPU (xnn_initialize returned " + std::to_string(initialize_once()) + ")";
  if (f == Format::f32) return {};
  if (!::dlsym(RTLD_DEFAULT, "xnn_create_softmax_nc_f16"))
    return "the installed XNNPACK has no f16 softmax operator (xnn_create_softmax_nc_f16 is not exported)";
  return "the installed XNNPACK has an f16 softmax operator, but this adapter drives only the f32 one";
}

void attach_library(Kernel& k) {
  if (const std::string why = missing_support(k.format); !why.empty()) return mark_unavailable(k, why);
  k.compute = single_operand([name = k.name](Op op, const void* x, void* y, std::int64_t rows, std::int64_t cols, double temperature) {
    if (op != Op::softmax) throw std::invalid_argument(name + " does not provide " + std::string(softcheck::name(op)));
    run_xnnpack_f32(name, x, y, rows, cols, temperature);
  });
}

#else

void attach_library(Kernel& k) {
  mark_unavailable(k, "XNNPACK not found at build time (libxnnpack-dev and libpthreadpool-dev, see "
                      "scripts/bootstrap.sh)");
}

#endif

}  // namespace

std::vector<Kernel> xnnpack_kernels() {
  std::vector<Kernel> out;
  for (Format f : {Format::f32, Format::f16}) {
    Kernel k = describe_xnnpack(f);
    attach_library(k);
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace softcheck::peers
