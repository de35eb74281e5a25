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
    for (std::size_t i = 0; i < o.bins_.size(); ++i) {
      if (o.bins_[i].count == 0) continue;
      Bin& into = bin(o.lo_ + static_cast<std::int64_t>(i));
      into.count += o.bins_[i].count;
      into.max = std::max(into.max, o.bins_[i].max);
    }
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
    for (const Bin& b : bins_) {
      seen += b.count;
      if (seen >= rank) return b.max;
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
    for (std::size_t i = 0; i < bins_.size(); ++i)
      if (bins_[i].count > 0) p.bins.push_back({lo_ + static_cast<std::int64_t>(i), bins_[i].count, bins_[i].max});
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
  // The bin of key k, the dense range [lo_, lo_ + size) grown to hold it.
  Bin& bin(std::int64_t k) {
    if (bins_.empty()) {
      lo_ = k;
      bins_.resize(1);
    } else if (k < lo_) {
      // Grown downwards by at least the current size: errors falling one
      // bin at a time would otherwise move every bin each time.
      const std::int64_t grow = std::max<std::int64_t>(lo_ - k, static_cast<std::int64_t>(bins_.size()));
      bins_.insert(bins_.begin(), static_cast<std::size_t>(grow), Bin{});
      lo_ -= grow;
    } else if (k >= lo_ + static_cast<std::int64_t>(bins_.size())) {
      // Upwards likewise: a row's errors rising one bin at a time called
      // resize for each (2 % of the quick suite). The empty bins above hold
      // nothing a percentile, a merge or parts() reads.
      const auto size = static_cast<std::int64_t>(bins_.size());
      bins_.resize(static_cast<std::size_t>(std::max<std::int64_t>(k - lo_ + 1, 2 * size)));
    }
    return bins_[static_cast<std::size_t>(k - lo_)];
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
  std::vector<Bin> bins_;
  std::int64_t lo_ = 0;
  std::uint64_t zeros_ = 0, infinities_ = 0, total_ = 0;
};

}  // namespace softcheck::detail
