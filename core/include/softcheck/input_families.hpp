// Input families: the rows the run suite feeds every kernel ("fill" in
// benchdnn's terms). Each family has a stable name that appears in reports.
// Every value produced is exactly representable in the requested format.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/op.hpp"

namespace softcheck {

// Small, portable, deterministic generator (SplitMix64): the same seed gives
// the same rows on every platform and standard library (std:: distributions
// are implementation-defined, so none are used).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  double uniform();                    // [0, 1)
  double uniform(double lo, double hi);
  double normal(double mean, double sigma);  // Box-Muller
  std::uint64_t below(std::uint64_t n);      // [0, n)

 private:
  std::uint64_t state_;
};

// Stable 64-bit hash (FNV-1a) to derive per-case seeds from names.
std::uint64_t hash_mix(std::uint64_t h, std::string_view s);
std::uint64_t hash_mix(std::uint64_t h, std::uint64_t v);

struct InputFamily {
  std::string name;
  std::string description;
  std::int64_t fixed_cols = 0;  // > 0: the family is one fixed row of that length
  // Fills one row; values are then rounded to the format by fill_rows.
  void (*fill)(std::span<double> row, Format f, Rng& rng) = nullptr;
  // > 0: an attention family (attention_input_families): the row is the
  // additive score bias of one query (0, -inf for a masked key, a sink or
  // ALiBi bias) and q, K, V have this head dimension (fill_attention_operands).
  std::int64_t head_dim = 0;
  // The standard deviation of q's and K's entries (V's is 1).
  int qk_sigma = 1;
  // An attention family's query window on a row of n keys (KeyWindow: the
  // kernel masks the keys outside it); nullptr: every key, (-1, -1).
  KeyWindow (*window)(std::int64_t n, Rng& rng) = nullptr;
  // V = 1 instead of N(0, 1): the exact O is 1 (mass conservation,
  // REFERENCE.md "Attention rows"), so O's error in the scaled metric (s_i
  // = 1) is the probability mass a kernel lost or gained, in units of u.
  bool unit_values = false;

  bool attention() const { return head_dim > 0; }
};

// The softmax families (every op but attention).
const std::vector<InputFamily>& input_families();
// The attention families (docs/attention.md): the mask and bias patterns of
// attention rows, each with its head dimension.
const std::vector<InputFamily>& attention_input_families();
// Searches both lists.
const InputFamily* find_input_family(std::string_view name);

// q (rows x d), K and V (rows x cols x d, key-major) of an attention family
// (d = fam.head_dim), N(0, qk_sigma^2) for q and K and N(0, 1) (or 1) for V, in
// format f, and each row's window, deterministic in `seed` (a stream of its
// own: the bias rows fill_rows draws from the same seed do not change with
// it).
struct AttentionOperands {
  std::vector<double> q, K, V;
  std::vector<KeyWindow> window;  // one per row (InputFamily::window)
  std::int64_t head_dim = 0;
};
AttentionOperands fill_attention_operands(const InputFamily& fam, Format f, std::int64_t rows, std::int64_t cols,
                                          std::uint64_t seed);

// rows x cols values of family `fam` in format `f`, deterministic in `seed`.
std::vector<double> fill_rows(const InputFamily& fam, Format f, std::int64_t rows, std::int64_t cols,
                              std::uint64_t seed);

// One class target per row of x (rows x cols, row-major), deterministic in
// `seed`, each row drawn among: its largest entry (a confident correct
// prediction: loss near 0, p_t - 1 cancels), any entry (a masked one gives
// loss +inf), its smallest finite entry (a confident wrong prediction), and
// ignore_index, with probabilities 3/8, 3/8, 1/8, 1/8.
// One upstream gradient row per row (rows x cols values of format f),
// deterministic in `seed`, each row drawn among: N(0, 1) entries (1/2), one
// constant c ~ N(0, 1) (1/4: the exact softmax gradient is 0 and g - <g, y>
// cancels completely), and one-hot at a random entry (1/4).
std::vector<double> fill_upstream_gradients(Format f, std::int64_t rows, std::int64_t cols, std::uint64_t seed);

std::vector<std::int64_t> fill_class_targets(std::span<const double> x, std::int64_t rows, std::int64_t cols,
                                             std::uint64_t seed);

}  // namespace softcheck
