// Percentiles of non-negative errors without keeping every error: a
// log-linear histogram (HdrHistogram's layout) with 32 bins per octave, each
// bin holding its count and the largest value that fell in it. A percentile
// is the largest value of the bin where its rank falls: an error some output
// had, at or above the true percentile and within 1/32 = 3.1 % of it (bins
// are linear within an octave, each 1/32 of the octave's lower edge wide).
// Merging adds counts and takes maxima, so the result does not depend on the
// order rows arrive in (any --jobs).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace softcheck::detail {

class QuantileSketch {
 public:
  static constexpr int bins_per_octave = 32;

  void add(double v) {
    if (!(v >= 0)) return;  // NaN: not a measured error
    total_++;
    if (v == 0) {
      zeros_++;
      return;
    }
    if (std::isinf(v)) {
      infinities_++;
      return;
    }
    Bin& b = bin(key(v));
    b.count++;
    b.max = std::max(b.max, v);
  }
  void merge(const QuantileSketch& o) {
    o.each_bin([this](std::int64_t k, const Bin& b) {
      Bin& into = bin(k);
      into.count += b.count;
      into.max = std::max(into.max, b.max);
    });
    zeros_ += o.zeros_;
    infinities_ += o.infinities_;
    total_ += o.total_;
  }
  std::uint64_t count() const { return total_; }
  // The q-quantile (0 < q <= 1) as above; 0 when empty.
  double quantile(double q) const {
    if (total_ == 0) return 0;
    const std::uint64_t rank =
        std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total_))));
    std::uint64_t seen = zeros_;
    if (seen >= rank) return 0;
    for (const std::uint32_t slot : slots_) {
      if (slot == 0) continue;
      for (const Bin& b : blocks_[slot - 1]) {
        seen += b.count;
        if (seen >= rank) return b.max;
      }
    }
    return std::numeric_limits<double>::infinity();
  }
  void clear() { *this = QuantileSketch{}; }

  // Everything the sketch holds, for writing it out (a shard's state) and
  // reading it back: the non-empty bins by key, and the counts.
  struct Parts {
    struct Bin {
      std::int64_t key = 0;
      std::uint64_t count = 0;
      double max = 0;
    };
    std::vector<Bin> bins;  // ascending keys
    std::uint64_t zeros = 0, infinities = 0, total = 0;
  };
  Parts parts() const {
    Parts p{{}, zeros_, infinities_, total_};
    each_bin([&p](std::int64_t k, const Bin& b) { p.bins.push_back({k, b.count, b.max}); });
    return p;
  }
  // Nullopt unless the parts are a sketch's: keys ascending, each bin's
  // maximum inside its bin, and the counts adding up.
  static std::optional<QuantileSketch> from_parts(const Parts& p) {
    QuantileSketch s;
    std::uint64_t seen = p.zeros + p.infinities;
    for (std::size_t i = 0; i < p.bins.size(); ++i) {
      const auto& b = p.bins[i];
      if (b.count == 0 || !(b.max > 0) || std::isinf(b.max) || key(b.max) != b.key) return std::nullopt;
      if (i > 0 && b.key <= p.bins[i - 1].key) return std::nullopt;
      s.bin(b.key) = {b.count, b.max};
      seen += b.count;
    }
    if (seen != p.total) return std::nullopt;
    s.zeros_ = p.zeros;
    s.infinities_ = p.infinities;
    s.total_ = p.total;
    return s;
  }

 private:
  struct Bin {
    std::uint64_t count = 0;
    double max = 0;
  };
  using Block = std::array<Bin, bins_per_octave>;
  // The bin of key k (32 bins an octave: key()'s static_assert). Octave
  // o = floor(k / 32) holds its bins in blocks_[slots_[o - lo_] - 1],
  // allocated when a value first falls in it (slot 0: none yet). The octaves
  // an error spans are sparse (a quarter of the bins of a dense range were
  // ever hit in the quick suite, and zeroing the rest cost page faults):
  // only the slots, 4 bytes an octave, are dense.
  Bin& bin(std::int64_t k) {
    // Inline for an octave already hit (nearly every call: one per element
    // judged), the rest out of line.
    const std::int64_t o = (k >> 5) - lo_;
    if (o >= 0 && o < static_cast<std::int64_t>(slots_.size())) [[likely]]
      if (const std::uint32_t slot = slots_[static_cast<std::size_t>(o)]; slot != 0) [[likely]]
        return blocks_[slot - 1][static_cast<std::size_t>(k & 31)];
    return new_bin(k);
  }
  [[gnu::noinline]] Bin& new_bin(std::int64_t k) {
    const std::int64_t octave = k >> 5;  // floor(k / 32), k < 0 too
    const auto size = static_cast<std::int64_t>(slots_.size());
    if (slots_.empty()) {
      lo_ = octave;
      slots_.resize(1);
    } else if (octave < lo_) {
      // Grown downwards by at least the current size: errors falling one
      // octave at a time would otherwise move every slot each time.
      const std::int64_t grow = std::max(lo_ - octave, size);
      slots_.insert(slots_.begin(), static_cast<std::size_t>(grow), 0);
      lo_ -= grow;
    } else if (octave >= lo_ + size) {
      // Upwards likewise; the empty slots above hold nothing a percentile,
      // a merge or parts() reads.
      slots_.resize(static_cast<std::size_t>(std::max(octave - lo_ + 1, 2 * size)));
    }
    std::uint32_t& slot = slots_[static_cast<std::size_t>(octave - lo_)];
    if (slot == 0) {
      blocks_.emplace_back();
      slot = static_cast<std::uint32_t>(blocks_.size());
    }
    return blocks_[slot - 1][static_cast<std::size_t>(k & 31)];
  }
  // f(key, bin) for every non-empty bin, by ascending key.
  template <class F>
  void each_bin(F f) const {
    for (std::size_t o = 0; o < slots_.size(); ++o) {
      if (slots_[o] == 0) continue;
      const Block& block = blocks_[slots_[o] - 1];
      const std::int64_t first_key = (lo_ + static_cast<std::int64_t>(o)) * bins_per_octave;
      for (std::size_t j = 0; j < block.size(); ++j)
        if (block[j].count > 0) f(first_key + static_cast<std::int64_t>(j), block[j]);
    }
  }
  // A finite v > 0: 32 bins per octave, ascending with v. v = m 2^e with m
  // in [1/2, 1): for a normal v, e is its biased exponent - 1022 and
  // floor((m - 1/2) 64) its 5 leading fraction bits (no frexp call, one per
  // element judged); a subnormal v takes frexp's.
  static std::int64_t key(double v) {
    static_assert(bins_per_octave == 32);
    const auto bits = std::bit_cast<std::uint64_t>(v);
    const auto biased = static_cast<std::int64_t>(bits >> 52);
    if (biased > 0) return (biased - 1022) * bins_per_octave + static_cast<std::int64_t>((bits >> 47) & 31);
    int e = 0;
    const double m = std::frexp(v, &e);  // v = m 2^e, m in [1/2, 1)
    const auto sub = static_cast<std::int64_t>((m - 0.5) * 2 * bins_per_octave);
    return static_cast<std::int64_t>(e) * bins_per_octave + sub;
  }
  std::vector<std::uint32_t> slots_;  // per octave in [lo_, lo_ + slots_.size())
  std::vector<Block> blocks_;
  std::int64_t lo_ = 0;  // the first octave
  std::uint64_t zeros_ = 0, infinities_ = 0, total_ = 0;
};

}  // namespace softcheck::detail
