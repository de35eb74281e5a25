// report.html and the SVG writer: self-contained, deterministic, no empty plot.
#include <gtest/gtest.h>

#include <regex>

#include "sample.hpp"
#include "softcheck/report.hpp"
#include "svg.hpp"

namespace {

std::size_t occurrences(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// The <svg>...</svg> blocks of a page.
std::vector<std::string> svgs(const std::string& html) {
  std::vector<std::string> out;
  for (std::size_t p = html.find("<svg"); p != std::string::npos; p = html.find("<svg", p + 1))
    out.push_back(html.substr(p, html.find("</svg>", p) - p));
  return out;
}

}  // namespace

TEST(ReportHtml, SelfContained) {
  softcheck::Report r = softcheck::testing::sample();
  r.performance = softcheck::testing::sample_performance();
  const std::string html = softcheck::to_html(r);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* banned : {"<script", "src=", "url(", "@import", "<link", "@font-face"})
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  // The only URL is the SVG namespace name, which is never fetched.
  EXPECT_EQ(occurrences(html, "http"), occurrences(html, "xmlns=\"http://www.w3.org/2000/svg\""));
}

TEST(ReportHtml, EveryPlotHasMarks) {
  softcheck::Report r = softcheck::testing::sample();
  r.performance = softcheck::testing::sample_performance();
  const std::string html = softcheck::to_html(r);
  const auto plots = svgs(html);
  // 1 error/bound per family (one op), 4 histograms, 3 sweeps, 1 format pair, 1 throughput chart.
  EXPECT_EQ(plots.size(), 10u);
  for (const std::string& p : plots) EXPECT_NE(p.find("class=\"mark\""), std::string::npos) << p.substr(0, 300);
}

TEST(ReportHtml, Sections) {
  softcheck::Report r = softcheck::testing::sample();
  std::string html = softcheck::to_html(r);
  for (const char* id : {"summary", "distribution", "histograms", "by-size", "by-magnitude", "by-temperature", "formats", "worst",
                         "properties"})
    EXPECT_NE(html.find(std::string("<section id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_EQ(html.find("id=\"performance\""), std::string::npos);
  EXPECT_NE(html.find("compares the f32 and f64 twins"), std::string::npos);
  EXPECT_NE(html.find("softcheck repro --impl shifted_f32"), std::string::npos);
  EXPECT_NE(html.find("FLAGGED: 42 NaN/inf"), std::string::npos);
  EXPECT_NE(html.find("shift_invariance"), std::string::npos);
  r.performance = softcheck::testing::sample_performance();
  html = softcheck::to_html(r);
  EXPECT_NE(html.find("id=\"performance\""), std::string::npos);
  EXPECT_NE(html.find("50%"), std::string::npos);  // 8 GB/s of 16
}

TEST(ReportHtml, EscapesText) {
  const std::string html = softcheck::to_html(softcheck::testing::sample());
  EXPECT_EQ(html.find("<shifted_f32>"), std::string::npos);
  EXPECT_EQ(html.find("test kernel <"), std::string::npos);
}

TEST(ReportHtml, Deterministic) {
  EXPECT_EQ(softcheck::to_html(softcheck::testing::sample()), softcheck::to_html(softcheck::testing::sample()));
}

TEST(ReportHtml, OldReportWithoutSweepsSaysSo) {
  softcheck::Report r = softcheck::testing::sample();
  for (softcheck::KernelSummary& k : r.kernels) {
    k.ulp_histogram.clear();
    k.by_size.clear();
    k.by_temperature.clear();
    k.by_magnitude.clear();
    k.distribution = {};
    for (softcheck::FamilySummary& f : k.by_family) f.distribution = {};
  }
  const std::string html = softcheck::to_html(r);
  EXPECT_TRUE(svgs(html).empty());  // no empty plots, a sentence instead
  EXPECT_NE(html.find("No entry with a contract has a distribution"), std::string::npos);
  EXPECT_NE(html.find("No data: this report was written without per-bin errors."), std::string::npos);
}

TEST(UlpHistogram, Bins) {
  using softcheck::ulp_histogram_bin;
  EXPECT_EQ(ulp_histogram_bin(0), 0u);
  EXPECT_EQ(ulp_histogram_bin(0.49), 0u);
  EXPECT_EQ(ulp_histogram_bin(0.5), 1u);
  EXPECT_EQ(ulp_histogram_bin(0.99), 1u);
  EXPECT_EQ(ulp_histogram_bin(1), 2u);
  EXPECT_EQ(ulp_histogram_bin(3), 3u);
  EXPECT_EQ(ulp_histogram_bin(1e300), softcheck::ulp_histogram_bins - 1);
  EXPECT_EQ(ulp_histogram_bin(INFINITY), softcheck::ulp_histogram_bins - 1);
  for (std::size_t b = 1; b + 1 < softcheck::ulp_histogram_bins; ++b)
    EXPECT_EQ(ulp_histogram_bin(softcheck::ulp_histogram_lower_edge(b)), b);
}

TEST(MagnitudeDecade, Bins) {
  EXPECT_EQ(softcheck::magnitude_decade(0), softcheck::magnitude_min_decade);
  EXPECT_EQ(softcheck::magnitude_decade(1e-9), softcheck::magnitude_min_decade);
  EXPECT_EQ(softcheck::magnitude_decade(1), 0);
  EXPECT_EQ(softcheck::magnitude_decade(9.99), 0);
  EXPECT_EQ(softcheck::magnitude_decade(10), 1);
  EXPECT_EQ(softcheck::magnitude_decade(1e5), 5);
  EXPECT_EQ(softcheck::magnitude_decade(1e10), softcheck::magnitude_max_decade);
  EXPECT_EQ(softcheck::magnitude_decade(3e38), softcheck::magnitude_max_decade);
  EXPECT_EQ(softcheck::magnitude_decade(INFINITY), softcheck::magnitude_max_decade);
}

TEST(Svg, LogAxis) {
  softcheck::svg::Axis a{0.01, 1e6, true, 0, 800};
  EXPECT_DOUBLE_EQ(a.to_px(0.01), 0);
  EXPECT_DOUBLE_EQ(a.to_px(1e6), 800);
  EXPECT_DOUBLE_EQ(a.to_px(0), 0);  // clamped
  EXPECT_NEAR(a.to_px(1), 800.0 * 2 / 8, 1e-9);
  const auto t = a.ticks();
  EXPECT_GE(t.size(), 4u);
  EXPECT_LE(t.size(), 9u);
  EXPECT_DOUBLE_EQ(t.front(), 0.01);
}

TEST(Svg, LinearTicksAreRound) {
  softcheck::svg::Axis a{0, 25, false, 0, 100};
  EXPECT_EQ(a.ticks(), (std::vector<double>{0, 5, 10, 15, 20, 25}));
}

TEST(Svg, EmptyChartsRenderNothing) {
  softcheck::svg::LineChart line;
  line.series.push_back({"a", "#000", "", {}});
  EXPECT_EQ(softcheck::svg::render(line), "");
  softcheck::svg::BarChart bars;
  bars.bars.push_back({"x", 0, "#000", ""});
  EXPECT_EQ(softcheck::svg::render(bars), "");
}

TEST(Svg, EscapesAndFlags) {
  softcheck::svg::LineChart c;
  c.title = "a<b & c";
  c.y_log = true;
  c.series.push_back({"k", "#000", "", {{1, 2, false, "tip"}, {10, 0, true, "nan here"}}});
  const std::string s = softcheck::svg::render(c);
  EXPECT_NE(s.find("a&lt;b &amp; c"), std::string::npos);
  EXPECT_NE(s.find("<path class=\"mark\""), std::string::npos);  // the flagged point's cross
  EXPECT_NE(s.find("NaN/inf in this bin"), std::string::npos);
}
