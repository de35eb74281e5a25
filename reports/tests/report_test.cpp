#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "softcheck/report.hpp"

namespace fs = std::filesystem;
using softcheck::KernelSummary;
using softcheck::Report;

namespace {

Report sample_report() {
  Report r;
  r.tool_version = "test";
  r.suite = "quick";
  r.seed = 7;
  r.oracle_bits = 256;
  KernelSummary k;
  k.kernel = "shifted_f32";
  k.op = "softmax";
  k.status = "held";
  k.max_ulp = 1.5;
  k.worst.present = true;
  k.worst.got = NAN;
  k.worst.bound = INFINITY;
  r.kernels.push_back(k);
  return r;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("softcheck-report-test-" + name);
  fs::remove_all(d);
  return d;
}

}  // namespace

TEST(ReportJson, ParsesBackWithSchemaAndNoNaNTokens) {
  const std::string text = softcheck::to_json(sample_report());
  const auto doc = nlohmann::json::parse(text);  // throws on NaN/Infinity tokens
  EXPECT_EQ(doc["schema"], "softcheck-report");
  EXPECT_EQ(doc["schema_version"], softcheck::report_schema_version);
  EXPECT_EQ(doc["kernels"][0]["worst"]["got"], "nan");
  EXPECT_TRUE(doc["kernels"][0]["worst"]["bound"].is_null());
  EXPECT_EQ(doc["verdict"], "held");
}

TEST(ReportJson, DeterministicForEqualInput) {
  EXPECT_EQ(softcheck::to_json(sample_report()), softcheck::to_json(sample_report()));
}

TEST(ReportJson, VerdictFollowsKernelStatus) {
  Report r = sample_report();
  r.kernels[0].status = "violated";
  EXPECT_FALSE(r.all_held());
  EXPECT_EQ(nlohmann::json::parse(softcheck::to_json(r))["verdict"], "violated");
  r.kernels[0].status = "no_contract";
  EXPECT_TRUE(r.all_held());
}

TEST(ReportMarkdown, FlagsNonFiniteOutputs) {
  Report r = sample_report();
  r.kernels[0].status = "no_contract";
  r.kernels[0].nonfinite = 12;
  EXPECT_NE(softcheck::to_markdown(r).find("FLAGGED: 12 NaN/inf"), std::string::npos);
}

TEST(AtomicWrite, WritesAllFiles) {
  const fs::path d = fresh_dir("all");
  softcheck::ensure_writable_dir(d);
  softcheck::write_files_atomically({{d / "a.json", "A"}, {d / "b.md", "B"}});
  EXPECT_EQ(slurp(d / "a.json"), "A");
  EXPECT_EQ(slurp(d / "b.md"), "B");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++entries;
  EXPECT_EQ(entries, 2u) << "temporaries left behind";
}

TEST(AtomicWrite, FailureLeavesNoFiles) {
  const fs::path d = fresh_dir("fail");
  softcheck::ensure_writable_dir(d);
  // The second target's directory does not exist: nothing may be written.
  EXPECT_THROW(softcheck::write_files_atomically({{d / "a.json", "A"}, {d / "missing" / "b.md", "B"}}),
               std::runtime_error);
  EXPECT_TRUE(fs::is_empty(d));
}

TEST(AtomicWrite, UnwritableDirectoryIsAClearError) {
  EXPECT_THROW(softcheck::ensure_writable_dir("/proc/softcheck-cannot-exist"), std::runtime_error);
  const fs::path file = fresh_dir("file");
  std::ofstream(file.string()) << "x";
  EXPECT_THROW(softcheck::ensure_writable_dir(file), std::runtime_error);
}
