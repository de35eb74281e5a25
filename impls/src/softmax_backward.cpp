// Softmax and log-softmax backward passes, end to end from the logits: the
// forward output y and dx given the upstream gradient g (docs/gradients.md).
// The forward is shifted_log1p's core (Blanchard-Higham-Higham's final form,
// REFERENCE.md); the backward, in named steps:
//
//   softmax:      s = <y, g>;   dx_i = y_i (g_i - s)          (PyTorch's
//                 _softmax_backward_data, oneDNN's softmax backward)
//   log-softmax:  G = sum_j g_j;  dx_i = g_i - p_i G, p_i = exp(z_i - a) / (1 + rest)
//                 (p from the forward's normaliser, not exp(y_i): exp of a
//                 log-softmax carries its absolute error |y_i| times)
//
// in the format T ("naive"), or with the sums, differences and products in a
// wider W and one rounding to T at the end ("wide": double for f32, long
// double for f64). Masked-row policy zeros: a fully masked row's forward is
// the constant 0 (softmax) / -inf (log-softmax), whose exact gradient is 0.
#include <limits>

#include "lowp.hpp"
#include "shifted_log1p_core.hpp"

namespace softcheck::kernels {
namespace {

// <y, g> in W, left to right.
template <class W, class T>
W dot(std::span<const T> y, std::span<const T> g) {
  W s = 0;
  for (std::size_t j = 0; j < y.size(); ++j) s += W(y[j]) * W(g[j]);
  return s;
}

// sum_j g_j in W, left to right.
template <class W, class T>
W sum_in(std::span<const T> g) {
  W s = 0;
  for (T v : g) s += W(v);
  return s;
}

// y = softmax(z) in place, then dx_i = y_i (g_i - <y, g>).
template <class T, class W>
void softmax_backward_row(std::span<T> z_y, std::span<const T> g, std::span<T> dx) {
  shifted_log1p_core<T>(Op::softmax, z_y);
  const W s = dot<W, T>(z_y, g);
  for (std::size_t i = 0; i < dx.size(); ++i) dx[i] = static_cast<T>(W(z_y[i]) * (W(g[i]) - s));
}

// dx_i = g_i - p_i sum g from the normaliser of z, then y = log_softmax(z)
// in place. A fully masked row: dx = 0, y = -inf.
template <class T, class W>
void log_softmax_backward_row(std::span<T> z_y, std::span<const T> g, std::span<T> dx) {
  const std::size_t k = index_of_max<T>(z_y);
  const bool masked = z_y[k] == minus_inf<T>;
  const T a = max_or_zero_if_masked(z_y[k]);
  const T rest = sum_exp_shifted_except<T>(z_y, a, k);
  const T d = T(1) + rest;
  const W total = sum_in<W, T>(g);
  for (std::size_t i = 0; i < dx.size(); ++i) {
    const T p = exp_of(z_y[i] - a) / d;
    dx[i] = masked ? T(0) : static_cast<T>(W(g[i]) - W(p) * total);
  }
  log_softmax_shifted(z_y, a, log1p_of(rest));
}

template <class T, class W>
ComputeFn backward_compute(Op op) {
  return [op](const OpCall& c) {
    if (c.op != op) throw std::invalid_argument("backward kernel called for " + std::string(name(c.op)));
    const T* x = static_cast<const T*>(c.in[0]);
    const T* g = static_cast<const T*>(c.in[1]);
    T* y = static_cast<T*>(c.out[0]);
    T* dx = static_cast<T*>(c.out[1]);
    const T temperature = static_cast<T>(c.temperature);
    const auto n = static_cast<std::size_t>(c.cols);
    for (std::int64_t r = 0; r < c.rows; ++r) {
      const std::span<T> y_row(y + r * c.cols, n), dx_row(dx + r * c.cols, n);
      const std::span<const T> g_row(g + r * c.cols, n);
      scale_by_temperature<T>({x + r * c.cols, n}, temperature, y_row);
      if (op == Op::softmax_backward)
        softmax_backward_row<T, W>(y_row, g_row, dx_row);
      else
        log_softmax_backward_row<T, W>(y_row, g_row, dx_row);
    }
  };
}

// ---------------------------------------------------------------- contracts
//
// Scaled metric (docs/gradients.md), first order in u, R and M as in RowShape.
// The forward's y (or p) carries a relative error F u, F = n + 2.04 + 2R
// (+ 4M when T != 1): shifted_log1p's softmax derivation.
//
// softmax, naive: s = sum y_j g_j with the products rounded (u) and n - 1
// additions: |s - <y*, g>| <= (F + n) u sum y|g| (first order, the y errors
// included). g_i - s rounds once: + u (|g_i| + sum y|g|). The product with
// y_i (relative F + 1): |dx_i - dx*_i| <= u y_i ((F + n + 1) sum y|g| + |g_i|
// + (F + 1)(|g_i| + sum y|g|)) <= (2F + n + 2) u s_i, s_i = y_i (|g_i| +
// sum y|g|). K = 3n + 6.08 + 4R + 8M[T != 1].
//
// softmax, wide (W's unit rho u): the backward's n + 3 roundings cost rho
// each, the final rounding to T 1: K = 2F + 1 + (n + 3) rho.
//
// log-softmax, naive: G = sum g with n - 1 additions: (n - 1) u sum|g|;
// p_i G: relative F + 1 on p_i |G|; g_i - p_i G rounds once (u |dx_i| <= u s_i,
// s_i = |g_i| + p_i sum|g|): K = F + n + 1 = 2n + 3.04 + 2R + 4M[T != 1].
//
// log-softmax, wide: K = F + 1 + (n + 1) rho.
//
// Subnormal y_i (or p_i): its absolute error, up to denorm_min / 2, times
// |g_i - s| (or |G|) is at most u s_i / 2, since the metric's scale counts a
// probability at least denorm_min / u (oracle.hpp, exact_backward's
// resolution; docs/gradients.md): inside K's constant, whatever |g| is.

// The unit roundoff of W in units of T's.
template <class T, class W>
double rho() {
  return std::ldexp(1.0, std::numeric_limits<T>::digits - std::numeric_limits<W>::digits);
}

template <class T, class W>
std::vector<OpDecl> backward_declarations(Op op) {
  const bool wide = !std::is_same_v<T, W>;
  const double r = rho<T, W>();
  const KernelFamily forward = shifted_log1p_family();
  const Op forward_op = op == Op::softmax_backward ? Op::softmax : Op::log_softmax;
  Contract y;
  for (const OpDecl& d : forward.ops)
    if (d.op == forward_op) y = d.contract;
  Contract dx;
  if (op == Op::softmax_backward)
    dx = wide ? declared_contract(5.08 + 3 * r, 2 + r, 4, 0, 8,
                                  "2F + 1 + (n + 3) rho, F = n + 2.04 + 2R (+4M) the forward's relative error, "
                                  "rho = u_W / u (docs/gradients.md, softmax_backward.cpp)")
              : declared_contract(6.08, 3, 4, 0, 8,
                                  "2F + n + 2, F = n + 2.04 + 2R (+4M): <y, g> (F + n)u sum y|g|, g - s u, "
                                  "the product with y F + 1 (softmax_backward.cpp)");
  else
    dx = wide ? declared_contract(3.04 + r, 1 + r, 2, 0, 4,
                                  "F + 1 + (n + 1) rho, F = n + 2.04 + 2R (+4M), rho = u_W / u "
                                  "(softmax_backward.cpp)")
              : declared_contract(3.04, 2, 2, 0, 4,
                                  "F + n + 1, F = n + 2.04 + 2R (+4M): sum g (n - 1)u, p G F + 1, the "
                                  "difference u (softmax_backward.cpp)");
  return {{.op = op, .contract = y, .further_contracts = {dx}}};
}

template <class T, class W>
Kernel backward_kernel(Op op, const std::string& algorithm, const std::string& description) {
  Kernel k;
  k.name = algorithm + "_" + std::string(name(format_of<T>()));
  k.algorithm = algorithm;
  k.format = format_of<T>();
  k.ops = backward_declarations<T, W>(op);
  k.masked_policy = MaskedRowPolicy::zeros;
  k.description = description;
  k.compute = backward_compute<T, W>(op);
  return k;
}

// ------------------------------------------------------- 16-bit storage
//
// f16 / bf16 in and out: x and g decode exactly to f32, the wide f32 kernel
// (double inside) runs, and y and dx are each rounded once to the storage
// format. Contracts, u_out the storage format's unit roundoff:
//  - y: the f32 forward's contract rounded once (rounded_once_from_f32, the
//    derivation in lowp_shifted.cpp).
//  - dx: the f32 result obeys |dx32 - v| <= K32 u32 s (the wide f32 contract,
//    scaled metric); rounding it to the storage format adds at most
//    u_out |dx32| <= u_out (|v| + K32 u32 s), and |v| <= s for both backward
//    passes (|y (g - <y, g>)| <= y (|g| + sum y|g|); |g - p sum g| <= |g| +
//    p sum|g|). So |r - v| <= (1 + (1 + u_out) K32 u32 / u_out) u_out s: every
//    coefficient of K32 scaled by 1.01 u32 / u_out, plus 1. The metric's floor
//    and the scale's resolution are the storage format's, no smaller than
//    f32's (docs/gradients.md), so the f32 bound carries over. An exact dx
//    beyond the storage format's range rounds to +-inf, which the judge
//    accepts there (the ULP metric's overflow rule): outside this bound's use.
Contract dx_rounded_once_from_f32(const Contract& f32, Format out) {
  const double r = 1.01 * unit_roundoff(Format::f32) / unit_roundoff(out);
  return declared_contract(1 + f32.a * r, f32.b * r, f32.c * r, f32.d * r, f32.t * r,
                           "the wide f32 dx within K32 u32 s (" + f32.formula() + ") rounded once to " +
                               std::string(name(out)) + ": 1 + 1.01 K32 u32/u_out, |dx| <= s (softmax_backward.cpp)");
}

ComputeFn backward16_compute(Op op, Format storage) {
  const ComputeFn f32 = backward_compute<float, double>(op);
  return [f32, storage](const OpCall& c) {
    const auto count = static_cast<std::size_t>(c.rows * c.cols);
    std::vector<float> x(count), g(count), y(count), dx(count);
    const auto* xs = static_cast<const std::uint16_t*>(c.in[0]);
    const auto* gs = static_cast<const std::uint16_t*>(c.in[1]);
    for (std::size_t i = 0; i < count; ++i) {
      x[i] = static_cast<float>(decode16(xs[i], storage));
      g[i] = static_cast<float>(decode16(gs[i], storage));
    }
    const void* in[] = {x.data(), g.data()};
    void* out[] = {y.data(), dx.data()};
    f32(OpCall{c.op, in, out, c.rows, c.cols, c.temperature});
    auto* ys = static_cast<std::uint16_t*>(c.out[0]);
    auto* dxs = static_cast<std::uint16_t*>(c.out[1]);
    for (std::size_t i = 0; i < count; ++i) {
      ys[i] = encode16(y[i], storage);
      dxs[i] = encode16(dx[i], storage);
    }
  };
}

Kernel backward16_kernel(Op op, Format storage) {
  const std::vector<OpDecl> wide = backward_declarations<float, double>(op);
  OpDecl d{op, rounded_once_from_f32(wide[0].contract, storage)};
  d.further_contracts = {dx_rounded_once_from_f32(wide[0].further_contracts[0], storage)};
  const std::string fmt(name(storage)), algorithm(name(op));
  Kernel k;
  k.name = fmt + "_" + algorithm + "_f32acc";
  k.algorithm = algorithm + "_f32acc";
  k.format = storage;
  k.ops = {std::move(d)};
  k.masked_policy = MaskedRowPolicy::zeros;
  k.description = fmt + " in/out: " + std::string(name(op)) + "_wide_f32 (forward shifted_log1p, backward in double) "
                  "on the decoded rows, y and dx each rounded once to " + fmt;
  k.compute = backward16_compute(op, storage);
  return k;
}

}  // namespace

std::vector<Kernel> backward_kernels() {
  const std::string fwd = "forward shifted_log1p; ";
  const std::string sm = "dx = y (g - <y, g>)", lsm = "dx = g - p sum g with p from the forward's normaliser";
  return {
      backward_kernel<float, float>(Op::softmax_backward, "softmax_backward", fwd + sm + ", all in f32"),
      backward_kernel<double, double>(Op::softmax_backward, "softmax_backward", fwd + sm + ", all in f64"),
      backward_kernel<float, double>(Op::softmax_backward, "softmax_backward_wide", fwd + sm + " in double"),
      backward_kernel<double, long double>(Op::softmax_backward, "softmax_backward_wide",
                                           fwd + sm + " in long double"),
      backward_kernel<float, float>(Op::log_softmax_backward, "log_softmax_backward", fwd + lsm + ", all in f32"),
      backward_kernel<double, double>(Op::log_softmax_backward, "log_softmax_backward", fwd + lsm + ", all in f64"),
      backward_kernel<float, double>(Op::log_softmax_backward, "log_softmax_backward_wide",
                                     fwd + lsm + ", sum and difference in double"),
      backward_kernel<double, long double>(Op::log_softmax_backward, "log_softmax_backward_wide",
                                           fwd + lsm + ", sum and difference in long double"),
      backward16_kernel(Op::softmax_backward, Format::f16),
      backward16_kernel(Op::softmax_backward, Format::bf16),
      backward16_kernel(Op::log_softmax_backward, Format::f16),
      backward16_kernel(Op::log_softmax_backward, Format::bf16),
  };
}

}  // namespace softcheck::kernels
