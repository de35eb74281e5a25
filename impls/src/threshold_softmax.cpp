// threshold_softmax: entries whose softmax probability is below a threshold
// theta are set to 0 and the rest renormalised (docs/sparse.md). An entry
// exactly at theta is kept; when none reaches it (only possible for theta >
// 1/n) the row's maxima are kept. Shifted form (shifted.cpp):
//   a = max z;  e_i = exp(z_i - a);  S = sum e;  keep_i = e_i / S >= theta;
//   y_i = keep_i ? e_i / sum_{kept} e : 0     (renormalised from e, not from y).
#include <cstdio>
#include <string>

#include "sparse_util.hpp"

namespace softcheck::kernels {
namespace {

template <class T>
void threshold_core(double threshold, std::span<T> z) {
  const T a = reduce_max<T>(z);
  if (zero_if_fully_masked(z, a)) return;
  const T theta = static_cast<T>(threshold);
  std::vector<bool> keep(z.size()), is_max(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) is_max[i] = z[i] == a;  // before exp: exp(z - a) may round to 1
  exp_shifted(z, a);
  const T total = sum<T>(z);
  bool any = false;
  for (std::size_t i = 0; i < z.size(); ++i) {
    keep[i] = z[i] / total >= theta;
    any = any || keep[i];
  }
  if (!any)
    keep = is_max;
  T kept = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    if (!keep[i]) z[i] = T(0);
    kept += z[i];
  }
  divide_by(z, kept);
}

// No componentwise contract: an entry whose probability is within the
// computed softmax's error of theta can be kept or dropped either way, which
// moves every other output by up to theta relative. On rows where the kept set
// equals the oracle's, the shifted softmax's n + 2.04 + 2R (temperature 4uM)
// holds for the kept entries (docs/sparse.md).
Contract threshold_contract() {
  return no_contract(
      "an entry within the softmax's error of theta may be kept or dropped, moving the "
      "others by up to theta relative; with the oracle's kept set: shifted's "
      "n + 2.04 + 2R (docs/sparse.md)");
}

std::string theta_label(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", t);
  std::string s = buf;
  for (char& c : s)
    if (c == '.') c = 'p';
  return s;
}

}  // namespace

KernelFamily threshold_softmax_family(double threshold) {
  if (!(threshold >= 0 && threshold <= 1))
    throw std::invalid_argument("threshold_softmax: threshold must be in [0, 1], got " + theta_label(threshold));
  OpDecl decl{Op::threshold_softmax, threshold_contract()};
  decl.params.threshold = threshold;
  return {
      .algorithm = "threshold_softmax_t" + theta_label(threshold),
      .description = "softmax with probabilities below " + theta_label(threshold) +
                     " set to 0 and the rest renormalised",
      .masked_policy = MaskedRowPolicy::zeros,
      .ops = {decl},
      .f32 = [threshold](Op, std::span<float> z) { threshold_core<float>(threshold, z); },
      .f64 = [threshold](Op, std::span<double> z) { threshold_core<double>(threshold, z); },
  };
}

}  // namespace softcheck::kernels
