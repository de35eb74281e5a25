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
