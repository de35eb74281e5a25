// The exp lab's sweep engine (exp_lab_sweep.hpp, docs/exp-lab.md "The sweep").
//
// Each input is measured against exp in double (glibc, within 0.51 ulp of
// double: 2^-52 relative, REFERENCE.md "exp accuracy"), which decides almost
// everything: a ulp error from it is within ulp_tolerance (~2^-28 ulp) of the
// exact one, and the correctly rounded f32 value is (float) of it unless the
// double lies within 2 filter_relative_error of a rounding midpoint or of a
// binade edge. Those inputs, and every input whose filtered error comes
// within twice the tolerance of its band's largest, are recomputed with MPFR
// through the oracle (oracle::round_to, compare_element): the reported maxima
// and correctly-rounded counts are MPFR's, only the means are the filter's.
//
// Determinism: the inputs are cut into chunks of a fixed size whatever the
// thread count, each chunk's sums are taken in input order and the chunks
// merged in order; maxima and counts do not depend on order at all.
#include "exp_lab_sweep.hpp"

#include <mpfr.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numbers>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "softcheck/exp_lab.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"

namespace softcheck::exp_lab {

namespace {

using oracle::Real;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr std::uint64_t chunk_samples = std::uint64_t{1} << 20;
constexpr mpfr_prec_t exact_bits = 128;     // e^(s (x - m)): 2^-128 relative, far below any metric's digits
constexpr mpfr_prec_t argument_bits = 320;  // s (x - m) exactly: x - m spans <= 2^4 .. 2^-149, times 24 bits of s
// Candidates for a band's maximum kept per chunk, and recomputed with MPFR
// per band: more only where thousands of inputs tie within the tolerance
// (a flat stretch of the fold's domain, x near 0 with m != 0, gives the same
// result and nearly the same exact value for 10^8 inputs).
constexpr std::size_t kept_per_chunk = 1024;
constexpr std::size_t certified_per_band = 4096;

// --------------------------------------------------------------- ordinals

// The f32 values in order as integers: -|bits| for negative values, +0 and -0 both 0.
std::int64_t ordinal(float x) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
  const std::int64_t magnitude = b & 0x7fffffffu;
  return (b >> 31) != 0 ? -magnitude : magnitude;
}

float from_ordinal(std::int64_t o) {
  return o < 0 ? std::bit_cast<float>(static_cast<std::uint32_t>(-o) | 0x80000000u)
               : std::bit_cast<float>(static_cast<std::uint32_t>(o));
}

std::string hex(double v) { return fmt::format("{:a}", v); }

// ------------------------------------------------------------------- bands

// -126 ln 2 and -150 ln 2 in double (the band edges, for grouping only).
const double ln2 = std::numbers::ln2;

int band_of(double z) {
  const double a = -z;
  if (a < 1) return 0;
  if (a >= 126 * ln2) return band_count - 1;
  if (a >= 64) return band_count - 2;
  return std::ilogb(a) + 1;  // [1, 2) -> 1, ..., [32, 64) -> 6
}

// ------------------------------------------------------------------- MPFR

// The exact e^(s (x - m)) as a Real of exact_bits bits.
Real exact_value(float x, float m, float s) {
  thread_local struct Argument {
    mpfr_t v;
    Argument() { mpfr_init2(v, argument_bits); }
    ~Argument() { mpfr_clear(v); }
  } arg;
  mpfr_set_flt(arg.v, x, MPFR_RNDN);
  mpfr_sub_d(arg.v, arg.v, static_cast<double>(m), MPFR_RNDN);  // exact at 320 bits
  mpfr_mul_d(arg.v, arg.v, static_cast<double>(s), MPFR_RNDN);  // exact
  Real v;
  mpfr_set_prec(v.backend().data(), exact_bits);
  mpfr_exp(v.backend().data(), arg.v, MPFR_RNDN);
  return v;
}

double exact_ulp_error(float r, const Real& v) {
  if (std::isnan(r)) return inf;
  const double e = compare_element(static_cast<double>(r), v, Format::f32).ulp;
  return std::isnan(e) ? inf : e;
}

// ---------------------------------------------------------- accumulators

struct Candidate {
  double filtered;      // the filter's ulp error (exact when the input went to MPFR)
  std::int64_t ordinal;
};

// Keeps every input whose filtered error may be its band's exact maximum:
// filtered >= (running max) - 2 tolerance(running max), which includes every
// input within 2 tolerance of the final maximum (the function M - 2 tol(M)
// only grows with M). Errors below `negligible` are not kept (near z = 0
// whole chunks are correctly rounded to within 1e-20 ulp): a band whose
// largest filtered error stays below negligible + 2 tolerance gets the
// filter's maximum, marked uncertified. At most kept_per_chunk candidates
// are kept, the largest (smallest x first on a tie); `dropped` is the largest
// filtered error let go, so that the merge knows whether the window was cut.
constexpr double negligible = 0x1p-16;

struct MaxTracker {
  double running = -1;
  std::int64_t running_at = 0;
  std::vector<Candidate> kept;
  std::size_t prune_at = 4096;  // doubled after each pruning: amortised O(1) per input
  double dropped = -1;
};

bool larger(const Candidate& a, const Candidate& b) {
  return a.filtered > b.filtered || (a.filtered == b.filtered && a.ordinal < b.ordinal);
}

struct BandAccumulator {
  std::uint64_t inputs = 0, not_correctly_rounded = 0, flushes = 0;
  double sum_ulp = 0;
  MaxTracker max;
};

struct ChunkResult {
  std::vector<BandAccumulator> bands;  // primitive * band_count + band
  std::uint64_t mpfr_inline = 0;
};

struct Filter {
  double relative_error;  // |exp_double - exact| <= relative_error * exact
  // |filtered ulp error - exact ulp error| <= tolerance(e): the reference's
  // error in f32 ulps (e^z / ulp(e^z) < 2^24) plus the double arithmetic's.
  double tolerance(double e) const { return 1.01 * relative_error * 0x1p24 + e * 0x1p-50; }
};

// Drops the candidates below the window of the running maximum, then all but
// the kept_per_chunk largest.
void prune(MaxTracker& t, const Filter& filter) {
  const double floor = t.running - 2 * filter.tolerance(t.running);
  std::erase_if(t.kept, [&](const Candidate& c) { return c.filtered < floor; });
  if (t.kept.size() > kept_per_chunk) {
    std::nth_element(t.kept.begin(), t.kept.begin() + kept_per_chunk, t.kept.end(), larger);
    for (auto it = t.kept.begin() + kept_per_chunk; it != t.kept.end(); ++it) t.dropped = std::max(t.dropped, it->filtered);
    t.kept.resize(kept_per_chunk);
  }
  t.prune_at = std::max<std::size_t>(4096, 2 * t.kept.size());
}

void track(MaxTracker& t, double e, std::int64_t o, const Filter& filter) {
  if (e > t.running) t.running = e, t.running_at = o;
  if (e < negligible || e < t.running - 2 * filter.tolerance(t.running)) return;
  t.kept.push_back({e, o});
  if (t.kept.size() > t.prune_at) prune(t, filter);
}

// The filter's view of one exact value e^z: offset + value within the
// filter's relative error of it, the f32 ulp of the exact value, its correctly
// rounded f32 value, or `undecided` when the double lies within `tol`
// (relative) of a binade edge or a rounding midpoint, where only MPFR can say.
struct Reference {
  double offset = 0, value = 0;  // e^z ~ offset + value; a result's error is |(r - offset) - value|
  double ulp = 0;
  float rounded = 0;
  bool undecided = false;
};

Reference reference(double z, double tol) {
  Reference ref;
  if (z == 0) return {1, 0, 0x1p-23, 1.0f, false};  // e^0 = 1 exactly
  if (std::fabs(z) < 0.5) {
    // Near 1, exp in double rounds to 1 (|z| < 2^-53) or loses the digits
    // that place e^z against 1 - 2^-25, 1 - 3 2^-25, ...: carry e^z as
    // 1 + expm1(z) (glibc's expm1: 1 ulp, relative to expm1(z)). For z < 0,
    // e^z is in (0.6, 1): ulp 2^-24, and r - 1 is exact for every result r
    // there (Sterbenz).
    ref.offset = 1;
    ref.value = std::expm1(z);
    ref.ulp = z < 0 ? 0x1p-24 : 0x1p-23;
    const double q = ref.value / ref.ulp;  // exact: a power-of-two scaling
    const double k = std::nearbyint(q);
    ref.rounded = static_cast<float>(1 + k * ref.ulp);  // exact
    ref.undecided = std::fabs(std::fabs(q - k) - 0.5) <= tol / ref.ulp;
    return ref;
  }
  const double v = std::exp(z);
  ref.value = v;
  const int e = std::ilogb(v);
  ref.ulp = e >= -126 ? std::ldexp(1.0, e - 23) : 0x1p-149;
  // Across a binade edge the exact value's ulp differs (below 2^-126 it does not).
  ref.undecided = (e >= -125 && v - std::ldexp(1.0, e) <= tol * v) || (e >= -126 && std::ldexp(1.0, e + 1) - v <= tol * v);
  ref.rounded = static_cast<float>(v);
  const double below = std::nextafter(ref.rounded, 0.0f), above = std::nextafter(ref.rounded, INFINITY);
  ref.undecided = ref.undecided || std::fabs(v - (ref.rounded + below) / 2) <= tol * v ||
                  std::fabs(v - (ref.rounded + above) / 2) <= tol * v;
  return ref;
}

class Sweep {
 public:
  Sweep(const SweepDomain& d, const std::vector<SweepPrimitive>& p) : domain_(d), primitives_(p) {
    if (!(d.s > 0) || !std::isfinite(d.s) || !std::isfinite(d.m) || d.stride == 0 || !(d.x_lo <= d.x_hi))
      throw std::invalid_argument("exp_lab_sweep: a domain needs s > 0 finite, m finite, stride >= 1, x_lo <= x_hi");
    exact_argument_ = d.m == 0 && d.s == 1;
    // The double argument s (x - m): exact when m = 0, s = 1; else two
    // roundings of 2^-53 of |s (x - m)| <= 150 ln 2 < 2^7, moving exp by
    // 2^-45 relative.
    filter_.relative_error = exact_argument_ ? 0x1p-52 : 0x1p-52 + 2 * 0x1p-53 * 0x1p7;
    o_lo_ = ordinal(d.x_lo);
    samples_ = static_cast<std::uint64_t>(ordinal(d.x_hi) - o_lo_) / d.stride + 1;
  }

  std::uint64_t samples() const { return samples_; }
  const Filter& filter() const { return filter_; }

  ChunkResult run_chunk(std::uint64_t chunk) const {
    const std::size_t n = primitives_.size();
    ChunkResult out;
    out.bands.resize(n * band_count);
    std::vector<float> r(n);
    const std::uint64_t first = chunk * chunk_samples, last = std::min(samples_, first + chunk_samples);
    const double tol = 2 * filter_.relative_error;
    for (std::uint64_t j = first; j < last; ++j) {
      const std::int64_t o = o_lo_ + static_cast<std::int64_t>(j * domain_.stride);
      const float x = from_ordinal(o);
      for (std::size_t p = 0; p < n; ++p) r[p] = primitives_[p].compute(x);
      const double z = exact_argument_ ? static_cast<double>(x)
                                       : static_cast<double>(domain_.s) *
                                             (static_cast<double>(x) - static_cast<double>(domain_.m));
      const int band = band_of(z);
      const Reference ref = reference(z, tol);
      const bool undecided = ref.undecided;
      const float rn = ref.rounded;
      if (undecided) {
        ++out.mpfr_inline;
        const Real exact = exact_value(x, domain_.m, domain_.s);
        const auto rounded = static_cast<float>(oracle::round_to(exact, Format::f32));
        for (std::size_t p = 0; p < n; ++p)
          account(out.bands[p * band_count + band], exact_ulp_error(r[p], exact), r[p], rounded, o);
      } else {
        for (std::size_t p = 0; p < n; ++p) {
          double err = std::fabs((static_cast<double>(r[p]) - ref.offset) - ref.value) / ref.ulp;
          if (std::isnan(err)) err = inf;
          account(out.bands[p * band_count + band], err, r[p], rn, o);
        }
      }
    }
    for (BandAccumulator& a : out.bands) {  // keep only what may still be a maximum
      prune(a.max, filter_);
      a.max.kept.shrink_to_fit();
    }
    return out;
  }

  // The certified maximum among the candidates of one (primitive, band).
  // `top` is the band's largest filtered error, at `top_at`; `dropped` the
  // largest filtered error a chunk let go of.
  MaxError certify(std::size_t p, std::vector<Candidate> kept, double top, std::int64_t top_at, double dropped,
                   std::uint64_t& certified) const {
    MaxError best;
    if (top < 0) return best;  // no input
    const double floor = top - 2 * filter_.tolerance(top);
    if (floor < negligible) {  // the filter's figure, uncertified
      const float x = from_ordinal(top_at);
      const float r = primitives_[p].compute(x);
      return {top, x, r, std::exp(static_cast<double>(domain_.s) * (static_cast<double>(x) - domain_.m)), false};
    }
    std::erase_if(kept, [&](const Candidate& c) { return c.filtered < floor; });
    // Every input of the window recomputed: the exact maximum. Else the
    // certified_per_band largest: an exact error within 2 tolerance of it.
    const bool whole_window = dropped < floor && kept.size() <= certified_per_band;
    if (kept.size() > certified_per_band) {
      std::nth_element(kept.begin(), kept.begin() + certified_per_band, kept.end(), larger);
      kept.resize(certified_per_band);
    }
    std::vector<std::int64_t> ordinals;
    for (const Candidate& c : kept) ordinals.push_back(c.ordinal);
    std::sort(ordinals.begin(), ordinals.end());
    ordinals.erase(std::unique(ordinals.begin(), ordinals.end()), ordinals.end());
    bool first = true;
    for (std::int64_t o : ordinals) {
      const float x = from_ordinal(o);
      const float r = primitives_[p].compute(x);
      const Real exact = exact_value(x, domain_.m, domain_.s);
      const double e = exact_ulp_error(r, exact);
      ++certified;
      if (first || e > best.ulp) {  // ascending x: the smallest x keeps a tie
        best = {e, x, r, static_cast<double>(exact), whole_window};
        first = false;
      }
    }
    return best;
  }

 private:
  void account(BandAccumulator& a, double err, float r, float rounded, std::int64_t o) const {
    ++a.inputs;
    a.sum_ulp += err;
    if (std::bit_cast<std::uint32_t>(r) != std::bit_cast<std::uint32_t>(rounded) && !(r == 0 && rounded == 0))
      ++a.not_correctly_rounded;
    if (r == 0 && rounded != 0) ++a.flushes;
    track(a.max, err, o, filter_);
  }

  SweepDomain domain_;
  const std::vector<SweepPrimitive>& primitives_;
  bool exact_argument_ = true;
  Filter filter_{};
  std::int64_t o_lo_ = 0;
  std::uint64_t samples_ = 0;
};

nlohmann::json stats_json(const ErrorStats& s) {
  nlohmann::json j;
  j["inputs"] = s.inputs;
  if (s.inputs == 0) {
    j["max_ulp"] = nullptr;
    return j;
  }
  j["max_ulp"] = s.max.ulp;
  j["max_ulp_certified"] = s.max.certified;
  j["max_ulp_at"] = hex(s.max.at);
  j["max_ulp_at_decimal"] = fmt::format("{:.9g}", s.max.at);
  j["result_at_max"] = hex(s.max.result);
  j["exact_at_max"] = fmt::format("{:.9e}", s.max.exact);
  j["mean_ulp"] = s.mean_ulp;
  j["not_correctly_rounded"] = s.not_correctly_rounded;
  j["flushes_to_zero"] = s.flushes_to_zero;
  return j;
}

}  // namespace

// ------------------------------------------------------------------ domains

SweepDomain z_domain(std::uint64_t stride) { return {0.0f, 1.0f, underflow_threshold, 0.0f, stride}; }

SweepDomain fold_domain(float m, float s, std::uint64_t stride) {
  if (!(s > 0) || !std::isfinite(s) || !std::isfinite(m)) throw std::invalid_argument("fold_domain: s > 0, m finite");
  mpfr_t t;
  mpfr_init2(t, 256);
  mpfr_const_log2(t, MPFR_RNDD);
  mpfr_mul_si(t, t, -150, MPFR_RNDU);  // -150 ln 2 (directed roundings: see below)
  mpfr_div_d(t, t, static_cast<double>(s), MPFR_RNDU);
  mpfr_add_d(t, t, static_cast<double>(m), MPFR_RNDU);
  // m - 150 ln 2 / s, the 256-bit value above it; rounded up to f32 this is
  // the smallest f32 x with s (x - m) >= -150 ln 2 unless an f32 lies within
  // 2^-250 of it, which no f32 near m - 104/s does for the m and s used.
  const float lo = mpfr_get_flt(t, MPFR_RNDU);
  mpfr_clear(t);
  return {m, s, lo, m, stride};
}

std::vector<SweepPrimitive> z_domain_primitives() {
  return {
      {"expf_glibc", "glibc expf", [](float z) { return expf_glibc(z); }},
      {"exp_fold_fma", "FA2 fold at s = 1, m = 0: exp2f(fl(z log2e_f32))", [](float z) { return exp_fold_fma(z); }},
      {"exp2_poly2", "Cody-Waite + degree-2 minimax 2^f", [](float z) { return exp2_poly<2>(z); }},
      {"exp2_poly3", "Cody-Waite + degree-3 minimax 2^f", [](float z) { return exp2_poly<3>(z); }},
      {"exp2_poly4", "Cody-Waite + degree-4 minimax 2^f", [](float z) { return exp2_poly<4>(z); }},
      {"exp2_poly5", "Cody-Waite + degree-5 minimax 2^f", [](float z) { return exp2_poly<5>(z); }},
      {"expf_cuda_model", "__expf model: exp2f(fl(z log2e_f32)), FTZ", [](float z) { return expf_cuda_model(z); }},
  };
}

std::vector<SweepPrimitive> fold_domain_primitives(float m, float s) {
  return {{"exp_fold_fma", fmt::format("FA2 fold: exp2f(fma(x, fl(s log2 e), -fl(m fl(s log2 e)))), m = {}, s = {}", m, s),
           [m, s](float x) { return exp_fold_fma(x, m, s); }}};
}

SweepPrimitive planted_coefficient_primitive() {
  static const std::vector<float> planted = [] {
    const std::span<const float> c = exp2_poly_coefficients(5);
    std::vector<float> v(c.begin(), c.end());
    if (v[3] != 0x1.c6b752p-5f) throw std::logic_error("planted_coefficient_primitive: c_3 is no longer 0x1.c6b752p-5");
    v[3] = 0x1.c6b352p-5f;  // one hex digit mistyped
    return v;
  }();
  return {"exp2_poly5_planted", "exp2_poly5 with c_3 mistyped (0x1.c6b752p-5 -> 0x1.c6b352p-5)",
          [](float z) { return exp2_poly_with(planted, z); }};
}

std::string band_name(int band) {
  if (band == 0) return "[0, 1)";
  if (band == band_count - 2) return "[64, 126 ln 2)";
  if (band == band_count - 1) return "[126 ln 2, 150 ln 2]";
  return fmt::format("[{}, {})", 1 << (band - 1), 1 << band);
}

bool band_is_subnormal(int band) { return band == band_count - 1; }

double PrimitiveResult::max_ulp_normal_results() const {
  double m = 0;
  for (int b = 0; b < band_count; ++b)
    if (!band_is_subnormal(b) && bands[b].inputs > 0) m = std::max(m, bands[b].max.ulp);
  return m;
}

// -------------------------------------------------------------------- run

SweepResult run_sweep(const SweepDomain& domain, const std::vector<SweepPrimitive>& primitives, unsigned threads) {
  const Sweep sweep(domain, primitives);
  const std::uint64_t chunks = (sweep.samples() + chunk_samples - 1) / chunk_samples;
  std::vector<ChunkResult> results(chunks);
  std::atomic<std::uint64_t> next{0};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  const auto worker = [&] {
    try {
      for (std::uint64_t c; !failed && (c = next++) < chunks;) results[c] = sweep.run_chunk(c);
    } catch (...) {
      if (!failed.exchange(true)) failure = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::max(1u, threads); ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);

  SweepResult out;
  out.domain = domain;
  out.inputs = sweep.samples();
  out.filter_relative_error = sweep.filter().relative_error;
  const std::size_t n = primitives.size();
  for (std::size_t p = 0; p < n; ++p) {
    PrimitiveResult pr;
    pr.name = primitives[p].name;
    pr.description = primitives[p].description;
    double total_sum = 0;
    for (int b = 0; b < band_count; ++b) {
      ErrorStats& s = pr.bands[b];
      double sum = 0;
      std::vector<Candidate> kept;
      double top = -1, dropped = -1;
      std::int64_t top_at = 0;
      for (const ChunkResult& c : results) {  // chunk order: the sums are deterministic
        const BandAccumulator& a = c.bands[p * band_count + b];
        if (a.max.running > top) top = a.max.running, top_at = a.max.running_at;
        dropped = std::max(dropped, a.max.dropped);
        s.inputs += a.inputs;
        s.not_correctly_rounded += a.not_correctly_rounded;
        s.flushes_to_zero += a.flushes;
        sum += a.sum_ulp;
        kept.insert(kept.end(), a.max.kept.begin(), a.max.kept.end());
      }
      s.mean_ulp = s.inputs > 0 ? sum / static_cast<double>(s.inputs) : 0;
      s.max = sweep.certify(p, std::move(kept), top, top_at, dropped, out.mpfr_certified);
      total_sum += sum;
      ErrorStats& all = pr.all;
      all.inputs += s.inputs;
      all.not_correctly_rounded += s.not_correctly_rounded;
      all.flushes_to_zero += s.flushes_to_zero;
      if (s.inputs > 0 && (all.inputs == s.inputs || s.max.ulp > all.max.ulp ||
                           (s.max.ulp == all.max.ulp && s.max.at < all.max.at)))
        all.max = s.max;
    }
    pr.all.mean_ulp = pr.all.inputs > 0 ? total_sum / static_cast<double>(pr.all.inputs) : 0;
    out.primitives.push_back(std::move(pr));
  }
  for (const ChunkResult& c : results) out.mpfr_inline += c.mpfr_inline;
  return out;
}

// ----------------------------------------------------------------- output

nlohmann::json to_json(const SweepResult& r) {
  nlohmann::json j;
  j["tool"] = "exp_lab_sweep";
  j["domain"] = {{"exact", "e^(s (x - m))"},
                 {"m", r.domain.m},
                 {"s", r.domain.s},
                 {"x_lo", hex(r.domain.x_lo)},
                 {"x_hi", hex(r.domain.x_hi)},
                 {"stride", r.domain.stride},
                 {"inputs", r.inputs}};
  j["reference"] = {{"filter", "glibc exp in double of s (x - m) in double"},
                    {"filter_relative_error", r.filter_relative_error},
                    {"ulp_tolerance", Filter{r.filter_relative_error}.tolerance(0)},
                    {"mpfr_bits", exact_bits},
                    {"mpfr_inline", r.mpfr_inline},
                    {"mpfr_certified", r.mpfr_certified},
                    {"certified", "max_ulp, not_correctly_rounded, flushes_to_zero; mean_ulp within ulp_tolerance"}};
  nlohmann::json prims = nlohmann::json::array();
  for (const PrimitiveResult& p : r.primitives) {
    nlohmann::json pj = stats_json(p.all);
    pj["name"] = p.name;
    pj["description"] = p.description;
    pj["max_ulp_normal_results"] = p.max_ulp_normal_results();
    nlohmann::json bands = nlohmann::json::array();
    for (int b = 0; b < band_count; ++b) {
      nlohmann::json bj = stats_json(p.bands[b]);
      bj["abs_z"] = band_name(b);
      bands.push_back(std::move(bj));
    }
    pj["bands"] = std::move(bands);
    prims.push_back(std::move(pj));
  }
  j["primitives"] = std::move(prims);
  return j;
}

namespace {
// A maximum as the table shows it: 4 digits, "(filter)" where uncertified.
std::string max_text(const MaxError& m) {
  return m.certified ? fmt::format("{:.4g}", m.ulp) : fmt::format("{:.4g} (filter)", m.ulp);
}
}  // namespace

std::string text_table(const SweepResult& r) {
  std::string out = fmt::format(
      "e^(s (x - m)), m = {}, s = {}, x in [{}, {}], stride {}: {} inputs\n"
      "reference: exp in double (relative error <= {:.3g}); MPFR for {} undecided inputs and {} maximum candidates\n\n",
      r.domain.m, r.domain.s, hex(r.domain.x_lo), hex(r.domain.x_hi), r.domain.stride, r.inputs,
      r.filter_relative_error, r.mpfr_inline, r.mpfr_certified);
  out += "| primitive | max ulp | at x | mean ulp | not correctly rounded | flushes to 0 | max ulp, normal results |\n"
         "|---|---|---|---|---|---|---|\n";
  for (const PrimitiveResult& p : r.primitives)
    out += fmt::format("| {} | {} | {} ({:.7g}) | {:.4g} | {} | {} | {:.4g} |\n", p.name, max_text(p.all.max),
                       hex(p.all.max.at), p.all.max.at, p.all.mean_ulp, p.all.not_correctly_rounded,
                       p.all.flushes_to_zero, p.max_ulp_normal_results());
  out += "\nmax ulp by |z| band (z = s (x - m)):\n\n| primitive |";
  for (int b = 0; b < band_count; ++b) out += fmt::format(" {} |", band_name(b));
  out += "\n|---|";
  for (int b = 0; b < band_count; ++b) out += "---|";
  out += "\n";
  for (const PrimitiveResult& p : r.primitives) {
    out += fmt::format("| {} |", p.name);
    for (int b = 0; b < band_count; ++b)
      out += p.bands[b].inputs > 0 ? fmt::format(" {} |", max_text(p.bands[b].max)) : std::string(" - |");
    out += "\n";
  }
  return out;
}

// ------------------------------------------------------------ expectations

std::vector<std::string> check_expectations(const SweepResult& r) {
  std::vector<std::string> failed;
  for (const PrimitiveResult& p : r.primitives) {
    const double m = p.all.max.ulp;
    if (p.all.inputs == 0) continue;
    if (p.name == "expf_glibc") {
      // glibc's expf: 0.502 ulp (REFERENCE.md; its source's comment).
      if (!(m < 1)) failed.push_back(fmt::format("expf_glibc: max {} ulp, not below 1", m));
      if (!(m <= 0.502)) failed.push_back(fmt::format("expf_glibc: max {} ulp, above glibc's 0.502", m));
    }
    for (int d = 2; d <= 5; ++d)
      if (p.name == fmt::format("exp2_poly{}", d) && !(m <= exp2_poly_accuracy(d).ulp_bound))
        failed.push_back(fmt::format("{}: max {} ulp above its bound {}", p.name, m, exp2_poly_accuracy(d).ulp_bound));
    if (p.name == "exp2_poly5_planted" && !(m > exp2_poly_accuracy(5).ulp_bound))
      failed.push_back(fmt::format("exp2_poly5_planted: max {} ulp within the degree-5 bound {}: the planted "
                                   "coefficient went unnoticed",
                                   m, exp2_poly_accuracy(5).ulp_bound));
  }
  return failed;
}

}  // namespace softcheck::exp_lab
