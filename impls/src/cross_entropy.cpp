// Cross-entropy kernels: the loss -log softmax(z)_t and its gradient
// softmax(z) - onehot(t) of one row per call row, z = x / temperature
// (docs/gradients.md). Written as named steps like the softmax kernels
// (kernel_util.hpp):
//
//   normaliser   a = max z (at index k), rest = sum_{j != k} exp(z_j - a):
//                the normaliser D = 1 + rest with the max term kept out of the
//                sum (Blanchard-Higham-Higham's final form, REFERENCE.md), so
//                that log D = log1p(rest) keeps its relative accuracy when
//                rest is tiny (a confident prediction);
//   loss         (a - z_t) + log1p(rest): two terms >= 0, no cancellation;
//   gradient     dx_j = exp(z_j - a) / D; at the target p_t - 1, formed as
//                -rest / D when t is the max entry (p_t - 1 would cancel),
//                else p_t - 1 (p_t <= 1/2 there: no cancellation).
//
// The chunked kernel builds (a, rest) per chunk of the row and merges the
// chunks' states ("LSE per chunk, merged": the online merge of REFERENCE.md,
// "Online softmax", in the form that keeps the max term out):
//   (a1, r1) (+) (a2, r2) = (a1, r1 + (1 + r2) exp(a2 - a1)) for a1 >= a2,
// the smaller side's max term joining the rest. Every term is >= 0.
//
// Label smoothing eps (declared per kernel, OpParams::label_smoothing): the
// target q = (1 - eps) onehot(t) + eps / n, and
//   loss         log1p(rest) + sum_j q_j (a - z_j): the smoothed loss
//                -sum_j q_j log p_j = lse - sum_j q_j z_j regrouped into
//                terms >= 0 (no cancellation), the shifts a - z_j taken from
//                x as (x_k - x_j) / T (smoothed_term): a z_j = x_j / T that
//                overflows (x = -DBL_MAX at T = 0.7) has p_j = 0 but a finite
//                share of the loss;
//   gradient     dx_j = p_j - q_j, q_t = (n - eps (n - 1)) / n by one fma.
//
// Masked-row policy zeros (PyTorch's ignore-style behaviour, FlashAttention-4's
// O = 0): a fully masked row, like an ignored one (target ignore_index), gets
// loss 0 and a gradient of 0.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernel_util.hpp"
#include "softcheck/storage.hpp"

namespace softcheck::kernels {
namespace {

// The normaliser of a row: its max a (at index k) and the sum of the other
// terms, D = 1 + rest. a = -inf for a fully masked row (rest 0).
template <class T>
struct Normaliser {
  T a = minus_inf<T>;
  std::size_t k = 0;
  T rest = 0;
};

// Two passes: the max, then the other terms (sum_exp_shifted_except).
template <class T>
Normaliser<T> normaliser(std::span<const T> z) {
  Normaliser<T> s;
  s.a = reduce_max<T>(z);
  s.k = index_of_max<T>(z);
  if (s.a != minus_inf<T>) s.rest = sum_exp_shifted_except<T>(z, s.a, s.k);
  return s;
}

// (a1, r1) (+) (a2, r2): the larger max stays, the other side's max term
// (1) and rest, rescaled by exp(a2 - a1), join the rest. Ties keep s (the
// earlier chunk). Neither side may be fully masked.
template <class T>
Normaliser<T> merge(Normaliser<T> s, Normaliser<T> p) {
  if (p.a > s.a) std::swap(s, p);
  s.rest = s.rest + (T(1) + p.rest) * exp_of(p.a - s.a);
  return s;
}

// Chunk by chunk, merged left to right; fully masked chunks add nothing.
template <class T>
Normaliser<T> normaliser_chunked(std::span<const T> z, std::size_t chunk) {
  Normaliser<T> s;
  for (std::size_t c0 = 0; c0 < z.size(); c0 += chunk) {
    Normaliser<T> p = normaliser<T>(z.subspan(c0, std::min(chunk, z.size() - c0)));
    if (p.a == minus_inf<T>) continue;
    p.k += c0;
    s = s.a == minus_inf<T> ? p : merge(s, p);
  }
  return s;
}

// -log p_t = (a - z_t) + log(1 + rest).
template <class T>
T loss_from(const Normaliser<T>& s, T z_t) {
  return (s.a - z_t) + log1p_of(s.rest);
}

// z -> dx in place: p_j = exp(z_j - a) / D, then the target's p_t - 1.
template <class T>
void gradient_in_place(std::span<T> z_dx, const Normaliser<T>& s, std::size_t t) {
  const T d = T(1) + s.rest;
  for (T& v : z_dx) v = exp_of(v - s.a) / d;
  z_dx[t] = t == s.k ? -(s.rest / d) : z_dx[t] - T(1);
}

// The smoothed target's two values for a row of n entries, each formed in
// double and rounded once to T: eps / n off the target and
// q_t = (n - eps (n - 1)) / n on it (the fma rounds once: no cancellation).
template <class T>
struct SmoothedTarget {
  T off, on;
  SmoothedTarget(double eps, std::size_t n)
      : off(static_cast<T>(eps / static_cast<double>(n))),
        on(static_cast<T>(std::fma(-eps, static_cast<double>(n - 1), static_cast<double>(n)) /
                          static_cast<double>(n))) {}
};

// The smoothed loss log1p(rest) + sum_j q_j (x_k - x_j) / T, every term
// >= 0 (x_k: the maximum, k = s.k), each shift taken so that nothing
// overflows before the term does and nothing subnormal is scaled up:
// d / T then q (d / T); where d / T overflows, (q d) / T; where d = x_k - x_j
// overflows, (q (x_k / 2 - x_j / 2)) / T * 2.
template <class T>
T smoothed_term(T q, T x_k, T x_j, T temperature) {
  const T d = x_k - x_j;
  if (std::isfinite(d)) {
    const T shift = d / temperature;
    return std::isfinite(shift) ? q * shift : (q * d) / temperature;
  }
  return (q * (x_k / 2 - x_j / 2)) / temperature * 2;
}

template <class T>
T smoothed_loss_from(const Normaliser<T>& s, std::span<const T> x, T temperature, std::size_t t, double eps) {
  const SmoothedTarget<T> q(eps, x.size());
  T spread = 0;
  for (std::size_t j = 0; j < x.size(); ++j) spread += smoothed_term(j == t ? q.on : q.off, x[s.k], x[j], temperature);
  return log1p_of(s.rest) + spread;
}

// z -> dx in place: p_j - q_j.
template <class T>
void smoothed_gradient_in_place(std::span<T> z_dx, const Normaliser<T>& s, std::size_t t, double eps) {
  const SmoothedTarget<T> q(eps, z_dx.size());
  const T d = T(1) + s.rest;
  for (std::size_t j = 0; j < z_dx.size(); ++j) z_dx[j] = exp_of(z_dx[j] - s.a) / d - (j == t ? q.on : q.off);
}

// One row: z (scaled logits) in z_dx, the gradient left there, the loss returned.
// x: the row before scaling (the smoothed loss reads it), T the kernel's temperature.
template <class T>
T cross_entropy_row(std::span<const T> x, T temperature, std::span<T> z_dx, std::int64_t target, std::size_t chunk,
                    double eps) {
  const auto zero_row = [&] {
    std::fill(z_dx.begin(), z_dx.end(), T(0));
    return T(0);
  };
  if (target == ignore_index) return zero_row();
  if (target < 0 || target >= static_cast<std::int64_t>(z_dx.size()))
    throw std::invalid_argument("cross_entropy: target " + std::to_string(target) + " outside [0, " +
                                std::to_string(z_dx.size()) + ")");
  const std::span<const T> z(z_dx.data(), z_dx.size());
  const Normaliser<T> s = chunk == 0 ? normaliser<T>(z) : normaliser_chunked<T>(z, chunk);
  if (s.a == minus_inf<T>) return zero_row();  // fully masked: policy zeros
  const auto t = static_cast<std::size_t>(target);
  if (eps > 0) {
    const T loss = smoothed_loss_from(s, x, temperature, t, eps);
    smoothed_gradient_in_place(z_dx, s, t, eps);
    return loss;
  }
  const T loss = loss_from(s, z[t]);
  gradient_in_place(z_dx, s, t);
  return loss;
}

// Storage T (float, double) computed in T.
template <class T>
ComputeFn compute_in(std::size_t chunk, double eps) {
  return [chunk, eps](const OpCall& c) {
    if (c.op != Op::cross_entropy) throw std::invalid_argument("cross-entropy kernel called for " + std::string(name(c.op)));
    const T* x = static_cast<const T*>(c.in[0]);
    const auto* target = static_cast<const std::int64_t*>(c.in[1]);
    T* loss = static_cast<T*>(c.out[0]);
    T* dx = static_cast<T*>(c.out[1]);
    const T temperature = static_cast<T>(c.temperature);
    const auto n = static_cast<std::size_t>(c.cols);
    for (std::int64_t r = 0; r < c.rows; ++r) {
      const std::span<T> row(dx + r * c.cols, n);
      const std::span<const T> x_row(x + r * c.cols, n);
      scale_by_temperature<T>(x_row, temperature, row);
      loss[r] = cross_entropy_row<T>(x_row, temperature, row, target[r], chunk, eps);
    }
  };
}

// 16-bit storage (f16, bf16) computed in f32: each row decoded (exact), the
// f32 kernel, each output rounded once to the storage format.
ComputeFn compute_16_in_f32(Format storage, std::size_t chunk, double eps) {
  return [storage, chunk, eps](const OpCall& c) {
    if (c.op != Op::cross_entropy) throw std::invalid_argument("cross-entropy kernel called for " + std::string(name(c.op)));
    const auto* x = static_cast<const std::uint16_t*>(c.in[0]);
    const auto* target = static_cast<const std::int64_t*>(c.in[1]);
    auto* loss = static_cast<std::uint16_t*>(c.out[0]);
    auto* dx = static_cast<std::uint16_t*>(c.out[1]);
    const auto temperature = static_cast<float>(c.temperature);
    const auto n = static_cast<std::size_t>(c.cols);
    std::vector<float> xs(n), z(n);
    for (std::int64_t r = 0; r < c.rows; ++r) {
      for (std::size_t j = 0; j < n; ++j) {
        xs[j] = static_cast<float>(decode16(x[r * c.cols + j], storage));
        z[j] = xs[j] / temperature;
      }
      loss[r] = encode16(cross_entropy_row<float>(xs, temperature, z, target[r], chunk, eps), storage);
      for (std::size_t j = 0; j < n; ++j) dx[r * c.cols + j] = encode16(z[j], storage);
    }
  };
}

// ---------------------------------------------------------------- contracts
//
// First order in u (the kernel's unit roundoff), on rows with finite entries
// (-inf masks allowed), R and M as in RowShape (kernel.hpp).
//
// Normaliser: each e_j = exp(fl(z_j - a)) carries (1.02 + R)u (the
// subtraction's rounding costs u|z_j - a| <= uR in exp's argument; exp
// 0.51 ulp <= 1.02u, shifted.cpp); rest sums n - 1 of them left to right:
// (n - 2)u plus theirs, (n - 0.98 + R)u relative; D = 1 + rest one more
// rounding: relative error of D <= (n + 0.02 + R)u.
//
// Loss (ULP metric; ulp(v) > u|v| turns a relative bound into ULPs):
//  - a - z_t: one rounding (0 exactly when t is the max entry);
//  - log1p(rest): rest's relative error e moves log1p(rest) by
//    rest e / (1 + rest) <= e log1p(rest) (x / (1 + x) <= log(1 + x)), plus
//    log1pf / log1p's own rounding (< 1 ulp <= 2u): (n + 1.02 + R)u relative;
//  - the sum of the two terms (both >= 0): the larger relative error plus u.
//  K = n + 2.02 + R <= 3 + n + R.
//  - temperature: fl(T) and fl(x / T) give |dz_i| <= 2u|z_i| <= 2uM, which
//    moves the loss by dz_t - sum_i p_i dz_i. When t is the max entry that is
//    sum_{i != t} p_i (dz_t - dz_i) <= 4uM (1 - p_t) <= 4uM loss
//    (-log p >= 1 - p); otherwise p_t <= 1/2, loss >= log 2 and the change
//    <= 4uM <= 5.78uM loss: t = 6.
//
// Gradient (scaled metric: error / (u s_j), s_j = p_j + [j = t]):
//  - p_j = e_j / D: (1.02 + R) + (n + 0.02 + R) + 1 (the division)
//    = n + 2.04 + 2R relative, and s_j = p_j off the target;
//  - at the target, t the max entry: -rest / D: rest's error enters divided
//    by 1 + rest (d(r / (1 + r)) / (r / (1 + r)) = dr / r / (1 + r)), so
//    (n - 0.98 + R) + u (D's rounding) + u (the division) <= n + 1.02 + R,
//    relative to 1 - p_t <= s_t;
//  - at the target otherwise: |dp_t| + u |p_t - 1| <= ((n + 2.04 + 2R) p_t
//    + 1)u <= (n + 3.04 + 2R) u s_t.
//  K = n + 3.04 + 2R <= 4 + n + 2R.
//  - temperature: dp_j / p_j = dz_j - sum_i p_i dz_i, at most 4uM: 4uM s_j.
//  - subnormal p_j: the metric's unit is max(u s_j, denorm_min), and e_j / D
//    (D >= 1) is off by at most the relative part plus one denorm_min: covered.
//
// Chunked (chunk size C, n_c = ceil(n / C) chunks): a chunk's rest carries
// (C - 0.98 + R)u as above. A merge forms 1 + r2 (u), rescales it by
// exp(fl(a2 - a1)) (1.02u, the multiplication u, and u|a2 - a1| from the
// argument's rounding) and adds (u): 4.02u per merge, and when the max grows
// from chunk to chunk the whole accumulated rest is the rescaled side, so
// every merge can cost it that much. The argument terms telescope: the
// maxima only grow, so sum |a2 - a1| <= R. Merged rest: (C - 0.98 + 4.02 n_c
// + 2R)u relative, and with n_c <= n / C + 1 and C < n (one chunk, n <= C,
// is the two-pass normaliser) that is <= ((1 + 4.02 / C) n + 3.04 + 2R)u:
// rest's two-pass error n - 0.98 + R raised by 4.02 + R + (4.02 / C) n,
// declared as 5 + R + (4.02 / C) n. So the two-pass figures plus that:
// loss 8 + (1 + 4.02 / C) n + 2R, gradient 9 + (1 + 4.02 / C) n + 3R.
//
// 16-bit storage, f32 inside (rho = u_f32 / u_16: 2^-13 for f16, 2^-16 for
// bf16): the f32 kernel's error in units of the 16-bit u is rho times its
// contract, plus the final rounding to the storage format (1, relative to
// the value, which is at most s_j for the gradient).

// Label smoothing eps > 0 (q as above, each value formed in double and
// rounded once to T: <= 3u relative; eps >= 2^-64 keeps eps / n normal in
// f32 for any row length the harness runs):
//  - loss: log1p(rest) (n + 1.02 + R)u as above; the spread
//    sum_j q_j (x_k - x_j) / T: each term (smoothed_term) is one subtraction
//    (or the exact halves and one), one division by fl(T), one product and
//    q_j's 3u: 6u, plus fl(T)'s u; n - 1 additions of terms >= 0:
//    (n + 6)u. A term below the normal range loses at most denorm_min / 2
//    absolute and is never scaled up after (the division by T comes first
//    wherever d / T is finite): n denorm_min against a loss >= eps log 2.
//    The final addition of two terms >= 0 u: K = n + 7 + R. Temperature:
//    the spread comes from x, so only log1p(rest) = -log p_k sees
//    fl(x / T)'s 2u|z_i|, moving it by sum_{i != k} p_i (dz_i - dz_k)
//    <= 4uM (1 - p_k) <= 4uM log1p(rest) <= 4uM L. Declared: 9 + n + R,
//    6uM (the unsmoothed kernel's t). (A first form summed q_j (x_k/2 -
//    x_j/2) and multiplied by 2 / T at the end: at T = 2^-126 the
//    subnormal products' absolute errors came back times 2^127, 459 ulp
//    over a bound of 319 on a 256-entry row.)
//  - gradient: p_j - q_j in one subtraction: |dp_j| + |dq_j| + u|p_j - q_j|
//    <= (n + 2.04 + 2R)u p_j + 3u q_j + u s_j <= (n + 3.04 + 2R)u s_j with
//    s_j = p_j + q_j: the two-pass gradient contract as it is, temperature
//    4uM p_j <= 4uM s_j.

// A two-pass bound carried to the chunked kernel (chunk C > 0): rest's error
// raised by the merges' 5 + R + (4.02 / C) n, which enters the loss and the
// gradient once each (see above). chunk 0 keeps the two-pass bound.
Contract with_chunk_merges(Contract two_pass, std::size_t chunk, std::string_view output) {
  if (chunk == 0) return two_pass;
  return declared_contract(two_pass.a + 5, two_pass.b + 4.02 / static_cast<double>(chunk), two_pass.c + 1,
                           two_pass.d, two_pass.t,
                           "the two-pass " + std::string(output) +
                               " bound with rest's error raised by the merges' 5 + R + (4.02 / C) n (C = " +
                               std::to_string(chunk) + "; cross_entropy.cpp)");
}

// chunk 0: the two-pass kernel; else the chunked one with chunks of `chunk`;
// eps > 0: label smoothing.
Contract loss_contract(std::size_t chunk, double eps) {
  const Contract two_pass =
      eps > 0 ? declared_contract(9, 1, 1, 0, 6,
                                  "log1p(rest) + sum_j q_j (x_k - x_j) / T, both >= 0: n + 1.02 + R and n + 6, "
                                  "the sum 1: n + 7 + R; temperature 4uM")
              : declared_contract(3, 1, 1, 0, 6,
                                  "(a - z_t) + log1p(rest), both >= 0: rest (n - 0.98 + R)u relative, log1p's "
                                  "rounding 2u, the sum u: n + 2.02 + R; temperature 6uM");
  return with_chunk_merges(two_pass, chunk, "loss");
}

Contract gradient_contract(std::size_t chunk, double eps) {
  const std::string terms = eps > 0 ? "s_j = p_j + q_j: p_j = e_j / D n + 2.04 + 2R, q_j 3, p_j - q_j one rounding"
                                    : "s_j = p_j + [j = t]: p_j = e_j / D n + 2.04 + 2R, -rest / D at a max "
                                      "target, p_t - 1 otherwise";
  return with_chunk_merges(
      declared_contract(4, 1, 2, 0, 4, "scaled by " + terms + ": n + 3.04 + 2R; temperature 4uM"), chunk,
      "gradient");
}

// A contract of the f32 kernel carried to 16-bit storage: rho times its
// terms plus the final rounding (1).
Contract in_16_bit(const Contract& c32, Format storage) {
  const double rho = unit_roundoff(Format::f32) / unit_roundoff(storage);
  return declared_contract(1 + rho * c32.a, rho * c32.b, rho * c32.c, rho * c32.d, rho * c32.t,
                           "the f32 contract (" + c32.formula() + ") times u_f32 / u_" + std::string(name(storage)) +
                               ", plus the final rounding to " + std::string(name(storage)));
}

// The label smoothing a kernel may declare: 0, or [2^-64, 1] (the
// contracts above need eps / n normal in f32).
double checked_label_smoothing(double eps) {
  if (!(eps == 0 || (eps >= 0x1p-64 && eps <= 1)))
    throw std::invalid_argument("cross_entropy: label smoothing must be 0 or in [2^-64, 1]");
  return eps;
}

std::vector<OpDecl> declarations(std::size_t chunk, double eps = 0) {
  OpDecl d{.op = Op::cross_entropy,
           .contract = loss_contract(chunk, eps),
           .further_contracts = {gradient_contract(chunk, eps)}};
  d.params.label_smoothing = checked_label_smoothing(eps);
  return {d};
}

std::string shortest(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return {buf, r.ptr};
}
std::string smoothing_description(double eps) {
  const std::string e = shortest(eps);
  return eps == 0 ? "" : "; label smoothing " + e + ": against the target (1 - " + e + ") onehot(t) + " + e + " / n";
}

Kernel cross_entropy_kernel(std::string kernel_name, std::string algorithm, Format f, std::string description,
                            std::vector<OpDecl> ops, ComputeFn compute) {
  Kernel k;
  k.name = std::move(kernel_name);
  k.algorithm = std::move(algorithm);
  k.format = f;
  k.ops = std::move(ops);
  k.masked_policy = MaskedRowPolicy::zeros;
  k.description = std::move(description);
  k.compute = std::move(compute);
  return k;
}

// The chunked kernel with chunks of `chunk` entries, computed in T.
template <class T>
Kernel chunked_kernel(std::string kernel_name, std::size_t chunk, double eps = 0) {
  const std::string description = "the row in chunks of " + std::to_string(chunk) +
                                  ": (max, rest) per chunk, merged with the max term kept out; then the fused "
                                  "loss and gradient" + smoothing_description(eps);
  return cross_entropy_kernel(std::move(kernel_name), "cross_entropy_chunked" + smoothing_label(eps), format_of<T>(),
                              description, declarations(chunk, eps), compute_in<T>(chunk, eps));
}

// ---------------------------------------------------------------- careless

// The textbook mistake: loss = -log(softmax(z)_t) with the softmax rounded
// first. When p_t is within u of 1 it rounds to 1 and the loss to 0 while
// the exact loss is ~ rest: an unbounded ULP error on every confident row.
// It claims the fused kernel's contracts, so `run` must flag it.
void careless_rows(const OpCall& c) {
  const auto* x = static_cast<const float*>(c.in[0]);
  const auto* target = static_cast<const std::int64_t*>(c.in[1]);
  auto* loss = static_cast<float*>(c.out[0]);
  auto* dx = static_cast<float*>(c.out[1]);
  const auto n = static_cast<std::size_t>(c.cols);
  const auto temperature = static_cast<float>(c.temperature);
  for (std::int64_t r = 0; r < c.rows; ++r) {
    const std::span<float> row(dx + r * c.cols, n);
    scale_by_temperature<float>({x + r * c.cols, n}, temperature, row);
    if (target[r] == ignore_index || reduce_max<float>(row) == minus_inf<float>) {
      std::fill(row.begin(), row.end(), 0.0f);
      loss[r] = 0;
      continue;
    }
    const float a = reduce_max<float>(row);
    exp_shifted<float>(row, a);
    divide_by<float>(row, sum<float>(row));
    const auto t = static_cast<std::size_t>(target[r]);
    loss[r] = -std::log(row[t]);
    row[t] -= 1.0f;
  }
}

}  // namespace

std::string smoothing_label(double eps) {
  if (eps == 0) return "";
  std::string s = shortest(eps);
  std::replace(s.begin(), s.end(), '.', 'p');  // names are identifiers (test names, JUnit): as threshold_softmax_t0p01
  return "_ls" + s;
}

std::vector<Kernel> cross_entropy_kernels() {
  std::vector<Kernel> k;
  const std::string fused = "two passes over the row (max, then the rest of the sum without the max term), "
                            "loss (a - z_t) + log1p(rest), gradient exp(z - a) / (1 + rest) with p_t - 1 "
                            "formed without cancellation";
  // Label smoothing as in training recipes (0.1, the common choice); each
  // smoothed kernel declares it (OpParams::label_smoothing).
  constexpr double smoothing = 0.1;
  for (double eps : {0.0, smoothing}) {
    const std::string ls = smoothing_label(eps);
    k.push_back(cross_entropy_kernel("cross_entropy" + ls + "_f32", "cross_entropy" + ls, Format::f32,
                                     fused + smoothing_description(eps), declarations(0, eps),
                                     compute_in<float>(0, eps)));
    k.push_back(cross_entropy_kernel("cross_entropy" + ls + "_f64", "cross_entropy" + ls, Format::f64,
                                     fused + smoothing_description(eps), declarations(0, eps),
                                     compute_in<double>(0, eps)));
  }
  // Vocabulary-scale rows (up to 262,144 entries) read in chunks, as a
  // kernel that cannot hold the row does; 1024 entries per chunk.
  constexpr std::size_t chunk = 1024;
  k.push_back(chunked_kernel<float>("cross_entropy_chunked_f32", chunk));
  k.push_back(chunked_kernel<double>("cross_entropy_chunked_f64", chunk));
  // The same merges at a chunk of 16: the fuzzers' rows (up to 256 entries,
  // docs/fuzzing.md) and the quick suite's then go through up to 16 merges
  // (the 1024-entry kernels merge only on rows wider than 1024). Contracts
  // derived for C = 16 by the same with_chunk_merges.
  constexpr std::size_t short_chunk = 16;
  k.push_back(chunked_kernel<float>("cross_entropy_chunked16_f32", short_chunk));
  k.push_back(chunked_kernel<double>("cross_entropy_chunked16_f64", short_chunk));
  k.push_back(chunked_kernel<double>("cross_entropy_chunked16" + smoothing_label(smoothing) + "_f64", short_chunk,
                                     smoothing));
  for (Format storage : {Format::f16, Format::bf16})
    for (double eps : {0.0, smoothing}) {
      if (eps != 0 && storage != Format::bf16) continue;  // one 16-bit smoothed kernel: bf16, training's format
      std::vector<OpDecl> ops = declarations(0, eps);
      ops[0].contract = in_16_bit(ops[0].contract, storage);
      ops[0].further_contracts[0] = in_16_bit(ops[0].further_contracts[0], storage);
      const std::string fmt(name(storage)), ls = smoothing_label(eps);
      k.push_back(cross_entropy_kernel(
          fmt + "_cross_entropy" + ls + "_f32acc", "cross_entropy" + ls, storage,
          fmt + " logits, the f32 kernel inside, loss and gradient rounded once to " + fmt + smoothing_description(eps),
          std::move(ops), compute_16_in_f32(storage, 0, eps)));
    }
  Kernel careless = cross_entropy_kernel(
      "careless_cross_entropy_f32", "mutant of cross_entropy", Format::f32,
      "loss = -log(softmax(z)_t) with the softmax rounded first (the textbook mistake), claiming the fused "
      "kernel's contracts",
      declarations(0), careless_rows);
  careless.test_only = true;
  k.push_back(std::move(careless));
  return k;
}

// The same rows with a chunk of `chunk` entries (tests: merges on short rows).
Kernel cross_entropy_chunked_kernel(std::size_t chunk) {
  return chunked_kernel<double>("cross_entropy_chunked" + std::to_string(chunk) + "_f64", chunk);
}

}  // namespace softcheck::kernels
