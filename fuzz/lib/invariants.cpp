#include "invariants.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gradient_checks.hpp"
#include "softcheck/storage.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define SOFTCHECK_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOFTCHECK_FUZZ_ASAN 1
#endif
#endif
#ifdef SOFTCHECK_FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace softcheck::fuzz {

namespace {

double finite_max(std::span<const double> x) {
  double a = -INFINITY;
  for (double v : x)
    if (std::isfinite(v)) a = std::max(a, v);
  return a;
}

// no_nonfinite (checks.cpp): a non-finite output fails, except a log-softmax
// -inf where z_j - z_max - ln n is below the lowest value (the exact value
// rounds to -inf there).
bool nonfinite_suspect(Format f, Op op, std::span<const double> x, std::span<const double> y, double t) {
  const double zmax = finite_max(x) / t;
  const double log_n = std::log(static_cast<double>(y.size()));
  for (std::size_t j = 0; j < y.size(); ++j) {
    if (std::isfinite(y[j])) continue;
    const double gap = x[j] / t - zmax - log_n;
    if (op == Op::log_softmax && y[j] == -INFINITY && !(gap >= lowest(f))) continue;
    return true;
  }
  return false;
}

// range: softmax in [0, 1], log-softmax <= 0; NaN out of range.
bool range_suspect(Op op, std::span<const double> y) {
  return std::any_of(y.begin(), y.end(), [op](double v) {
    return std::isnan(v) || (spec(op).out[0].kind == OutputKind::probabilities ? (v < 0 || v > 1) : v > 0);
  });
}

// Neumaier's compensated sum: error below 2^-104 |sum| for these n, far below
// the slack left in sum_suspect, which the exact check then settles.
double compensated_sum(std::span<const double> y) {
  double s = 0, c = 0;
  for (double v : y) {
    const double t = s + v;
    c += std::fabs(s) >= std::fabs(v) ? (s - t) + v : (v - t) + s;
    s = t;
  }
  return s + c;
}

// sum_to_one (checks.cpp): |sum y - 1| / u <= B (2 + n denorm_min / u).
bool sum_suspect(const Kernel& k, std::span<const double> x, std::span<const double> y, double t) {
  if (std::any_of(y.begin(), y.end(), [](double v) { return !std::isfinite(v); })) return true;
  const Format f = k.format;
  const double bound = k.find(Op::softmax)->contract.bound_ulps(row_shape(x, t, f), f);
  const double u = unit_roundoff(f);
  const double measured = std::fabs(compensated_sum(y) - 1.0) / u;
  const double allowed = bound * (2.0 + static_cast<double>(y.size()) * denorm_min(f) / u);
  return !(measured <= allowed * (1 - 0x1p-30));
}

// fully_masked: nan -> all NaN; zeros -> softmax +-0, log-softmax -inf;
// uniform -> near 1/n (-ln n), settled by the suite's exact check.
bool policy_suspect(MaskedRowPolicy p, Op op, std::span<const double> y) {
  const auto n = static_cast<double>(y.size());
  return std::any_of(y.begin(), y.end(), [&](double v) {
    switch (p) {
      case MaskedRowPolicy::nan: return !std::isnan(v);
      case MaskedRowPolicy::zeros: return v != masked_row_value(spec(op).out[0].kind, p, n);
      case MaskedRowPolicy::uniform: {
        const double target = masked_row_value(spec(op).out[0].kind, p, n);
        return !(std::fabs(v - target) <= 1e-3 * std::fabs(target));
      }
    }
    return true;
  });
}

// Sizes a reused kernel buffer to `bytes`. Under ASan the rest of its capacity
// is poisoned, so that a kernel reading or writing past the batch is reported
// (use-after-poison) as it was when each input allocated exactly sized buffers
// (heap-buffer-overflow); without it, a buffer grown by an earlier, longer
// input would hide the overflow.
void size_kernel_buffer(std::vector<unsigned char>& b, std::size_t bytes) {
#ifdef SOFTCHECK_FUZZ_ASAN
  ASAN_UNPOISON_MEMORY_REGION(b.data(), b.capacity());
#endif
  b.resize(bytes);
#ifdef SOFTCHECK_FUZZ_ASAN
  ASAN_POISON_MEMORY_REGION(b.data() + bytes, b.capacity() - bytes);
#endif
}

// storage.hpp's pack/unpack, into buffers that keep their capacity.
void pack_into(const std::vector<double>& x, Format f, std::vector<unsigned char>& b) {
  const std::size_t size = element_size(f);
  size_kernel_buffer(b, x.size() * size);
  for (std::size_t i = 0; i < x.size(); ++i) store_element(b.data() + i * size, x[i], f);
}

// n NaNs of format f (an output entry the kernel never writes reads as NaN).
void fill_nan(Format f, std::size_t n, std::vector<unsigned char>& b) {
  const std::size_t size = element_size(f);
  unsigned char nan[sizeof(double)];
  store_element(nan, NAN, f);
  size_kernel_buffer(b, n * size);
  for (std::size_t i = 0; i < n; ++i) std::memcpy(b.data() + i * size, nan, size);
}

}  // namespace

bool same_bits(std::span<const double> a, std::span<const double> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](double p, double q) {
    return std::bit_cast<std::uint64_t>(p) == std::bit_cast<std::uint64_t>(q) || (std::isnan(p) && std::isnan(q));
  });
}

std::string context_of(const FuzzCase& c, std::int64_t r) { return describe(c) + ", row " + std::to_string(r); }

RowKind classify(std::span<const double> row) {
  std::size_t finite = 0, neg_inf = 0;
  for (double v : row) {
    if (std::isfinite(v)) ++finite;
    else if (v == -INFINITY) ++neg_inf;
    else return RowKind::nonfinite;
  }
  if (finite == row.size()) return RowKind::finite;
  return finite == 0 ? RowKind::fully_masked : RowKind::masked;
}

bool temperature_in_scope(double t, Format f) { return temperature_fits_format(t, f); }

bool in_property_scope(std::span<const double> x, double t, Format f) {
  return temperature_in_scope(t, f) && row_fits_format(x, t, f);
}

std::vector<double> run_batch(const Kernel& k, Op op, const FuzzCase& c) {
  BatchScratch scratch;
  std::vector<double> y;
  run_batch(k, op, c, scratch, y);
  return y;
}

namespace {

// The most inputs or outputs an op has (op table: two today).
constexpr std::size_t max_operands = 4;

// Values of output `output` of op on a batch of `rows` rows of `cols`.
std::size_t output_size(Op op, std::size_t output, std::int64_t rows, std::int64_t cols) {
  return static_cast<std::size_t>(rows * output_cols(spec(op).out[output], cols));
}

// The op's other inputs (OpCall: class indices as int64 whatever the format,
// g in the kernel's format), sized exactly like the logits' buffer.
void pack_other_inputs(const Kernel& k, Op op, const FuzzCase& c, BatchScratch& scratch) {
  if (takes(op, InputKind::class_index)) {
    if (c.targets.size() != static_cast<std::size_t>(c.rows))
      throw std::invalid_argument("run_batch: " + std::string(name(op)) + " needs one target per row");
    size_kernel_buffer(scratch.targets, c.targets.size() * sizeof(std::int64_t));
    std::memcpy(scratch.targets.data(), c.targets.data(), scratch.targets.size());
  }
  if (takes(op, InputKind::upstream_gradient)) {
    if (c.upstream.size() != c.values.size())
      throw std::invalid_argument("run_batch: " + std::string(name(op)) + " needs g of the logits' shape");
    pack_into(c.upstream, k.format, scratch.upstream);
  }
}

}  // namespace

void run_batch(const Kernel& k, Op op, const FuzzCase& c, BatchScratch& scratch, std::vector<double>& out) {
  const Format f = k.format;
  pack_into(c.values, f, scratch.x);
  pack_other_inputs(k, op, c, scratch);
  // Operand pointers on the stack: this runs on every input (no allocation).
  std::array<const void*, max_operands> in{};
  std::array<void*, max_operands> outs{};
  const OperandList ins = spec(op).in, outputs = spec(op).out;
  if (ins.size() > max_operands || outputs.size() > max_operands)
    throw std::logic_error("run_batch: raise max_operands for " + std::string(name(op)));
  for (std::size_t i = 0; i < ins.size(); ++i)
    in[i] = ins[i].input == InputKind::class_index         ? static_cast<const void*>(scratch.targets.data())
            : ins[i].input == InputKind::upstream_gradient ? static_cast<const void*>(scratch.upstream.data())
                                                           : static_cast<const void*>(scratch.x.data());
  scratch.y.resize(outputs.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    fill_nan(f, output_size(op, i, c.rows, c.cols), scratch.y[i]);
    outs[i] = scratch.y[i].data();
    total += output_size(op, i, c.rows, c.cols);
  }
  k.call({op, std::span<const void* const>(in.data(), ins.size()), std::span<void* const>(outs.data(), outputs.size()),
          c.rows, c.cols, c.temperature});
  out.resize(total);
  std::size_t at = 0;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::size_t size = element_size(f), count = output_size(op, i, c.rows, c.cols);
    for (std::size_t j = 0; j < count; ++j) out[at + j] = load_element(scratch.y[i].data() + j * size, f);
    at += count;
  }
}

std::span<const double> output_row(const FuzzCase& c, Op op, std::span<const double> y, std::size_t output,
                                   std::int64_t r) {
  std::size_t at = 0;
  for (std::size_t i = 0; i < output; ++i) at += output_size(op, i, c.rows, c.cols);
  const auto per_row = static_cast<std::size_t>(output_cols(spec(op).out[output], c.cols));
  return y.subspan(at + static_cast<std::size_t>(r) * per_row, per_row);
}

namespace {

// lse and entropy, one value per row (docs/ops.md): the policy's value on a
// fully masked row, a finite value on a row with finite entries ("accuracy"
// fails a NaN/inf where the exact value is finite), and the exact ranges
// max z <= lse <= max z + log n, 0 <= H <= log n. Cheap and strict: the
// property (B u of slack) confirms.
std::optional<std::string_view> scalar_suspect(const Kernel& k, Op op, RowKind kind, std::span<const double> x,
                                               double v, double temperature) {
  const auto n = static_cast<double>(x.size());
  if (kind == RowKind::fully_masked) {
    if (!is_masked_row_value(v, spec(op).out[0].kind, k.masked_policy, n, unit_roundoff(k.format)))
      return "scalar_fully_masked";
    return std::nullopt;
  }
  const OpDecl* decl = k.find(op);
  if (decl == nullptr || !decl->contract.declared) return std::nullopt;
  if (!std::isfinite(v)) return "accuracy";
  if (spec(op).out[0].kind == OutputKind::log_sum_exp) {
    double a = -INFINITY;
    for (double e : x)
      if (std::isfinite(e)) a = std::max(a, e / temperature);
    if (v < a || v > a + std::log(n)) return "lse_bounds";
  } else if (v < 0 || v > std::log(n)) {
    return "entropy_range";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> suspect_row(const Kernel& k, Op op, std::span<const double> x,
                                            std::span<const double> y, double temperature) {
  const RowKind kind = classify(x);
  if (kind == RowKind::nonfinite) return std::nullopt;
  if (!in_property_scope(x, temperature, k.format)) return std::nullopt;
  if (spec(op).scalar_output()) return scalar_suspect(k, op, kind, x, y[0], temperature);
  if (kind == RowKind::fully_masked) {
    if (policy_suspect(k.masked_policy, op, y)) return "fully_masked";
    return std::nullopt;
  }
  const OpDecl* decl = k.find(op);
  if (decl == nullptr || !decl->contract.declared) return std::nullopt;  // contract "none": reported, never gated
  if (kind == RowKind::finite && nonfinite_suspect(k.format, op, x, y, temperature)) return "no_nonfinite";
  if (range_suspect(op, y)) return "range";
  if (op == Op::softmax && sum_suspect(k, x, y, temperature)) return "sum_to_one";
  return std::nullopt;
}

std::optional<Violation> confirm_row(const FuzzCase& c, const Kernel& k, Op op, std::int64_t r,
                                     std::string_view property, std::span<const double> y_row) {
  const std::span<const double> x = c.row(r);
  props::Case one{std::vector<double>(x.begin(), x.end()), c.temperature};
  if (auto v = confirm(k, op, property, one, context_of(c, r))) return v;
  // Not confirmed on the row alone: does the row depend on its neighbours?
  FuzzCase alone = c;
  alone.rows = 1;
  alone.values = one.row;
  const std::vector<double> y_alone = run_batch(k, op, alone);
  if (same_bits(y_alone, y_row)) return std::nullopt;
  props::CaseResult res{props::CaseStatus::fail, 1, 0, "rows",
                        "row " + std::to_string(r) + " of a " + std::to_string(c.rows) +
                            "-row batch differs bitwise from the same row run alone (the replay line runs it "
                            "with the suite's own neighbours)"};
  return Violation{&k, op, "batch_independence", std::move(one), std::move(res), context_of(c, r), std::nullopt};
}

std::optional<Violation> check_invariants(const FuzzCase& c, const Kernel& k, Op op, std::span<const double> y) {
  if (spec(op).several_inputs()) return check_gradient_invariants(c, k, op, y);
  const auto out_cols = static_cast<std::size_t>(output_cols(op, c.cols));
  for (std::int64_t r = 0; r < c.rows; ++r) {
    const std::span<const double> y_row = y.subspan(static_cast<std::size_t>(r) * out_cols, out_cols);
    const auto property = suspect_row(k, op, c.row(r), y_row, c.temperature);
    if (!property) continue;
    if (auto v = confirm_row(c, k, op, r, *property, y_row)) return v;
  }
  return std::nullopt;
}

}  // namespace softcheck::fuzz
