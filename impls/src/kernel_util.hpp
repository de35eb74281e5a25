// Private building blocks shared by the CPU kernels (impls/src/*.cpp).
//
// Each kernel is written as a "core" that works in place on one row: it
// receives z = x / temperature in y and leaves the result there. The helpers
// below are the steps the cores are made of, named after the math they do
// (REFERENCE.md, Blanchard-Higham-Higham and Milakov-Gimelshein), in the style
// of FlashAttention's softmax.h: reduce_max, exp_shifted, sum, ...
//
// Every operation is done in the element type T (float or double) with plain
// std::exp / std::log / std::log1p of T, left-to-right recursive summation and
// no FMA contraction (the project compiles with -ffp-contract=off): the error
// bounds in the kernels' contracts assume exactly these roundings. T may also be
// an emulated type whose every operation rounds to f16 (Rounded<F>, lowp.hpp):
// the helpers call exp_of / log_of / log1p_of, which are std:: for float/double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "softcheck/kernel.hpp"

namespace softcheck::kernels {

template <class T>
inline constexpr T minus_inf = -std::numeric_limits<T>::infinity();

// exp, log and log1p of the arithmetic type T: std::exp etc. of float and
// double (bit-identical to calling them directly), and for an emulated type
// such as Rounded<F> (lowp.hpp: every operation rounded to f16) the overloads
// declared next to it, found by argument-dependent lookup.
template <class T>
T exp_of(T v) {
  using std::exp;
  return exp(v);
}
template <class T>
T log_of(T v) {
  using std::log;
  return log(v);
}
template <class T>
T log1p_of(T v) {
  using std::log1p;
  return log1p(v);
}

// ---------------------------------------------------------------- row steps

// z_i = x_i / temperature: one rounding in T (the caller already rounded the
// temperature to T, the second rounding the contracts' t coefficient covers).
// x and z may alias.
template <class T>
void scale_by_temperature(std::span<const T> x, T temperature, std::span<T> z) {
  for (std::size_t i = 0; i < x.size(); ++i) z[i] = x[i] / temperature;
}

// a = max_i z_i; -inf for an all -inf row.
template <class T>
T reduce_max(std::span<const T> z) {
  T a = minus_inf<T>;
  for (T v : z) a = std::max(a, v);
  return a;
}

// k = the first index where z_k = max_i z_i (0 for an all -inf row).
template <class T>
std::size_t index_of_max(std::span<const T> z) {
  std::size_t k = 0;
  for (std::size_t i = 1; i < z.size(); ++i)
    if (z[i] > z[k]) k = i;
  return k;
}

// FlashAttention's rule for fully masked rows (REFERENCE.md, "FlashAttention
// tiling"): when the row max is -inf shift by 0 instead, so that z_i - a is
// -inf - 0 = -inf (exp gives 0) rather than -inf - -inf = NaN.
template <class T>
T max_or_zero_if_masked(T a) {
  return a == minus_inf<T> ? T(0) : a;
}

// v_i <- exp(v_i)
template <class T>
void exp_each(std::span<T> v) {
  for (T& e : v) e = exp_of(e);
}

// Whether two arrays of `count` floats share any element: the kernels whose
// later passes read an input after an earlier pass wrote an output refuse
// such calls (an in-place call would read what they wrote).
inline bool buffers_overlap(const float* p, const float* q, std::size_t count) {
  const auto at = [](const float* f) { return reinterpret_cast<std::uintptr_t>(f); };
  return count > 0 && at(p) < at(q + count) && at(q) < at(p + count);
}

// exp_of as a function object: the default exponential of the steps below.
struct ExpOf {
  template <class T>
  T operator()(T v) const {
    return exp_of(v);
  }
};

// v_i <- exp(v_i - a). `exp` is std::exp of T unless a kernel passes an
// approximate exponential of its own (the exp lab's primitives,
// exp_lab_softmax.cpp): the argument fl(v_i - a) is the same either way.
template <class T, class Exp = ExpOf>
void exp_shifted(std::span<T> v, T a, Exp exp = {}) {
  for (T& e : v) e = exp(e - a);
}

// Sum v_0 + v_1 + ... left to right (recursive summation: error <= (n-1)u).
template <class T>
T sum(std::span<const T> v) {
  T s = 0;
  for (T e : v) s += e;
  return s;
}

// sum_i exp(z_i - a), left to right, without storing the terms.
template <class T>
T sum_exp_shifted(std::span<const T> z, T a) {
  T s = 0;
  for (T v : z) s += exp_of(v - a);
  return s;
}

// s' = sum_{i != k} exp(z_i - a): the shifted sum with the max term (exactly 1)
// left out (Blanchard-Higham-Higham's final form).
template <class T>
T sum_exp_shifted_except(std::span<const T> z, T a, std::size_t k) {
  T s = 0;
  for (std::size_t i = 0; i < z.size(); ++i)
    if (i != k) s += exp_of(z[i] - a);
  return s;
}

// v_i <- v_i / d (a true division per element, not a multiply by 1/d).
template <class T>
void divide_by(std::span<T> v, T d) {
  for (T& e : v) e = e / d;
}

// v_i <- v_i - c
template <class T>
void subtract(std::span<T> v, T c) {
  for (T& e : v) e = e - c;
}

// Log-softmax in shifted form: v_j <- (v_j - a) - log_sum, two roundings.
template <class T>
void log_softmax_shifted(std::span<T> v, T a, T log_sum) {
  for (T& e : v) e = (e - a) - log_sum;
}

// lse = a + log(sum): the shift back of a shifted log-sum-exp. A fully masked
// row has lse = log 0 = -inf (FlashAttention-4's rule, REFERENCE.md
// "Attention rows"), whatever shift the kernel used for it.
template <class T>
T lse_from_shift(T a, T log_sum, bool masked) {
  return masked ? minus_inf<T> : a + log_sum;
}

// sum_i p_i (a - z_i) with p_i = exp(z_i - a) / denom: the mean distance below
// the max, the non-negative part of the entropy H = log(denom) + this
// (every term >= 0, no cancellation). Masked entries (p_i = 0, a - z_i = inf)
// add 0.
template <class T>
T mean_gap_below_max(std::span<const T> z, T a, T denom) {
  T s = 0;
  for (T v : z)
    if (v != minus_inf<T>) s += (exp_of(v - a) / denom) * (a - v);
  return s;
}

// --------------------------------------------------- online normaliser state

// d * exp(m_old - m_new): the running sum d = sum exp(z_i - m_old) re-expressed
// relative to the new max (Milakov & Gimelshein 2018). Nothing accumulated yet
// (d = 0, m_old = -inf) stays 0 without evaluating exp.
struct RescaleToNewMax {
  template <class T>
  T operator()(T d, T m_old, T m_new) const {
    return d == T(0) ? T(0) : d * exp_of(m_old - m_new);
  }
};

// The (m, d) state of the online softmax: m = running max, d = running
// sum of exp(z_i - m). Start (m_0, d_0) = (-inf, 0).
template <class T, class Rescale = RescaleToNewMax>
struct OnlineNormaliser {
  T m = minus_inf<T>;
  T d = 0;

  // m_j = max(m_{j-1}, z_j); d_j = d_{j-1} exp(m_{j-1} - m_j) + exp(z_j - m_j).
  // A masked entry (z_j = -inf) adds exp(-inf - m_j) = 0 and leaves m
  // unchanged, so it is skipped: identical to the formula whenever m is finite,
  // and it avoids -inf - -inf = NaN for masked entries before the first finite
  // one (a row [-inf, 1, 2] is fine). An all -inf row keeps (m, d) = (-inf, 0).
  void push(T z) {
    if (z == minus_inf<T>) return;
    const T m_new = std::max(m, z);
    d = Rescale{}(d, m, m_new) + exp_of(z - m_new);
    m = m_new;
  }
};

// ------------------------------------------------------- contracts, families

inline Contract declared_contract(double a, double b, double c, double d, double t,
                                  std::string why) {
  Contract k;
  k.declared = true;
  k.a = a;
  k.b = b;
  k.c = c;
  k.d = d;
  k.t = t;
  k.why = std::move(why);
  return k;
}

inline Contract no_contract(std::string why) {
  Contract k;
  k.why = std::move(why);
  return k;
}

// A core: z in, result out, in place on one row (ops whose output is a row).
template <class T>
using Core = std::function<void(Op, std::span<T>)>;
// A reduction core: z in (it may be overwritten), the row's one scalar
// output returned (ops whose output is a scalar per row: lse, entropy). For
// an op whose outputs are a row and a scalar (softmax_lse) it leaves the row
// output in z and returns the scalar.
template <class T>
using ReduceCore = std::function<T(Op, std::span<T>)>;
// The first step of every row: x -> z (scale_by_temperature for real kernels).
template <class T>
using ScaleFn = void (*)(std::span<const T>, T, std::span<T>);

// One algorithm, both formats: what registry.cpp turns into NAME_f32/NAME_f64.
struct KernelFamily {
  std::string algorithm;
  std::string description;
  MaskedRowPolicy masked_policy = MaskedRowPolicy::nan;
  std::vector<OpDecl> ops;
  Core<float> f32;
  Core<double> f64;
  ReduceCore<float> reduce_f32 = nullptr;  // set when `ops` has an op with a scalar output
  ReduceCore<double> reduce_f64 = nullptr;
};

// The families (one per kernel file).
KernelFamily naive_family();
KernelFamily shifted_family();
KernelFamily shifted_log1p_family();
KernelFamily lse_alt_family();
KernelFamily online_family();
// Sparse families (docs/sparse.md), parametrised where the op has a parameter.
KernelFamily sparsemax_family();
KernelFamily entmax15_family();
KernelFamily entmax_bisect_family(double alpha, int iterations);
KernelFamily topk_softmax_family(std::int64_t k);
KernelFamily threshold_softmax_family(double threshold);
// The cross-entropy kernels (cross_entropy.cpp; the careless one test_only),
// and the chunked one with another chunk size (tests).
std::vector<Kernel> cross_entropy_kernels();
// "_ls0p1" in the names of the cross-entropy kernels declaring label
// smoothing 0.1 ("cross_entropy_ls0p1_f32"), "" for none.
std::string smoothing_label(double eps);
Kernel cross_entropy_chunked_kernel(std::size_t chunk);
// softmax / log-softmax backward, naive and wide, f32 and f64 (softmax_backward.cpp).
std::vector<Kernel> backward_kernels();

template <class T>
constexpr Format format_of() {
  return std::is_same_v<T, float> ? Format::f32 : Format::f64;
}

// Kernel in format T: compute casts x and the outputs to T*, rounds the
// temperature to T and, for every row, scales x into a row of z (the row
// output itself when the op has one) and runs the core on it in place (an op
// with one row output), or the reduction core (an op with a scalar output,
// after its row output if it has one).
template <class T>
Kernel make_kernel(std::string kernel_name, std::string algorithm, std::string description,
                   MaskedRowPolicy policy, std::vector<OpDecl> ops, Core<T> core,
                   ScaleFn<T> scale = &scale_by_temperature<T>, ReduceCore<T> reduce = nullptr) {
  Kernel k;
  k.name = std::move(kernel_name);
  k.algorithm = std::move(algorithm);
  k.format = format_of<T>();
  k.ops = std::move(ops);
  k.masked_policy = policy;
  k.description = std::move(description);
  std::vector<Op> provided;
  for (const OpDecl& d : k.ops) provided.push_back(d.op);
  k.compute = [core = std::move(core), reduce = std::move(reduce), scale, provided, kname = k.name](const OpCall& c) {
    const Op op = c.op;
    if (std::find(provided.begin(), provided.end(), op) == provided.end())
      throw std::invalid_argument(kname + " does not provide " + std::string(name(op)));
    const OperandList outs = spec(op).out;
    const bool row_out = outs[0].shape == OperandShape::row;
    const bool scalar_out = outs[outs.size() - 1].shape == OperandShape::scalar;
    const T* x = static_cast<const T*>(c.in[0]);
    T* row = row_out ? static_cast<T*>(c.out[0]) : nullptr;
    T* scalar = scalar_out ? static_cast<T*>(c.out[outs.size() - 1]) : nullptr;
    const T t = static_cast<T>(c.temperature);
    const auto n = static_cast<std::size_t>(c.cols);
    std::vector<T> z(row_out ? 0 : n);
    for (std::int64_t r = 0; r < c.rows; ++r) {
      const std::span<const T> x_row(x + r * c.cols, n);
      const std::span<T> z_row = row_out ? std::span<T>(row + r * c.cols, n) : std::span<T>(z);
      scale(x_row, t, z_row);
      if (scalar_out)
        scalar[r] = reduce(op, z_row);
      else
        core(op, z_row);
    }
  };
  return k;
}

// NAME_f32 / NAME_f64 from a family.
template <class T>
Kernel make_kernel(const KernelFamily& f) {
  Core<T> core;
  ReduceCore<T> reduce;
  if constexpr (std::is_same_v<T, float>) {
    core = f.f32;
    reduce = f.reduce_f32;
  } else {
    core = f.f64;
    reduce = f.reduce_f64;
  }
  return make_kernel<T>(f.algorithm + "_" + std::string(name(format_of<T>())), f.algorithm,
                        f.description, f.masked_policy, f.ops, std::move(core), &scale_by_temperature<T>,
                        std::move(reduce));
}

}  // namespace softcheck::kernels
