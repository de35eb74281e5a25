// Decoder and encoder of the numeric fuzz input (layout in fuzz_case.hpp).
#include "fuzz_case.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "softcheck/properties.hpp"
#include "softcheck/storage.hpp"

namespace softcheck::fuzz {

// softmax_lse (several outputs from the logits alone) is left to the run
// suite and the properties: its kernels' lse and softmax are fuzzed as ops of
// their own, and admitting it would renumber their ops (the op byte indexes
// the eligible ones), changing what the committed corpus decodes to. The ops
// with more inputs than the logits (the gradient ops) are fuzzed with every
// output checked (gradient_checks.hpp).
bool eligible(const OpDecl& d, OpChoice choice) {
  const OpSpec& s = spec(d.op);
  return (!s.several_outputs() || s.several_inputs()) && (choice == OpChoice::any || d.contract.declared);
}

bool takes(Op op, InputKind k) { return spec(op).takes(k); }

namespace {

// ---- value tags -------------------------------------------------------------------
// tag byte ranges of one value (fuzz_case.hpp, "value")
constexpr std::uint8_t tag_special = 0x00;      // 0x00..0x3F: special_values()[tag % size]
constexpr std::uint8_t tag_near_special = 0x40; // 0x40..0x7F + index byte: special +- (tag&63)-32 ulps
constexpr std::uint8_t tag_integer = 0x80;      // 0x80..0xBF: the integer (tag&63) - 32
constexpr std::uint8_t tag_previous = 0xC0;     // 0xC0..0xDF: previous value +- (tag&31)-16 ulps (ties)
constexpr std::uint8_t tag_edge = 0xE0;         // 0xE0..0xEF: running max + an underflow edge + offset
constexpr std::uint8_t tag_raw = 0xF0;          // 0xF0..0xFE + element_size bytes: raw bits of the format
constexpr std::uint8_t tag_raw_double = 0xFF;   // + 8 bytes: a double, rounded to the format

// tag byte ranges of one upstream gradient value (fuzz_case.hpp, "other inputs")
constexpr std::uint8_t upstream_dyadic = 0x00;    // 0x00..0x7F: (tag - 64) / 16
constexpr std::uint8_t upstream_special = 0x80;   // 0x80..0x9F: upstream_specials_of(f)[tag % size]
constexpr std::uint8_t upstream_previous = 0xA0;  // 0xA0..0xBF: previous g +- (tag&31)-16 ulps
constexpr std::uint8_t upstream_raw = 0xC0;       // 0xC0..0xFF + element_size bytes: raw bits, folded

// target tag byte kinds (b % 4)
constexpr std::uint8_t target_largest = 0;
constexpr std::uint8_t target_ignored = 1;
constexpr std::uint8_t target_smallest = 2;
constexpr std::uint8_t target_index = 3;

constexpr std::uint8_t temperature_listed = 0xA0;  // 0xA0..0xFE: listed_temperatures()[b - 0xA0]
constexpr std::uint8_t temperature_raw = 0xFF;
constexpr std::uint8_t cols_long = 0xC0;

// Reads the input front to back; past the end every byte reads as 0.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> data) : data_(data) {}
  bool empty() const { return pos_ >= data_.size(); }
  std::uint8_t byte() { return empty() ? std::uint8_t{0} : data_[pos_++]; }
  std::uint64_t little_endian(std::size_t bytes) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i) v |= std::uint64_t{byte()} << (8 * i);
    return v;
  }

 private:
  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
};

void put_little_endian(std::vector<std::uint8_t>& out, std::uint64_t v, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

bool same_value_bits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// Temperatures besides 1: the property generators' list, and values out of
// scope (subnormal, 0, negative, inf, NaN) that kernels must survive.
const std::vector<double>& listed_temperatures() {
  static const std::vector<double> t = {0.5,  2.0,   0.25,  4.0,    0.1,   10.0,  0.01,  100.0,
                                        0.7,  1.5,   3.0,   1e-3,   1e3,   0.3,   0x1p-10, 1e-30,
                                        1e-40, 0.0,  -1.0,  INFINITY, NAN, 1e300};
  return t;
}

// ---- raw bits of a format --------------------------------------------------------------
double from_bits(std::uint64_t bits, Format f) {
  switch (f) {
    case Format::f64: return std::bit_cast<double>(bits);
    case Format::f32: return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
    case Format::f16:
    case Format::bf16: return decode16(static_cast<std::uint16_t>(bits), f);
    case Format::e4m3:
    case Format::e4m3_div256: throw_not_a_storage_format(f);
  }
  return 0;
}

std::uint64_t to_bits(double v, Format f) {
  switch (f) {
    case Format::f64: return std::bit_cast<std::uint64_t>(v);
    case Format::f32: return std::bit_cast<std::uint32_t>(static_cast<float>(v));
    case Format::f16:
    case Format::bf16: return encode16(v, f);
    case Format::e4m3:
    case Format::e4m3_div256: throw_not_a_storage_format(f);
  }
  return 0;
}

// The value k representable steps away from v in format f (saturating at +-inf;
// NaN stays NaN). Walks the sign-magnitude ordinal of the bit pattern.
double step_ulps(double v, int k, Format f) {
  if (std::isnan(v) || k == 0) return v;
  const int width = info(f).width;
  const std::uint64_t sign_bit = std::uint64_t{1} << (width - 1);
  const std::uint64_t inf_bits = to_bits(INFINITY, f);
  const std::uint64_t b = to_bits(v, f);
  // ordinal: +-0 -> 0, positive magnitudes upwards, negative ones downwards
  const std::int64_t mag = static_cast<std::int64_t>(b & ~sign_bit);
  std::int64_t ord = (b & sign_bit) ? -mag : mag;
  const auto limit = static_cast<std::int64_t>(inf_bits);
  ord = std::clamp<std::int64_t>(ord + k, -limit, limit);
  const std::uint64_t out = ord < 0 ? (static_cast<std::uint64_t>(-ord) | sign_bit) : static_cast<std::uint64_t>(ord);
  return from_bits(out, f);
}

// What a value may refer to in the current row: the value decoded before it
// (0 at the start of a row) and the largest finite value so far (0 when none).
// decode keeps both as it goes: rescanning the row for the maximum made a row
// of edge tags quadratic, with every comparison traced.
struct RowSoFar {
  double previous = 0.0;
  double finite_max = -INFINITY;

  void start_row() { *this = RowSoFar{}; }
  void add(double v) {
    previous = v;
    if (std::isfinite(v) && finite_max < v) finite_max = v;  // std::max(finite_max, v): the first of equals stays
  }
  double finite_max_or_zero() const { return std::isfinite(finite_max) ? finite_max : 0.0; }
};

// One value (the tag has been read), given what the current row holds so far
// (for ties and underflow edges).
double decode_value(std::uint8_t tag, ByteReader& in, Format f, const std::vector<double>& specials,
                    const RowSoFar& row) {
  const double previous = row.previous;
  if (tag < tag_near_special) return specials[tag % specials.size()];
  if (tag < tag_integer) {
    const double s = specials[in.byte() % specials.size()];
    return step_ulps(s, (tag & 0x3F) - 32, f);
  }
  if (tag < tag_previous) return static_cast<double>((tag & 0x3F) - 32);
  if (tag < tag_edge) return step_ulps(previous, (tag & 0x1F) - 16, f);
  if (tag < tag_raw) {
    // Exact softmax near denorm_min/2 or the smallest normal (REFERENCE.md:
    // -103.97 and -87.34 below the max in f32), offset in quarter steps.
    const double edge = (tag & 0x8) ? std::log(denorm_min(f) / 2) : std::log(std::ldexp(1.0, info(f).emin));
    return round_to_format(row.finite_max_or_zero() + edge + 0.25 * ((tag & 0x7) - 4), f);
  }
  if (tag < tag_raw_double) return from_bits(in.little_endian(element_size(f)), f);
  return round_to_format(std::bit_cast<double>(in.little_endian(8)), f);
}

double decode_temperature(ByteReader& in) {
  const std::uint8_t b = in.byte();
  if (b < temperature_listed) return 1.0;
  if (b == temperature_raw) return std::bit_cast<double>(in.little_endian(8));
  const auto& t = listed_temperatures();
  return t[(b - temperature_listed) % t.size()];
}

std::int64_t decode_cols(ByteReader& in, const Limits& limits) {
  const std::uint8_t b = in.byte();
  if (b < cols_long) return 1 + std::min<std::int64_t>(b % 32, limits.max_cols - 1);
  const std::int64_t wide = (static_cast<std::int64_t>(b - cols_long) << 8) | in.byte();
  return 1 + wide % limits.max_cols;
}

// The value at index i >= decoded of `v`, whose first `decoded` entries came
// from the input (cycle repeats them; they are never overwritten).
double fill_value(FillMode mode, Format f, const std::vector<double>& v, std::size_t decoded, std::size_t i) {
  switch (mode) {
    case FillMode::masked: return -INFINITY;
    case FillMode::mask_1e9: return round_to_format(-1e9, f);
    case FillMode::lowest: return lowest(f);
    case FillMode::zero: return 0.0;
    case FillMode::cycle:
    case FillMode::count: break;
  }
  return decoded == 0 ? 0.0 : v[i % decoded];
}

std::size_t eligible_op_count(const Kernel& k, OpChoice choice) {
  return static_cast<std::size_t>(
      std::count_if(k.ops.begin(), k.ops.end(), [choice](const OpDecl& d) { return eligible(d, choice); }));
}

// The i-th eligible op of k (i < eligible_op_count), counted in place: decode
// runs on every input and builds no list.
Op eligible_op(const Kernel& k, OpChoice choice, std::size_t i) {
  for (const OpDecl& d : k.ops)
    if (eligible(d, choice) && i-- == 0) return d.op;
  return k.ops.front().op;  // unreachable for i < eligible_op_count
}

// Each kernel sits at fixed points of a 16-bit circle, hashes of its name;
// the two kernel bytes pick the kernel of the first point at or after them
// (consistent hashing): adding or removing a kernel from the registry leaves
// every other kernel's encoding, and so the committed corpus, unchanged.
// Several points per kernel even out the arcs (the odds of each kernel).
constexpr int points_per_kernel = 8;

std::uint16_t kernel_point(const Kernel& k, int replica) {
  std::uint32_t h = 2166136261u;  // FNV-1a of "name#replica"
  auto mix = [&h](unsigned char ch) { h = (h ^ ch) * 16777619u; };
  for (char ch : k.name) mix(static_cast<unsigned char>(ch));
  mix('#');
  mix(static_cast<unsigned char>('0' + replica));
  return static_cast<std::uint16_t>(h ^ (h >> 16));
}

struct CirclePoint {
  std::uint16_t at;
  const Kernel* kernel;
};

// The points of the eligible kernels in circle order (ties by name).
std::vector<CirclePoint> make_circle(const Pool& pool, OpChoice choice) {
  std::vector<CirclePoint> out;
  for (const Kernel* k : pool)
    if (eligible_op_count(*k, choice) > 0)
      for (int r = 0; r < points_per_kernel; ++r) out.push_back({kernel_point(*k, r), k});
  std::sort(out.begin(), out.end(), [](const CirclePoint& a, const CirclePoint& b) {
    return a.at != b.at ? a.at < b.at : a.kernel->name < b.kernel->name;
  });
  return out;
}

// make_circle, remembered for the last pool and choice (the targets decode
// every input against the same pool).
const std::vector<CirclePoint>& circle(const Pool& pool, OpChoice choice) {
  thread_local Pool last_pool;
  thread_local OpChoice last_choice = OpChoice::any;
  thread_local std::vector<CirclePoint> last_circle;
  thread_local bool valid = false;
  if (!valid || last_choice != choice || last_pool != pool) {
    last_pool = pool;
    last_choice = choice;
    last_circle = make_circle(pool, choice);
    valid = true;
  }
  return last_circle;
}

const Kernel* pick_kernel(std::uint16_t at, const Pool& pool, OpChoice choice) {
  const std::vector<CirclePoint>& c = circle(pool, choice);
  if (c.empty()) return nullptr;
  const auto it = std::lower_bound(c.begin(), c.end(), at, [](const CirclePoint& p, std::uint16_t v) { return p.at < v; });
  return it == c.end() ? c.front().kernel : it->kernel;
}

bool partner_candidate(const FuzzCase& c, const Kernel& k) {
  if (&k == c.kernel || k.format != c.kernel->format) return false;
  const OpDecl* d = k.find(c.op);
  return d != nullptr && d->contract.declared;
}

// ---- encoding of one value -----------------------------------------------------------------
void encode_value(double v, Format f, const std::vector<double>& specials, std::vector<std::uint8_t>& out) {
  for (std::size_t i = 0; i < specials.size() && i < tag_near_special; ++i)
    if (same_value_bits(v, specials[i])) {
      out.push_back(static_cast<std::uint8_t>(tag_special + i));
      return;
    }
  if (v == std::trunc(v) && v >= -32 && v <= 31 && !(v == 0 && std::signbit(v))) {
    out.push_back(static_cast<std::uint8_t>(tag_integer + static_cast<int>(v) + 32));
    return;
  }
  out.push_back(tag_raw);
  put_little_endian(out, to_bits(v, f), element_size(f));
}

void encode_temperature(double t, std::vector<std::uint8_t>& out) {
  if (t == 1.0) {
    out.push_back(0);
    return;
  }
  const auto& listed = listed_temperatures();
  for (std::size_t i = 0; i < listed.size(); ++i)
    if (same_value_bits(t, listed[i])) {
      out.push_back(static_cast<std::uint8_t>(temperature_listed + i));
      return;
    }
  out.push_back(temperature_raw);
  put_little_endian(out, std::bit_cast<std::uint64_t>(t), 8);
}

void encode_cols(std::int64_t cols, std::vector<std::uint8_t>& out) {
  if (cols <= 32) {
    out.push_back(static_cast<std::uint8_t>(cols - 1));
    return;
  }
  out.push_back(static_cast<std::uint8_t>(cols_long + ((cols - 1) >> 8)));
  out.push_back(static_cast<std::uint8_t>((cols - 1) & 0xFF));
}

}  // namespace

std::span<const double> FuzzCase::row(std::int64_t r) const {
  return std::span<const double>(values).subspan(static_cast<std::size_t>(r * cols), static_cast<std::size_t>(cols));
}

std::span<const double> FuzzCase::upstream_row(std::int64_t r) const {
  return std::span<const double>(upstream).subspan(static_cast<std::size_t>(r * cols), static_cast<std::size_t>(cols));
}

namespace {

std::vector<double> make_special_values(Format f) {
  const double min_normal = std::ldexp(1.0, info(f).emin);
  const std::vector<double> raw = {
      0.0, -0.0, 1.0, -1.0, 0.5, 2.0,
      denorm_min(f), -denorm_min(f), 2 * denorm_min(f), min_normal, -min_normal, min_normal - denorm_min(f),
      max_finite(f), lowest(f), max_finite(f) / 2, lowest(f) / 2,
      INFINITY, -INFINITY, NAN,
      -1e9, 1e9, -1e30, 1e30,                       // finite masks (REFERENCE.md, apex/fairseq reports)
      88.72283935546875, -88.72283935546875,        // ln(FLT_MAX): f32 expf overflow edge
      88.0, 89.0, 90.0, 95.0, 100.0,                // benchdnn's 88/89/90, XNNPACK's [90, 100]
      -103.97207708399179, -87.33654475055310,      // f32 ln(denorm_min/2), ln(FLT_MIN)
      std::log(max_finite(f)), std::log(denorm_min(f) / 2), std::log(min_normal),
      709.782712893384, -745.1332191019412,         // the same edges in f64
      65504.0, -65504.0, 15.0, 20.0,                // f16 max; XNNPACK's f16 range [15, 20]
      1000.0, -1000.0, 1e-30, 0.1, -0.1};
  std::vector<double> out;
  out.reserve(raw.size());
  for (double v : raw) out.push_back(round_to_format(v, f));
  return out;
}

// special_values of every format, built once.
// make(f) for every format, built once, indexed by format.
template <std::vector<double> (*make)(Format)>
const std::vector<double>& per_format(Format f) {
  static const std::vector<double> f64 = make(Format::f64), f32 = make(Format::f32), f16 = make(Format::f16),
                                   bf16 = make(Format::bf16);
  switch (f) {
    case Format::f64: return f64;
    case Format::f32: return f32;
    case Format::f16: return f16;
    case Format::bf16: return bf16;
    case Format::e4m3:
    case Format::e4m3_div256: throw_not_a_storage_format(f);
  }
  return f64;
}

const std::vector<double>& specials_of(Format f) { return per_format<make_special_values>(f); }

// ---- the other inputs (fuzz_case.hpp, "other inputs") --------------------------------

// Upstream values the decoder favours: the suite's kinds (constant and one-hot
// rows are made of 0 and 1), loss-scaled magnitudes up to the ends of the
// allowed range, values whose products with y underflow (subnormals, the
// smallest normal), and values one ulp from 1 (nearly constant rows).
std::vector<double> make_upstream_specials(Format f) {
  const double u = unit_roundoff(f), min_normal = std::ldexp(1.0, info(f).emin);
  const std::vector<double> raw = {0.0,  -0.0, 1.0,  -1.0,       0.5,         -0.5,        2.0,     -2.0,
                                   4.0,  -4.0, 0.25, 0.1,        -0.1,        1.0 / 3,     3.0,     -3.0,
                                   1e-3, -1e-3, denorm_min(f), -denorm_min(f), min_normal, -min_normal, u,       -u,
                                   1 + 2 * u, 1 - u, -1 - 2 * u, -1 + u,   1024.0,      -1024.0,     max_upstream, -max_upstream};
  std::vector<double> out;
  for (double v : raw) out.push_back(round_to_format(v, f));
  return out;
}

const std::vector<double>& upstream_specials_of(Format f) { return per_format<make_upstream_specials>(f); }

// Into the decoder's range (finite, |g| <= max_upstream): NaN -> 0, +-inf ->
// +-max_upstream, a larger magnitude keeps its significand in [1, 2) (the
// same bits: still exact in its format, and still varied).
double fold_upstream(double v) {
  if (std::isnan(v)) return 0.0;
  if (std::isinf(v)) return std::copysign(max_upstream, v);
  if (std::fabs(v) <= max_upstream) return v;
  int exponent = 0;
  return std::ldexp(std::frexp(v, &exponent), 1);
}

double decode_upstream_value(std::uint8_t tag, ByteReader& in, Format f, double previous) {
  if (tag < upstream_special) return static_cast<double>(tag - 64) / 16;
  if (tag < upstream_previous) {
    const std::vector<double>& sp = upstream_specials_of(f);
    return sp[tag % sp.size()];
  }
  if (tag < upstream_raw) return fold_upstream(step_ulps(previous, (tag & 0x1F) - 16, f));
  return fold_upstream(from_bits(in.little_endian(element_size(f)), f));
}

// The index of the largest entry (the first of ties; 0 when every entry is
// -inf or NaN) or of the smallest finite one (0 when none).
std::int64_t largest_entry(std::span<const double> row) {
  std::size_t k = 0;
  for (std::size_t j = 1; j < row.size(); ++j)
    if (row[j] > row[k] || std::isnan(row[k])) k = j;
  return static_cast<std::int64_t>(k);
}

std::int64_t smallest_finite_entry(std::span<const double> row) {
  std::size_t k = row.size();
  for (std::size_t j = 0; j < row.size(); ++j)
    if (std::isfinite(row[j]) && (k == row.size() || row[j] < row[k])) k = j;
  return k == row.size() ? 0 : static_cast<std::int64_t>(k);
}

std::int64_t decode_target(ByteReader& in, std::span<const double> row) {
  const std::uint8_t b = in.byte();
  switch (b % 4) {
    case target_largest: return largest_entry(row);
    case target_ignored: return ignore_index;
    case target_smallest: return smallest_finite_entry(row);
    default: break;
  }
  const std::int64_t index = (b >> 2) | (static_cast<std::int64_t>(in.byte()) << 6);
  return index % static_cast<std::int64_t>(row.size());
}

// The fields after the values; with `in` at its end, the defaults.
void decode_other_inputs(ByteReader& in, FuzzCase& c) {
  c.targets.clear();
  c.upstream.clear();
  if (takes(c.op, InputKind::class_index))
    for (std::int64_t r = 0; r < c.rows; ++r) c.targets.push_back(decode_target(in, c.row(r)));
  if (!takes(c.op, InputKind::upstream_gradient)) return;
  const Format f = c.kernel->format;
  const auto n = static_cast<std::size_t>(c.rows * c.cols);
  std::vector<double>& g = c.upstream;
  g.reserve(n);
  double previous = 1.0;
  while (g.size() < n && !in.empty()) {
    previous = decode_upstream_value(in.byte(), in, f, previous);
    g.push_back(previous);
  }
  const std::size_t decoded = g.size();
  for (std::size_t i = decoded; i < n; ++i) g.push_back(decoded == 0 ? 1.0 : g[i % decoded]);
}

void encode_target(std::int64_t t, std::vector<std::uint8_t>& out) {
  if (t == ignore_index) {
    out.push_back(target_ignored);
    return;
  }
  out.push_back(static_cast<std::uint8_t>(target_index | ((t & 0x3F) << 2)));
  out.push_back(static_cast<std::uint8_t>(t >> 6));
}

void encode_upstream_value(double v, Format f, std::vector<std::uint8_t>& out) {
  const double sixteenths = v * 16;
  if (sixteenths == std::trunc(sixteenths) && sixteenths >= -64 && sixteenths <= 63 && !(v == 0 && std::signbit(v))) {
    out.push_back(static_cast<std::uint8_t>(upstream_dyadic + static_cast<int>(sixteenths) + 64));
    return;
  }
  const std::vector<double>& sp = upstream_specials_of(f);
  for (std::size_t i = 0; i < sp.size(); ++i)
    if (same_value_bits(v, sp[i])) {
      out.push_back(static_cast<std::uint8_t>(upstream_special + i));
      return;
    }
  out.push_back(upstream_raw);
  put_little_endian(out, to_bits(v, f), element_size(f));
}

}  // namespace

void default_other_inputs(FuzzCase& c) {
  ByteReader none({});
  decode_other_inputs(none, c);
}

std::vector<double> special_values(Format f) { return specials_of(f); }

bool decode(std::span<const std::uint8_t> data, const Pool& pool, const Limits& limits, OpChoice choice,
            FuzzCase& out) {
  ByteReader in(data);
  out.kernel = pick_kernel(static_cast<std::uint16_t>(in.little_endian(2)), pool, choice);
  if (out.kernel == nullptr) return false;
  const std::uint8_t op_byte = in.byte();
  out.op = eligible_op(*out.kernel, choice, (op_byte & 0x0F) % eligible_op_count(*out.kernel, choice));
  out.rows = 1 + in.byte() % limits.max_rows;
  out.cols = decode_cols(in, limits);
  out.temperature = decode_temperature(in);
  const auto fill = static_cast<FillMode>(in.byte() % static_cast<std::uint8_t>(FillMode::count));

  const Format f = out.kernel->format;
  const std::vector<double>& specials = specials_of(f);
  const auto n = static_cast<std::size_t>(out.rows * out.cols);
  const auto cols = static_cast<std::size_t>(out.cols);
  std::vector<double>& v = out.values;
  v.clear();
  v.reserve(n);
  RowSoFar row;
  while (v.size() < n && !in.empty()) {
    if (v.size() % cols == 0) row.start_row();
    const double value = decode_value(in.byte(), in, f, specials, row);
    row.add(value);
    v.push_back(value);
  }
  const std::size_t decoded = v.size();
  for (std::size_t i = decoded; i < n; ++i) v.push_back(fill_value(fill, f, v, decoded, i));
  decode_other_inputs(in, out);
  out.partner = choice == OpChoice::contract_only ? pick_partner(out, pool, static_cast<std::uint8_t>(op_byte >> 4)) : nullptr;
  return true;
}

const Kernel* pick_partner(const FuzzCase& c, const Pool& pool, std::uint8_t selector) {
  if (selector == 0) return nullptr;
  const auto count = static_cast<std::size_t>(
      std::count_if(pool.begin(), pool.end(), [&c](const Kernel* k) { return partner_candidate(c, *k); }));
  if (count == 0) return nullptr;
  std::size_t i = (selector - 1u) % count;  // the i-th candidate in pool order
  for (const Kernel* k : pool)
    if (partner_candidate(c, *k) && i-- == 0) return k;
  return nullptr;
}

std::vector<std::uint8_t> encode(const FuzzCase& c, const Pool& pool, OpChoice choice,
                                 std::uint8_t partner_selector) {
  std::vector<std::uint8_t> out;
  (void)pool;  // a kernel's encoding does not depend on the pool (kernel_point)
  put_little_endian(out, kernel_point(*c.kernel, 0), 2);
  std::size_t op_index = 0;
  while (op_index < eligible_op_count(*c.kernel, choice) && eligible_op(*c.kernel, choice, op_index) != c.op)
    ++op_index;
  out.push_back(static_cast<std::uint8_t>((partner_selector << 4) | op_index));
  out.push_back(static_cast<std::uint8_t>(c.rows - 1));
  encode_cols(c.cols, out);
  encode_temperature(c.temperature, out);
  out.push_back(static_cast<std::uint8_t>(FillMode::cycle));
  const std::vector<double>& specials = specials_of(c.kernel->format);
  for (double v : c.values) encode_value(v, c.kernel->format, specials, out);
  for (std::int64_t t : c.targets) encode_target(t, out);
  for (double g : c.upstream) encode_upstream_value(g, c.kernel->format, out);
  return out;
}

std::vector<std::pair<const Kernel*, const Kernel*>> kernel_collisions(const Pool& pool) {
  // Only a kernel's first point matters: it is the one encode writes.
  const std::vector<CirclePoint> c = make_circle(pool, OpChoice::any);
  std::vector<std::pair<const Kernel*, const Kernel*>> out;
  for (std::size_t i = 1; i < c.size(); ++i)
    if (c[i - 1].at == c[i].at && c[i - 1].kernel != c[i].kernel &&
        (c[i].at == kernel_point(*c[i].kernel, 0) || c[i - 1].at == kernel_point(*c[i - 1].kernel, 0)))
      out.emplace_back(c[i - 1].kernel, c[i].kernel);
  return out;
}

std::string describe(const FuzzCase& c) {
  std::string s = c.kernel->name + " " + std::string(name(c.op)) + " " + std::to_string(c.rows) + "x" +
                  std::to_string(c.cols) + " T=" + props::format_value(c.temperature);
  if (c.partner != nullptr) s += " partner " + c.partner->name;
  return s;
}

}  // namespace softcheck::fuzz
