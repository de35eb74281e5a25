// oneDNN as a peer: softmax_v2 forward inference, algorithm softmax_accurate
// (softmax) and softmax_log (log-softmax), on a rows x cols row-major tensor
// over axis 1, in f32, bf16 and f16. Which formats run is probed at start-up:
// oneDNN 2.6 on x86 implements f32 and bf16 (AVX-512) but no f16 softmax.
//
// Declared contracts: none, with the reason. benchdnn, oneDNN's own test
// driver, compares with an f32 max-shifted reference at threshold
// coeff_log * coeff_f32 * eps(dt) (coeff_log 5 for log-softmax, coeff_f32 10
// for f32, 1 otherwise), relative where |expected| > 1e-5 and absolute below
// (REFERENCE.md, "How the peers test softmax"). The absolute part admits any
// ULP error on outputs below 1e-5, so the promise has no componentwise ULP
// form; the report shows what oneDNN delivers instead of gating on it.
//
// Masked rows: measured, every output NaN for an all -inf row (softmax and
// log-softmax, f32 and bf16) -- max = -inf, then -inf - -inf. Declared nan.
//
// The backward ops (softmax_backward, log_softmax_backward; docs/gradients.md):
// softmax_v2 forward (training) gives y, softmax_v2 backward_data gives dx
// from y and the upstream gradient g, on the same row-major tensors. Offered
// where oneDNN implements the backward in the format (probed at start-up).
// benchdnn checks them with the same kind of mixed relative / absolute
// threshold, so they declare no contract either: the report's reference rule
// and floor judge them.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>

#include "peer_util.hpp"
#include "softcheck/kernel_failure.hpp"
#include "softcheck/storage.hpp"

#if SOFTCHECK_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace softcheck::peers {

namespace {

constexpr Format onednn_formats[] = {Format::f32, Format::bf16, Format::f16};
constexpr Op onednn_ops[] = {Op::softmax, Op::log_softmax};
constexpr Op onednn_backward_ops[] = {Op::softmax_backward, Op::log_softmax_backward};

std::string g3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// benchdnn's promise in words (see the file comment).
Contract benchdnn_promise(Format f, Op op) {
  const double coeff = (op == Op::log_softmax ? 5 : 1) * (f == Format::f32 ? 10 : 1);
  const double eps = 2 * unit_roundoff(f);  // machine epsilon, 2^(1-p)
  Contract c;
  c.why = "benchdnn (oneDNN's test driver) allows " + g3(coeff) + "*eps = " + g3(coeff * eps) + " against an f32 " +
          "max-shifted reference: relative where |expected| > 1e-5, absolute below (rows of 88, 89, 90 among " +
          "lowest() masks). The absolute part admits any ULP error on outputs below 1e-5, so the promise has no " +
          "componentwise ULP form (its relative part alone is " + g3(coeff * eps / unit_roundoff(f)) +
          " ULP); reported, not gated.";
  return c;
}

Kernel describe_onednn(Format f) {
  Kernel k;
  k.name = "onednn_" + std::string(name(f));
  k.algorithm = "onednn";
  k.format = f;
  k.masked_policy = MaskedRowPolicy::nan;  // measured: NaN (max = -inf, then -inf - -inf)
  for (Op op : onednn_ops) k.ops.push_back({op, benchdnn_promise(f, op)});
  for (Op op : onednn_backward_ops) {
    const Op forward = op == Op::softmax_backward ? Op::softmax : Op::log_softmax;
    OpDecl d{op, benchdnn_promise(f, forward)};  // y: the forward's promise
    Contract dx;
    dx.why = "none: oneDNN states no componentwise bound for softmax backward_data's diff_src; measured in the "
             "scaled metric (docs/gradients.md) and judged by the reference rule and the floor, not gated";
    d.further_contracts.push_back(dx);
    k.ops.push_back(std::move(d));
  }
  k.description = "oneDNN softmax_v2 forward (softmax_accurate / softmax_log) over the last axis, and its "
                  "backward_data for the backward ops; ";
  k.description += temperature_note;
  return k;
}

#if SOFTCHECK_HAVE_ONEDNN

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::data_type data_type_of(Format f) {
  switch (f) {
    case Format::f32: return dnnl::memory::data_type::f32;
    case Format::bf16: return dnnl::memory::data_type::bf16;
    case Format::f16: return dnnl::memory::data_type::f16;
    case Format::f64: break;
    case Format::e4m3:
    case Format::e4m3_div256: throw_not_a_storage_format(f);
  }
  throw std::logic_error("oneDNN has no f64 on the CPU");
}

dnnl::memory::desc tensor(Format f, std::int64_t rows, std::int64_t cols) {
  return {{rows, cols}, data_type_of(f), dnnl::memory::format_tag::ab};
}

// Empty when oneDNN has no implementation for this format and op.
dnnl::softmax_v2_forward::primitive_desc primitive_for(Format f, Op op, std::int64_t rows, std::int64_t cols) {
  const auto alg = op == Op::softmax ? dnnl::algorithm::softmax_accurate : dnnl::algorithm::softmax_log;
  const dnnl::memory::desc md = tensor(f, rows, cols);
  const dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, md, md, 1);
  return dnnl::softmax_v2_forward::primitive_desc(d, cpu_engine(), /*allow_empty=*/true);
}

Op forward_of(Op op) {
  return op == Op::softmax_backward ? Op::softmax : op == Op::log_softmax_backward ? Op::log_softmax : op;
}

dnnl::algorithm algorithm_of(Op op) {
  return forward_of(op) == Op::softmax ? dnnl::algorithm::softmax_accurate : dnnl::algorithm::softmax_log;
}

// The forward (training: the backward's hint) and backward_data primitive
// descriptors of a backward op; empty when oneDNN has no implementation.
struct BackwardDescs {
  dnnl::softmax_v2_forward::primitive_desc forward;
  dnnl::softmax_v2_backward::primitive_desc backward;
  explicit operator bool() const { return forward && backward; }
};

BackwardDescs backward_for(Format f, Op op, std::int64_t rows, std::int64_t cols) {
  const dnnl::memory::desc md = tensor(f, rows, cols);
  BackwardDescs d;
  d.forward = dnnl::softmax_v2_forward::primitive_desc(
      dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_training, algorithm_of(op), md, md, 1), cpu_engine(),
      /*allow_empty=*/true);
  if (!d.forward) return d;
  d.backward = dnnl::softmax_v2_backward::primitive_desc(
      dnnl::softmax_v2_backward::desc(algorithm_of(op), md, md, md, 1), cpu_engine(), d.forward, /*allow_empty=*/true);
  return d;
}

std::string library_version() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

// The primitive for this format, op and shape. Each thread keeps the last one
// it made per format and op: a benchmark or a suite calls one shape many times
// in a row, and making a primitive (even from oneDNN's primitive cache) costs
// more than running it on a small row, which would charge oneDNN with set-up
// the built-in kernels do not have (the speed comparison runs them side by side).
const dnnl::softmax_v2_forward& cached_primitive(const std::string& who, Format f, Op op, std::int64_t rows,
                                                 std::int64_t cols) {
  struct Entry {
    std::int64_t rows = -1, cols = -1;
    dnnl::softmax_v2_forward primitive;
  };
  const auto index_in = [](const auto& list, auto v) {
    return static_cast<std::size_t>(std::find(std::begin(list), std::end(list), v) - std::begin(list));
  };
  thread_local Entry last[std::size(onednn_formats)][std::size(onednn_ops)];
  Entry& e = last[index_in(onednn_formats, f)][index_in(onednn_ops, op)];
  if (e.rows != rows || e.cols != cols) {
    e.rows = -1;  // not valid until the new primitive is made
    const auto pd = primitive_for(f, op, rows, cols);
    if (!pd) throw KernelFailure(who + ": oneDNN has no implementation for " + std::to_string(rows) + "x" +
                                 std::to_string(cols));
    e.primitive = dnnl::softmax_v2_forward(pd);
    e.rows = rows;
    e.cols = cols;
  }
  return e.primitive;
}

void run_onednn(const std::string& kernel, Format f, Op op, const void* x, void* y, std::int64_t rows,
                std::int64_t cols, double temperature) {
  const std::string who = kernel + " (" + std::string(name(op)) + ")";
  try {
    const dnnl::softmax_v2_forward& softmax = cached_primitive(who, f, op, rows, cols);
    const auto count = static_cast<std::size_t>(rows * cols);
    std::vector<unsigned char> z;
    if (temperature != 1) z = scaled_copy(f, x, count, temperature);
    void* src = temperature != 1 ? z.data() : const_cast<void*>(x);  // oneDNN does not write its source
    const dnnl::memory::desc md = tensor(f, rows, cols);
    dnnl::memory src_mem(md, cpu_engine(), src), dst_mem(md, cpu_engine(), y);
    dnnl::stream stream(cpu_engine());
    softmax.execute(stream, {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_DST, dst_mem}});
    stream.wait();
  } catch (const dnnl::error& e) {
    throw KernelFailure(who + ": oneDNN error: " + e.what());
  }
}

// A backward op's primitives for this format and shape, cached per thread as
// cached_primitive does.
struct BackwardPrimitives {
  std::int64_t rows = -1, cols = -1;
  dnnl::softmax_v2_forward forward;
  dnnl::softmax_v2_backward backward;
};

const BackwardPrimitives& cached_backward(const std::string& who, Format f, Op op, std::int64_t rows,
                                          std::int64_t cols) {
  const auto index_in = [](const auto& list, auto v) {
    return static_cast<std::size_t>(std::find(std::begin(list), std::end(list), v) - std::begin(list));
  };
  thread_local BackwardPrimitives last[std::size(onednn_formats)][std::size(onednn_backward_ops)];
  BackwardPrimitives& e = last[index_in(onednn_formats, f)][index_in(onednn_backward_ops, op)];
  if (e.rows != rows || e.cols != cols) {
    e.rows = -1;
    const BackwardDescs d = backward_for(f, op, rows, cols);
    if (!d) throw KernelFailure(who + ": oneDNN has no implementation for " + std::to_string(rows) + "x" +
                                std::to_string(cols));
    e.forward = dnnl::softmax_v2_forward(d.forward);
    e.backward = dnnl::softmax_v2_backward(d.backward);
    e.rows = rows;
    e.cols = cols;
  }
  return e;
}

// y = softmax(x / T) (or log-softmax) and dx = its backward_data at y given g.
void run_onednn_backward(const std::string& kernel, Format f, const OpCall& c) {
  const std::string who = kernel + " (" + std::string(name(c.op)) + ")";
  try {
    const BackwardPrimitives& p = cached_backward(who, f, c.op, c.rows, c.cols);
    const auto count = static_cast<std::size_t>(c.rows * c.cols);
    std::vector<unsigned char> z;
    if (c.temperature != 1) z = scaled_copy(f, c.in[0], count, c.temperature);
    void* src = c.temperature != 1 ? z.data() : const_cast<void*>(c.in[0]);  // never written
    const dnnl::memory::desc md = tensor(f, c.rows, c.cols);
    dnnl::memory src_mem(md, cpu_engine(), src), dst_mem(md, cpu_engine(), c.out[0]),
        diff_dst_mem(md, cpu_engine(), const_cast<void*>(c.in[1])), diff_src_mem(md, cpu_engine(), c.out[1]);
    dnnl::stream stream(cpu_engine());
    p.forward.execute(stream, {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_DST, dst_mem}});
    p.backward.execute(stream,
                       {{DNNL_ARG_DST, dst_mem}, {DNNL_ARG_DIFF_DST, diff_dst_mem}, {DNNL_ARG_DIFF_SRC, diff_src_mem}});
    stream.wait();
  } catch (const dnnl::error& e) {
    throw KernelFailure(who + ": oneDNN error: " + e.what());
  }
}

// Runs the kernel when oneDNN implements both forward ops in this format on
// this CPU; the backward ops where it implements them too (else they are
// dropped from the kernel's list, and its description says so).
void attach_library(Kernel& k) {
  std::string impl;
  for (Op op : onednn_ops) {
    const std::string missing = library_version() + " has no " + std::string(name(k.format)) + " " +
                                std::string(name(op)) + " on this CPU";
    try {
      const auto pd = primitive_for(k.format, op, 4, 64);
      if (!pd) return mark_unavailable(k, missing);
      impl = pd.impl_info_str();
    } catch (const dnnl::error& e) {
      return mark_unavailable(k, missing + " (" + e.what() + ")");
    }
  }
  k.description = library_version() + " (" + impl + "): " + k.description;
  for (Op op : onednn_backward_ops) {
    bool offered = false;
    try {
      offered = static_cast<bool>(backward_for(k.format, op, 4, 64));
    } catch (const dnnl::error&) {
    }
    if (!offered) {
      std::erase_if(k.ops, [op](const OpDecl& d) { return d.op == op; });
      k.description += "; no " + std::string(name(op)) + " in " + std::string(name(k.format)) + " on this CPU";
    }
  }
  k.compute = [name = k.name, f = k.format](const OpCall& c) {
    switch (c.op) {
      case Op::softmax:
      case Op::log_softmax: return run_onednn(name, f, c.op, c.in[0], c.out[0], c.rows, c.cols, c.temperature);
      case Op::softmax_backward:
      case Op::log_softmax_backward: return run_onednn_backward(name, f, c);
      default: throw std::invalid_argument(name + ": unknown op");
    }
  };
}

#else

void attach_library(Kernel& k) {
  mark_unavailable(k, "oneDNN not found at build time (libdnnl-dev, see scripts/bootstrap.sh)");
}

#endif

}  // namespace

std::vector<Kernel> onednn_kernels() {
  std::vector<Kernel> out;
  for (Format f : onednn_formats) {
    Kernel k = describe_onednn(f);
    attach_library(k);
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace softcheck::peers
