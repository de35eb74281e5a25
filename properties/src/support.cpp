#include "support.hpp"

#include <algorithm>
#include <numeric>
#include <bit>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "softcheck/input_families.hpp"
#include "softcheck/kernel_failure.hpp"
#include "softcheck/storage.hpp"

namespace softcheck::props::detail {

std::vector<std::size_t> identity(std::size_t n) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), std::size_t{0});
  return v;
}

namespace {

// Storage of the batched interface (kernel.hpp): double for f64, float for f32,
// uint16 bit patterns for f16/bf16 (encode16/decode16 of storage.hpp).

// NaN canaries with a recognisable payload.
constexpr std::uint64_t kCanary64 = 0x7FF800000000C5C5ULL;
constexpr std::uint32_t kCanary32 = 0x7FC0C5C5U;
constexpr std::uint16_t kCanaryF16 = 0x7E5C;
constexpr std::uint16_t kCanaryBF16 = 0x7FDC;

// A kernel reports its own failure with KernelFailure (kernel_failure.hpp: a
// plugin that returned non-zero or crashed in its isolated child): the case
// fails. Any other exception is a harness error and propagates.
void call(const Kernel& k, Op op, const void* x, std::span<void* const> outs, std::int64_t rows, std::int64_t cols,
          double t) {
  try {
    k.run(op, x, outs, rows, cols, t);
  } catch (const KernelFailure& e) {
    throw KernelThrew{e.what()};
  }
}

std::uint16_t encode_f16(double v) { return encode16(v, Format::f16); }
std::uint16_t encode_bf16(double v) { return encode16(v, Format::bf16); }
double decode_f16(std::uint16_t b) { return decode16(b, Format::f16); }
double decode_bf16(std::uint16_t b) { return decode16(b, Format::bf16); }

// The values of input operand `o` in a case: the logits (attention: the
// bias), the upstream gradient, or attention's q, K and V.
const std::vector<double>& case_input(const Case& c, const Operand& o) {
  switch (o.input) {
    case InputKind::upstream_gradient: return c.upstream;
    case InputKind::query: return c.query;
    case InputKind::keys: return c.keys;
    case InputKind::values: return c.values;
    default: return c.row;
  }
}

// Every operand of a one-row call of op, in the kernel's storage: the
// logits, the upstream gradient and attention's q, K, V encoded, the class
// index as int64.
template <class Storage, class Enc, class Dec>
std::vector<std::vector<double>> run_case_as(const Kernel& k, Op op, const Case& c, Storage canary, Enc enc, Dec dec) {
  const auto cols = static_cast<std::int64_t>(c.row.size());
  const std::int64_t head_dim = has_head_dim(op) ? c.head_dim : 0;
  std::vector<std::vector<Storage>> rows_in;
  std::int64_t target = 0;
  std::vector<const void*> in_ptr;
  rows_in.reserve(spec(op).in.size());
  for (const Operand& o : spec(op).in) {
    if (o.input == InputKind::class_index) {
      target = c.target.value_or(ignore_index);
      in_ptr.push_back(&target);
      continue;
    }
    if (o.input == InputKind::key_window) {
      in_ptr.push_back(&c.window);
      continue;
    }
    const std::vector<double>& src = case_input(c, o);
    rows_in.emplace_back(src.size());
    std::transform(src.begin(), src.end(), rows_in.back().begin(), enc);
    in_ptr.push_back(rows_in.back().data());
  }
  std::vector<std::vector<Storage>> out;
  std::vector<void*> out_ptr;
  for (const Operand& o : spec(op).out) {
    out.emplace_back(static_cast<std::size_t>(output_cols(o, cols, head_dim)), canary);
    out_ptr.push_back(out.back().data());
  }
  try {
    k.call(OpCall{op, in_ptr, out_ptr, 1, cols, c.temperature, head_dim});
  } catch (const KernelFailure& e) {
    throw KernelThrew{e.what()};
  }
  std::vector<std::vector<double>> y;
  for (const std::vector<Storage>& o : out) {
    y.emplace_back(o.size());
    std::transform(o.begin(), o.end(), y.back().begin(), dec);
  }
  return y;
}

template <class Storage, class Enc, class Dec>
std::vector<std::vector<double>> run_as(const Kernel& k, Op op, std::span<const double> x, std::int64_t rows,
                                        std::int64_t cols, double t, Storage canary, Enc enc, Dec dec) {
  // Each output operand of the op (op table): rows x cols values, or one per row.
  std::vector<Storage> in(x.size());
  std::transform(x.begin(), x.end(), in.begin(), enc);
  std::vector<std::vector<Storage>> out;
  std::vector<void*> out_ptr;
  for (const Operand& o : spec(op).out) {
    out.emplace_back(static_cast<std::size_t>(rows * output_cols(o, cols)), canary);
    out_ptr.push_back(out.back().data());
  }
  call(k, op, in.data(), out_ptr, rows, cols, t);
  std::vector<std::vector<double>> y;
  for (const std::vector<Storage>& o : out) {
    y.emplace_back(o.size());
    std::transform(o.begin(), o.end(), y.back().begin(), dec);
  }
  return y;
}

}  // namespace

std::vector<double> run_rows(const Kernel& k, Op op, std::span<const double> x, std::int64_t rows,
                             std::int64_t cols, double t) {
  return run_outputs(k, op, x, rows, cols, t).front();
}

std::vector<std::vector<double>> run_outputs(const Kernel& k, Op op, std::span<const double> x, std::int64_t rows,
                                             std::int64_t cols, double t) {
  switch (k.format) {
    case Format::f64:
      return run_as(k, op, x, rows, cols, t, std::bit_cast<double>(kCanary64), [](double v) { return v; },
                    [](double v) { return v; });
    case Format::f32:
      return run_as(k, op, x, rows, cols, t, std::bit_cast<float>(kCanary32),
                    [](double v) { return static_cast<float>(v); }, [](float v) { return static_cast<double>(v); });
    case Format::f16: return run_as(k, op, x, rows, cols, t, kCanaryF16, encode_f16, decode_f16);
    case Format::bf16: return run_as(k, op, x, rows, cols, t, kCanaryBF16, encode_bf16, decode_bf16);
    case Format::e4m3:
    case Format::e4m3_div256: throw_not_a_storage_format(k.format);
  }
  return {};
}

std::vector<std::vector<double>> run_case(const Kernel& k, Op op, const Case& c) {
  switch (k.format) {
    case Format::f64:
      return run_case_as(k, op, c, std::bit_cast<double>(kCanary64), [](double v) { return v; },
                         [](double v) { return v; });
    case Format::f32:
      return run_case_as(k, op, c, std::bit_cast<float>(kCanary32), [](double v) { return static_cast<float>(v); },
                         [](float v) { return static_cast<double>(v); });
    case Format::f16: return run_case_as(k, op, c, kCanaryF16, encode_f16, decode_f16);
    case Format::bf16: return run_case_as(k, op, c, kCanaryBF16, encode_bf16, decode_bf16);
    case Format::e4m3:
    case Format::e4m3_div256: throw_not_a_storage_format(k.format);
  }
  return {};
}

Case inputs_for(Op op, Case c) {
  if (!spec(op).takes(InputKind::class_index)) c.target.reset();
  if (!spec(op).takes(InputKind::upstream_gradient)) c.upstream.clear();
  if (!has_head_dim(op)) {
    c.head_dim = 0;
    c.query.clear();
    c.keys.clear();
    c.values.clear();
    c.window = {};
  }
  return c;
}

namespace {

// Why attention's q, K and V of a case cannot feed op (empty when they can).
std::string attention_inputs_error(const Kernel& k, Op op, const Case& c) {
  const std::string op_name(name(op));
  const bool any = c.head_dim != 0 || !c.query.empty() || !c.keys.empty() || !c.values.empty() || c.window.bounded();
  if (!has_head_dim(op))
    return any ? op_name + " takes no q, K, V or window (--head-dim, --query, --keys, --values, --window)"
               : std::string();
  if (!c.window.valid(static_cast<std::int64_t>(c.row.size())))
    return "the window (--window=" + format_window(c.window) + ") needs a position in [0, n) = [0, " +
           std::to_string(c.row.size()) + ") and bounds in [-1, n]";
  // A bound on d keeps n x d far from overflow; the kernels and the oracle
  // take any d >= 1 below it.
  constexpr std::int64_t max_head_dim = 1 << 16;
  if (c.head_dim < 1 || c.head_dim > max_head_dim)
    return op_name + " needs a head dimension in [1, " + std::to_string(max_head_dim) +
           "] and q, K, V (--head-dim=D --query=... --keys=... --values=...)";
  const auto d = static_cast<std::size_t>(c.head_dim), n = c.row.size();
  if (c.query.size() != d)
    return "the query (--query) has " + std::to_string(c.query.size()) + " values, the head dimension is " +
           std::to_string(d);
  if (c.keys.size() != n * d || c.values.size() != n * d)
    return "K and V need n x d = " + std::to_string(n * d) + " values each (--keys, --values; key-major), got " +
           std::to_string(c.keys.size()) + " and " + std::to_string(c.values.size());
  const std::pair<const char*, const std::vector<double>*> operands[] = {
      {"query", &c.query}, {"keys", &c.keys}, {"values", &c.values}};
  for (const auto& [what, v] : operands)
    for (std::size_t i = 0; i < v->size(); ++i) {
      const double e = (*v)[i];
      if (!std::isnan(e) && round_to_format(e, k.format) != e)
        return std::string(what) + " entry " + std::to_string(i + 1) + " (" + hex(e) +
               ") is not exactly representable in " + std::string(name(k.format));
    }
  return {};
}

}  // namespace

std::string extra_inputs_error(const Kernel& k, Op op, const Case& c) {
  const bool takes_target = spec(op).takes(InputKind::class_index);
  const bool takes_upstream = spec(op).takes(InputKind::upstream_gradient);
  const std::string op_name(name(op));
  if (takes_target && !c.target) return op_name + " needs a class target (--target=N: in [0, n) or " + std::to_string(ignore_index) + ")";
  if (!takes_target && c.target) return op_name + " takes no class target (--target)";
  if (takes_upstream && c.upstream.empty()) return op_name + " needs an upstream gradient (--upstream=G1,G2,...)";
  if (!takes_upstream && !c.upstream.empty()) return op_name + " takes no upstream gradient (--upstream)";
  const auto n = static_cast<std::int64_t>(c.row.size());
  if (c.target && *c.target != ignore_index && (*c.target < 0 || *c.target >= n))
    return "target " + std::to_string(*c.target) + " is outside [0, " + std::to_string(n) + ") and not " +
           std::to_string(ignore_index);
  if (takes_upstream && c.upstream.size() != c.row.size())
    return "the upstream gradient has " + std::to_string(c.upstream.size()) + " entries, the row " +
           std::to_string(c.row.size());
  for (std::size_t i = 0; i < c.upstream.size(); ++i) {
    const double g = c.upstream[i];
    if (!std::isfinite(g)) return "upstream entry " + std::to_string(i + 1) + " is not finite";
    if (round_to_format(g, k.format) != g)
      return "upstream entry " + std::to_string(i + 1) + " (" + hex(g) + ") is not exactly representable in " +
             std::string(name(k.format));
  }
  return attention_inputs_error(k, op, c);
}

double load_value(const void* base, std::size_t i, Format f) {
  switch (f) {
    case Format::f64: return static_cast<const double*>(base)[i];
    case Format::f32: return static_cast<double>(static_cast<const float*>(base)[i]);
    case Format::f16: return decode_f16(static_cast<const std::uint16_t*>(base)[i]);
    case Format::bf16: return decode_bf16(static_cast<const std::uint16_t*>(base)[i]);
    case Format::e4m3:
    case Format::e4m3_div256: throw_not_a_storage_format(f);
  }
  return NAN;
}

void store_value(void* base, std::size_t i, double v, Format f) {
  const double r = round_to_format(v, f);
  switch (f) {
    case Format::f64: static_cast<double*>(base)[i] = r; break;
    case Format::f32: static_cast<float*>(base)[i] = static_cast<float>(r); break;
    case Format::f16: static_cast<std::uint16_t*>(base)[i] = encode_f16(r); break;
    case Format::bf16: static_cast<std::uint16_t*>(base)[i] = encode_bf16(r); break;
    case Format::e4m3:
    case Format::e4m3_div256: throw_not_a_storage_format(f);
  }
}

std::vector<double> run_row(const Kernel& k, Op op, std::span<const double> row, double t) {
  return run_rows(k, op, row, 1, static_cast<std::int64_t>(row.size()), t);
}

bool has_contract(const Kernel& k, Op op) {
  const OpDecl* d = k.find(op);
  return d != nullptr && d->contract.declared;
}

// The stable formulas' first-order errors, in units of u (REFERENCE.md,
// Blanchard-Higham-Higham's table, and the contracts in impls/src):
//   - fl(x_i / fl(T)) moves each z_i by <= 2u|z_i|, so z_j - a by <= 4uM: 4M[T!=1];
//   - fl(z_j - a) errs by u|z_j - a| <= uR, and exp turns that into a relative
//     error uR; the online form rescales by e^(m_old - m_new) too: 3R;
//   - exp itself: 0.502u (glibc) up to ~10u (the SIMD kernels' polynomial), and
//     the final division or subtraction u: 16;
//   - the sum of n terms: (n - 1)u recursively, 3n for the online form;
//   - the lse forms exp(z_j - lse) and z_j - lse: lse carries u|lse| <= u(M + ln n): M.
// So E = 16 + 3n + 3R + M + 4M[T!=1] covers every stable formula, as a
// componentwise bound in ULPs of g_j for softmax (the contracts' shape) and,
// for log-softmax, in ULPs of max(|l_j|, 1): (z_j - a) - log S errs by
// u(|z_j - a| + |l_j|) <= 2u|l_j| from its two roundings plus u(2n + 2R + M) from
// log S, within E u max(|l_j|, 1). The floor allows 4E: an analysis of a kernel
// it does not know must not fail a correct one, and 4E is still far below
// what a wrong kernel misses by (a tail dropped, 1e6 ULP off).
const Contract& floor_tolerance() {
  static const Contract c = [] {
    Contract k;
    k.declared = true;
    k.a = 4 * 16, k.b = 4 * 3, k.c = 4 * 3, k.d = 4 * 1, k.t = 4 * 4;
    k.why = "4 x (16 + 3n + 3R + M + 4M[T!=1]), the envelope of the stable formulas' error analyses";
    return k;
  }();
  return c;
}

bool floor_tolerance_at_one(Op op) { return spec(op).out[0].kind == OutputKind::log_probabilities; }

std::string floor_tolerance_text(Op op) {
  const std::string k =
      floor_tolerance().formula([](double v, std::string_view var) { return num(v) + std::string(var); });
  return "generic tolerance " + k + " ulps" + (floor_tolerance_at_one(op) ? " of max(|l|,1)" : "");
}

double tolerance_ulps(const Kernel& k, Op op, std::span<const double> row, double t) {
  if (has_contract(k, op)) return bound_ulps(k, op, row, t);
  return floor_tolerance().bound_ulps(row_shape(row, t, k.output_format()), k.output_format());
}

bool tolerance_at_one(const Kernel& k, Op op) { return !has_contract(k, op) && floor_tolerance_at_one(op); }

double bound_ulps(const Kernel& k, Op op, std::span<const double> row, double t) {
  const OpDecl* d = k.find(op);
  if (d == nullptr || !d->contract.declared) return INFINITY;
  // In the output format, as `run` judges it (quantised outputs: the result
  // format's shape and ULPs).
  return d->contract.bound_ulps(row_shape(row, t, k.output_format()), k.output_format());
}

double ulp_of(double v, Format f) {
  if (v == 0 || !std::isfinite(v)) return denorm_min(f);
  const FormatInfo fi = info(f);
  const int e = std::min(std::max(std::ilogb(v), fi.emin), fi.emax);
  return std::ldexp(1.0, e - fi.precision + 1);
}

double ulp_of(const oracle::Real& v, Format f) { return oracle::ulp(v, f).convert_to<double>(); }

double ulps_apart(double a, double b, long k) {
  if (std::isnan(a) || std::isnan(b)) return INFINITY;
  if (a == b) return 0;  // also equal infinities
  if (std::isinf(a) || std::isinf(b)) return INFINITY;
  // a - b exact in double (TwoSum's error 0, as for results of one binade):
  // scaling by 2^-k and rounding once is what MPFR's division and conversion do.
  const double s = a - b, bv = s - a, err = (a - (s - bv)) + (-b - bv);
  if (std::isfinite(s) && err == 0) return std::ldexp(std::fabs(s), static_cast<int>(std::clamp(-k, -4000L, 4000L)));
  oracle::Real diff = abs(oracle::Real(a) - oracle::Real(b));
  mpfr_mul_2si(diff.backend().data(), diff.backend().data(), -k, MPFR_RNDN);
  return diff.convert_to<double>();
}

UlpScales exact_ulp_scales(std::span<const double> row, double temperature, Op op, Format f, bool at_one) {
  const auto ex = shared_exact_row(row, temperature);
  UlpScales s;
  s.status = ex->status;
  if (s.status != oracle::RowStatus::ok) return s;
  const std::span<const oracle::Real> values = oracle::exact_values(*ex, spec(op).out[0].kind);
  s.exponent.resize(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const oracle::Real& v = values[i];
    s.exponent[i] = isinf(v)                 ? oracle::ulp_exponent_infinite
                    : at_one && abs(v) < 1 ? oracle::ulp_exponent(oracle::Real(1), f)
                                             : oracle::ulp_exponent(v, f);
  }
  return s;
}

std::shared_ptr<const UlpScales> ulp_scales(std::span<const double> row, double temperature, Op op, Format f,
                                            bool at_one) {
  const OutputKind kind = spec(op).out[0].kind;
  thread_local LongRowMemo<std::tuple<std::uint64_t, OutputKind, Format, bool>, std::shared_ptr<const UlpScales>> memo;
  return memo.get(row, {std::bit_cast<std::uint64_t>(temperature), kind, f, at_one}, [&] {
    // The tier the judge uses for results of f (docs/oracle.md, tier order);
    // storage reused row to row.
    thread_local oracle::DoubleFastRow double_row;
    thread_local oracle::DDFastRow dd_row;
    UlpScales s;
    bool decided = false;
    if (f == Format::f64) {
      oracle::dd_fast_row(row, temperature, dd_row);
      s.status = dd_row.status;  // every tier classifies a row as exact_row does
      decided = oracle::ulp_exponents(dd_row, kind, f, at_one, s.exponent);
    } else {
      oracle::double_fast_row(row, temperature, double_row);
      s.status = double_row.status;
      decided = oracle::ulp_exponents(double_row, kind, f, at_one, s.exponent);
    }
    if (s.status == oracle::RowStatus::ok && !decided) s = exact_ulp_scales(row, temperature, op, f, at_one);
    return std::make_shared<const UlpScales>(std::move(s));
  });
}

bool temperature_ok(double t, Format f) { return temperature_fits_format(t, f); }

std::optional<CaseResult> out_of_scope(const Case& c, Format f, Scope s) {
  if (c.row.empty()) return not_applicable("empty row");
  if (!temperature_ok(c.temperature, f))
    return not_applicable("temperature " + hex(c.temperature) + " is not a normal value of the format");
  std::size_t finite = 0, neg_inf = 0, other = 0;
  double zmax = 0;
  for (double v : c.row) {
    if (!std::isnan(v) && round_to_format(v, f) != v) return not_applicable("value " + hex(v) + " not exact in format");
    if (std::isfinite(v)) {
      ++finite;
      zmax = std::max(zmax, std::fabs(v / c.temperature));
    } else if (v == -INFINITY) {
      ++neg_inf;
    } else {
      ++other;
    }
  }
  const std::size_t n = c.row.size();
  switch (s) {
    case Scope::finite:
      if (finite != n) return not_applicable("row has non-finite entries");
      break;
    case Scope::finite_or_masked:
      if (other > 0 || finite == 0) return not_applicable("row needs finite entries and no +inf/NaN");
      break;
    case Scope::masked:
      if (other > 0 || finite == 0 || neg_inf == 0)
        return not_applicable("row needs -inf masks, finite entries and no +inf/NaN");
      break;
    case Scope::fully_masked:
      if (neg_inf != n) return not_applicable("row is not fully masked");
      break;
    case Scope::any: break;
  }
  // The scaled input z = x / T and its shifts z_i - max z must be finite
  // values of the format: a kernel cannot represent them otherwise (the
  // contract's M term is unbounded there). Margin 4u: the kernel divides by
  // fl(T), not T (kernel.hpp, row_fits_format).
  if (s != Scope::any && !(zmax * (1 + 4 * unit_roundoff(f)) <= max_finite(f)))
    return not_applicable("x / temperature overflows the format");
  if (s != Scope::any && !row_fits_format(c.row, c.temperature, f))
    return not_applicable("x / temperature - max overflows the format");
  return std::nullopt;
}

namespace {

// x + c exact: the double sum has no rounding error (TwoSum) and is a finite value of f.
bool exact_sum(double x, double c, Format f) {
  const double s = x + c;
  const double t = s - x;
  const double err = (x - (s - t)) + (c - t);
  return err == 0 && std::isfinite(s) && round_to_format(s, f) == s;
}

bool shift_is_exact(std::span<const double> row, double c, Format f) {
  return std::all_of(row.begin(), row.end(), [&](double x) { return !std::isfinite(x) || exact_sum(x, c, f); });
}

std::vector<double> shift_candidates(std::span<const double> row, Format f) {
  double big = 0;
  for (double v : row)
    if (std::isfinite(v)) big = std::max(big, std::fabs(v));
  const FormatInfo fi = info(f);
  const int top = big > 0 ? std::ilogb(big) : 0;
  const int lo = std::max(fi.emin - fi.precision + 1, top - fi.precision - 2);
  const int hi = std::min(fi.emax, top + 8);
  std::vector<double> c;
  for (int e = lo; e <= hi; ++e)
    for (double m : {1.0, 3.0})
      for (double s : {1.0, -1.0}) c.push_back(s * std::ldexp(m, e));
  for (double v : {1000.0, -1000.0, 100.0, -100.0, 88.0, -88.0}) c.push_back(v);
  return c;
}

}  // namespace

std::optional<double> exact_shift(std::span<const double> values, Format f, std::uint64_t hash) {
  const std::vector<double> cands = shift_candidates(values, f);
  const std::size_t start = static_cast<std::size_t>(hash % cands.size());
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const double s = cands[(start + i) % cands.size()];
    if (shift_is_exact(values, s, f)) return s;
  }
  return std::nullopt;
}

std::uint64_t case_hash(const Case& c) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (double v : c.row) h = hash_mix(h, std::bit_cast<std::uint64_t>(std::isnan(v) ? NAN : v));
  h = hash_mix(h, std::bit_cast<std::uint64_t>(c.temperature));
  // The other inputs, when the case has them (a logits-only case hashes as before).
  if (c.target) h = hash_mix(h, static_cast<std::uint64_t>(*c.target));
  for (double g : c.upstream) h = hash_mix(h, std::bit_cast<std::uint64_t>(g));
  if (c.head_dim != 0) {
    h = hash_mix(h, static_cast<std::uint64_t>(c.head_dim));
    for (const std::vector<double>* v : {&c.query, &c.keys, &c.values})
      for (double e : *v) h = hash_mix(h, std::bit_cast<std::uint64_t>(std::isnan(e) ? NAN : e));
  }
  return h;
}

bool same_bits_or_both_nan(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

CaseResult pass(double measured, double allowed, std::string unit, std::string message) {
  return {CaseStatus::pass, measured, allowed, std::move(unit), std::move(message)};
}
CaseResult fail(double measured, double allowed, std::string unit, std::string message) {
  return {CaseStatus::fail, measured, allowed, std::move(unit), std::move(message)};
}
CaseResult not_applicable(std::string why) { return {CaseStatus::not_applicable, 0, 0, "", std::move(why)}; }

CaseResult judge(double measured, double allowed, std::string unit, std::string message) {
  // An infinite/NaN measurement (a NaN or inf output where a finite one was due)
  // fails even against a vacuous (infinite) bound.
  if (std::isfinite(measured) && measured <= allowed) return pass(measured, allowed, std::move(unit), std::move(message));
  return fail(measured, allowed, std::move(unit), std::move(message));
}

namespace {
double ratio(const CaseResult& r) {
  if (std::isnan(r.measured)) return INFINITY;
  if (r.measured <= 0) return 0;
  return r.allowed > 0 ? r.measured / r.allowed : INFINITY;
}
}  // namespace

CaseResult worst(CaseResult a, CaseResult b) {
  if (a.status == CaseStatus::not_applicable) return b;
  if (b.status == CaseStatus::not_applicable) return a;
  if ((a.status == CaseStatus::fail) != (b.status == CaseStatus::fail))
    return a.status == CaseStatus::fail ? a : b;
  return ratio(b) > ratio(a) ? b : a;
}

std::string hex(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string unit_of(const Operand& out) {
  switch (out.metric) {
    case Metric::scaled: return "u s";
    case Metric::absolute: return "u";
    default: return "ulp";
  }
}

CaseResult outputs_within_contracts(const Kernel& k, Op op, const std::vector<std::vector<double>>& outs,
                                    oracle::RowJudge& rj) {
  const OpDecl& d = *k.find(op);
  std::optional<CaseResult> result;
  for (std::size_t o = 0; o < outs.size(); ++o) {
    const Operand& out = spec(op).out[o];
    const oracle::RowVerdict v = rj.judge(d, k.masked_policy, outs[o], o);
    const std::string what = std::string(out.name) + ": " + oracle::explain(v, d, outs[o], rj, o);
    CaseResult r = v.broken ? fail(INFINITY, v.bound, unit_of(out), what)
                            : judge(v.error.max_ulp, v.bound, unit_of(out), what);
    result = result ? worst(std::move(*result), std::move(r)) : std::move(r);
  }
  return *result;
}

int significant_bits(double v) {
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);  // [0.5, 1)
  const auto bits = static_cast<std::uint64_t>(std::ldexp(m, 53));
  return 53 - std::countr_zero(bits);
}

std::tuple<int, int, int, int> complexity(double v) {
  if (std::isnan(v)) return {4, 0, 0, 0};
  if (v == INFINITY) return {3, 0, 0, 0};
  if (v == -INFINITY) return {2, 0, 0, 0};
  if (v == 0) return {0, std::signbit(v) ? 1 : 0, 0, 0};
  return {1, v < 0 ? 1 : 0, significant_bits(v), std::abs(std::ilogb(v))};
}

double round_to_bits(double v, int k) {
  const double q = std::ldexp(1.0, std::ilogb(v) - k + 1);
  return std::nearbyint(v / q) * q;
}

std::shared_ptr<const oracle::ExactRow> shared_exact_row(std::span<const double> row, double temperature) {
  thread_local LongRowMemo<std::uint64_t, std::shared_ptr<const oracle::ExactRow>> memo;
  return memo.get(row, std::bit_cast<std::uint64_t>(temperature),
                  [&] { return std::make_shared<const oracle::ExactRow>(oracle::exact_row(row, temperature)); });
}

}  // namespace softcheck::props::detail
