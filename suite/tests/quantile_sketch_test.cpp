#include "../src/quantile_sketch.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using softcheck::detail::QuantileSketch;

// A percentile is a value that was added, at or above the true percentile
// and within 1/32 of it (one bin).
TEST(QuantileSketch, PercentilesAreAddedValuesWithinOneBin) {
  QuantileSketch s;
  for (int i = 1; i <= 1000; ++i) s.add(i);
  EXPECT_EQ(s.count(), 1000u);
  for (double q : {0.5, 0.9, 0.99, 1.0}) {
    const double truth = std::ceil(q * 1000), got = s.quantile(q);
    EXPECT_GE(got, truth) << q;
    EXPECT_LE(got, truth * (1 + 0x1p-5) + 1) << q;
    EXPECT_EQ(got, std::floor(got)) << "an added value";
  }
  EXPECT_EQ(s.quantile(1.0), 1000);
}

TEST(QuantileSketch, ZerosInfinitiesAndNaN) {
  QuantileSketch s;
  EXPECT_EQ(s.quantile(0.5), 0);
  for (int i = 0; i < 60; ++i) s.add(0);
  for (int i = 0; i < 39; ++i) s.add(0.25);
  s.add(std::numeric_limits<double>::infinity());
  s.add(std::nan(""));  // not a measurement: ignored
  EXPECT_EQ(s.count(), 100u);
  EXPECT_EQ(s.quantile(0.5), 0);
  EXPECT_EQ(s.quantile(0.99), 0.25);
  EXPECT_TRUE(std::isinf(s.quantile(1.0)));
}

// Merging adds counts and keeps maxima: any order gives the same sketch
// (what makes the report the same for any --jobs).
TEST(QuantileSketch, MergeIsOrderIndependent) {
  QuantileSketch a, b, ab, ba;
  for (int i = 0; i < 500; ++i) a.add(1e-3 * i), b.add(1e3 + i);
  ab.merge(a);
  ab.merge(b);
  ba.merge(b);
  ba.merge(a);
  for (double q : {0.1, 0.5, 0.75, 0.99, 1.0}) EXPECT_EQ(ab.quantile(q), ba.quantile(q)) << q;
  EXPECT_EQ(ab.count(), 1000u);
  EXPECT_LT(ab.quantile(0.5), 1);
  EXPECT_GE(ab.quantile(0.51), 1e3);
}

// Errors octaves apart (subnormal, tiny, huge; added in no order) keep only
// the octaves they hit. parts() lists the non-empty bins by ascending key,
// and from_parts gives back the same sketch (a shard's state travels so);
// parts that are not a sketch's are refused.
TEST(QuantileSketch, SparseOctavesAndTheirParts) {
  QuantileSketch s;
  const double values[] = {1e300, 3e-320, 0.75, 1e-300, 0.7, 5e-324, 2.0, 1e300, 0.0};
  for (double v : values) s.add(v);
  EXPECT_EQ(s.count(), 9u);
  EXPECT_EQ(s.quantile(0.1), 0);       // rank 1: the zero
  EXPECT_EQ(s.quantile(0.2), 5e-324);  // rank 2: denorm_min
  EXPECT_EQ(s.quantile(0.6), 0.75);    // rank 6
  EXPECT_EQ(s.quantile(0.8), 1e300);   // rank 8: the bin of both 1e300
  const QuantileSketch::Parts p = s.parts();
  ASSERT_EQ(p.bins.size(), 7u);  // 0.7 and 0.75 are 1/32-octave bins apart
  for (std::size_t i = 1; i < p.bins.size(); ++i) EXPECT_LT(p.bins[i - 1].key, p.bins[i].key);
  EXPECT_EQ(p.bins.back().count, 2u);
  const auto back = QuantileSketch::from_parts(p);
  ASSERT_TRUE(back.has_value());
  const QuantileSketch::Parts again = back->parts();
  ASSERT_EQ(again.bins.size(), p.bins.size());
  for (std::size_t i = 0; i < p.bins.size(); ++i) {
    EXPECT_EQ(again.bins[i].key, p.bins[i].key);
    EXPECT_EQ(again.bins[i].count, p.bins[i].count);
    EXPECT_EQ(again.bins[i].max, p.bins[i].max);
  }
  for (double q : {0.1, 0.3, 0.5, 0.7, 0.9, 1.0}) EXPECT_EQ(back->quantile(q), s.quantile(q)) << q;
  QuantileSketch::Parts wrong = p;
  std::swap(wrong.bins[0], wrong.bins[1]);
  EXPECT_FALSE(QuantileSketch::from_parts(wrong).has_value());
  wrong = p;
  wrong.total += 1;
  EXPECT_FALSE(QuantileSketch::from_parts(wrong).has_value());
}
