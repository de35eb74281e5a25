// Soundness of the oracle's fast tiers, the double one and the
// extended one alike: on every row generator of
// properties/ (the extreme ones included: huge, subnormal, -1e9 and lowest
// masks, overflow and underflow edges, fully masked, +inf/NaN rows) and on
// every input family, the exact MPFR value lies inside the fast tier's stated
// enclosure, its zero states are right, and every metric compare_row_fast
// decides is within its stated tolerance of compare_row's (counts and bits
// exactly equal).
#include <gtest/gtest.h>
#include <mpfr.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <xmmintrin.h>

#include "softcheck/fast_oracle.hpp"
#include "softcheck/generators.hpp"
#include "softcheck/metrics.hpp"
#include "softcheck/oracle.hpp"
#include "double_double.hpp"

namespace softcheck::oracle::detail {
int& fast_tier_vectors();  // fast_rows.cpp: 0 best vectors, 1 baseline, 2 scalar code, 3 AVX2 at most
bool& fast_tier_keeps_preparations();  // fast_compare.cpp: a DD row's preparations kept row to row
}

using namespace softcheck;
using oracle::FastRow;
using oracle::Real;
using oracle::ZeroState;

namespace {

constexpr Format kFormats[] = {Format::f32, Format::f16, Format::bf16, Format::f64};

// A tier's number (double, long double or double-double) exactly in MPFR:
// `out` needs 2200 bits for a double-double's two words.
void set_exact(mpfr_t out, long double v) { mpfr_set_ld(out, v, MPFR_RNDN); }
void set_exact(mpfr_t out, oracle::DD v) {
  mpfr_set_d(out, v.hi, MPFR_RNDN);
  mpfr_add_d(out, out, v.lo, MPFR_RNDN);
}
bool is_inf(long double v) { return std::isinf(v); }
bool is_inf(oracle::DD v) { return std::isinf(v.hi); }
bool sign_of(long double v) { return std::signbit(v); }
bool sign_of(oracle::DD v) { return std::signbit(v.hi); }
long double approx(long double v) { return v; }
long double approx(oracle::DD v) { return static_cast<long double>(v.hi) + v.lo; }

// |exact - (value + res)| <= err + 2^-250 |value|, decided exactly in MPFR.
// The slack is exact_row's own error: a few units of 2^-256 of the value
// (oracle.hpp), which can exceed a tier's radius.
template <class T>
bool inside_pair(const Real& exact, T value, T res, T err) {
  mpfr_srcptr v = exact.backend().data();
  // -inf with radius inf: the double-double tier's mark for a log-softmax
  // past f64's range, which must round to -inf there.
  if (is_inf(value) && is_inf(err))
    return !mpfr_inf_p(v) && std::isinf(oracle::round_to(exact, Format::f64)) &&
           (mpfr_signbit(v) != 0) == sign_of(value);
  if (is_inf(value)) return mpfr_inf_p(v) && (mpfr_signbit(v) != 0) == sign_of(value) && approx(err) == 0;
  mpfr_t d, t, e;
  mpfr_init2(d, mpfr_get_prec(v) + 33000);  // exact differences whatever the exponents
  mpfr_init2(t, 2200);
  mpfr_init2(e, 2200);
  set_exact(t, value);
  mpfr_sub(d, v, t, MPFR_RNDN);
  set_exact(t, res);
  mpfr_sub(d, d, t, MPFR_RNDN);
  mpfr_abs(d, d, MPFR_RNDN);
  set_exact(e, err);
  set_exact(t, value);
  mpfr_abs(t, t, MPFR_RNDN);
  mpfr_mul_2si(t, t, -250, MPFR_RNDN);
  mpfr_add(e, e, t, MPFR_RNDU);
  const bool ok = mpfr_lessequal_p(d, e);
  mpfr_clears(d, t, e, static_cast<mpfr_ptr>(nullptr));
  return ok;
}

// |exact - value| <= err + 2^-250 |value|, exactly.
template <class T>
bool inside(const Real& exact, T value, T err) {
  return inside_pair(exact, value, T(0), err);
}

bool zero_state_right(ZeroState z, const Real& exact) {
  const bool is_zero = mpfr_zero_p(exact.backend().data()) != 0;
  return z == ZeroState::unknown || (z == ZeroState::zero) == is_zero;
}

// A plausible kernel result: the correctly rounded value moved by a few
// quanta of the format (or a NaN / inf now and then), always a value of f.
double nudge(double r, int steps, Format f) {
  const FormatInfo fi = info(f);
  for (int i = 0; i < std::abs(steps) && std::isfinite(r); ++i) {
    const int e = r == 0 ? fi.emin : std::max(std::ilogb(r), fi.emin);
    r = round_to_format(r + (steps > 0 ? 1 : -1) * std::ldexp(1.0, e - fi.precision + 1), f);
  }
  return r;
}

// A kernel's result row for exact values ref: each correctly rounded value
// nudged by steps[(i + shift) % steps.size()] quanta of f, or replaced by a
// NaN (99), +inf (98) or 0 (97).
std::vector<double> result_row(const std::vector<Real>& ref, Format f, const std::vector<int>& steps,
                               std::size_t shift = 0) {
  std::vector<double> y(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const int s = steps[(i + shift) % steps.size()];
    const double rounded = oracle::round_to(ref[i], f);
    y[i] = s == 99 ? NAN : s == 98 ? INFINITY : s == 97 ? 0.0 : std::isfinite(rounded) ? nudge(rounded, s, f) : rounded;
  }
  return y;
}

// Each tier's numbers as the test compares them: long double holds double's.
template <class R>
using Held = std::conditional_t<std::is_same_v<R, oracle::DD>, oracle::DD, long double>;

template <class R>
void check_tier(const oracle::BasicFastRow<R>& fast, const oracle::ExactRow& exact, const std::vector<double>& x,
                Format f, const std::vector<int>& steps) {
  using H = Held<R>;
  RC_ASSERT(fast.status == exact.status);
  if (exact.status != oracle::RowStatus::ok || !fast.usable) return;
  const std::size_t n = x.size();
  RC_ASSERT(fast.softmax.size() == n);
  for (std::size_t i = 0; i < n; ++i) {
    // The enclosures hold the exact value (exact_row's, within its own
    // error: inside_pair's slack).
    RC_ASSERT(inside<H>(exact.softmax[i], fast.softmax[i], fast.softmax_err[i]));
    RC_ASSERT(inside<H>(exact.log_softmax[i], fast.log_softmax[i], fast.log_softmax_err[i]));
    RC_ASSERT(inside_pair<H>(exact.log_softmax[i], fast.log_softmax[i], fast.log_softmax_res[i],
                             fast.log_softmax_tight[i]));
    RC_ASSERT(zero_state_right(fast.softmax_zero[i], exact.softmax[i]));
    RC_ASSERT(zero_state_right(fast.log_softmax_zero[i], exact.log_softmax[i]));
  }
  // Metrics decided from the enclosures agree with MPFR's.
  for (Op op : {Op::softmax, Op::log_softmax}) {
    const auto& ref = op == Op::softmax ? exact.softmax : exact.log_softmax;
    const std::vector<double> y = result_row(ref, f, steps);
    const RowError want = compare_row(y, ref, f, op);
    const auto got = oracle::compare_row_fast(y, fast, f, spec(op).out[0].kind);
    if (!got) continue;  // undecided: the run falls back to MPFR
    const RowError& e = got->error;
    RC_ASSERT(e.elements == want.elements);
    RC_ASSERT(e.measured == want.measured);
    RC_ASSERT(e.nonfinite == want.nonfinite);
    RC_ASSERT(e.special_mismatch == want.special_mismatch);
    RC_ASSERT(e.max_bits == want.max_bits);
    RC_ASSERT(e.sum_bits == want.sum_bits);
    RC_ASSERT(std::fabs(e.max_ulp - want.max_ulp) <= got->max_ulp_err);
    // Within 1/1000 ulp, or 2^-20/1000 of the figure when that is more
    // (fast_oracle.hpp).
    RC_ASSERT(got->max_ulp_err <= 1e-3 * std::max(1.0, want.max_ulp * 0x1p-20) * 1.001);
    RC_ASSERT(std::fabs(e.sum_ulp - want.sum_ulp) <=
              1e-3 * (static_cast<double>(want.measured) + want.sum_ulp * 0x1p-20) * 1.001 + 1e-9);
    const double u = unit_roundoff(f);
    if (std::isinf(want.max_rel))
      RC_ASSERT(std::isinf(e.max_rel));
    else
      RC_ASSERT(std::fabs(e.max_rel - want.max_rel) <= 1e-3 * u * std::max(1.0, want.max_rel) * 1.001);
    RC_ASSERT(std::fabs(e.normwise - want.normwise) <= 1e-3 * std::max(1.0, want.normwise) * 1.001);
    for (std::size_t i = 0; i < n; ++i) {
      const ElementError ee = compare_element(y[i], ref[i], f);
      RC_ASSERT((ee.cls == ElementClass::finite) == (got->finite[i] != 0));
      if (ee.cls == ElementClass::finite) RC_ASSERT(std::fabs(ee.ulp - got->ulp[i]) <= got->ulp_err[i]);
    }
  }
  // The row's scalars (lse, entropy): enclosures that hold MPFR's value, a
  // right zero state, and the figures of their Metric::absolute as MPFR's.
  for (Op op : {Op::lse, Op::entropy}) {
    const Operand& out = spec(op).out[0];
    const oracle::Real& ref = op == Op::lse ? exact.lse : exact.entropy;
    R v, err;
    oracle::ZeroState zero;
    if (!oracle::scalar_enclosure(fast, out.kind, v, err, zero)) continue;
    RC_ASSERT(inside<H>(ref, v, err));
    RC_ASSERT(zero_state_right(zero, ref));
    const int s = steps[0];
    const double rounded = oracle::round_to(ref, f);
    const std::vector<double> y{s == 99   ? NAN
                                : s == 98 ? INFINITY
                                : s == 97 ? 0.0
                                : std::isfinite(rounded) ? nudge(rounded, s, f)
                                                         : rounded};
    const std::vector<oracle::Real> refs{ref};
    const RowError want = compare_row(y, refs, f, out);
    const auto got = oracle::compare_row_fast(y, fast, f, out.kind);
    if (!got) continue;
    const RowError& e = got->error;
    RC_ASSERT(e.elements == 1u);
    RC_ASSERT(e.measured == want.measured);
    RC_ASSERT(e.nonfinite == want.nonfinite);
    RC_ASSERT(e.max_bits == want.max_bits);
    RC_ASSERT(std::fabs(e.max_ulp - want.max_ulp) <= got->max_ulp_err);
    RC_ASSERT(got->max_ulp_err <= 1e-3 * std::max(1.0, want.max_ulp * 0x1p-20) * 1.001);
    const double u = unit_roundoff(f);
    if (std::isinf(want.max_rel))
      RC_ASSERT(std::isinf(e.max_rel));
    else
      RC_ASSERT(std::fabs(e.max_rel - want.max_rel) <= 1e-3 * u * std::max(1.0, want.max_rel) * 1.001);
  }
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Two lists of compare_row_fast's answers, the same bit for bit.
void assert_same_decisions(const std::vector<std::optional<oracle::FastRowError>>& got,
                           const std::vector<std::optional<oracle::FastRowError>>& want) {
  RC_ASSERT(got.size() == want.size());
  for (std::size_t j = 0; j < want.size(); ++j) {
    RC_ASSERT(got[j].has_value() == want[j].has_value());
    if (!want[j]) continue;
    const oracle::FastRowError &g = *got[j], &w = *want[j];
    RC_ASSERT(g.error.elements == w.error.elements);
    RC_ASSERT(g.error.measured == w.error.measured);
    RC_ASSERT(g.error.nonfinite == w.error.nonfinite);
    RC_ASSERT(g.error.special_mismatch == w.error.special_mismatch);
    RC_ASSERT(g.error.worst_index == w.error.worst_index);
    for (auto m : {&RowError::max_ulp, &RowError::sum_ulp, &RowError::max_bits, &RowError::sum_bits,
                   &RowError::max_rel, &RowError::max_abs, &RowError::normwise})
      RC_ASSERT(same_bits(g.error.*m, w.error.*m));
    RC_ASSERT(same_bits(g.max_ulp_err, w.max_ulp_err));
    RC_ASSERT(same_bits(g.ulp, w.ulp));
    RC_ASSERT(same_bits(g.ulp_err, w.ulp_err));
    RC_ASSERT(same_bits(g.finite, w.finite));
  }
}

// The double tier's vectors (baseline x86-64, AVX2 and AVX-512 where the CPU
// has them) give the scalar code's rows and decisions bit for bit
// (fast_vectors.hpp, fast_compare.cpp "4 lanes").
void check_vector_paths(const std::vector<double>& x, double temperature, Format f, const std::vector<int>& steps,
                        const oracle::ExactRow& exact) {
  struct Path {
    oracle::DoubleFastRow row;
    std::vector<std::optional<oracle::FastRowError>> decided;
  };
  std::vector<Path> paths;
  int& path = oracle::detail::fast_tier_vectors();
  struct Restore {
    int& p;
    ~Restore() { p = 0; }
  } restore{path};
  for (int p : {2, 1, 3, 0}) {
    path = p;
    Path out;
    oracle::double_fast_row(x, temperature, out.row);
    if (out.row.status == oracle::RowStatus::ok && out.row.usable && exact.status == oracle::RowStatus::ok)
      for (Op op : {Op::softmax, Op::log_softmax}) {
        const auto& ref = op == Op::softmax ? exact.softmax : exact.log_softmax;
        out.decided.push_back(oracle::compare_row_fast(result_row(ref, f, steps), out.row, f, spec(op).out[0].kind));
      }
    paths.push_back(std::move(out));
  }
  const Path& want = paths[0];  // the scalar code
  for (std::size_t p = 1; p < paths.size(); ++p) {
    const Path& got = paths[p];
    RC_ASSERT(got.row.status == want.row.status);
    RC_ASSERT(got.row.usable == want.row.usable);
    if (want.row.status != oracle::RowStatus::ok || !want.row.usable) continue;
    RC_ASSERT(same_bits(got.row.softmax, want.row.softmax));
    RC_ASSERT(same_bits(got.row.softmax_err, want.row.softmax_err));
    RC_ASSERT(same_bits(got.row.log_softmax, want.row.log_softmax));
    RC_ASSERT(same_bits(got.row.log_softmax_err, want.row.log_softmax_err));
    RC_ASSERT(same_bits(got.row.log_softmax_res, want.row.log_softmax_res));
    RC_ASSERT(same_bits(got.row.log_softmax_tight, want.row.log_softmax_tight));
    RC_ASSERT(same_bits(got.row.softmax_zero, want.row.softmax_zero));
    RC_ASSERT(same_bits(got.row.log_softmax_zero, want.row.log_softmax_zero));
    assert_same_decisions(got.decided, want.decided);
  }
}

// A DD row's per-element preparations, kept by compare_row_fast for the next
// result judged against the same filling of the row, or formed for each
// result: the same decisions bit for bit, for several results on both
// outputs interleaved, after the row object held another row of the same
// length (whose preparations must not be reused).
void check_dd_preparations(const std::vector<double>& x, double temperature, const std::vector<int>& steps,
                           const oracle::ExactRow& exact) {
  if (exact.status != oracle::RowStatus::ok) return;
  bool& keep = oracle::detail::fast_tier_keeps_preparations();
  struct Restore {
    bool& k;
    ~Restore() { k = true; }
  } restore{keep};
  const auto decide_all = [&](const oracle::DDFastRow& row) {
    std::vector<std::optional<oracle::FastRowError>> decided;
    if (row.status != oracle::RowStatus::ok || !row.usable) return decided;
    for (std::size_t shift = 0; shift < 3; ++shift)
      for (Op op : {Op::softmax, Op::log_softmax}) {
        const auto& ref = op == Op::softmax ? exact.softmax : exact.log_softmax;
        decided.push_back(
            oracle::compare_row_fast(result_row(ref, Format::f64, steps, shift), row, Format::f64, spec(op).out[0].kind));
      }
    return decided;
  };
  keep = false;
  const auto want = decide_all(oracle::dd_fast_row(x, temperature));
  keep = true;
  std::vector<double> other(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) other[i] = static_cast<double>(i % 7) - 2.5;
  oracle::DDFastRow row;
  oracle::dd_fast_row(other, 1.0, row);
  (void)decide_all(row);
  oracle::dd_fast_row(x, temperature, row);
  assert_same_decisions(decide_all(row), want);
}

// ulp_exponents, wherever it decides, gives MPFR's exponents: of exact_row's
// values (of max(1, |v|) at_one), the marker for -inf, in every format.
template <class R>
void check_ulp_exponents(const oracle::BasicFastRow<R>& row, const oracle::ExactRow& exact) {
  if (exact.status != oracle::RowStatus::ok) return;
  std::vector<long> got;
  for (Format f : kFormats)
    for (OutputKind kind : {OutputKind::probabilities, OutputKind::log_probabilities})
      for (bool at_one : {false, true}) {
        if (!oracle::ulp_exponents(row, kind, f, at_one, got)) continue;
        const auto& ref = kind == OutputKind::probabilities ? exact.softmax : exact.log_softmax;
        RC_ASSERT(got.size() == ref.size());
        for (std::size_t i = 0; i < ref.size(); ++i) {
          const long want = isinf(ref[i])                   ? oracle::ulp_exponent_infinite
                            : at_one && abs(ref[i]) < 1 ? oracle::ulp_exponent(oracle::Real(1), f)
                                                          : oracle::ulp_exponent(ref[i], f);
          RC_ASSERT(got[i] == want);
        }
      }
}

// exact_text_fast, wherever it decides, gives to_string's text of MPFR's
// value: at 21 digits (the worst cases' texts) and at 32, past what the
// tier's enclosures usually decide, on a few elements of the row's DD tier.
void check_exact_texts(const std::vector<double>& x, double temperature, const oracle::ExactRow& exact) {
  if (exact.status != oracle::RowStatus::ok) return;
  const oracle::DDFastRow row = oracle::dd_fast_row(x, temperature);
  const std::size_t n = x.size();
  for (std::size_t i : {std::size_t{0}, n / 3, n / 2, n - 1})
    for (OutputKind kind : {OutputKind::probabilities, OutputKind::log_probabilities})
      for (int digits : {21, 32})
        if (const auto text = oracle::exact_text_fast(row, kind, i, digits))
          RC_ASSERT(*text == oracle::to_string(oracle::exact_values(exact, kind)[i], digits));
}

void check_row(const std::vector<double>& x, double temperature, Format f, const std::vector<int>& steps) {
  const oracle::ExactRow exact = oracle::exact_row(x, temperature);
  check_exact_texts(x, temperature, exact);
  check_ulp_exponents(oracle::dd_fast_row(x, temperature), exact);
  check_ulp_exponents(oracle::double_fast_row(x, temperature), exact);
  check_vector_paths(x, temperature, f, steps, exact);
  if (f == Format::f64) check_dd_preparations(x, temperature, steps, exact);
  check_tier(oracle::double_fast_row(x, temperature), exact, x, f, steps);
  check_tier(oracle::dd_fast_row(x, temperature), exact, x, f, steps);
  check_tier(oracle::fast_row(x, temperature), exact, x, f, steps);
  // The reusing overload gives the same row after a different one.
  oracle::DoubleFastRow reused = oracle::double_fast_row(std::vector<double>(x.size() + 3, -1.5), 2.0);
  oracle::double_fast_row(x, temperature, reused);
  check_tier(reused, exact, x, f, steps);
}

const gen::RowOptions kShort{512, 0.0};

rc::Gen<std::vector<int>> steps_gen() {
  return rc::gen::container<std::vector<int>>(
      3, rc::gen::weightedOneOf<int>({{20, rc::gen::inRange(-2, 3)},
                                       {1, rc::gen::just(99)},
                                       {1, rc::gen::just(98)},
                                       {1, rc::gen::just(97)}}));
}

template <class G>
void soundness(G make_row) {
  for (Format f : kFormats) {
    const auto row = *make_row(f);
    const double t = *gen::temperature();
    check_row(row, t, f, *steps_gen());
  }
}

}  // namespace

RC_GTEST_PROP(FastOracleSound, FiniteRows, ()) { soundness([](Format f) { return gen::finite_row(f, kShort); }); }
RC_GTEST_PROP(FastOracleSound, MaskedRows, ()) { soundness([](Format f) { return gen::masked_row(f, kShort); }); }
RC_GTEST_PROP(FastOracleSound, FullyMaskedRows, ()) {
  soundness([](Format f) { return gen::fully_masked_row(f, kShort); });
}
RC_GTEST_PROP(FastOracleSound, NonfiniteRows, ()) {
  soundness([](Format f) { return gen::nonfinite_row(f, kShort); });
}
RC_GTEST_PROP(FastOracleSound, FiniteMaskRows, ()) { soundness([](Format f) { return gen::mask_1e9_row(f, kShort); }); }
RC_GTEST_PROP(FastOracleSound, UnderflowRows, ()) {
  soundness([](Format f) { return gen::underflow_row(f, kShort); });
}
RC_GTEST_PROP(FastOracleSound, LatticeRows, ()) { soundness([](Format f) { return gen::lattice_row(f, kShort); }); }
RC_GTEST_PROP(FastOracleSound, EveryInputFamily, ()) {
  soundness([](Format f) { return gen::family_row(f, gen::RowDomain::any, kShort); });
}
// Equal maxima beside masked entries and entries at the format's lowest: a
// softmax of exactly 1/m where MPFR's exp of the others is exactly 0 (-inf;
// the lowest of f32, bf16 and f64, far below MPFR's exponent range; not
// f16's -65504, whose exp MPFR holds, nor v - 24), a binade edge when m is a
// power of two (exact_uniform_softmax, exact_figure).
RC_GTEST_PROP(FastOracleSound, UniformRows, ()) {
  soundness([](Format f) {
    return rc::gen::exec([f] {
      const auto m = *rc::gen::element<std::size_t>(1, 2, 3, 4, 8, 16, 64, 128, 256);
      const double v = round_to_format(*rc::gen::inRange(-2000, 2000) / 16.0, f);
      std::vector<double> x(m, v);
      const auto others = *rc::gen::inRange<std::size_t>(0, 4);
      for (std::size_t j = 0; j < others; ++j)
        x.insert(x.begin() + static_cast<std::ptrdiff_t>(*rc::gen::inRange<std::size_t>(0, x.size() + 1)),
                 *rc::gen::element(-std::numeric_limits<double>::infinity(), lowest(f), v - 24));
      return x;
    });
  });
}
RC_GTEST_PROP(FastOracleSound, AnyRow, ()) { soundness([](Format f) { return gen::any_row(f, kShort); }); }

// Long rows (the suite's 4096 and 65536 are where the time goes).
RC_GTEST_PROP(FastOracleSound, LongRowsOfEveryFamily, ()) {
  const Format f = *rc::gen::elementOf(std::vector<Format>{Format::f32, Format::f16});
  const auto row = *gen::family_row(f, gen::RowDomain::any, gen::RowOptions{8192, 1.0});
  check_row(row, *gen::temperature(), f, *steps_gen());
}

// The fast tiers are meant to decide nearly every f32 row of ordinary logits;
// a tier that always falls back would pass the soundness tests above.
template <class R>
void decides_ordinary_f32_rows(oracle::BasicFastRow<R> (*tier)(std::span<const double>, double)) {
  int decided = 0, rows = 0;
  for (std::size_t n : {1u, 3u, 31u, 1000u, 4096u}) {
    for (int s = 0; s < 4; ++s) {
      std::vector<double> x(n);
      for (std::size_t i = 0; i < n; ++i)
        x[i] = round_to_format(std::sin(static_cast<double>(i * 7 + static_cast<std::size_t>(s))) * 9, Format::f32);
      const oracle::BasicFastRow<R> fast = tier(x, 1.0);
      ASSERT_TRUE(fast.usable);
      std::vector<double> y(n);
      for (std::size_t i = 0; i < n; ++i) y[i] = round_to_format(static_cast<double>(fast.softmax[i]), Format::f32);
      ++rows;
      decided += oracle::compare_row_fast(y, fast, Format::f32, OutputKind::probabilities).has_value();
      // ... and its lse and entropy, as a kernel would round them.
      for (OutputKind kind : {OutputKind::log_sum_exp, OutputKind::entropy}) {
        R v, err;
        oracle::ZeroState zero;
        ASSERT_TRUE(oracle::scalar_enclosure(fast, kind, v, err, zero));
        const std::vector<double> scalar_result{round_to_format(static_cast<double>(v), Format::f32)};
        ++rows;
        decided += oracle::compare_row_fast(scalar_result, fast, Format::f32, kind).has_value();
      }
    }
  }
  EXPECT_EQ(decided, rows);
}

TEST(FastOracle, DoubleTierDecidesOrdinaryF32Rows) { decides_ordinary_f32_rows(&oracle::double_fast_row); }
TEST(FastOracle, ExtendedTierDecidesOrdinaryF32Rows) { decides_ordinary_f32_rows(&oracle::fast_row); }

// What the double tier hands to the extended one: rows its range cannot hold.
TEST(FastOracle, DoubleTierLeavesOverflowingDifferencesToTheExtendedTier) {
  const std::vector<double> wide{1e308, -1e308, 0.0};
  EXPECT_FALSE(oracle::double_fast_row(wide, 1.0).usable);  // 1e308 - (-1e308) overflows a double
  EXPECT_TRUE(oracle::fast_row(wide, 1.0).usable);
  const std::vector<double> tiny_quotient{0.0, -0x1p-1074};
  EXPECT_FALSE(oracle::double_fast_row(tiny_quotient, 4.0).usable);  // d = -2^-1076 is not normal
  EXPECT_TRUE(oracle::fast_row(tiny_quotient, 4.0).usable);
}

// A kernel that left flush-to-zero / denormals-are-zero set must not make the
// double tier compute with flushed subnormals: the row goes on to MPFR.
TEST(FastOracle, DoubleTierRefusesFlushToZeroArithmetic) {
  const std::vector<double> x{0.5, -1.0, -2.0};
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040U);  // FTZ and DAZ
  const bool usable_flushed = oracle::double_fast_row(x, 1.0).usable;
  _mm_setcsr(saved);
  EXPECT_FALSE(usable_flushed);
  EXPECT_TRUE(oracle::double_fast_row(x, 1.0).usable);
}

// A huge error is decided to a part in 2^30 of its size, not to 1/1000 ulp:
// shifted log-softmax's 0 for the dominant entry of [0, -70] in f64 is
// log1p(e^-70) ~ 4e-31, about 2^52 ulp, off. The double-double tier knows
// that figure to about 2^-52 relative (about one ulp of it), which the old
// absolute rule refused, sending the row to MPFR.
// A temperature near DBL_MAX: the double-double division x_i - x_k / T
// cannot be formed; the tier must leave the row to MPFR (before, its NaN
// quotient reached exp's range reduction: a NaN to long conversion, found by
// fuzz_differential under UBSan). Every tier agrees with MPFR or declines.
TEST(FastOracle, HugeTemperatureIsLeftToMpfrOrEnclosedCorrectly) {
  const std::vector<double> x(32, 0.0);
  const double t = 0x1.fffff7fefffffp+1023;
  const oracle::DDFastRow dd = oracle::dd_fast_row(x, t);
  const oracle::DoubleFastRow dbl = oracle::double_fast_row(x, t);
  const oracle::FastRow ext = oracle::fast_row(x, t);
  EXPECT_EQ(dd.status, oracle::RowStatus::ok);
  const auto uniform_or_declined = [](const auto& row) {
    if (!row.usable) return true;
    for (std::size_t i = 0; i < row.softmax.size(); ++i)
      if (!(std::fabs(static_cast<double>(row.softmax[i]) - 1.0 / 32) <= static_cast<double>(row.softmax_err[i])))
        return false;
    return true;
  };
  EXPECT_TRUE(uniform_or_declined(dd));
  EXPECT_TRUE(uniform_or_declined(dbl));
  EXPECT_TRUE(uniform_or_declined(ext));
}

TEST(FastOracle, HugeErrorsAreDecidedRelatively) {
  const std::vector<double> x{0.0, -70.0};
  const oracle::ExactRow exact = oracle::exact_row(x, 1.0);
  const std::vector<double> y{0.0, -70.0};  // log(1 + e^-70) rounds to 0 in f64
  const auto got = oracle::compare_row_fast(y, oracle::dd_fast_row(x, 1.0), Format::f64, OutputKind::log_probabilities);
  ASSERT_TRUE(got.has_value());
  const RowError want = compare_row(y, exact.log_softmax, Format::f64, Op::log_softmax);
  EXPECT_GT(want.max_ulp, 0x1p50);
  EXPECT_NEAR(got->error.max_ulp, want.max_ulp, got->max_ulp_err);
  EXPECT_LE(got->max_ulp_err, 1e-3 * want.max_ulp * 0x1p-20 * 1.001);
  EXPECT_GT(got->max_ulp_err, 1e-3);  // beyond the absolute rule
}

// A log-softmax value a hair beyond an f32 midpoint: x = [64, 16 - 2^-19]
// gives d = -(48 + 2^-19), halfway between 48 (even) and 48 + 2^-18 (odd),
// minus log1p(e^d) ~ 1e-21, so it rounds to the odd neighbour. The double
// tier has d exactly and the tiny part as its residual; it decides the
// rounding from the residual's side (ties to even picked 48 and left the row
// to MPFR), for the correctly rounded result and for one an ulp off.
TEST(FastOracle, LogSoftmaxJustPastAMidpointIsDecided) {
  const std::vector<double> x{64.0, 16.0 - 0x1p-19};
  const oracle::ExactRow exact = oracle::exact_row(x, 1.0);
  const double odd = -(48.0 + 0x1p-18);
  ASSERT_EQ(oracle::round_to(exact.log_softmax[1], Format::f32), odd);
  for (const double y1 : {odd, -48.0}) {
    const std::vector<double> y{oracle::round_to(exact.log_softmax[0], Format::f32), y1};
    for (const auto& fast : {oracle::double_fast_row(x, 1.0)}) {
      const auto got = oracle::compare_row_fast(y, fast, Format::f32, OutputKind::log_probabilities);
      ASSERT_TRUE(got.has_value()) << y1;
      const RowError want = compare_row(y, exact.log_softmax, Format::f32, Op::log_softmax);
      EXPECT_EQ(got->error.max_bits, want.max_bits);
      EXPECT_NEAR(got->error.max_ulp, want.max_ulp, got->max_ulp_err);
    }
    const auto ext = oracle::compare_row_fast(y, oracle::fast_row(x, 1.0), Format::f32, OutputKind::log_probabilities);
    ASSERT_TRUE(ext.has_value()) << y1;
    EXPECT_EQ(ext->error.max_bits, compare_row(y, exact.log_softmax, Format::f32, Op::log_softmax).max_bits);
  }
}

// f64 results: the double-double tier decides ordinary rows, and rows with
// -1e9 masks (their tiny softmax entries bounded through log-softmax), with
// the figures compare_row gives.
TEST(FastOracle, DoubleDoubleTierDecidesF64RowsWithMasks) {
  for (const std::vector<double>& x : {std::vector<double>{0.5, -1.25, 3.0, 2.75},
                                       std::vector<double>{0.0, -1e9, -1.0, -2.0, -1e9},
                                       std::vector<double>{7.0}}) {
    const oracle::DDFastRow fast = oracle::dd_fast_row(x, 1.0);
    const oracle::ExactRow exact = oracle::exact_row(x, 1.0);
    ASSERT_TRUE(fast.usable);
    for (Op op : {Op::softmax, Op::log_softmax}) {
      const auto& ref = op == Op::softmax ? exact.softmax : exact.log_softmax;
      std::vector<double> y(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {  // a kernel's result: off by an ulp, or exactly 0 where 0 is right
        const double rounded = oracle::round_to(ref[i], Format::f64);
        y[i] = rounded == 0 || std::isinf(rounded) ? rounded : nudge(rounded, 1, Format::f64);
      }
      const auto got = oracle::compare_row_fast(y, fast, Format::f64, spec(op).out[0].kind);
      ASSERT_TRUE(got.has_value()) << name(op) << " row of " << x.size();
      const RowError want = compare_row(y, ref, Format::f64, op);
      EXPECT_NEAR(got->error.max_ulp, want.max_ulp, got->max_ulp_err);
      EXPECT_EQ(got->error.max_bits, want.max_bits);
      EXPECT_NEAR(got->error.max_rel, want.max_rel, 1e-3 * 0x1p-53 * std::max(1.0, want.max_rel));
    }
  }
}

// A softmax of exactly 1/2^k (m equal maxima, the rest masked) sits on a
// binade edge, and a result one step off it is exactly 1/2 or 1 ulp away, on
// the report's histogram bin edges: each tier holds the value exactly and the
// figure with no uncertainty, the same double MPFR gives.
template <class R>
void uniform_rows_decided_exactly(oracle::BasicFastRow<R> (*tier)(std::span<const double>, double), Format f) {
  for (const std::size_t m : {2u, 8u, 128u, 4096u}) {
    for (const std::size_t masked : {0u, 3u}) {
      std::vector<double> x(m, 0.375);
      x.insert(x.begin() + 1, masked, -std::numeric_limits<double>::infinity());
      for (const double t : {1.0, 0.7}) {
        const oracle::BasicFastRow<R> fast = tier(x, t);
        const oracle::ExactRow exact = oracle::exact_row(x, t);
        ASSERT_TRUE(fast.usable);
        for (const int s : {-1, 0, 1}) {
          std::vector<double> y(x.size());
          // 1/m one step up (1 ulp of 1/m away) or one step down (1/2 ulp)
          const double v = 1.0 / static_cast<double>(m), p = std::ldexp(1.0, -info(f).precision);
          for (std::size_t i = 0; i < x.size(); ++i)
            y[i] = std::isinf(x[i]) ? 0.0 : s == 0 ? v : s > 0 ? nudge(v, 1, f) : v - v * p;
          const auto got = oracle::compare_row_fast(y, fast, f, OutputKind::probabilities);
          ASSERT_TRUE(got.has_value()) << "m " << m << " masked " << masked << " T " << t << " step " << s;
          const RowError want = compare_row(y, exact.softmax, f, Op::softmax);
          EXPECT_EQ(got->error.max_ulp, want.max_ulp) << "m " << m << " step " << s;
          EXPECT_EQ(got->error.max_ulp, s == 0 ? 0.0 : s > 0 ? 1.0 : 0.5);
          EXPECT_EQ(got->max_ulp_err, 0.0);
        }
      }
    }
  }
}
// benchdnn's ties: two maxima beside entries at the f64 (f32) lowest, whose
// exp MPFR has as exactly 0: the softmax is exactly 1/2 there.
TEST(FastOracle, TiesBesideTheLowestAreHeldExactly) {
  for (const Format f : {Format::f64, Format::f32}) {
    const std::vector<double> x{lowest(f), 89.0, lowest(f), 89.0};
    const oracle::ExactRow exact = oracle::exact_row(x, 1.0);
    ASSERT_EQ(exact.softmax[1], oracle::Real(0.5));
    if (f == Format::f64) {
      const oracle::DDFastRow fast = oracle::dd_fast_row(x, 1.0);
      ASSERT_TRUE(fast.usable);
      EXPECT_EQ(fast.softmax[1].hi, 0.5);
      EXPECT_EQ(fast.softmax_err[1].hi, 0.0);
    } else {
      const oracle::DoubleFastRow fast = oracle::double_fast_row(x, 1.0);
      ASSERT_TRUE(fast.usable);
      EXPECT_EQ(fast.softmax[1], 0.5);
      EXPECT_EQ(fast.softmax_err[1], 0.0);
    }
  }
}
TEST(FastOracle, UniformRowsOfPowerOfTwoLengthAreDecidedExactly) {
  uniform_rows_decided_exactly<double>(&oracle::double_fast_row, Format::f32);
  uniform_rows_decided_exactly<long double>(&oracle::fast_row, Format::f16);
  uniform_rows_decided_exactly<oracle::DD>(&oracle::dd_fast_row, Format::f64);
}

// x_i - x_k exactly on an f32 midpoint with log1p(r) ~ 1e-56 below it: a
// result on either neighbour is 1/2 ulp off to within 1e-56, and MPFR's
// figure is the double 0.5, on a histogram bin edge. The extended tier
// measures |r - v - res| to its tight radius and bounds MPFR's rounding of
// it: 0.5 with no uncertainty, where v's own rounding alone leaves ~1e-12.
TEST(FastOracle, LogSoftmaxHalfAnUlpFromAMidpointIsKnownExactly) {
  const double mid = -(128.0 + 0x1p-17);  // between the f32 values -128 and -128 - 2^-16
  // T = 1: a quotient by any other T carries the division's 2^-64 in the
  // tier, far more than the 1e-56 that decides the rounding here.
  for (const double t : {1.0}) {
    const std::vector<double> x{0.0, mid * t};
    const oracle::FastRow fast = oracle::fast_row(x, t);
    const oracle::ExactRow exact = oracle::exact_row(x, t);
    ASSERT_TRUE(fast.usable);
    for (const double r1 : {-128.0, -128.0 - 0x1p-16}) {
      const std::vector<double> y{0.0, r1};
      const auto got = oracle::compare_row_fast(y, fast, Format::f32, OutputKind::log_probabilities);
      ASSERT_TRUE(got.has_value()) << r1;
      const ElementError want = compare_element(r1, exact.log_softmax[1], Format::f32);
      EXPECT_EQ(want.ulp, 0.5);
      EXPECT_EQ(got->ulp[1], 0.5) << r1;
      EXPECT_EQ(got->ulp_err[1], 0.0) << r1;
    }
  }
}

// benchdnn's f64 rows: entries at the f64 lowest beside a few near 90. Their
// d_i is beyond the double-double tier's 2^900 and, for T < 1, beyond f64:
// the softmax entry is exactly 0 in MPFR, the log-softmax d_i - log1p(r) is
// formed with words up to DBL_MAX (exact_product), or rounds to -inf. Every
// output is decided as MPFR measures it; a finite result where f64
// overflows is left to MPFR.
// x_i - x_k beside DBL_MAX: TwoSum's s - a overflows while the difference
// does not, and the DD tier held a finite high word over a NaN low one as a
// number, its log-softmax NaN +- NaN on a usable row (found by
// FastOracleSound.FiniteRows). Such a difference leaves the row to MPFR, or
// the enclosures hold.
// The rows the properties measure spreads on: both tiers decide their ULP
// exponents, MPFR's (a softmax of exactly 1, an entry within 2^-259 of 1
// that MPFR rounds to 1, one just below 1, entries below the tier's exp
// floor, masked entries); and leaves an entry that may sit on a binade's
// edge (two equal maxima: 1/2 up to the others' tiny mass) to MPFR.
TEST(FastOracle, UlpExponentsOfTheRowsPropertiesMeasure) {
  const auto mpfr_exponents = [](const std::vector<double>& x, OutputKind kind, Format f) {
    const oracle::ExactRow e = oracle::exact_row(x);
    std::vector<long> k;
    for (const oracle::Real& v : oracle::exact_values(e, kind))
      k.push_back(isinf(v) ? oracle::ulp_exponent_infinite : oracle::ulp_exponent(v, f));
    return k;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::vector<double>> decided = {
      {3.0}, {0.0, -200.0}, {0.0, -40.0}, {0.0, -1e4, -2.0}, {-inf, 1.5, -inf, 0.25}, {1.0, 2.0, 3.0, 4.0}};
  for (const auto& x : decided)
    for (Format f : kFormats)
      for (OutputKind kind : {OutputKind::probabilities, OutputKind::log_probabilities}) {
        std::vector<long> got;
        ASSERT_TRUE(oracle::ulp_exponents(oracle::dd_fast_row(x), kind, f, false, got)) << x.size() << name(f);
        EXPECT_EQ(got, mpfr_exponents(x, kind, f)) << x.size() << name(f);
        ASSERT_TRUE(oracle::ulp_exponents(oracle::double_fast_row(x), kind, f, false, got)) << x.size() << name(f);
        EXPECT_EQ(got, mpfr_exponents(x, kind, f)) << x.size() << name(f);
      }
  const oracle::ExactRow near_one = oracle::exact_row(std::vector<double>{0.0, -200.0});
  EXPECT_EQ(near_one.softmax[0], 1) << "MPFR rounds 1 - e^-200 to 1 at 256 bits";
  std::vector<long> got;
  for (Format f : kFormats) {
    EXPECT_FALSE(oracle::ulp_exponents(oracle::dd_fast_row(std::vector<double>{5.0, 5.0, -800.0}),
                                       OutputKind::probabilities, f, false, got));
    EXPECT_FALSE(oracle::ulp_exponents(oracle::double_fast_row(std::vector<double>{5.0, 5.0, -800.0}),
                                       OutputKind::probabilities, f, false, got));
  }
}

// The worst cases' texts: decided by the DD tier on the rows the quick suite
// reports them for (a 65,536-entry row), the same text as MPFR's; left to
// MPFR where the enclosure cannot fix every digit, at a value that may be 0,
// and for what the tier does not enclose.
TEST(FastOracle, ExactTextsOfTheWorstCases) {
  const auto mpfr_text = [](const std::vector<double>& x, OutputKind kind, std::size_t i, int digits) {
    return oracle::to_string(oracle::exact_values(oracle::exact_row(x), kind)[i], digits);
  };
  std::vector<double> wide(65536);
  for (std::size_t i = 0; i < wide.size(); ++i)
    wide[i] = static_cast<double>(static_cast<float>(std::sin(static_cast<double>(i)) * 12.0));
  const oracle::ExactRow wide_exact = oracle::exact_row(wide);
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{4097}, std::size_t{65535}})
    for (OutputKind kind : {OutputKind::probabilities, OutputKind::log_probabilities}) {
      const auto text = oracle::exact_text_fast(oracle::dd_fast_row(wide), kind, i, 21);
      ASSERT_TRUE(text.has_value()) << i;
      EXPECT_EQ(*text, oracle::to_string(oracle::exact_values(wide_exact, kind)[i], 21)) << i;
    }
  // MPFR rounds 1 - e^-200 to 1 at 256 bits; its text is 1's.
  const std::vector<double> one_hot = {0.0, -200.0};
  EXPECT_EQ(oracle::exact_text_fast(oracle::dd_fast_row(one_hot), OutputKind::probabilities, 0, 21),
            std::optional<std::string>("1.00000000000000000000e+00"));
  EXPECT_EQ(mpfr_text(one_hot, OutputKind::probabilities, 0, 21), "1.00000000000000000000e+00");
  // An exact value (1/2, radius 0) is decided at any number of digits; an
  // inexact one not past the DD tier's ~2^-100: 40 digits are refused.
  const std::vector<double> pair = {1.0, 1.0}, three = {1.0, 2.0, 3.0};
  EXPECT_EQ(oracle::exact_text_fast(oracle::dd_fast_row(pair), OutputKind::probabilities, 1, 40),
            mpfr_text(pair, OutputKind::probabilities, 1, 40));
  EXPECT_FALSE(oracle::exact_text_fast(oracle::dd_fast_row(three), OutputKind::probabilities, 0, 40));
  EXPECT_FALSE(oracle::exact_text_fast(oracle::dd_fast_row(three), OutputKind::log_probabilities, 0, 40));
  // 0 inside the enclosure (a masked softmax entry), -inf, past the end,
  // a scalar kind, a row the tier does not take: MPFR's. Digits below 1 and
  // bits outside exact_row's range throw.
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> masked = {-inf, 0.5};
  EXPECT_FALSE(oracle::exact_text_fast(oracle::dd_fast_row(masked), OutputKind::probabilities, 0, 21));
  EXPECT_FALSE(oracle::exact_text_fast(oracle::dd_fast_row(masked), OutputKind::log_probabilities, 0, 21));
  EXPECT_FALSE(oracle::exact_text_fast(oracle::dd_fast_row(three), OutputKind::probabilities, 3, 21));
  EXPECT_FALSE(oracle::exact_text_fast(oracle::dd_fast_row(three), OutputKind::log_sum_exp, 0, 21));
  EXPECT_FALSE(
      oracle::exact_text_fast(oracle::dd_fast_row(std::vector<double>{1.0, inf}), OutputKind::probabilities, 0, 21));
  EXPECT_THROW((void)oracle::exact_text_fast(oracle::dd_fast_row(three), OutputKind::probabilities, 0, 21, 0),
               std::invalid_argument);
  EXPECT_THROW((void)oracle::exact_text_fast(oracle::dd_fast_row(three), OutputKind::probabilities, 0, 0),
               std::invalid_argument);
}

TEST(FastOracle, DoubleDoubleTierHoldsNoNaNWordBesideDblMax) {
  const std::vector<double> x{0x1.fffffffffffffp+1023, 0x1.3b0de6a1e5b2cp+1020};
  const oracle::ExactRow exact = oracle::exact_row(x, 1.0);
  const oracle::DDFastRow row = oracle::dd_fast_row(x, 1.0);
  ASSERT_EQ(row.status, exact.status);
  if (!row.usable) return;
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(inside<oracle::DD>(exact.softmax[i], row.softmax[i], row.softmax_err[i])) << i;
    EXPECT_TRUE(inside<oracle::DD>(exact.log_softmax[i], row.log_softmax[i], row.log_softmax_err[i])) << i;
  }
}

TEST(FastOracle, DoubleDoubleTierDecidesRowsAtTheF64Lowest) {
  const double lowest = std::numeric_limits<double>::lowest();
  const std::vector<double> x{lowest, 89.0, lowest, 88.0, lowest};
  for (const double t : {1.0, 0.7}) {
    const oracle::DDFastRow fast = oracle::dd_fast_row(x, t);
    const oracle::ExactRow exact = oracle::exact_row(x, t);
    ASSERT_TRUE(fast.usable) << t;
    for (Op op : {Op::softmax, Op::log_softmax}) {
      const auto& ref = op == Op::softmax ? exact.softmax : exact.log_softmax;
      for (const int s : {0, 1, -1}) {
        std::vector<double> y(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) {
          const double rounded = oracle::round_to(ref[i], Format::f64);
          y[i] = rounded == 0 || std::isinf(rounded) ? rounded : nudge(rounded, s, Format::f64);
        }
        const auto got = oracle::compare_row_fast(y, fast, Format::f64, spec(op).out[0].kind);
        ASSERT_TRUE(got.has_value()) << name(op) << " T " << t << " step " << s;
        const RowError want = compare_row(y, ref, Format::f64, op);
        EXPECT_EQ(got->error.measured, want.measured);
        EXPECT_NEAR(got->error.max_ulp, want.max_ulp, got->max_ulp_err);
        EXPECT_EQ(got->error.max_bits, want.max_bits);
        EXPECT_EQ(got->error.nonfinite, want.nonfinite);
        EXPECT_EQ(got->error.special_mismatch, want.special_mismatch);
      }
    }
    for (OutputKind kind : {OutputKind::log_sum_exp, OutputKind::entropy}) {
      oracle::DD v, err;
      oracle::ZeroState zero;
      ASSERT_TRUE(oracle::scalar_enclosure(fast, kind, v, err, zero)) << t;
      EXPECT_TRUE(inside<oracle::DD>(kind == OutputKind::log_sum_exp ? exact.lse : exact.entropy, v, err));
    }
    if (t != 1) {  // f64 overflows at the lowest entries: -DBL_MAX there is MPFR's to measure
      std::vector<double> y(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) y[i] = oracle::round_to(exact.log_softmax[i], Format::f64);
      ASSERT_TRUE(std::isinf(y[0]));
      y[0] = lowest;
      EXPECT_FALSE(oracle::compare_row_fast(y, fast, Format::f64, OutputKind::log_probabilities).has_value());
    }
  }
}

// Dekker's product stays exact for factors up to DBL_MAX (the split of such
// a factor overflows; exact_product scales it by 2^-30 and back).
TEST(DoubleDouble, ExactProductOfFactorsUpToDblMax) {
  const double big[] = {std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(), 0x1.8p996,
                        0x1.0000000000001p995, -0x1.23456789abcdfp1000};
  const double other[] = {0x1p-96, 0.7, -3.0e-300, 0.5 + 0x1p-40, 1.0 / 3.0};
  mpfr_t want, got;
  mpfr_init2(want, 2200);
  mpfr_init2(got, 2200);
  for (const double a : big)
    for (const double b : other)
      for (const bool swapped : {false, true}) {
        const oracle::DD p = swapped ? oracle::exact_product(b, a) : oracle::exact_product(a, b);
        ASSERT_TRUE(std::isfinite(p.hi) && std::isfinite(p.lo)) << a << " * " << b;
        mpfr_set_d(want, a, MPFR_RNDN);
        mpfr_mul_d(want, want, b, MPFR_RNDN);  // exact in 2200 bits
        mpfr_set_d(got, p.hi, MPFR_RNDN);
        mpfr_add_d(got, got, p.lo, MPFR_RNDN);
        EXPECT_TRUE(mpfr_equal_p(want, got)) << a << " * " << b;
      }
  mpfr_clears(want, got, static_cast<mpfr_ptr>(nullptr));
}

// times_double's power-of-two shortcut returns DWTimesFP1's words bit for
// bit (zero signs included), over the whole exponent range: the shortcut's
// conditions must exclude every case where the two would differ (a product
// that leaves the normal range, a low word that moves the high one).
TEST(DoubleDouble, PowerOfTwoScalingIsDWTimesFP1BitForBit) {
  const auto dw_times_fp1 = [](oracle::DD x, double y) {
    const oracle::DD c = oracle::exact_product(x.hi, y);
    const double cl2 = x.lo * y;
    const oracle::DD t = oracle::exact_fast_sum(c.hi, cl2);
    const double tl2 = t.lo + c.lo;
    return oracle::exact_fast_sum(t.hi, tl2);
  };
  const auto bits = [](double d) { return std::bit_cast<std::uint64_t>(d); };
  std::mt19937_64 rng(20261204);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> exp_hi(-1074, 1023), exp_y(-1074, 1023), gap(53, 130), kind(0, 9);
  std::size_t shortcut = 0;
  for (int i = 0; i < 400000; ++i) {
    const double hi = std::ldexp(mant(rng), exp_hi(rng)) * (rng() & 1 ? -1 : 1);
    const int k = kind(rng);
    // The low word: 0 of either sign, a tie (half an ulp of hi), or far below hi.
    double lo = k == 0 ? 0.0 : k == 1 ? -0.0 : std::ldexp(mant(rng), std::ilogb(hi) - gap(rng)) * (rng() & 1 ? -1 : 1);
    if (k == 2) lo = std::ldexp(rng() & 1 ? 1.0 : -1.0, std::ilogb(hi) - 53);
    const oracle::DD x = oracle::exact_fast_sum(hi, lo);  // normalised, as the tier's words are
    const double y = std::ldexp(rng() & 1 ? 1.0 : -1.0, exp_y(rng));
    if (!std::isfinite(x.hi) || y == 0) continue;
    const oracle::DD want = dw_times_fp1(x, y), got = oracle::times_double(x, y);
    const double h = x.hi * y;
    if (std::fabs(h) >= 0x1p-1022 && std::isfinite(h)) ++shortcut;
    ASSERT_EQ(bits(got.hi), bits(want.hi)) << std::hexfloat << x.hi << " + " << x.lo << " times " << y;
    ASSERT_EQ(bits(got.lo), bits(want.lo)) << std::hexfloat << x.hi << " + " << x.lo << " times " << y;
  }
  EXPECT_GT(shortcut, 100000u);  // the shortcut was taken, not only the general path
}

// x_i - x_k on an f32 midpoint, log1p(r) ~ 7e-112 below 2^-256 of it:
// MPFR's value (rounded to odd) keeps the side of the midpoint, and each tier
// decides the rounding with it: the result rounded away from the midpoint is
// correctly rounded (0 bits), the one on the other side 1 bit off. Before,
// the tiers allowed for MPFR's 2^-254 |v| and left such rows to it.
TEST(FastOracle, LogSoftmaxOnAMidpointIsDecidedWithMpfrsSide) {
  const std::vector<double> x{0.0, -(256.0 + 0x1p-16)};
  const oracle::ExactRow exact = oracle::exact_row(x, 1.0);
  for (const double r1 : {-(256.0 + 0x1p-15), -256.0}) {
    const std::vector<double> y{-0.0, r1};
    const RowError want = compare_row(y, exact.log_softmax, Format::f32, Op::log_softmax);
    EXPECT_EQ(want.max_bits, r1 == -256.0 ? 1.0 : 0.0);
    const auto by_double = oracle::compare_row_fast(y, oracle::double_fast_row(x, 1.0), Format::f32,
                                                    OutputKind::log_probabilities);
    const auto by_extended =
        oracle::compare_row_fast(y, oracle::fast_row(x, 1.0), Format::f32, OutputKind::log_probabilities);
    ASSERT_TRUE(by_double.has_value()) << r1;
    ASSERT_TRUE(by_extended.has_value()) << r1;
    EXPECT_EQ(by_double->error.max_bits, want.max_bits) << r1;
    EXPECT_EQ(by_extended->error.max_bits, want.max_bits) << r1;
  }
}

// x_i - x_k of 105 bits: -(256 + 2^-45) + 2^-97, just above an f64 midpoint.
// At 64 bits MPFR's working precision (81 bits) rounds it onto the midpoint,
// so MPFR's log-softmax lies below it and rounds the other way than the
// exact one. The double-double tier holds d_i exactly; it must not claim
// MPFR's d_i exact (d_exact) for it. (Here its own 2^-88 rounding of the
// log-softmax keeps it from deciding the element either way; what it
// decides must be what MPFR measures.)
TEST(FastOracle, WideDifferencesAreNotMpfrExact) {
  const std::vector<double> x{-256.0, 0x1p-45 - 0x1p-97};
  const oracle::DDFastRow fast = oracle::dd_fast_row(x, 1.0);
  ASSERT_TRUE(fast.usable);
  EXPECT_FALSE(fast.d_exact);
  for (const unsigned bits : {64u, 256u}) {
    const oracle::ExactRow exact = oracle::exact_row(x, 1.0, bits);
    for (const double r0 : {-256.0, -(256.0 + 0x1p-44)}) {
      const std::vector<double> y{r0, -0.0};
      const RowError want = compare_row(y, exact.log_softmax, Format::f64, Op::log_softmax);
      const auto got =
          oracle::compare_row_fast(y, fast, Format::f64, OutputKind::log_probabilities, 1e-3, bits);
      if (got) {
        EXPECT_EQ(got->error.max_bits, want.max_bits) << bits << " " << r0;
      }
    }
  }
}
