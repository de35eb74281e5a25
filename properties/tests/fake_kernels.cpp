#include "fake_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.hpp"

namespace softcheck::props::testing {

namespace {

Contract no_contract_for_fakes() {
  Contract c;
  c.why = "test-only fake";
  return c;
}

using Row = std::function<void(Op, std::span<const double>, std::span<double>, double)>;

// Exact enough: long double has 11 more bits than double, so the reference's
// error is ~0.5 ulp plus (n + |z|) 2^-64 relative, inside the contract below.
void reference_row(Op op, std::span<const double> x, std::span<double> y, double t) {
  const std::size_t n = x.size();
  std::vector<long double> z(n);
  for (std::size_t i = 0; i < n; ++i) z[i] = static_cast<long double>(x[i]) / static_cast<long double>(t);
  const std::size_t k = static_cast<std::size_t>(std::max_element(z.begin(), z.end()) - z.begin());
  const long double a = z[k];
  if (a == -std::numeric_limits<long double>::infinity()) {  // fully masked: zeros policy
    std::fill(y.begin(), y.end(), op == Op::softmax ? 0.0 : -INFINITY);
    return;
  }
  long double s = 0;  // sum of the non-max terms
  for (std::size_t i = 0; i < n; ++i)
    if (i != k) s += std::exp(z[i] - a);
  for (std::size_t j = 0; j < n; ++j)
    y[j] = op == Op::softmax ? static_cast<double>(std::exp(z[j] - a) / (1 + s))
                             : static_cast<double>((z[j] - a) - std::log1p(s));
}

Contract reference_contract() {
  Contract c;
  c.declared = true;
  c.a = 2, c.b = 1, c.c = 1, c.d = 1, c.t = 2;
  c.why = "long double evaluation, one final rounding";
  return c;
}

// The declarations every test kernel shares: test-only, zeros policy.
Kernel test_kernel(std::string name, Format f, std::vector<OpDecl> ops) {
  Kernel k;
  k.name = std::move(name);
  k.algorithm = "test_fake";
  k.format = f;
  k.ops = std::move(ops);
  k.masked_policy = MaskedRowPolicy::zeros;
  k.test_only = true;
  return k;
}

Kernel make(std::string name, Row row, Format f = Format::f64) {
  Kernel k = test_kernel(std::move(name), f, {{Op::softmax, reference_contract()}, {Op::log_softmax, reference_contract()}});
  k.compute = single_operand([row, f](Op op, const void* xv, void* yv, std::int64_t rows, std::int64_t cols, double t) {
    const auto n = static_cast<std::size_t>(cols);
    std::vector<double> x(n), y(n);
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto base = static_cast<std::size_t>(r) * n;
      for (std::size_t j = 0; j < n; ++j) x[j] = detail::load_value(xv, base + j, f);
      row(op, x, y, round_to_format(t, f));
      for (std::size_t j = 0; j < n; ++j) detail::store_value(yv, base + j, y[j], f);
    }
  });
  return k;
}

// ---- lse and entropy (one output per row) ------------------------------------------------

using ScalarRow = std::function<double(Op, std::span<const double>, double)>;

// lse = a + log1p(s) and H = log1p(s) + sum p_i (a - z_i) in long double (the
// shifted forms: no cancellation), rounded once.
double reference_scalar(Op op, std::span<const double> x, double t) {
  const std::size_t n = x.size();
  std::vector<long double> z(n);
  for (std::size_t i = 0; i < n; ++i) z[i] = static_cast<long double>(x[i]) / static_cast<long double>(t);
  const std::size_t k = static_cast<std::size_t>(std::max_element(z.begin(), z.end()) - z.begin());
  const long double a = z[k];
  if (a == -std::numeric_limits<long double>::infinity()) return op == Op::lse ? -INFINITY : 0.0;  // zeros policy
  long double s = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (i != k) s += std::exp(z[i] - a);
  const long double log_sum = std::log1p(s);
  if (op == Op::lse) return static_cast<double>(a + log_sum);
  long double gap = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (i != k && std::isfinite(z[i])) gap += std::exp(z[i] - a) / (1 + s) * (a - z[i]);
  return static_cast<double>(log_sum + gap);
}

// Units of u (absolute): the final rounding 0.5u|v| with |lse| <= M + log n and
// H <= log n <= n; fl(T) scales z by (1 + u): lse moves by <= uM, H by <= 2uMH
// <= 28uM for n <= 2^20 (t = 56 leaves room).
Contract scalar_reference_contract(Op op) {
  Contract c;
  c.declared = true;
  c.a = 2, c.b = 1, c.c = 1, c.d = 1, c.t = op == Op::lse ? 2 : 56;
  c.why = "long double evaluation, one final rounding";
  return c;
}

Kernel make_scalar(std::string name, ScalarRow value, Format f = Format::f64) {
  Kernel k = test_kernel(std::move(name), f,
                         {{Op::lse, scalar_reference_contract(Op::lse)}, {Op::entropy, scalar_reference_contract(Op::entropy)}});
  k.compute = single_operand([value, f](Op op, const void* xv, void* outv, std::int64_t rows, std::int64_t cols, double t) {
    const auto n = static_cast<std::size_t>(cols);
    std::vector<double> x(n);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::size_t j = 0; j < n; ++j) x[j] = detail::load_value(xv, static_cast<std::size_t>(r) * n + j, f);
      detail::store_value(outv, static_cast<std::size_t>(r), value(op, x, round_to_format(t, f)), f);
    }
  });
  return k;
}

// ---- softmax_lse (a row and one value per row) ------------------------------------

// The reference row's softmax and the reference lse, the lse then passed
// through `lse_post` (the identity for the reference).
Kernel make_fused(std::string name, std::function<double(double)> lse_post, Format f = Format::f64) {
  Kernel k = test_kernel(std::move(name), f,
                         {{.op = Op::softmax_lse,
                           .contract = reference_contract(),
                           .further_contracts = {scalar_reference_contract(Op::lse)}}});
  k.compute = [lse_post, f](const OpCall& c) {
    const auto n = static_cast<std::size_t>(c.cols);
    std::vector<double> x(n), y(n);
    for (std::int64_t r = 0; r < c.rows; ++r) {
      const auto base = static_cast<std::size_t>(r) * n;
      for (std::size_t j = 0; j < n; ++j) x[j] = detail::load_value(c.in[0], base + j, f);
      const double t = round_to_format(c.temperature, f);
      reference_row(Op::softmax, x, y, t);
      for (std::size_t j = 0; j < n; ++j) detail::store_value(c.out[0], base + j, y[j], f);
      detail::store_value(c.out[1], static_cast<std::size_t>(r), lse_post(reference_scalar(Op::lse, x, t)), f);
    }
  };
  return k;
}

// A kernel declaring no contract for any op: claims the floor (the exact
// checks and the generic tolerance) and the structural properties only.
Kernel without_contract(Kernel k) {
  for (OpDecl& d : k.ops) d.contract = no_contract_for_fakes();
  return k;
}

// The reference scalar with its result post-processed.
ScalarRow scalar_after(std::function<double(double, std::span<const double>)> post) {
  return [post](Op op, std::span<const double> x, double t) { return post(reference_scalar(op, x, t), x); };
}

// The reference scalar on a pre-processed row (j: the entry's position).
ScalarRow scalar_before(std::function<double(double, std::size_t)> pre) {
  return [pre](Op op, std::span<const double> x, double t) {
    std::vector<double> x2(x.begin(), x.end());
    for (std::size_t j = 0; j < x2.size(); ++j) x2[j] = pre(x2[j], j);
    return reference_scalar(op, x2, t);
  };
}

// Post-processes the reference's output.
Row after(std::function<void(Op, std::span<const double>, std::span<double>)> post) {
  return [post](Op op, std::span<const double> x, std::span<double> y, double t) {
    reference_row(op, x, y, t);
    post(op, x, y);
  };
}

// Pre-processes the input (and the temperature) of the reference.
Row before(std::function<double(double)> pre, bool invert_temperature = false) {
  return [pre, invert_temperature](Op op, std::span<const double> x, std::span<double> y, double t) {
    std::vector<double> x2(x.begin(), x.end());
    for (double& v : x2) v = pre(v);
    reference_row(op, x2, y, invert_temperature ? 1 / t : t);
  };
}

void naive_row(Op op, std::span<const double> x, std::span<double> y, double t) {
  double s = 0;
  for (double v : x) s += std::exp(v / t);
  for (std::size_t j = 0; j < x.size(); ++j)
    y[j] = op == Op::softmax ? std::exp(x[j] / t) / s : x[j] / t - std::log(s);
}

// Shifts every row of the batch by the batch's maximum (a shared reduction).
Kernel batch_shared_max() {
  Kernel k = make("fake_batch_shared_max", nullptr);
  k.compute = single_operand([](Op op, const void* xv, void* yv, std::int64_t rows, std::int64_t cols, double t) {
    const auto* x = static_cast<const double*>(xv);
    auto* y = static_cast<double*>(yv);
    const auto total = static_cast<std::size_t>(rows * cols);
    double a = -INFINITY;
    for (std::size_t i = 0; i < total; ++i)
      if (!std::isnan(x[i])) a = std::max(a, x[i] / t);
    for (std::int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (std::int64_t j = 0; j < cols; ++j) s += std::exp(x[r * cols + j] / t - a);
      for (std::int64_t j = 0; j < cols; ++j) {
        const double z = x[r * cols + j] / t - a;
        y[r * cols + j] = op == Op::softmax ? std::exp(z) / s : z - std::log(s);
      }
    }
  });
  return k;
}

// A wrong sparse kernel: the registered `base` (docs/sparse.md) with its input
// mapped by `pre` and each output row post-processed by `post`; `decl`
// replaces the base's declaration when given (the base still runs its own op).
Kernel sparse_fake(const std::string& fake_name, const char* base, std::function<double(double)> pre,
                   std::function<void(std::span<double>)> post, const OpDecl* decl = nullptr) {
  const Kernel* b = find_sparse_kernel(base);
  if (b == nullptr) throw std::logic_error(std::string("no sparse kernel ") + base);
  Kernel k = *b;
  k.name = fake_name;
  k.test_only = true;
  if (decl != nullptr) {
    k.ops = {*decl};
    k.algorithm = "entmax_bisect_a2_i60";  // sparse_abs_bound reads K = 60 from it
  }
  const Op base_op = b->ops.at(0).op;
  k.compute = single_operand([b, base_op, pre, post](Op, const void* xv, void* yv, std::int64_t rows, std::int64_t cols, double t) {
    const auto* x = static_cast<const double*>(xv);
    std::vector<double> x2(x, x + rows * cols);
    if (pre)
      for (double& v : x2) v = pre(v);
    b->run(base_op, x2.data(), yv, rows, cols, t);
    auto* y = static_cast<double*>(yv);
    if (post)
      for (std::int64_t r = 0; r < rows; ++r) post({y + r * cols, static_cast<std::size_t>(cols)});
  });
  return k;
}

// A gradient kernel of gradient_kernels() (f64) with its inputs or outputs
// changed, claiming the base kernel's contracts. `pre` may rewrite the logits
// of each row; `post` sees each row's logits, upstream gradient (empty for
// cross_entropy), target (ignore_index without one) and every output row
// (the loss: a one-entry span).
using GradientPost = std::function<void(std::span<const double> x, std::span<const double> g, std::int64_t target,
                                        std::vector<std::span<double>> outs)>;
Kernel gradient_fake(const char* fake_name, const char* base, std::function<void(std::span<double>)> pre,
                     GradientPost post) {
  const Kernel* b = find_kernel(base);
  if (b == nullptr || b->format != Format::f64) throw std::logic_error(std::string("no f64 gradient kernel ") + base);
  Kernel k = *b;
  k.name = fake_name;
  k.test_only = true;
  k.compute = [b, pre, post](const OpCall& c) {
    const auto n = static_cast<std::size_t>(c.cols), rows = static_cast<std::size_t>(c.rows);
    std::vector<double> x(static_cast<const double*>(c.in[0]), static_cast<const double*>(c.in[0]) + rows * n);
    if (pre)
      for (std::size_t r = 0; r < rows; ++r) pre({x.data() + r * n, n});
    std::vector<const void*> in(c.in.begin(), c.in.end());
    in[0] = x.data();
    b->call(OpCall{c.op, in, c.out, c.rows, c.cols, c.temperature});
    if (!post) return;
    const OpSpec& s = spec(c.op);
    for (std::size_t r = 0; r < rows; ++r) {
      std::int64_t target = ignore_index;
      std::span<const double> g;
      for (std::size_t i = 0; i < s.in.size(); ++i) {
        if (s.in[i].input == InputKind::class_index) target = static_cast<const std::int64_t*>(c.in[i])[r];
        if (s.in[i].input == InputKind::upstream_gradient) g = {static_cast<const double*>(c.in[i]) + r * n, n};
      }
      std::vector<std::span<double>> outs;
      for (std::size_t o = 0; o < s.out.size(); ++o) {
        const std::size_t w = s.out[o].shape == OperandShape::scalar ? 1 : n;
        outs.emplace_back(static_cast<double*>(c.out[o]) + r * w, w);
      }
      post({x.data() + r * n, n}, g, target, std::move(outs));
    }
  };
  return k;
}

// An attention kernel of attention_kernels() (f64) with its inputs or
// outputs changed, claiming the base kernel's contracts and masked-row
// policy. `pre` may rewrite each query's bias row x, q, K and V (n x d,
// key-major) before the base kernel runs; `post` sees each query's inputs
// as the base kernel got them and its O (d values) and lse.
using AttentionPre = std::function<void(std::span<double> x, std::span<double> q, std::span<double> K,
                                        std::span<double> V, std::size_t d)>;
using AttentionPost = std::function<void(std::span<const double> x, std::span<const double> V, std::size_t d,
                                         std::span<double> O, double& lse)>;
using WindowPre = std::function<void(KeyWindow& w)>;
Kernel attention_fake(const char* fake_name, const char* base, AttentionPre pre, AttentionPost post,
                      WindowPre window_pre = {}) {
  const Kernel* b = find_kernel(base);
  if (b == nullptr || b->format != Format::f64 || b->find(Op::attention) == nullptr)
    throw std::logic_error(std::string("no f64 attention kernel ") + base);
  Kernel k = *b;
  k.name = fake_name;
  k.test_only = true;
  k.compute = [b, pre, post, window_pre](const OpCall& c) {
    const auto n = static_cast<std::size_t>(c.cols), rows = static_cast<std::size_t>(c.rows);
    const auto d = static_cast<std::size_t>(c.head_dim);
    const auto* given = static_cast<const KeyWindow*>(c.in[4]);
    std::vector<KeyWindow> window(given, given + rows);
    if (window_pre)
      for (KeyWindow& w : window) window_pre(w);
    const auto copy = [](const void* p, std::size_t count) {
      return std::vector<double>(static_cast<const double*>(p), static_cast<const double*>(p) + count);
    };
    std::vector<double> x = copy(c.in[0], rows * n), q = copy(c.in[1], rows * d), K = copy(c.in[2], rows * n * d),
                        V = copy(c.in[3], rows * n * d);
    if (pre)
      for (std::size_t r = 0; r < rows; ++r)
        pre({x.data() + r * n, n}, {q.data() + r * d, d}, {K.data() + r * n * d, n * d},
            {V.data() + r * n * d, n * d}, d);
    const void* const in[] = {x.data(), q.data(), K.data(), V.data(), window.data()};
    b->call(OpCall{c.op, in, c.out, c.rows, c.cols, c.temperature, c.head_dim});
    if (!post) return;
    auto* O = static_cast<double*>(c.out[0]);
    auto* lse = static_cast<double*>(c.out[1]);
    for (std::size_t r = 0; r < rows; ++r)
      post({x.data() + r * n, n}, {V.data() + r * n * d, n * d}, d, {O + r * d, d}, lse[r]);
  };
  return k;
}

// A broken FP8 cast of P: shifted_log1p_f32's f32 row with each p_j passed
// through `cast` instead of rounded to E4M3, claiming softmax_pe4m3_f32's
// contract and quantised outputs, so that the properties stated in the
// output format judge it in E4M3 ULPs.
Kernel quantised_fake(const char* fake_name, double (*cast)(double)) {
  const Kernel* good = find_kernel("softmax_pe4m3_f32");
  const Kernel* core = find_kernel("shifted_log1p_f32");
  if (good == nullptr || core == nullptr) throw std::logic_error("no softmax_pe4m3_f32 or shifted_log1p_f32");
  Kernel k = *good;
  k.name = fake_name;
  k.test_only = true;
  k.compute = [core, cast](const OpCall& c) {
    core->call(c);
    auto* y = static_cast<float*>(c.out[0]);
    for (std::int64_t i = 0; i < c.rows * c.cols; ++i) y[i] = static_cast<float>(cast(y[i]));
  };
  return k;
}

// E4M3's subnormals are m 2^-9 below its smallest normal 2^-6.
constexpr double e4m3_min_normal = 0x1p-6;

std::vector<Fake> make_fakes() {
  using S = std::span<double>;
  using X = std::span<const double>;
  std::vector<Fake> f;
  f.push_back({"sum_to_one", Op::softmax, make("fake_scaled", after([](Op, X, S y) {
                 for (double& v : y) v *= 1 + 0x1p-20;
               }))});
  f.push_back({"accuracy", Op::softmax, make("fake_scaled", after([](Op, X, S y) {
                 for (double& v : y) v *= 1 + 0x1p-20;
               }))});
  f.push_back({"shift_invariance", Op::softmax, make("fake_naive", naive_row)});
  f.push_back({"ordering", Op::softmax, make("fake_index_bias", after([](Op, X, S y) {
                 for (std::size_t j = 0; j < y.size(); ++j) y[j] *= 1 + static_cast<double>(j) * 0x1p-52;
               }))});
  f.push_back({"permutation", Op::softmax, make("fake_odd_positions", after([](Op, X, S y) {
                 for (std::size_t j = 1; j < y.size(); j += 2) y[j] *= 1 + 0x1p-30;
               }))});
  f.push_back({"no_nonfinite", Op::softmax, make("fake_naive", naive_row)});
  f.push_back({"range", Op::softmax, make("fake_one_plus", after([](Op, X, S y) {
                 for (double& v : y)
                   if (v == 1.0) v = std::nextafter(1.0, 2.0);
               }))});
  f.push_back({"underflow", Op::softmax, make("fake_flush", after([](Op, X, S y) {
                 for (double& v : y)
                   if (v < 0x1p-1000) v = 0;
               }))});
  f.push_back({"masked_entries", Op::softmax, make("fake_mask_as_zero", before([](double v) {
                 return v == -INFINITY ? 0.0 : v;
               }))});
  f.push_back({"fully_masked", Op::softmax,
               make("fake_masked_nan", after([](Op, X x, S y) {
                 if (std::all_of(x.begin(), x.end(), [](double v) { return v == -INFINITY; }))
                   std::fill(y.begin(), y.end(), NAN);
               }))});
  f.push_back({"mask_1e9", Op::softmax, make("fake_1e9_is_inf", before([](double v) {
                 return v <= -1e8 ? -INFINITY : v;
               }))});
  f.push_back({"temperature", Op::softmax, make("fake_temperature_multiplied", before([](double v) { return v; }, true))});
  f.push_back({"log_softmax", Op::log_softmax,
               make("fake_log_of_softmax", [](Op op, X x, S y, double t) {
                 reference_row(Op::softmax, x, y, t);
                 if (op == Op::log_softmax)
                   for (double& v : y) v = std::log(v);
               })});
  f.push_back({"batch_independence", Op::softmax, batch_shared_max()});

  // Without a contract: the floor's generic tolerance (docs/properties.md)
  // still catches a dropped tail and errors of 1e6 ULP.
  f.push_back({"sum_to_one", Op::softmax, without_contract(make("fake_nc_drop_tail", after([](Op, X, S y) {
                 for (std::size_t j = 8; j < y.size(); ++j) y[j] = 0;
               })))});
  // Wrong by 2^20 ulps (1e6) times the row's level, its largest finite
  // |x_i|: an exact shift changes the level, so the outputs move.
  const auto level = [](X x) {
    double m = 0;
    for (double v : x)
      if (std::isfinite(v)) m = std::max(m, std::fabs(v));
    return m;
  };
  f.push_back({"shift_invariance", Op::softmax, without_contract(make("fake_nc_level_dependent", after([level](Op, X x, S y) {
                 for (double& v : y) v *= 1 + level(x) * 0x1p-33;
               })))});
  f.push_back({"shift_invariance", Op::log_softmax,
               without_contract(make("fake_nc_level_dependent_log", after([level](Op, X x, S y) {
                 for (double& v : y) v -= level(x) * 0x1p-33;
               })))});
  f.push_back({"permutation", Op::softmax, without_contract(make("fake_nc_odd_positions", after([](Op, X, S y) {
                 for (std::size_t j = 1; j < y.size(); j += 2) y[j] *= 1 + 0x1p-33;  // 2^20 ulps
               })))});
  f.push_back({"permutation", Op::log_softmax, without_contract(make("fake_nc_odd_positions_log", after([](Op, X, S y) {
                 for (std::size_t j = 1; j < y.size(); j += 2) y[j] -= 0x1p-33;  // 2^20 ulps of 1
               })))});

  // Quantised outputs (softmax_pe4m3_f32's contract, in E4M3 ULPs): a cast
  // that flushes E4M3's subnormals to zero loses every P below 2^-6, far
  // more mass than B (2u + n eta) in E4M3's u and eta allows; one that reads
  // a subnormal m 2^-9 as the normal 2^-6 (1 + m/8) puts 7 2^-9 above
  // 1.25 2^-6.
  f.push_back({"sum_to_one", Op::softmax, quantised_fake("fake_pe4m3_ftz", [](double p) {
                 const double q = round_to_format(p, Format::e4m3);
                 return q < e4m3_min_normal ? 0.0 : q;
               })});
  f.push_back({"ordering", Op::softmax, quantised_fake("fake_pe4m3_subnormal_as_normal", [](double p) {
                 const double q = round_to_format(p, Format::e4m3);
                 return q > 0 && q < e4m3_min_normal ? e4m3_min_normal + q : q;
               })});

  // Sparse ops (docs/sparse.md): each wrong in one way.
  const auto scaled = [](S y) {
    for (double& v : y) v *= 1 + 0x1p-20;
  };
  f.push_back({"sparse_accuracy", Op::sparsemax, sparse_fake("fake_sparsemax_scaled", "sparsemax_f64", {}, scaled)});
  f.push_back({"sparse_sum_to_one", Op::sparsemax, sparse_fake("fake_sparsemax_scaled", "sparsemax_f64", {}, scaled)});
  f.push_back({"sparse_range", Op::sparsemax, sparse_fake("fake_sparsemax_negative_zeros", "sparsemax_f64", {}, [](S y) {
                 for (double& v : y)
                   if (v == 0) v = -0x1p-60;
               })});
  f.push_back({"tau_consistency", Op::entmax15, sparse_fake("fake_entmax15_scaled", "entmax15_f64", {}, scaled)});
  OpDecl alpha2{Op::entmax, no_contract_for_fakes()};
  alpha2.params.alpha = 2;
  f.push_back({"entmax_identities", Op::entmax,
               sparse_fake("fake_entmax_a2_is_entmax15", "entmax15_f64", {}, {}, &alpha2)});
  f.push_back({"sparse_shift_invariance", Op::sparsemax,
               sparse_fake("fake_sparsemax_warped", "sparsemax_f64", [](double v) { return v + v * v * 0x1p-8; }, {})});
  f.push_back({"sparse_permutation", Op::sparsemax, sparse_fake("fake_sparsemax_odd_positions", "sparsemax_f64", {}, [](S y) {
                 for (std::size_t j = 1; j < y.size(); j += 2) y[j] *= 1 + 0x1p-20;
               })});
  f.push_back({"sparse_ordering", Op::sparsemax, sparse_fake("fake_sparsemax_index_bias", "sparsemax_f64", {}, [](S y) {
                 for (std::size_t j = 0; j < y.size(); ++j) y[j] += static_cast<double>(j) * 0x1p-40;
               })});
  f.push_back({"sparse_masked_entries", Op::sparsemax,
               sparse_fake("fake_sparsemax_mask_as_zero", "sparsemax_f64", [](double v) { return v == -INFINITY ? 0.0 : v; }, {})});
  f.push_back({"sparse_fully_masked", Op::sparsemax, sparse_fake("fake_sparsemax_masked_uniform", "sparsemax_f64", {}, [](S y) {
                 if (std::all_of(y.begin(), y.end(), [](double v) { return v == 0; }))
                   for (double& v : y) v = 1.0 / static_cast<double>(y.size());
               })});

  // lse and entropy (docs/ops.md): each wrong in one way.
  using XS = std::span<const double>;
  f.push_back({"scalar_shift", Op::entropy,
               make_scalar("fake_entropy_warped", scalar_before([](double v, std::size_t) { return v + v * v * 0x1p-8; }))});
  f.push_back({"scalar_permutation", Op::lse, make_scalar("fake_lse_index_bias", scalar_before([](double v, std::size_t j) {
                 return std::isfinite(v) ? v + static_cast<double>(j) * 0x1p-20 : v;
               }))});
  f.push_back({"scalar_masked_entries", Op::lse,
               make_scalar("fake_lse_mask_as_zero", scalar_before([](double v, std::size_t) { return v == -INFINITY ? 0.0 : v; }))});
  f.push_back({"scalar_fully_masked", Op::entropy, make_scalar("fake_entropy_masked_nan", scalar_after([](double h, XS x) {
                 return std::all_of(x.begin(), x.end(), [](double v) { return v == -INFINITY; }) ? NAN : h;
               }))});
  f.push_back({"lse_bounds", Op::lse, make_scalar("fake_lse_below_max", [](Op, XS x, double t) {
                 double a = -INFINITY;
                 for (double v : x) a = std::max(a, v / t);
                 return a - 0x1p-10;
               })});
  f.push_back({"entropy_range", Op::entropy,
               make_scalar("fake_entropy_negated", scalar_after([](double h, XS) { return -h - 0x1p-30; }))});
  f.push_back({"entropy_uniform", Op::entropy,
               make_scalar("fake_entropy_scaled", scalar_after([](double h, XS) { return h * (1 + 0x1p-20); }))});
  f.push_back({"entropy_cold", Op::entropy,
               make_scalar("fake_entropy_floor", scalar_after([](double h, XS) { return h + 0x1p-20; }))});
  // softmax_lse: a right row next to an lse off by 2^-20 (absolute).
  f.push_back({"accuracy", Op::softmax_lse, make_fused("fake_softmax_lse_off", [](double v) { return v + 0x1p-20; })});
  // Gradient ops (docs/gradients.md).
  using G = std::span<const double>;
  using Outs = std::vector<std::span<double>>;
  // dx = y g: the backward pass without the <y, g> term (its sum is <y, g>,
  // and it moves with g + c).
  const auto leaky = [] {
    return gradient_fake("fake_leaky_softmax_backward", "softmax_backward_f64", {}, [](X, G g, std::int64_t, Outs o) {
      for (std::size_t i = 0; i < g.size(); ++i) o[1][i] = o[0][i] * g[i];
    });
  };
  for (const char* p : {"gradient_accuracy", "gradient_sum_zero", "upstream_shift", "gradient_check"})
    f.push_back({p, Op::softmax_backward, leaky()});
  // Masks clamped to (max - 40): e^-40 leaks into masked entries.
  f.push_back({"gradient_masked_entries", Op::softmax_backward,
               gradient_fake("fake_clamped_mask_softmax_backward", "softmax_backward_f64", [](S x) {
                 double top = -INFINITY;
                 for (double v : x) top = std::max(top, v);
                 if (std::isfinite(top))
                   for (double& v : x)
                     if (v == -INFINITY) v = top - 40;
               }, {})});
  f.push_back({"gradient_fully_masked", Op::softmax_backward,
               gradient_fake("fake_masked_row_nan_softmax_backward", "softmax_backward_f64", {}, [](X x, G, std::int64_t, Outs o) {
                 if (std::all_of(x.begin(), x.end(), [](double v) { return v == -INFINITY; }))
                   for (std::span<double> out : o) std::fill(out.begin(), out.end(), NAN);
               })});
  // The log-likelihood's signs: loss = log p_t <= 0, dx = onehot - p.
  f.push_back({"ce_signs", Op::cross_entropy,
               gradient_fake("fake_log_likelihood_cross_entropy", "cross_entropy_f64", {}, [](X, G, std::int64_t, Outs o) {
                 for (std::span<double> out : o)
                   for (double& v : out) v = -v;
               })});
  // -log(softmax(z)_t), softmax rounded first: u-sized losses where
  // S = sum_{j != t} p_j / p_t is far below u (REFERENCE.md: the loss of a
  // confident prediction).
  f.push_back({"ce_confident", Op::cross_entropy,
               gradient_fake("fake_log_of_softmax_cross_entropy", "cross_entropy_f64", {}, [](X x, G, std::int64_t t, Outs o) {
                 if (t == ignore_index) return;
                 double top = -INFINITY;
                 for (double v : x) top = std::max(top, v);
                 double sum = 0;
                 for (double v : x) sum += std::exp(v - top);
                 o[0][0] = -std::log(std::exp(x[static_cast<std::size_t>(t)] - top) / sum);
               })});
  // Attention (docs/attention.md): FlashAttention-2 in f64 (tiles of 16
  // keys) wrong in one way each.
  using AX = std::span<double>;
  using AO = std::span<double>;
  const auto all_masked = [](X x) { return std::all_of(x.begin(), x.end(), [](double v) { return v == -INFINITY; }); };
  f.push_back({"attention_accuracy", Op::attention,
               attention_fake("fake_attention_scaled_o", "attention_flash_bc16_f64", {},
                              [](X, X, std::size_t, AO O, double&) {
                                for (double& v : O) v *= 1 + 0x1p-20;
                              })});
  // P.V over every key but the last while l sums them all: mass lost.
  f.push_back({"attention_mass", Op::attention,
               attention_fake("fake_attention_drops_last_value", "attention_flash_bc16_f64",
                              [](AX, AX, AX, AX V, std::size_t d) {
                                std::fill(V.end() - static_cast<std::ptrdiff_t>(d), V.end(), 0.0);
                              },
                              {})});
  // A score that depends on the key's position: j 2^-12 added to each bias.
  f.push_back({"attention_key_permutation", Op::attention,
               attention_fake("fake_attention_position_bias", "attention_flash_bc16_f64",
                              [](AX x, AX, AX, AX, std::size_t) {
                                for (std::size_t j = 0; j < x.size(); ++j)
                                  if (std::isfinite(x[j])) x[j] += static_cast<double>(j) * 0x1p-12;
                              },
                              {})});
  // -inf masks replaced by -1e300: the masked keys' scores read K, and
  // 0 x V_j turns a NaN or inf there into NaN.
  // Flash-decoding whose combine turns a fully masked split into NaN (its
  // lse_s = -inf enters exp(lse_s - L) as -inf - -inf): O and lse NaN when
  // one of the four contiguous quarters of the row has no visible key.
  f.push_back({"attention_masked_padding", Op::attention,
               attention_fake("fake_attention_masked_split_nan", "attention_split4_bc64_f64", {},
                              [](X x, X, std::size_t, AO O, double& lse) {
                                const std::size_t n = x.size();
                                for (std::size_t s = 0; s < 4; ++s) {
                                  const auto begin = x.begin() + static_cast<std::ptrdiff_t>(s * n / 4);
                                  const auto end = x.begin() + static_cast<std::ptrdiff_t>((s + 1) * n / 4);
                                  if (begin != end && std::all_of(begin, end, [](double v) { return v == -INFINITY; })) {
                                    std::fill(O.begin(), O.end(), NAN);
                                    lse = NAN;
                                  }
                                }
                              })});
  // The softcap applied after the mask: a masked key's score is
  // c tanh(-inf / c) = -c, not -inf, and its V enters O. Emulated on the
  // capped kernel by giving each masked key K = 0 (cap(0) = 0) and the bias
  // -c (c = 30).
  f.push_back({"attention_softcap_before_mask", Op::attention,
               attention_fake("fake_attention_softcap_after_mask", "attention_flash_bc64_softcap30_f64",
                              [](AX x, AX, AX K, AX, std::size_t d) {
                                for (std::size_t j = 0; j < x.size(); ++j) {
                                  if (x[j] != -INFINITY) continue;
                                  x[j] = -30;
                                  std::fill_n(K.begin() + static_cast<std::ptrdiff_t>(j * d), d, 0.0);
                                }
                              },
                              {})});
  f.push_back({"attention_masked_values", Op::attention,
               attention_fake("fake_attention_reads_masked_keys", "attention_flash_bc16_f64",
                              [](AX x, AX, AX, AX, std::size_t) {
                                for (double& v : x)
                                  if (v == -INFINITY) v = -1e300;
                              },
                              {})});
  f.push_back({"attention_fully_masked", Op::attention,
               attention_fake("fake_attention_masked_row_nan", "attention_flash_bc16_f64", {},
                              [all_masked](X x, X, std::size_t, AO O, double& lse) {
                                if (!all_masked(x)) return;
                                std::fill(O.begin(), O.end(), NAN);
                                lse = NAN;
                              })});
  // (m + log2 l) without the final ln 2: the lse in log2 units.
  f.push_back({"attention_lse_is_softmax_lse", Op::attention,
               attention_fake("fake_attention_lse_log2", "attention_flash_bc16_f64", {},
                              [](X, X, std::size_t, AO, double& lse) { lse *= std::numbers::log2e; })});
  // A causal mask off by one: the query also sees the key after it.
  f.push_back({"attention_window_as_bias", Op::attention,
               attention_fake("fake_attention_causal_sees_next", "attention_flash_bc16_f64", {}, {},
                              [](KeyWindow& w) {
                                if (w.right >= 0) ++w.right;
                              })});
  // A sliding window one key short on the left (w - 1 keys seen of w).
  f.push_back({"attention_causal_full_window", Op::attention,
               attention_fake("fake_attention_window_one_short", "attention_flash_bc16_f64", {}, {},
                              [](KeyWindow& w) {
                                if (w.left >= 1) --w.left;
                              })});
  return f;
}

}  // namespace

const Kernel& fused_reference_kernel(Format f) {
  static const Kernel k64 = make_fused("fused_reference_f64", [](double v) { return v; });
  static const Kernel k32 = make_fused("fused_reference_f32", [](double v) { return v; }, Format::f32);
  return f == Format::f32 ? k32 : k64;
}

const Kernel& scalar_reference_kernel(Format f) {
  static const Kernel k64 = make_scalar("scalar_reference_f64", reference_scalar);
  static const Kernel k32 = make_scalar("scalar_reference_f32", reference_scalar, Format::f32);
  return f == Format::f32 ? k32 : k64;
}

const Kernel& reference_kernel(Format f) {
  static const Kernel k64 = make("reference_f64", reference_row);
  static const Kernel k32 = make("reference_f32", reference_row, Format::f32);
  static const Kernel k16 = make("reference_f16", reference_row, Format::f16);
  static const Kernel kb16 = make("reference_bf16", reference_row, Format::bf16);
  switch (f) {
    case Format::f64: return k64;
    case Format::f32: return k32;
    case Format::f16: return k16;
    case Format::bf16: return kb16;
    case Format::e4m3:
    case Format::e4m3_div256: break;  // a result format: no kernel stores it
  }
  return k64;
}

Kernel uniform_policy_kernel(int off_by) {
  Kernel k = make("fake_uniform_policy", [off_by](Op op, std::span<const double> x, std::span<double> y, double t) {
    if (!std::all_of(x.begin(), x.end(), [](double v) { return v == -INFINITY; })) return reference_row(op, x, y, t);
    const auto n = static_cast<double>(x.size());
    double v = op == Op::softmax ? 1 / n : -std::log(n);
    for (int i = 0; i < off_by; ++i) v = std::nextafter(v, INFINITY);
    std::fill(y.begin(), y.end(), v);
  });
  k.masked_policy = MaskedRowPolicy::uniform;
  return k;
}

const Kernel& no_contract_reference_kernel(Format f) {
  static const Kernel k64 = without_contract(make("no_contract_reference_f64", reference_row));
  static const Kernel k32 = without_contract(make("no_contract_reference_f32", reference_row, Format::f32));
  static const Kernel k16 = without_contract(make("no_contract_reference_f16", reference_row, Format::f16));
  switch (f) {
    case Format::f32: return k32;
    case Format::f16: return k16;
    default: return k64;
  }
}

Kernel identity_kernel(Format f) {
  return make("identity_" + std::string(name(f)), [](Op, std::span<const double> x, std::span<double> y, double) {
    std::copy(x.begin(), x.end(), y.begin());
  }, f);
}

const std::vector<Fake>& fakes() {
  static const std::vector<Fake> all = make_fakes();
  return all;
}

}  // namespace softcheck::props::testing
