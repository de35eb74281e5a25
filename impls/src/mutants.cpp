// Deliberately broken kernels for the mutation self-test of the property
// suite (test_only, f32, never in builtin_kernels()). Each one makes a single
// classic mistake and claims the contracts and masked-row policy of the
// correct kernel it mutates, so that a working property suite must flag it.
#include <cmath>

#include "kernel_util.hpp"

namespace softcheck {

namespace {

using kernels::Core;
using kernels::KernelFamily;

// The ops (with the correct kernel's contracts) a mutant claims.
std::vector<OpDecl> claimed(const KernelFamily& original, std::initializer_list<Op> ops) {
  std::vector<OpDecl> out;
  for (Op op : ops)
    for (const OpDecl& d : original.ops)
      if (d.op == op) out.push_back(d);
  return out;
}

Kernel mutant(std::string name, const KernelFamily& original, std::initializer_list<Op> ops,
              std::string description, Core<float> core,
              kernels::ScaleFn<float> scale = &kernels::scale_by_temperature<float>) {
  Kernel k = kernels::make_kernel<float>(std::move(name), "mutant of " + original.algorithm,
                                         std::move(description), original.masked_policy,
                                         claimed(original, ops), std::move(core), scale);
  k.test_only = true;
  return k;
}

// Online rescale with the sign of the exponent flipped: d exp(m_new - m_old).
// Only rows whose running max increases after the first entry notice.
struct RescaleWrongSign {
  float operator()(float d, float m_old, float m_new) const {
    return d == 0.0f ? 0.0f : d * std::exp(m_new - m_old);
  }
};

void online_wrong_rescale_core(Op, std::span<float> zy) {
  kernels::OnlineNormaliser<float, RescaleWrongSign> s;
  for (float z : zy) s.push(z);
  kernels::exp_shifted(zy, s.m);
  kernels::divide_by(zy, s.d);
}

// z = x * T instead of x / T.
void multiply_by_temperature(std::span<const float> x, float temperature, std::span<float> z) {
  for (std::size_t i = 0; i < x.size(); ++i) z[i] = x[i] * temperature;
}

std::vector<Kernel> make_mutants() {
  const KernelFamily shifted = kernels::shifted_family();
  const KernelFamily log1p = kernels::shifted_log1p_family();
  const KernelFamily online = kernels::online_family();
  const KernelFamily naive = kernels::naive_family();
  std::vector<Kernel> out;

  out.push_back(mutant("mutant_no_max_shift", shifted, {Op::softmax},
                       "naive exp(z)/sum exp(z) claiming shifted's contract", naive.f32));

  out.push_back(mutant("mutant_online_wrong_rescale", online, {Op::softmax},
                       "online softmax rescaling d by exp(m_new - m_old) (wrong sign)",
                       online_wrong_rescale_core));

  out.push_back(mutant("mutant_skip_tail", shifted, {Op::softmax, Op::log_softmax},
                       "shifted, but for cols > 8 the last cols % 8 entries are left out of "
                       "max and sum and written as 0",
                       [core = shifted.f32](Op op, std::span<float> zy) {
                         const std::size_t tail = zy.size() > 8 ? zy.size() % 8 : 0;
                         core(op, zy.first(zy.size() - tail));
                         for (float& v : zy.last(tail)) v = 0.0f;
                       }));

  out.push_back(mutant("mutant_temperature_multiplied", shifted,
                       {Op::softmax, Op::log_softmax}, "shifted with z = x * T instead of x / T",
                       shifted.f32, multiply_by_temperature));

  out.push_back(mutant("mutant_log_of_softmax", log1p, {Op::softmax, Op::log_softmax},
                       "shifted_log1p, but log-softmax computed as log(softmax) (underflows "
                       "to -inf, loses the dominant entry)",
                       [core = log1p.f32](Op op, std::span<float> zy) {
                         core(Op::softmax, zy);
                         if (op == Op::log_softmax)
                           for (float& v : zy) v = std::log(v);
                       }));

  out.push_back(mutant("mutant_masked_nan", log1p, {Op::softmax, Op::log_softmax},
                       "shifted_log1p, but a fully masked row gives NaN while claiming "
                       "'zeros'",
                       [core = log1p.f32](Op op, std::span<float> zy) {
                         if (kernels::reduce_max<float>(zy) == kernels::minus_inf<float>)
                           for (float& v : zy) v = std::nanf("");
                         else
                           core(op, zy);
                       }));
  return out;
}

}  // namespace

const std::vector<Kernel>& mutant_kernels() {
  static const std::vector<Kernel> mutants = make_mutants();
  return mutants;
}

}  // namespace softcheck
