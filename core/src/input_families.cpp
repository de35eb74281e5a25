#include "softcheck/input_families.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "softcheck/op.hpp"

namespace softcheck {

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
std::uint64_t Rng::below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }

double Rng::normal(double mean, double sigma) {
  const double u1 = 1.0 - uniform();  // (0, 1]: log(u1) finite
  const double u2 = uniform();
  return mean + sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::uint64_t hash_mix(std::uint64_t h, std::string_view s) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ULL;
  return h;
}
std::uint64_t hash_mix(std::uint64_t h, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xFF)) * 0x100000001B3ULL;
  return h;
}

namespace {

// An integer sigma: clang 14 (the fuzz build) has no floating-point template parameters.
template <int Sigma>
void fill_normal(std::span<double> row, Format, Rng& rng) {
  for (double& v : row) v = rng.normal(0.0, static_cast<double>(Sigma));
}

// oneDNN benchdnn's softmax fill (REFERENCE.md, "How the peers test softmax"):
// a few entries at 88, 89, 90 (the f32 expf overflow edge), the sign flipped
// every 64 elements, everything else at the format's lowest value.
void fill_benchdnn(std::span<double> row, Format f, Rng& rng) {
  const std::size_t n = row.size();
  std::fill(row.begin(), row.end(), lowest(f));
  const std::size_t hot = std::max<std::size_t>(1, std::min<std::size_t>(3, n) + n / 32);
  for (std::size_t h = 0; h < hot; ++h) {
    const std::size_t i = rng.below(n);
    const double sign = ((i / 64) % 2 == 0) ? 1.0 : -1.0;
    row[i] = sign * (88.0 + static_cast<double>(rng.below(3)));
  }
}

// XNNPACK's f32 softmax test range: exp(x) overflows, exp(x - max) does not.
void fill_xnnpack(std::span<double> row, Format, Rng& rng) {
  for (double& v : row) v = rng.uniform(90.0, 100.0);
}

// XNNPACK's f16 softmax test range (REFERENCE.md, "How the peers test
// softmax"): U(15, 20), where exp(x) is in [3.3e6, 4.9e8], past f16's 65504,
// while exp(x - max) is not. Rounded to the format by fill_rows (f16 ulp in
// [16, 32) is 2^-6).
void fill_xnnpack_f16(std::span<double> row, Format, Rng& rng) {
  for (double& v : row) v = rng.uniform(15.0, 20.0);
}

// Attention logits q.k_i / sqrt(d) with q, k_i ~ N(0, I_d). Given q, each
// q.k_i is a sum of independent N(0, q_j^2), so the logits are independent
// N(0, |q|^2 / d): drawn as that, one normal per logit instead of d (the
// d-normal dot products were 14 % of the quick suite's CPU time).
template <int D>
void fill_attention(std::span<double> row, Format, Rng& rng) {
  double norm2 = 0;
  for (int j = 0; j < D; ++j) {
    const double qj = rng.normal(0.0, 1.0);
    norm2 += qj * qj;
  }
  const double sigma = std::sqrt(norm2 / double{D});
  for (double& v : row) v = rng.normal(0.0, sigma);
}

// One entry far above the rest, so that sum_{i != max} exp(x_i - max) falls
// below u and log(sum) loses it (Blanchard-Higham's case for log1p).
void fill_one_dominant(std::span<double> row, Format, Rng& rng) {
  for (double& v : row) v = rng.normal(0.0, 1.0);
  row[rng.below(row.size())] = rng.uniform(20.0, 60.0);
}

void fill_all_equal(std::span<double> row, Format, Rng& rng) {
  std::fill(row.begin(), row.end(), rng.normal(0.0, 10.0));
}

// Few distinct values: exercises tie handling and equal outputs.
void fill_ties(std::span<double> row, Format, Rng& rng) {
  const double scale = 1.0 + static_cast<double>(rng.below(4));
  for (double& v : row) v = scale * (static_cast<double>(rng.below(3)) - 1.0);
}

// Masked rows: about a quarter of the entries replaced by the mask value,
// always leaving at least one entry unmasked.
template <bool NegInf>
void fill_masked(std::span<double> row, Format, Rng& rng) {
  const double mask = NegInf ? -INFINITY : -1e9;
  for (double& v : row) v = rng.below(4) == 0 ? mask : rng.normal(0.0, 3.0);
  row[rng.below(row.size())] = rng.normal(0.0, 3.0);
}

void fill_fully_masked(std::span<double> row, Format, Rng&) {
  std::fill(row.begin(), row.end(), -INFINITY);
}

void fill_seed_1000(std::span<double> row, Format, Rng&) {
  const double v[] = {1000.0, 1001.0, 1002.0};
  std::copy(std::begin(v), std::end(v), row.begin());
}

void fill_seed_1e5(std::span<double> row, Format, Rng&) {
  const double v[] = {0.0, -1e5, -2e5};
  std::copy(std::begin(v), std::end(v), row.begin());
}

}  // namespace

const std::vector<InputFamily>& input_families() {
  static const std::vector<InputFamily> all = {
      {"normal_s1", "N(0, 1)", 0, fill_normal<1>},
      {"normal_s10", "N(0, 10)", 0, fill_normal<10>},
      {"normal_s100", "N(0, 100)", 0, fill_normal<100>},
      {"benchdnn", "oneDNN benchdnn: a few of +-88/89/90 (sign flipped every 64), rest = lowest", 0,
       fill_benchdnn},
      {"xnnpack_u90_100", "XNNPACK: U(90, 100), exp overflows without the shift", 0, fill_xnnpack},
      {"xnnpack_f16_u15_20", "XNNPACK's f16 range: U(15, 20), exp overflows f16 without the shift",
       0, fill_xnnpack_f16},
      {"attention_d64", "attention logits q.k/sqrt(64)", 0, fill_attention<64>},
      {"attention_d128", "attention logits q.k/sqrt(128)", 0, fill_attention<128>},
      {"one_dominant", "N(0, 1) with one entry at U(20, 60)", 0, fill_one_dominant},
      {"all_equal", "every entry the same value c ~ N(0, 10): exact result 1/n", 0, fill_all_equal},
      {"ties", "values in {-k, 0, k}, k in 1..4", 0, fill_ties},
      {"mask_neg_inf", "N(0, 3), a quarter of the entries -inf", 0, fill_masked<true>},
      {"mask_neg_1e9", "N(0, 3), a quarter of the entries -1e9 (overflows to -inf in f16)", 0,
       fill_masked<false>},
      {"fully_masked", "every entry -inf: checks the declared masked-row policy", 0,
       fill_fully_masked},
      {"seed_1000_1001_1002", "the row [1000, 1001, 1002]", 3, fill_seed_1000},
      {"seed_0_m1e5_m2e5", "the row [0, -1e5, -2e5]", 3, fill_seed_1e5},
  };
  return all;
}

namespace {

// The bias rows of attention (REFERENCE.md, "FlashAttention tiling" and the
// masked-row rules): what the kernels' masks and biases do to one query's
// scores. Every row keeps at least its query's own key visible unless the
// family is about masking.
void no_bias(std::span<double> row, Format, Rng&) { std::fill(row.begin(), row.end(), 0.0); }

// An attention sink (Xiao et al. 2023): one key, the first, 10 to 20 above the rest.
void sink_bias(std::span<double> row, Format, Rng& rng) {
  std::fill(row.begin(), row.end(), 0.0);
  row[0] = rng.uniform(10.0, 20.0);
}

// Each key masked with probability 1/2 (a fully masked row at small n too).
void random_mask(std::span<double> row, Format, Rng& rng) {
  for (double& v : row) v = rng.below(2) == 0 ? -INFINITY : 0.0;
}

// The query's position among n keys: uniform, or (half the time) at a
// tile edge, 16 k - 1 or 16 k (the last key of a 16- or 64-key tile, or the
// first of the next: where a kernel's first or last tile of the window
// starts or ends), clamped to n - 1.
std::int64_t query_position(std::int64_t n, Rng& rng) {
  const auto un = static_cast<std::uint64_t>(n);
  if (rng.below(2) == 0) return static_cast<std::int64_t>(rng.below(un));
  const std::int64_t edge = 16 * static_cast<std::int64_t>(1 + rng.below(un / 16 + 1)) - 1 +
                            static_cast<std::int64_t>(rng.below(2));
  return std::min(edge, n - 1);
}

// Causal (window (-1, 0)): the query sees the keys up to its position.
KeyWindow causal_window(std::int64_t n, Rng& rng) { return {query_position(n, rng), -1, 0}; }

// A sliding window of w = max(1, n / 4) keys ending at the query (Mistral's
// local attention: window (w - 1, 0)).
KeyWindow sliding_window(std::int64_t n, Rng& rng) {
  return {query_position(n, rng), std::max<std::int64_t>(1, n / 4) - 1, 0};
}

// -inf runs that align exactly with tile boundaries (16 and 64 keys: the
// tile sizes of the flash kernels): the first tile masked (a running max of
// -inf when the next tile arrives: -inf - -inf = NaN in a careless
// rescale), the last, partial tile masked, and each other tile of 16 masked
// with probability 1/2.
void tile_aligned_mask(std::span<double> row, Format, Rng& rng) {
  const std::size_t n = row.size(), tile = rng.below(2) == 0 ? 16 : 64;
  for (std::size_t start = 0; start < n; start += 16) {
    const bool masked = start < tile || start + 16 > n || rng.below(2) == 0;
    for (std::size_t j = start; j < std::min(n, start + 16); ++j) row[j] = masked ? -INFINITY : 0.0;
  }
}

void all_masked(std::span<double> row, Format, Rng&) { std::fill(row.begin(), row.end(), -INFINITY); }

// ALiBi (Press et al. 2022) on a causal row: bias -m (p - j) for the keys
// j <= p, slope m = 2^-k, k in 1..8 (the slopes of an 8-head model).
void alibi_causal(std::span<double> row, Format, Rng& rng) {
  const std::size_t p = rng.below(row.size());
  const double slope = std::ldexp(1.0, -1 - static_cast<int>(rng.below(8)));
  for (std::size_t j = 0; j < row.size(); ++j)
    row[j] = j <= p ? -slope * static_cast<double>(p - j) : -INFINITY;
}

// Biases of every magnitude, 2^k for k in [0, 100] with a random sign: the
// scores' shifts span the exponent range, most of p underflows. k stops
// below the format's largest binade (f16: 2^14), so the row fits the format
// with the scores' spread (attention_row_fits_format's factor 2).
void wide_bias(std::span<double> row, Format f, Rng& rng) {
  const auto top = static_cast<std::uint64_t>(std::min(100, info(f).emax - 3));
  for (double& v : row)
    v = (rng.below(2) == 0 ? 1.0 : -1.0) * std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.below(top + 1)));
}

}  // namespace

const std::vector<InputFamily>& attention_input_families() {
  static const std::vector<InputFamily> families = {
      {"attn_gaussian_d64", "q, K, V ~ N(0, 1), d = 64, no mask", 0, no_bias, 64},
      {"attn_gaussian_d128", "q, K, V ~ N(0, 1), d = 128, no mask", 0, no_bias, 128},
      {"attn_gaussian_d256", "q, K, V ~ N(0, 1), d = 256, no mask", 0, no_bias, 256},
      {"attn_peaked_d64", "q, K ~ N(0, 16), d = 64: scores of standard deviation 16, p near one-hot", 0, no_bias, 64, 4},
      {"attn_sink_d128", "an attention sink: key 0 with a bias 10 to 20 above the rest, d = 128", 0, sink_bias, 128},
      {"attn_sink_unit_v_d128",
       "the attention sink with V = 1: the exact O is 1, so O's error is the probability mass lost, d = 128", 0,
       sink_bias, 128, 1, nullptr, true},
      {"attn_random_mask_d64", "each key masked with probability 1/2, d = 64", 0, random_mask, 64},
      {"attn_causal_d64",
       "causal: the kernel masks the keys after the query's position (window (-1, 0); the position at a tile "
       "edge half the time), d = 64",
       0, no_bias, 64, 1, causal_window},
      {"attn_window_d64",
       "a sliding window of n/4 keys ending at the query's position (window (n/4 - 1, 0)), the kernel's mask, "
       "d = 64",
       0, no_bias, 64, 1, sliding_window},
      {"attn_tile_mask_d64", "-inf runs aligned with 16- and 64-key tiles, the first and last tile masked, d = 64", 0,
       tile_aligned_mask, 64},
      {"attn_alibi_d64", "ALiBi slopes 2^-1..2^-8 on a causal row, d = 64", 0, alibi_causal, 64},
      {"attn_wide_bias_d64", "biases +-2^k, k in [0, 100]: shifts across the exponent range, d = 64", 0, wide_bias,
       64},
      {"attn_fully_masked_d64", "every key masked: the kernel's masked-row policy, d = 64", 0, all_masked, 64},
  };
  return families;
}

const InputFamily* find_input_family(std::string_view name) {
  for (const auto* list : {&input_families(), &attention_input_families()})
    for (const InputFamily& f : *list)
      if (f.name == name) return &f;
  return nullptr;
}

AttentionOperands fill_attention_operands(const InputFamily& fam, Format f, std::int64_t rows, std::int64_t cols,
                                          std::uint64_t seed) {
  AttentionOperands a;
  a.head_dim = fam.head_dim;
  const auto d = static_cast<std::size_t>(fam.head_dim);
  Rng rng(hash_mix(seed, std::string_view("attention operands")));
  const auto draw = [&](std::vector<double>& v, std::size_t count, double sigma) {
    v.resize(count);
    for (double& e : v) e = round_to_format(rng.normal(0.0, sigma), f);
  };
  const auto r = static_cast<std::size_t>(rows), n = static_cast<std::size_t>(cols);
  draw(a.q, r * d, fam.qk_sigma);
  draw(a.K, r * n * d, fam.qk_sigma);
  if (fam.unit_values)
    a.V.assign(r * n * d, 1.0);
  else
    draw(a.V, r * n * d, 1.0);
  a.window.assign(r, KeyWindow{});
  if (fam.window != nullptr)
    for (KeyWindow& w : a.window) w = fam.window(cols, rng);
  return a;
}

std::vector<double> fill_rows(const InputFamily& fam, Format f, std::int64_t rows, std::int64_t cols,
                              std::uint64_t seed) {
  std::vector<double> out(static_cast<std::size_t>(rows * cols));
  Rng rng(seed);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::span<double> row(out.data() + r * cols, static_cast<std::size_t>(cols));
    fam.fill(row, f, rng);
    for (double& v : row) v = round_to_format(v, f);
  }
  return out;
}

std::vector<double> fill_upstream_gradients(Format f, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::vector<double> g(static_cast<std::size_t>(rows * cols));
  Rng rng(hash_mix(seed, std::string_view("upstream gradients")));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::span<double> row(g.data() + r * cols, static_cast<std::size_t>(cols));
    const std::uint64_t kind = rng.below(4);
    if (kind < 2) {
      for (double& v : row) v = rng.normal(0.0, 1.0);
    } else if (kind == 2) {
      std::fill(row.begin(), row.end(), rng.normal(0.0, 1.0));
    } else {
      std::fill(row.begin(), row.end(), 0.0);
      row[rng.below(static_cast<std::uint64_t>(cols))] = 1.0;
    }
    for (double& v : row) v = round_to_format(v, f);
  }
  return g;
}

std::vector<std::int64_t> fill_class_targets(std::span<const double> x, std::int64_t rows, std::int64_t cols,
                                             std::uint64_t seed) {
  std::vector<std::int64_t> targets(static_cast<std::size_t>(rows));
  Rng rng(hash_mix(seed, std::string_view("class targets")));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::span<const double> row = x.subspan(static_cast<std::size_t>(r * cols), static_cast<std::size_t>(cols));
    const std::uint64_t kind = rng.below(8);
    const std::uint64_t any = rng.below(static_cast<std::uint64_t>(cols));
    std::int64_t t;
    if (kind < 3) {
      t = std::max_element(row.begin(), row.end()) - row.begin();
    } else if (kind < 6) {
      t = static_cast<std::int64_t>(any);
    } else if (kind < 7) {
      t = 0;
      for (std::size_t j = 0; j < row.size(); ++j)
        if (std::isfinite(row[j]) && (!std::isfinite(row[static_cast<std::size_t>(t)]) || row[j] < row[static_cast<std::size_t>(t)]))
          t = static_cast<std::int64_t>(j);
    } else {
      t = ignore_index;
    }
    targets[static_cast<std::size_t>(r)] = t;
  }
  return targets;
}

}  // namespace softcheck
