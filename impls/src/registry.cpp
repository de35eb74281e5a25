// The registry of built-in kernels: one line per family, both formats.
#include <algorithm>
#include <string>

#include "attention.hpp"
#include "attention_alternatives.hpp"
#include "attention_twin.hpp"
#include "backward_simd.hpp"
#include "cross_entropy_simd.hpp"
#include "exp_lab_softmax.hpp"
#include "kernel_util.hpp"
#include "shifted_log1p_simd.hpp"
#include "lowp.hpp"
#include "peer_util.hpp"
#include "simd_softmax.hpp"
#include "softcheck/peers.hpp"
#include "tiled_online.hpp"

namespace softcheck {

namespace {

// NAME_f32 then NAME_f64 from one templated family.
void register_both_formats(std::vector<Kernel>& out, const kernels::KernelFamily& f) {
  out.push_back(kernels::make_kernel<float>(f));
  out.push_back(kernels::make_kernel<double>(f));
}

const Kernel* find_in(const std::vector<Kernel>& ks, std::string_view name) {
  const auto it = std::find_if(ks.begin(), ks.end(), [&](const Kernel& k) { return k.name == name; });
  return it == ks.end() ? nullptr : &*it;
}

}  // namespace

const std::vector<Kernel>& builtin_kernels() {
  static const std::vector<Kernel> registry = [] {
    std::vector<Kernel> k;
    register_both_formats(k, kernels::naive_family());
    register_both_formats(k, kernels::shifted_family());
    register_both_formats(k, kernels::shifted_log1p_family());
    register_both_formats(k, kernels::lse_alt_family());
    register_both_formats(k, kernels::online_family());
    for (Kernel& x : kernels::simd_kernels()) k.push_back(std::move(x));  // vectorised f32, polynomial exp
    k.push_back(kernels::shifted_log1p_simd_kernel());                      // the same exp, shifted_log1p's forms
    for (Kernel& x : kernels::exp_lab_softmax_kernels()) k.push_back(std::move(x));  // the exp lab's exps, f32
    for (Kernel& x : kernels::lowp_kernels()) k.push_back(std::move(x));  // f16 / bf16
    for (Kernel& x : kernels::tiled_online_kernels()) k.push_back(std::move(x));  // host twins
    for (Kernel& x : kernels::cuda_kernels()) k.push_back(std::move(x));  // available or not
    return k;
  }();
  return registry;
}

// Sparse kernels (docs/sparse.md). entmax_bisect at several iteration counts
// so that the report shows the error against iterations (f32 needs about 24
// halvings for tau to u, f64 about 53: REFERENCE.md, "Entmax family").
const std::vector<Kernel>& sparse_kernels() {
  static const std::vector<Kernel> registry = [] {
    std::vector<Kernel> k;
    register_both_formats(k, kernels::sparsemax_family());
    register_both_formats(k, kernels::entmax15_family());
    for (int iterations : {10, 20, 30, 60})
      register_both_formats(k, kernels::entmax_bisect_family(1.5, iterations));
    register_both_formats(k, kernels::entmax_bisect_family(1.25, 60));
    register_both_formats(k, kernels::entmax_bisect_family(2.0, 60));
    register_both_formats(k, kernels::topk_softmax_family(8));
    register_both_formats(k, kernels::threshold_softmax_family(0.01));
    // f16 / bf16 in and out, everything in f32 (make_kernel16, lowp.hpp), each
    // output rounded once: the f32 kernels' cores, so no new algorithm. Their
    // contracts stay "none" (top-k included: its f32 ULP contract is not
    // re-derived for the 16-bit rounding); the absolute bounds of
    // sparse_bounds.hpp hold with the 16-bit u (the f32 error plus one
    // rounding of a value <= 1 is below them).
    for (Format storage : {Format::f16, Format::bf16})
      for (const kernels::KernelFamily& f : {kernels::sparsemax_family(), kernels::entmax15_family(),
                                       kernels::entmax_bisect_family(1.5, 30), kernels::topk_softmax_family(8),
                                       kernels::threshold_softmax_family(0.01)}) {
        std::vector<OpDecl> ops = f.ops;
        for (OpDecl& d : ops)
          if (d.contract.declared) {
            d.contract = Contract{};
            d.contract.why = "none for 16-bit storage (the f32 contract is not re-derived for the final rounding); "
                             "absolute bound: docs/sparse.md";
          }
        const std::string fmt(name(storage));
        k.push_back(kernels::make_kernel16<float>(fmt + "_" + f.algorithm + "_f32acc", f.algorithm, storage,
                                                  f.description + "; " + fmt + " in/out, f32 inside",
                                                  f.masked_policy, std::move(ops), f.f32));
      }
    return k;
  }();
  return registry;
}

const Kernel* find_sparse_kernel(std::string_view name) { return find_in(sparse_kernels(), name); }

const std::vector<Kernel>& gradient_kernels() {
  static const std::vector<Kernel> registry = [] {
    std::vector<Kernel> k = kernels::cross_entropy_kernels();
    for (Kernel& b : kernels::backward_kernels()) k.push_back(std::move(b));
    k.push_back(kernels::cross_entropy_simd_kernel());
    for (Kernel& b : kernels::backward_simd_kernels()) k.push_back(std::move(b));
    return k;
  }();
  return registry;
}

const std::vector<Kernel>& attention_kernels() {
  static const std::vector<Kernel> registry = [] {
    std::vector<Kernel> k = kernels::make_attention_kernels();
    for (Kernel& a : kernels::make_attention_alternative_kernels()) k.push_back(std::move(a));
    for (Kernel& x : kernels::attention_twin_kernels()) k.push_back(std::move(x));  // host twin of the CUDA kernel
    for (Kernel& x : kernels::cuda_attention_kernels()) k.push_back(std::move(x));  // available or not
    for (Kernel& m : kernels::make_attention_mutants()) k.push_back(std::move(m));
    for (Kernel& m : kernels::make_attention_alternative_mutants()) k.push_back(std::move(m));
    return k;
  }();
  return registry;
}

const std::vector<Kernel>& quantised_kernels() {
  static const std::vector<Kernel> registry = [] {
    std::vector<Kernel> k = kernels::quantised_softmax_kernels();
    for (Kernel& m : kernels::mx_input_softmax_kernels()) k.push_back(std::move(m));
    return k;
  }();
  return registry;
}

StableReference stable_attention_reference(Op op, Format f, std::size_t output) {
  const Kernel* k = find_in(attention_kernels(), std::string(name(op)) + "_naive_" + std::string(name(f)));
  if (k == nullptr || !k->available || k->test_only) return {};
  const OpDecl* d = k->find(op);
  return d != nullptr && output < spec(op).out.size() ? StableReference{k, d, output} : StableReference{};
}

// Other libraries' kernels (peer_*.cpp), listed whether or not they were built in.
const std::vector<Kernel>& peer_kernels() {
  static const std::vector<Kernel> registry = [] {
    std::vector<Kernel> k = peers::onednn_kernels();
    for (Kernel& x : peers::xnnpack_kernels()) k.push_back(std::move(x));
    for (Kernel& x : peers::torch_kernels()) k.push_back(std::move(x));
    return k;
  }();
  return registry;
}

StableReference stable_reference_kernel(Format f, OutputKind kind, const OpParams& params) {
  std::vector<std::string_view> candidates;
  switch (f) {
    case Format::f32: candidates = {"shifted_f32", "shifted_log1p_f32"}; break;
    case Format::f64: candidates = {"shifted_f64", "shifted_log1p_f64"}; break;
    case Format::f16: candidates = {"f16_shifted_f32acc"}; break;
    case Format::bf16: candidates = {"bf16_shifted_f32acc"}; break;
    case Format::e4m3:
    case Format::e4m3_div256: break;  // a result format: no stable kernel stores it
  }
  for (std::string_view name : candidates)
    if (const Kernel* k = find_in(builtin_kernels(), name); k != nullptr && k->available)
      for (const OpDecl& d : k->ops)
        if (!spec(d.op).several_outputs() && !is_sparse(d.op) && spec(d.op).out[0].kind == kind) return {k, &d};
  // Gradients: the gradient kernels of the same format and parameter (label
  // smoothing), any output.
  const std::string fmt(name(f)), ls = kernels::smoothing_label(params.label_smoothing);
  for (const std::string& n : {"cross_entropy" + ls + "_" + fmt, fmt + "_cross_entropy" + ls + "_f32acc",
                               "softmax_backward_" + fmt,
                               fmt + "_softmax_backward_f32acc", "log_softmax_backward_" + fmt,
                               fmt + "_log_softmax_backward_f32acc"})
    if (const Kernel* k = find_in(gradient_kernels(), n); k != nullptr && k->available && k->format == f)
      for (const OpDecl& d : k->ops)
        for (std::size_t o = 0; o < spec(d.op).out.size() && d.params == params; ++o)
          if (is_gradient(kind) || kind == OutputKind::cross_entropy_loss)
            if (spec(d.op).out[o].kind == kind) return {k, &d, o};
  return {};
}

const Kernel* find_kernel(std::string_view name) {
  if (const Kernel* k = find_in(builtin_kernels(), name)) return k;
  if (const Kernel* k = find_in(peer_kernels(), name)) return k;
  if (const Kernel* k = find_in(gradient_kernels(), name)) return k;
  if (const Kernel* k = find_in(attention_kernels(), name)) return k;
  if (const Kernel* k = find_in(quantised_kernels(), name)) return k;
  return find_in(mutant_kernels(), name);
}

}  // namespace softcheck
