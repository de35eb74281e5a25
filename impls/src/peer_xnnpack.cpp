// XNNPACK as a peer: the softmax_nc operator (rows x channels, row-major,
// single-threaded: no thread pool) in f32, and f16 where the installed
// XNNPACK has an f16 softmax operator (Debian 12's 2022-02 snapshot has none;
// probed at start-up).
//
// Declared contract (f32 softmax): XNNPACK's own test (softmax operator
// tester) requires |y - ref| <= 1e-5 * ref against a double reference on rows
// drawn from U[90, 100] (REFERENCE.md, "How the peers test softmax").
// Relative 1e-5 = 167.8 u, and ulps <= relative error / u for normal outputs:
// a = 168. t = 4 covers the adapter's rounding of x / T (as for softcheck's own
// kernels, docs/kernels.md). Their rows have a range of at most 10 and a few
// hundred entries; softcheck holds the promise on every row, so the report
// shows where it stops holding. f16: the tester's max(1e-4, 5e-3 |ref|) has an
// absolute part, so no componentwise ULP form: none.
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
    c.declared = true;
    c.a = 168;
    c.t = 4;
    c.why = "XNNPACK's softmax test: relative 1e-5 against a double reference on rows from U[90, 100]; "
            "1e-5 = 167.8 u, so 168 ULP; t = 4 for the adapter's rounding of x/T. Their rows have range <= 10 "
            "and a few hundred entries: the report shows whether the promise holds beyond them.";
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
  k.description = "XNNPACK softmax_nc, single-threaded; fully masked rows give -inf in every output; ";
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
