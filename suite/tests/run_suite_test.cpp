#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "softcheck/run_suite.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/kernel_failure.hpp"

using namespace softcheck;

namespace {

RunOptions small_run(std::vector<std::string> fams, std::vector<std::int64_t> sizes, unsigned jobs = 1) {
  RunOptions opt;
  opt.selection.families = std::move(fams);
  opt.selection.sizes = std::move(sizes);
  opt.selection.temperatures = {1.0, 0.7};
  opt.seed = 42;
  opt.jobs = jobs;
  return opt;
}

// Same seed, same report, any --jobs: the run of `opt` with 2 jobs against
// its report `r` (run with opt.jobs).
void expect_same_report_with_two_jobs(const std::vector<const Kernel*>& ks, RunOptions opt, const Report& r) {
  opt.jobs = 2;
  const Report again = run_suite(ks, opt);
  ASSERT_EQ(again.kernels.size(), r.kernels.size());
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    EXPECT_EQ(again.kernels[i].max_ulp, r.kernels[i].max_ulp) << r.kernels[i].kernel;
    EXPECT_EQ(again.kernels[i].worst.repro, r.kernels[i].worst.repro) << r.kernels[i].kernel;
  }
}

std::vector<const Kernel*> kernels(std::initializer_list<const char*> names) {
  std::vector<const Kernel*> ks;
  for (const char* n : names) {
    const Kernel* k = find_kernel(n);
    EXPECT_NE(k, nullptr) << n;
    if (k) ks.push_back(k);
  }
  return ks;
}

const KernelSummary& summary(const Report& r, const std::string& kernel, const std::string& op) {
  for (const KernelSummary& k : r.kernels)
    if (k.kernel == kernel && k.op == op) return k;
  throw std::runtime_error("no summary for " + kernel);
}

}  // namespace

TEST(BuildSuite, RejectsUnknownNamesAndBadValues) {
  EXPECT_THROW(build_suite({"nosuch", {}, {}, {}, {}}), std::invalid_argument);
  EXPECT_THROW(build_suite({"quick", {"nosuch_family"}, {}, {}, {}}), std::invalid_argument);
  EXPECT_THROW(build_suite({"quick", {}, {0}, {}, {}}), std::invalid_argument);
  EXPECT_THROW(build_suite({"quick", {}, {}, {-1.0}, {}}), std::invalid_argument);
  EXPECT_THROW(build_suite({"quick", {}, {}, {NAN}, {}}), std::invalid_argument);
}

TEST(BuildSuite, CoversEveryFamilyAndSizesFromOneTo65536) {
  const auto cases = build_suite({"quick", {}, {}, {}, {}});
  for (const InputFamily& f : input_families())
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const SuiteCase& c) { return c.family == &f; }))
        << f.name;
  auto [lo, hi] = std::minmax_element(cases.begin(), cases.end(),
                                      [](const SuiteCase& a, const SuiteCase& b) { return a.cols < b.cols; });
  EXPECT_EQ(lo->cols, 1);
  EXPECT_EQ(hi->cols, 65536);
}

TEST(RunSuite, NaiveIsFlaggedOnOverflowFamiliesWhileShiftedHolds) {
  const Report r = run_suite(kernels({"naive_f32", "shifted_f32", "shifted_log1p_f32"}),
                             small_run({"xnnpack_u90_100", "seed_1000_1001_1002"}, {1, 7, 100}));
  const KernelSummary& naive = summary(r, "naive_f32", "softmax");
  EXPECT_GT(naive.nonfinite, 0u);
  EXPECT_EQ(naive.status, "no_contract");
  EXPECT_EQ(summary(r, "shifted_f32", "softmax").status, "held");
  EXPECT_EQ(summary(r, "shifted_f32", "softmax").nonfinite, 0u);
  EXPECT_EQ(summary(r, "shifted_log1p_f32", "log_softmax").status, "held");
  EXPECT_TRUE(r.all_held());
}

// rows_csv: one line per judged row and report entry, the same bytes for
// any --jobs; the verdict column says what each row came to (held, a
// contract violated by an off kernel, the policy on fully masked rows, a
// kernel that threw), and the rows of every entry add up to its rows.
TEST(RunSuite, RowsCsvHasOneLinePerRowAndEntryForAnyJobs) {
  Kernel off = *find_kernel("shifted_f32");
  off.name = "off_by_4ulp_f32";
  off.compute = [inner = off.compute](const OpCall& c) {
    inner(c);
    auto* y = static_cast<float*>(c.out[0]);
    for (std::int64_t i = 0; i < c.rows * c.cols; i += 3) y[i] = std::nextafter(std::nextafter(y[i], 2.0f), 2.0f);
  };
  Kernel throws = *find_kernel("shifted_f32");
  throws.name = "throws_f32";
  throws.compute = [](const OpCall&) { throw KernelFailure("test: the kernel refuses"); };
  std::vector<const Kernel*> ks = kernels({"shifted_f32"});
  ks.push_back(&off);
  ks.push_back(&throws);
  RunOptions opt = small_run({"normal_s10", "fully_masked"}, {5, 70});
  std::ostringstream one, four;
  opt.rows_csv = &one;
  const Report r = run_suite(ks, opt);
  opt.jobs = 4;
  opt.rows_csv = &four;
  run_suite(ks, opt);
  EXPECT_EQ(one.str(), four.str());
  std::map<std::string, std::uint64_t> rows;  // "kernel,output" -> lines
  std::map<std::string, std::map<std::string, int>> verdicts;
  std::istringstream lines(one.str());
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f;
    std::istringstream fields(line.substr(0, line.find(",\"")));  // the repro (quoted) last
    for (std::string v; std::getline(fields, v, ',');) f.push_back(v);
    ASSERT_GE(f.size(), 14u) << line;
    ++rows[f[0] + "," + f[1]];
    ++verdicts[f[0]][f[13]];
  }
  for (const KernelSummary& k : r.kernels) {
    const std::string label = k.op + (k.output.empty() ? "" : ":" + k.output);  // output_label's
    EXPECT_EQ(rows[k.kernel + "," + label], k.rows) << k.kernel << " " << label;
  }
  EXPECT_EQ(rows.size(), r.kernels.size());
  EXPECT_GT(verdicts["shifted_f32"]["held"], 0);
  EXPECT_GT(verdicts["shifted_f32"]["policy_held"], 0);
  EXPECT_EQ(verdicts["shifted_f32"]["violated"], 0);
  EXPECT_GT(verdicts["off_by_4ulp_f32"]["violated"], 0);
  EXPECT_GT(verdicts["throws_f32"]["kernel_failed"], 0);
  EXPECT_EQ(verdicts["throws_f32"].size(), 1u);
}

// run --fp-env (docs/fp-env.md): the kernel's calls run in the chosen
// environment while the oracle keeps the default. A kernel that computes
// e^-100-sized outputs as subnormals holds in the default environment and
// gives 0 for them under FTZ, where the oracle still sees the subnormal
// value (the report names the environment); a kernel that requires the
// default environment is unavailable in another, never run.
TEST(RunSuite, FpEnvRunsTheKernelsInItAndSkipsThoseThatRequireTheDefault) {
  const Kernel* shifted = find_kernel("shifted_f32");
  Kernel strict = *shifted;
  strict.name = "strict_f32";
  strict.requires_default_fp_env = "test: needs subnormals";
  bool strict_ran = false;
  strict.compute = [&strict_ran, inner = shifted->compute](const OpCall& c) {
    strict_ran = true;
    inner(c);
  };
  RunOptions opt = small_run({"normal_s100"}, {64});
  const Report standard = run_suite({shifted, &strict}, opt);
  EXPECT_EQ(standard.fp_env, "default");
  EXPECT_TRUE(strict_ran);
  EXPECT_EQ(summary(standard, "shifted_f32", "softmax").status, "held");
  opt.fp_env = FpEnv::ftz_daz;
  strict_ran = false;
  const Report flushed = run_suite({shifted, &strict}, opt);
  EXPECT_EQ(flushed.fp_env, "ftz_daz");
  EXPECT_FALSE(strict_ran);
  const KernelSummary& s = summary(flushed, "strict_f32", "softmax");
  EXPECT_EQ(s.status, "unavailable");
  EXPECT_NE(s.unavailable_reason.find("requires the default one (test: needs subnormals)"), std::string::npos);
  // normal_s100's rows (N(0, 100^2)) have outputs far below f32's smallest
  // normal: flushed to 0, they break the contract derived for round to nearest
  // with subnormals.
  EXPECT_EQ(summary(flushed, "shifted_f32", "softmax").status, "violated");
  EXPECT_FALSE(flushed.all_held());
}

// The floor (kernel.hpp): a kernel without a contract that returns NaN on
// rows its format holds is violated, unless it opted out with a reason (as
// naive does); NaN on a fully masked row is its policy's business.
TEST(RunSuite, TheFloorHoldsForKernelsWithoutAContract) {
  Kernel nan_rows = *find_kernel("shifted_f32");
  nan_rows.name = "nan_on_rows_f32";
  nan_rows.ops = {{Op::softmax, Contract{}}};  // no contract
  nan_rows.compute = [inner = nan_rows.compute](const OpCall& c) {
    inner(c);
    for (std::int64_t r = 0; r < c.rows; r += 2) static_cast<float*>(c.out[0])[r * c.cols] = NAN;
  };
  Kernel opted = nan_rows;
  opted.name = "nan_opted_out_f32";
  opted.ops[0].opt_outs = {{std::string(floor_no_nonfinite), "test: NaN on purpose"},
                           {std::string(floor_reference), "test: NaN on purpose"}};
  const Report r = run_suite({&nan_rows, &opted}, small_run({"normal_s10"}, {5}));
  const KernelSummary& bad = summary(r, "nan_on_rows_f32", "softmax");
  EXPECT_TRUE(bad.floor_checked);
  EXPECT_EQ(bad.status, "violated");
  EXPECT_EQ(bad.contract_violations, 0u);
  EXPECT_GT(bad.floor_violations, 0u);
  EXPECT_LT(bad.floor_violations, bad.rows);  // only the rows given a NaN
  const KernelSummary& ok = summary(r, "nan_opted_out_f32", "softmax");
  EXPECT_EQ(ok.status, "no_contract");
  EXPECT_EQ(ok.floor_violations, 0u);
  EXPECT_EQ(ok.floor_opt_out, "test: NaN on purpose");
  EXPECT_FALSE(r.all_held());
  // naive opts out (its reason is in the report); a contract kernel has no floor entry.
  const Report n = run_suite(kernels({"naive_f32", "shifted_f32"}), small_run({"xnnpack_u90_100"}, {8}));
  EXPECT_EQ(summary(n, "naive_f32", "softmax").status, "no_contract");
  EXPECT_GT(summary(n, "naive_f32", "softmax").nonfinite, 0u);
  EXPECT_FALSE(summary(n, "naive_f32", "softmax").floor_opt_out.empty());
  EXPECT_FALSE(summary(n, "shifted_f32", "softmax").floor_checked);
}

TEST(RunSuite, BrokenKernelViolatesItsContract) {
  const Report r = run_suite(kernels({"mutant_no_max_shift"}), small_run({"xnnpack_u90_100"}, {16}));
  EXPECT_EQ(r.kernels.at(0).status, "violated");
  EXPECT_FALSE(r.all_held());
  ASSERT_TRUE(r.kernels.at(0).worst.present);
  EXPECT_NE(r.kernels.at(0).worst.repro.find("mutant_no_max_shift"), std::string::npos);
}

// A kernel whose outputs are quantised (softmax_pe4m3_f32: P cast to E4M3)
// is judged by a second judge, in E4M3 ULPs, beside the f32 kernels of the
// same cases: held, with errors up to the 0.5 floor and no reference rule;
// the truncating cast violated; the entry says its output format.
TEST(RunSuite, QuantisedOutputsAreJudgedInTheirOwnFormat) {
  RunOptions opt = small_run({"normal_s1", "one_dominant", "mask_neg_inf", "fully_masked", "ties"}, {1, 7, 100, 1000});
  const Report r = run_suite(
      kernels({"shifted_f32", "softmax_pe4m3_f32", "softmax_pe4m3_x256_f32", "mutant_pe4m3_truncated_f32"}), opt);
  const KernelSummary& f32 = summary(r, "shifted_f32", "softmax");
  const KernelSummary& p8 = summary(r, "softmax_pe4m3_f32", "softmax");
  const KernelSummary& cut = summary(r, "mutant_pe4m3_truncated_f32", "softmax");
  EXPECT_EQ(f32.status, "held");
  EXPECT_GT(f32.max_ulp, 1);  // f32 ULPs (the n = 1000 rows)
  EXPECT_EQ(f32.output_format, "");
  EXPECT_EQ(p8.format, "f32");
  EXPECT_EQ(p8.output_format, "e4m3");
  EXPECT_EQ(p8.format_label(), "f32->e4m3");
  EXPECT_EQ(p8.status, "held");
  EXPECT_GT(p8.max_ulp, 0.4);  // E4M3 ULPs: the correctly rounded P is up to 0.5 away
  EXPECT_LE(p8.max_ulp, 0.5 + 1e-3);
  EXPECT_EQ(p8.rows, f32.rows);
  // The reference rule compares errors in one format: not for E4M3 outputs,
  // even where it would judge contract outputs too.
  RunOptions every_output = opt;
  every_output.reference_rule.scope = "all";
  const KernelSummary p8_all = summary(run_suite(kernels({"softmax_pe4m3_f32"}), every_output), "softmax_pe4m3_f32",
                                       "softmax");
  EXPECT_EQ(p8_all.reference.kernel, "");
  EXPECT_NE(p8_all.reference.not_applied.find("quantised to e4m3"), std::string::npos) << p8_all.reference.not_applied;
  // The mass of each row (report.hpp MassSummary): f32 keeps it to rounding,
  // E4M3 moves it by far more although every P held its bound; the
  // truncating cast only ever loses.
  EXPECT_GT(f32.mass.rows, 0u);
  EXPECT_LT(std::max(f32.mass.max_lost, f32.mass.max_gained), 1e-3);
  EXPECT_EQ(p8.mass.rows, f32.mass.rows);
  EXPECT_GT(std::max(p8.mass.max_lost, p8.mass.max_gained), 0.01);
  EXPECT_LE(cut.mass.max_gained, 1e-6);  // the f32 row's own rounding at most
  EXPECT_GT(cut.mass.max_lost, p8.mass.max_lost);
  // FlashAttention-4's 2^8 pre-scale: a judge of its own (E4M3 / 2^8), held,
  // and far less mass lost.
  const KernelSummary& x256 = summary(r, "softmax_pe4m3_x256_f32", "softmax");
  EXPECT_EQ(x256.output_format, "e4m3_div256");
  EXPECT_EQ(x256.status, "held");
  EXPECT_LE(x256.max_ulp, 0.5 + 1e-3);
  EXPECT_LT(x256.mass.max_lost, p8.mass.max_lost / 4);
  EXPECT_EQ(cut.status, "violated");
  EXPECT_GT(cut.max_ulp, 0.9);
  // A bias: truncation only ever lowers P.
  EXPECT_LT(cut.distribution.mean_signed_ulp, p8.distribution.mean_signed_ulp);
  ASSERT_TRUE(cut.worst.present);
  EXPECT_EQ(cut.worst.repro.rfind("softcheck run ", 0), 0u) << cut.worst.repro;  // `repro` judges in f32
  expect_same_report_with_two_jobs(
      kernels({"shifted_f32", "softmax_pe4m3_f32", "softmax_pe4m3_x256_f32", "mutant_pe4m3_truncated_f32"}), opt, r);
}

// A kernel reading MXFP8 E4M3 blocks (Kernel::mx_inputs) gets rows of its
// own: the f32 family rows converted block by block (masks kept), on which
// it is exactly shifted_log1p_f32 and holds that contract; the mutant that
// decodes the E8M0 scale with bias 128 (every value halved) is violated.
// The entry names the MX format; the report is the same for any --jobs.
TEST(RunSuite, MxInputKernelsReadRowsOfMxBlocks) {
  RunOptions opt = small_run({"normal_s10", "one_dominant", "mask_neg_inf", "fully_masked", "ties"}, {1, 7, 100, 1000});
  const std::vector<const Kernel*> ks = kernels({"shifted_f32", "softmax_mxfp8_e4m3_f32", "mutant_mxfp8_scale_low_f32"});
  const Report r = run_suite(ks, opt);
  const KernelSummary& f32 = summary(r, "shifted_f32", "softmax");
  const KernelSummary& mx = summary(r, "softmax_mxfp8_e4m3_f32", "softmax");
  const KernelSummary& mx_log = summary(r, "softmax_mxfp8_e4m3_f32", "log_softmax");
  const KernelSummary& low = summary(r, "mutant_mxfp8_scale_low_f32", "softmax");
  EXPECT_EQ(f32.input_format, "");
  EXPECT_EQ(mx.input_format, "mxfp8_e4m3");
  EXPECT_EQ(mx.format_label(), "mxfp8_e4m3->f32");
  EXPECT_EQ(mx.status, "held");
  EXPECT_EQ(mx_log.status, "held");
  EXPECT_EQ(mx.rows, f32.rows);
  EXPECT_EQ(low.status, "violated");
  ASSERT_TRUE(low.worst.present);
  // Its worst row (up to 64 entries: one with its text) is an MX row: each
  // block unchanged by another conversion.
  if (!low.worst.input.empty()) {
    std::vector<double> row;
    std::stringstream text(low.worst.input);
    for (std::string v; std::getline(text, v, ',');) row.push_back(std::strtod(v.c_str(), nullptr));
    EXPECT_EQ(mx_row(row, fp8_e4m3), row) << low.worst.input;
  }
  EXPECT_EQ(low.worst.repro.rfind("softcheck run ", 0), 0u) << low.worst.repro;
  expect_same_report_with_two_jobs(ks, opt, r);
}

// A kernel with quantised outputs that stores a value off its result
// format's grid fails that case (as a KernelFailure does), naming the value;
// the run goes on and the verdict is a violation, not a harness error.
TEST(RunSuite, QuantisedOutputsOffTheGridFailTheirCase) {
  Kernel off = *find_kernel("softmax_pe4m3_f32");
  off.name = "pe4m3_off_grid_f32";
  off.compute = [inner = off.compute](const OpCall& c) {
    inner(c);
    if (c.cols >= 7) static_cast<float*>(c.out[0])[3] = 0.3f;  // between the E4M3 values 0.28125 and 0.3125
  };
  const Report r = run_suite({&off}, small_run({"normal_s1"}, {1, 7}));
  const KernelSummary& k = summary(r, "pe4m3_off_grid_f32", "softmax");
  EXPECT_EQ(k.status, "violated");
  EXPECT_GT(k.contract_violations, 0u);
  EXPECT_LT(k.contract_violations, k.rows);  // the n = 1 rows held
  ASSERT_TRUE(k.worst.present);
  EXPECT_NE(k.worst.exact.find("output 3 of row 0 is 0x1.333334p-2, not a value of e4m3"), std::string::npos)
      << k.worst.exact;
}

TEST(RunSuite, FullyMaskedRowsAreCheckedAgainstThePolicy) {
  const Report r = run_suite(kernels({"shifted_f32", "shifted_log1p_f32", "mutant_masked_nan"}),
                             small_run({"fully_masked"}, {5}));
  EXPECT_GT(summary(r, "shifted_f32", "softmax").policy_rows, 0u);
  EXPECT_EQ(summary(r, "shifted_f32", "softmax").policy_violations, 0u);
  EXPECT_EQ(summary(r, "shifted_log1p_f32", "softmax").policy_violations, 0u);
  EXPECT_GT(summary(r, "mutant_masked_nan", "softmax").policy_violations, 0u);
}

// An op with several outputs (softmax_lse) gets one report entry per output,
// each judged in its own metric against its own contract, from one kernel
// call: online's fused outputs measure exactly like its softmax and lse, and
// a kernel whose lse alone is wrong violates that entry only.
TEST(RunSuite, OpWithSeveralOutputsGetsOneEntryPerOutput) {
  Kernel off = *find_kernel("online_f32");
  off.name = "online_lse_off_f32";
  off.compute = [inner = off.compute](const OpCall& c) {
    inner(c);
    if (c.op == Op::softmax_lse)
      for (std::int64_t r = 0; r < c.rows; ++r) static_cast<float*>(c.out[1])[r] += 0.01f;
  };
  const auto ks = std::vector<const Kernel*>{find_kernel("online_f32"), &off};
  const Report r = run_suite(ks, small_run({"normal_s10", "fully_masked"}, {3, 100}));
  const auto entry = [&](const std::string& kernel, const std::string& output) -> const KernelSummary& {
    for (const KernelSummary& k : r.kernels)
      if (k.kernel == kernel && k.op == "softmax_lse" && k.output == output) return k;
    throw std::runtime_error("no " + kernel + " softmax_lse:" + output);
  };
  const KernelSummary& y = entry("online_f32", "y");
  const KernelSummary& lse = entry("online_f32", "lse");
  EXPECT_EQ(y.label(), "softmax_lse:y");
  EXPECT_EQ(y.max_ulp, summary(r, "online_f32", "softmax").max_ulp);
  EXPECT_EQ(y.rows, summary(r, "online_f32", "softmax").rows);
  EXPECT_EQ(lse.max_ulp, summary(r, "online_f32", "lse").max_ulp);
  EXPECT_EQ(lse.contract_formula, summary(r, "online_f32", "lse").contract_formula);
  EXPECT_GT(y.policy_rows, 0u);
  EXPECT_EQ(y.status, "held");
  EXPECT_EQ(lse.status, "held");
  EXPECT_EQ(entry("online_lse_off_f32", "y").status, "held");
  const KernelSummary& bad = entry("online_lse_off_f32", "lse");
  EXPECT_EQ(bad.status, "violated");
  EXPECT_GT(bad.max_ulp, 1e4);  // 0.01 absolute is 1.7e5 u of f32
  EXPECT_GT(bad.policy_rows, 0u);
  EXPECT_EQ(bad.policy_violations, 0u) << "lse = -inf + 0.01 stays -inf: masked rows hold";
  EXPECT_FALSE(r.all_held());
  // The entries survive the JSON round trip with their output names, and a
  // single-output entry keeps no "output" field.
  const std::string json = to_json(r);
  const Report back = from_json(json);
  ASSERT_EQ(back.kernels.size(), r.kernels.size());
  for (std::size_t i = 0; i < r.kernels.size(); ++i) EXPECT_EQ(back.kernels[i].label(), r.kernels[i].label());
  EXPECT_EQ(to_json(back), json);
}

TEST(RunSuite, SameSeedSameReportForAnyJobCount) {
  const auto ks = kernels({"shifted_f32", "online_f64", "lse_alt_f32"});
  const auto fams = std::vector<std::string>{"normal_s10", "mask_neg_inf", "one_dominant"};
  const std::string one = to_json(run_suite(ks, small_run(fams, {3, 33, 300}, 1)));
  const std::string two = to_json(run_suite(ks, small_run(fams, {3, 33, 300}, 3)));
  EXPECT_EQ(one, two);
  RunOptions other = small_run(fams, {3, 33, 300}, 2);
  other.seed = 43;
  EXPECT_NE(one, to_json(run_suite(ks, other)));
}

// The plots' sweeps (report.hpp): every measured element is in exactly one
// histogram bin and one bin of each sweep, and the bins' maxima make the total.
TEST(RunSuite, SweepsPartitionTheMeasuredElements) {
  const auto ks = kernels({"shifted_f32", "naive_f32"});
  const Report r = run_suite(ks, small_run({"normal_s100", "mask_neg_inf"}, {3, 33, 300}));
  for (const KernelSummary& k : r.kernels) {
    std::uint64_t in_histogram = 0;
    for (std::uint64_t c : k.ulp_histogram) in_histogram += c;
    EXPECT_EQ(in_histogram, k.measured) << k.kernel;
    ASSERT_FALSE(k.ulp_histogram.empty());
    EXPECT_NE(k.ulp_histogram.back(), 0u) << "trailing empty bins are dropped";
    std::vector<double> sizes;
    for (const ErrorBin& b : k.by_size) sizes.push_back(b.key);
    EXPECT_EQ(sizes, (std::vector<double>{3, 33, 300}));
    EXPECT_EQ(k.by_temperature.size(), 2u);
    EXPECT_EQ(k.by_temperature.front().key, 0.7);
    for (const std::vector<ErrorBin>* sweep : {&k.by_size, &k.by_temperature, &k.by_magnitude}) {
      std::uint64_t measured = 0, nonfinite = 0;
      double max_ulp = 0;
      for (const ErrorBin& b : *sweep) {
        measured += b.measured;
        nonfinite += b.nonfinite;
        max_ulp = std::max(max_ulp, b.max_ulp);
      }
      EXPECT_EQ(measured, k.measured) << k.kernel;
      EXPECT_EQ(nonfinite, k.nonfinite) << k.kernel;
      EXPECT_EQ(max_ulp, k.max_ulp) << k.kernel;
    }
  }
  // naive overflows on normal_s100 (|x| up to ~400): flagged in the bins of large magnitude only.
  const KernelSummary& naive = summary(r, "naive_f32", "softmax");
  for (const ErrorBin& b : naive.by_magnitude)
    if (b.key < 1) {
      EXPECT_EQ(b.nonfinite, 0u) << b.key;
    }
  EXPECT_GT(naive.by_magnitude.back().nonfinite, 0u);
}

// The tiered oracle (docs/oracle.md) against MPFR for every row: the same
// verdicts and counts, the same histograms and Herbie bits, ULP figures within
// the fast tier's 1/1000 ulp; and the fast tier really carries the run.
TEST(RunSuite, TieredOracleGivesTheSameVerdictsAsMpfr) {
  std::vector<const Kernel*> ks;
  for (const Kernel& k : builtin_kernels())
    if (k.available) ks.push_back(&k);
  for (const char* m : {"mutant_no_max_shift", "mutant_skip_tail", "mutant_temperature_multiplied",
                        "mutant_log_of_softmax", "mutant_masked_nan"})
    ks.push_back(find_kernel(m));
  RunOptions opt = small_run({}, {1, 3, 31, 300});
  opt.jobs = 2;
  opt.oracle = OracleMode::mpfr;
  const Report exact = run_suite(ks, opt);
  opt.oracle = OracleMode::tiered;
  Report tiered = run_suite(ks, opt);
  EXPECT_EQ(exact.oracle.mode, "mpfr");
  EXPECT_EQ(exact.oracle.mpfr_rows, exact.oracle.rows);
  EXPECT_EQ(tiered.oracle.mode, "tiered");
  EXPECT_EQ(tiered.oracle.rows, exact.oracle.rows);
  ASSERT_EQ(tiered.kernels.size(), exact.kernels.size());
  EXPECT_EQ(tiered.all_held(), exact.all_held());
  bool some_violated = false;
  for (std::size_t i = 0; i < exact.kernels.size(); ++i) {
    const KernelSummary &a = exact.kernels[i], &b = tiered.kernels[i];
    SCOPED_TRACE(a.kernel + " " + a.op);
    some_violated = some_violated || a.status == "violated";
    EXPECT_EQ(b.status, a.status);
    EXPECT_EQ(b.contract_violations, a.contract_violations);
    EXPECT_EQ(b.policy_violations, a.policy_violations);
    EXPECT_EQ(b.policy_rows, a.policy_rows);
    EXPECT_EQ(b.rows, a.rows);
    EXPECT_EQ(b.measured, a.measured);
    EXPECT_EQ(b.nonfinite, a.nonfinite);
    EXPECT_EQ(b.special_mismatch, a.special_mismatch);
    EXPECT_EQ(b.ulp_histogram, a.ulp_histogram);
    EXPECT_EQ(b.max_bits, a.max_bits);
    EXPECT_NEAR(b.mean_bits, a.mean_bits, 1e-12 * std::max(1.0, a.mean_bits));
    EXPECT_NEAR(b.max_ulp, a.max_ulp, 1e-3);
    EXPECT_NEAR(b.mean_ulp, a.mean_ulp, 1e-3);
    ASSERT_EQ(b.by_family.size(), a.by_family.size());
    for (std::size_t j = 0; j < a.by_family.size(); ++j) {
      EXPECT_EQ(b.by_family[j].violations, a.by_family[j].violations) << a.by_family[j].family;
      EXPECT_EQ(b.by_family[j].nonfinite, a.by_family[j].nonfinite) << a.by_family[j].family;
      EXPECT_NEAR(b.by_family[j].max_ulp, a.by_family[j].max_ulp, 1e-3) << a.by_family[j].family;
    }
    // The reference rule and the bias counts are decided the same way by
    // either oracle (a sign is certain where an error reaches 1/2 ulp).
    EXPECT_EQ(b.reference.rows, a.reference.rows);
    EXPECT_EQ(b.reference.violations, a.reference.violations);
    EXPECT_EQ(b.distribution.above, a.distribution.above);
    EXPECT_EQ(b.distribution.below, a.distribution.below);
    EXPECT_EQ(b.distribution.rows_above, a.distribution.rows_above);
    EXPECT_EQ(b.distribution.rows_below, a.distribution.rows_below);
    EXPECT_NEAR(b.distribution.p99_ulp, a.distribution.p99_ulp, 0.03 * a.distribution.p99_ulp + 1e-3);
    EXPECT_NEAR(b.distribution.mean_signed_ulp, a.distribution.mean_signed_ulp,
                1e-3 + 1e-9 * std::fabs(a.distribution.mean_signed_ulp));
  }
  EXPECT_TRUE(some_violated) << "the mutants must give the comparison a violated verdict to match";
  // The fast tiers decide almost every row of the ops they know (op table:
  // fast_tier: the softmax and log-softmax rows, lse and entropy); the count
  // below is taken on copies of the kernels that keep those ops.
  std::vector<Kernel> fast_only;
  fast_only.reserve(ks.size());
  for (const Kernel* k : ks) {
    fast_only.push_back(*k);
    std::erase_if(fast_only.back().ops,
                  [](const OpDecl& d) { return !spec(d.op).fast_tier; });
  }
  std::vector<const Kernel*> fks;
  for (const Kernel& k : fast_only) fks.push_back(&k);
  tiered = run_suite(fks, opt);
  // f64 rows: the double-double tier; the others should almost never need MPFR.
  std::uint64_t f64_rows = 0;
  {
    RunOptions only64 = opt;
    std::vector<const Kernel*> k64;
    for (const Kernel* k : fks)
      if (k->format == Format::f64) k64.push_back(k);
    f64_rows = run_suite(k64, only64).oracle.rows;
  }
  // Short one-hot log-softmax rows whose exact value lies within 2^-256 of a
  // midpoint of the format (MPFR's own value is the midpoint) and the
  // mutants' garbage fall back; a tier that gave up on more would be useless.
  EXPECT_LE(tiered.oracle.mpfr_rows, f64_rows + (tiered.oracle.rows - f64_rows) / 10)
      << "the fast tier fell back on more than 10% of the non-f64 rows";
}

namespace {

// A copy of shifted_f32 without a contract whose outputs are scaled by
// `scale` (1: correct; 1 + k 2^-24: k ulp high, all one way).
Kernel scaled_without_contract(const std::string& name, float scale) {
  Kernel k = *find_kernel("shifted_f32");
  k.name = name;
  k.ops = {{Op::softmax, Contract{}}};
  k.compute = [inner = k.compute, scale](const OpCall& c) {
    inner(c);
    auto* y = static_cast<float*>(c.out[0]);
    for (std::int64_t i = 0; i < c.rows * c.cols; ++i) y[i] *= scale;
  };
  return k;
}

}  // namespace

// The reference rule (report.hpp ReferenceRuleSettings): outputs without a
// contract are judged row by row against softcheck's stable kernel; a correct
// kernel passes, one 1e5 ulp off fails every row; an opt-out says why; a
// contract kernel is judged only with scope "all"; "off" judges nothing.
TEST(RunSuite, ReferenceRuleJudgesOutputsWithoutAContract) {
  const Kernel good = scaled_without_contract("nc_good_f32", 1.0f);
  const Kernel wrong = scaled_without_contract("nc_wrong_f32", 1.0f + 1e5f * 0x1p-24f);
  Kernel opted = wrong;
  opted.name = "nc_opted_f32";
  opted.ops[0].opt_outs = {{std::string(floor_reference), "test: wrong on purpose"}};
  const std::vector<const Kernel*> ks{&good, &wrong, &opted, find_kernel("online_f32")};
  const Report r = run_suite(ks, small_run({"normal_s10", "one_dominant"}, {3, 33}));
  const KernelSummary& g = summary(r, "nc_good_f32", "softmax");
  EXPECT_EQ(g.reference.kernel, "shifted_f32");
  EXPECT_EQ(g.reference.rows, g.rows);
  EXPECT_EQ(g.reference.violations, 0u);
  EXPECT_LT(g.reference.max_ratio, 1);
  EXPECT_EQ(g.status, "no_contract");
  const KernelSummary& w = summary(r, "nc_wrong_f32", "softmax");
  EXPECT_EQ(w.reference.violations, w.rows);
  EXPECT_EQ(w.status, "violated");
  for (const FamilySummary& f : w.by_family) EXPECT_EQ(f.violations, f.rows) << f.family;
  EXPECT_EQ(summary(r, "nc_opted_f32", "softmax").reference.not_applied, "opted out: test: wrong on purpose");
  EXPECT_EQ(summary(r, "nc_opted_f32", "softmax").status, "no_contract");
  EXPECT_FALSE(summary(r, "online_f32", "softmax").reference.present());
  EXPECT_FALSE(r.all_held());

  RunOptions all = small_run({"normal_s10"}, {33});
  all.reference_rule.scope = "all";
  const Report a = run_suite({find_kernel("online_f32")}, all);
  EXPECT_EQ(summary(a, "online_f32", "lse").reference.kernel, "shifted_f32");
  EXPECT_EQ(summary(a, "online_f32", "softmax").reference.violations, 0u);
  all.reference_rule.scope = "off";
  const Report off = run_suite({&wrong}, all);
  EXPECT_FALSE(off.kernels.at(0).reference.present());
  EXPECT_EQ(off.kernels.at(0).status, "no_contract");
  all.reference_rule.k = 0.5;
  EXPECT_THROW(run_suite({&wrong}, all), std::invalid_argument);
}

// Bias and distribution: a kernel whose outputs are all a few ulp high has
// every measured row above and is flagged; the correct one is not; cells
// partition an entry's rows and measured outputs.
TEST(RunSuite, DistributionShowsBiasAndCellsPartitionTheRows) {
  const Kernel good = scaled_without_contract("nc_good_f32", 1.0f);
  const Kernel high = scaled_without_contract("nc_high_f32", 1.0f + 4 * 0x1p-24f);
  const Report r = run_suite({&good, &high}, small_run({"normal_s1", "attention_d64"}, {8, 31, 128}));
  const KernelSummary& h = summary(r, "nc_high_f32", "softmax");
  EXPECT_TRUE(h.distribution.biased()) << h.distribution.bias_z();
  EXPECT_GT(h.distribution.rows_above, 10 * h.distribution.rows_below);
  EXPECT_GT(h.distribution.mean_signed_ulp, 2);
  EXPECT_GT(h.distribution.mean_signed_rel, 0);
  const KernelSummary& g = summary(r, "nc_good_f32", "softmax");
  // Outputs: more above and fewer below than the correct kernel's (long rows'
  // outputs, far off either way, keep both counts large).
  EXPECT_GT(h.distribution.above, g.distribution.above);
  EXPECT_LT(h.distribution.below, g.distribution.below);
  EXPECT_FALSE(g.distribution.biased()) << g.distribution.bias_z();
  EXPECT_LT(std::fabs(g.distribution.mean_signed_ulp), 1);
  for (const KernelSummary* k : {&g, &h}) {
    EXPECT_LE(k->distribution.p50_ulp, k->distribution.p99_ulp);
    EXPECT_LE(k->distribution.p99_ulp, k->distribution.max_ulp);
    std::uint64_t rows = 0, measured = 0;
    for (const CellSummary& c : k->cells) {
      rows += c.rows;
      measured += c.measured;
      EXPECT_LE(c.rows_above + c.rows_below, c.rows);
    }
    EXPECT_EQ(rows, k->rows);
    EXPECT_EQ(measured, k->measured);
    EXPECT_EQ(k->cells.size(), 6u);  // 2 families x 3 sizes
  }
}

// Timings (RunOptions::entry_seconds) come out of band: one per entry, and
// the report is the same with or without them.
TEST(RunSuite, EntrySecondsLeaveTheReportUnchanged) {
  const auto ks = kernels({"shifted_f32", "online_f32"});
  RunOptions opt = small_run({"normal_s10"}, {31, 300}, 2);
  const std::string plain = to_json(run_suite(ks, opt));
  std::vector<double> seconds;
  opt.entry_seconds = &seconds;
  const Report timed = run_suite(ks, opt);
  EXPECT_EQ(to_json(timed), plain);
  ASSERT_EQ(seconds.size(), timed.kernels.size());
  for (double s : seconds) EXPECT_GE(s, 0);  // measured, never asserted beyond that
}

// The gradient ops (a second input: the class target, the upstream
// gradient): every output of every gradient kernel holds its contract on the
// suite's rows, the careless kernel's loss does not, and the report is the
// same for any --jobs.
TEST(RunSuite, GradientKernelsHoldAndTheCarelessOneIsCaught) {
  RunOptions opt = small_run({"normal_s1", "one_dominant", "mask_neg_inf", "normal_s100"}, {1, 3, 31, 1000});
  std::vector<const Kernel*> ks;
  for (const Kernel& k : gradient_kernels()) ks.push_back(&k);
  const Report r = run_suite(ks, opt);
  std::size_t entries = 0;
  for (const KernelSummary& s : r.kernels) {
    ++entries;
    const std::vector<std::string> outputs =
        s.op == "cross_entropy" ? std::vector<std::string>{"loss", "dx"} : std::vector<std::string>{"y", "dx"};
    EXPECT_NE(std::find(outputs.begin(), outputs.end(), s.output), outputs.end()) << s.op << ":" << s.output;
    EXPECT_GT(s.rows, 0u) << s.kernel;
    if (s.kernel == "careless_cross_entropy_f32") {
      if (s.output == "loss") {
        EXPECT_EQ(s.status, "violated");
      }
      continue;
    }
    EXPECT_EQ(s.status, "held") << s.kernel << ":" << s.output << " worst " << s.worst.repro;
    EXPECT_GT(s.max_bound_ratio, 0.0) << s.kernel << ":" << s.output;  // measured, not vacuous
  }
  EXPECT_EQ(entries, 2 * gradient_kernels().size());
  expect_same_report_with_two_jobs(ks, opt, r);
}

TEST(RunSuite, OpSelectionKeepsTheNamedOpsOnly) {
  RunOptions opt = small_run({"normal_s1"}, {8});
  opt.selection.ops = {"lse"};
  const Report r = run_suite(kernels({"shifted_f32"}), opt);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].op, "lse");
  EXPECT_EQ(r.selected_ops, std::vector<std::string>{"lse"});
  opt.selection.ops = {"no_such_op"};
  EXPECT_THROW(run_suite(kernels({"shifted_f32"}), opt), std::invalid_argument);
}

// A gradient kernel without a contract is judged by the reference rule
// against softcheck's stable gradient kernel of its format: unchanged it
// passes, its dx scaled by (1 + 2^-10) breaks the rule.
TEST(RunSuite, ReferenceRuleJudgesGradientsWithoutAContract) {
  const Kernel* base = find_kernel("cross_entropy_f32");
  ASSERT_NE(base, nullptr);
  Kernel plain = *base;
  plain.name = "plain_cross_entropy_f32";
  plain.ops[0].contract = Contract{};
  plain.ops[0].further_contracts = {Contract{}};
  Kernel off = plain;
  off.name = "off_cross_entropy_f32";
  off.compute = [right = base->compute](const OpCall& c) {
    right(c);
    auto* dx = static_cast<float*>(c.out[1]);
    for (std::int64_t i = 0; i < c.rows * c.cols; ++i) dx[i] *= 1.0f + 0x1p-10f;
  };
  const Report r = run_suite({&plain, &off}, small_run({"normal_s1", "one_dominant"}, {8, 100}));
  for (const KernelSummary& s : r.kernels) {
    EXPECT_EQ(s.reference.kernel, "cross_entropy_f32") << s.kernel << ":" << s.output;
    EXPECT_GT(s.reference.rows, 0u) << s.kernel << ":" << s.output;
    const bool broken = s.kernel == "off_cross_entropy_f32" && s.output == "dx";
    EXPECT_EQ(s.reference.violations > 0, broken) << s.kernel << ":" << s.output;
    EXPECT_EQ(s.status, broken ? "violated" : "no_contract") << s.kernel << ":" << s.output;
  }
}

// Attention (q, K, V beside the bias row): every attention kernel holds
// both its contracts (O in u s, lse in u) on the attention families, the
// broken flash kernels are caught on O, the softmax families are not run
// for it (nor the attention families for a softmax kernel), and the report
// is the same for any --jobs.
TEST(RunSuite, AttentionKernelsHoldAndTheBrokenOnesAreCaught) {
  RunOptions opt = small_run({"attn_gaussian_d64", "attn_sink_d128", "attn_tile_mask_d64", "attn_causal_d64",
                              "attn_wide_bias_d64", "attn_fully_masked_d64"},
                             {1, 17, 128, 300});
  // The CUDA attention kernel is listed everywhere and runs only where a
  // device is present (docs/attention.md): it takes part only when available.
  std::vector<const Kernel*> ks;
  for (const Kernel& k : attention_kernels())
    if (k.available && k.find(Op::attention) != nullptr) ks.push_back(&k);
  const Report r = run_suite(ks, opt);
  ASSERT_EQ(r.kernels.size(), 2 * ks.size());
  std::size_t caught = 0;
  std::uint64_t lse_unbounded = 0;
  for (const KernelSummary& s : r.kernels) {
    EXPECT_EQ(s.op, "attention");
    EXPECT_TRUE(s.output == "O" || s.output == "lse") << s.output;
    EXPECT_GT(s.rows, 0u) << s.kernel;
    const Kernel* k = find_kernel(s.kernel);
    ASSERT_NE(k, nullptr) << s.kernel;
    // The fully masked family reached the policy check, except with a sink
    // logit: such a query has a value (O = 0, lse = s), judged by the contracts.
    EXPECT_EQ(s.policy_rows > 0, k->ops[0].params.sink == -INFINITY) << s.kernel;
    EXPECT_LE(s.measured, s.elements) << s.kernel;
    if (k->test_only) {
      if (s.output == "O" && s.status == "violated") ++caught;
      continue;
    }
    // attention_flash_pf16_f32's O has no finite bound (docs/attention.md).
    const bool declared = k->find(Op::attention)->contract_of(s.output == "O" ? 0 : 1).declared;
    EXPECT_EQ(s.status, declared ? "held" : "no_contract") << s.kernel << ":" << s.output << " worst " << s.worst.repro;
    if (declared) {
      EXPECT_GT(s.max_bound_ratio, 0.0) << s.kernel << ":" << s.output;  // measured, not vacuous
      // Rows with an infinite bound are counted, not folded into "held".
      EXPECT_LT(s.unbounded_rows, s.rows) << s.kernel << ":" << s.output;
      if (s.output == "lse" && s.kernel == "attention_flash_bc64_f32") lse_unbounded = s.unbounded_rows;
    } else {
      EXPECT_EQ(s.unbounded_rows, 0u) << s.kernel << ":" << s.output;
    }
  }
  // attn_wide_bias_d64 takes the flash lse bound past K u >= 1 on some rows
  // (max |bias| to 2.5e30): those rows are counted as unchecked.
  EXPECT_GT(lse_unbounded, 0u);
  const auto mutants = std::count_if(ks.begin(), ks.end(), [](const Kernel* k) { return k->test_only; });
  EXPECT_GE(mutants, 2);
  EXPECT_EQ(caught, static_cast<std::size_t>(mutants));
  EXPECT_EQ(r.families.size(), 6u);  // the attention families only
  expect_same_report_with_two_jobs(ks, opt, r);
}

// Relu and linear attention (docs/attention.md) on the same attention
// families: every kernel holds its O contract with a measured, non-vacuous
// bound; the broken ones (relu without the 1/n, linear dividing by n) are
// caught; relu's fully masked queries are measured (O = 0 exactly, no
// policy), linear's follow the policy; the reference rule's kernel is the
// op's own naive one; the report is the same for any --jobs.
TEST(RunSuite, AttentionAlternativesHoldAndTheBrokenOnesAreCaught) {
  RunOptions opt = small_run({"attn_gaussian_d64", "attn_sink_d128", "attn_tile_mask_d64", "attn_causal_d64",
                              "attn_wide_bias_d64", "attn_fully_masked_d64"},
                             {1, 17, 128, 300});
  std::vector<const Kernel*> ks;
  for (const Kernel& k : attention_kernels())
    if (k.find(Op::relu_attention) != nullptr || k.find(Op::linear_attention) != nullptr) ks.push_back(&k);
  ASSERT_GE(ks.size(), 8u);
  const Report r = run_suite(ks, opt);
  ASSERT_EQ(r.kernels.size(), ks.size());  // one output each
  std::size_t caught = 0, mutants = 0;
  for (const KernelSummary& s : r.kernels) {
    const std::optional<Op> op = parse_op(s.op);
    ASSERT_TRUE(op == Op::relu_attention || op == Op::linear_attention) << s.op;
    EXPECT_EQ(s.output, "");  // one output: the entry is the op's
    EXPECT_GT(s.rows, 0u) << s.kernel;
    // Relu's fully masked query has an exact value; linear's is 0/0.
    if (op == Op::relu_attention)
      EXPECT_EQ(s.policy_rows, 0u) << s.kernel;
    else
      EXPECT_GT(s.policy_rows, 0u) << s.kernel;
    const Kernel* k = find_kernel(s.kernel);
    ASSERT_NE(k, nullptr) << s.kernel;
    if (k->test_only) {
      ++mutants;
      if (s.status == "violated" && s.contract_violations > 0) ++caught;
      continue;
    }
    EXPECT_EQ(s.status, "held") << s.kernel << " worst " << s.worst.repro;
    EXPECT_GT(s.max_bound_ratio, 0.0) << s.kernel;  // measured, not vacuous
    EXPECT_LT(s.max_bound_ratio, 1.0) << s.kernel;
    EXPECT_EQ(stable_attention_reference(*op, k->format, 0).kernel->algorithm, std::string(s.op) + "_naive");
  }
  EXPECT_EQ(mutants, 2u);
  EXPECT_EQ(caught, mutants);
  EXPECT_EQ(r.families.size(), 6u);
  expect_same_report_with_two_jobs(ks, opt, r);
}

TEST(RunSuite, AttentionAndSoftmaxFamiliesGoToTheirOwnOps) {
  RunOptions opt = small_run({"normal_s1", "attn_gaussian_d64"}, {8});
  const Report softmax_only = run_suite(kernels({"shifted_f32"}), opt);
  EXPECT_EQ(softmax_only.families, std::vector<std::string>{"normal_s1"});
  for (const KernelSummary& s : softmax_only.kernels)
    for (const FamilySummary& f : s.by_family) EXPECT_EQ(f.family, "normal_s1");
  const Report both = run_suite(kernels({"shifted_f32", "attention_naive_f32"}), opt);
  for (const KernelSummary& s : both.kernels)
    for (const FamilySummary& f : s.by_family)
      EXPECT_EQ(f.family, s.op == "attention" ? "attn_gaussian_d64" : "normal_s1") << s.kernel;
  // With no family named, an attention kernel runs the attention families only.
  const std::vector<SuiteCase> cases = build_suite({"quick", {}, {}, {}, {}}, false, true);
  ASSERT_FALSE(cases.empty());
  for (const SuiteCase& c : cases) {
    EXPECT_TRUE(c.family->attention()) << c.family->name;
    EXPECT_LE(c.cols * c.family->head_dim, attention_max_elements) << c.family->name;
  }
}

// `run --budget`: each entry's cheapest case, then the cheapest others while
// the modelled seconds fit; the others listed; the same cases for any --jobs.
TEST(RunSuite, BudgetKeepsTheCheapestCasesAndListsTheOthers) {
  const auto ks = kernels({"shifted_f32", "online_f64"});
  const auto fams = std::vector<std::string>{"normal_s10", "mask_neg_inf"};
  RunOptions opt = small_run(fams, {3, 300, 4096}, 1);
  const Report whole = run_suite(ks, opt);
  EXPECT_FALSE(whole.budget.present());

  opt.budget = {1e6, 1e6};  // room for every case: the whole run's results
  const Report roomy = run_suite(ks, opt);
  ASSERT_TRUE(roomy.budget.present());
  EXPECT_EQ(roomy.budget.cases, 2u * 2u * 3u * 2u);  // formats x families x sizes x temperatures
  EXPECT_EQ(roomy.budget.cases_run, roomy.budget.cases);
  EXPECT_TRUE(roomy.budget.skipped.empty());
  ASSERT_EQ(roomy.kernels.size(), whole.kernels.size());
  for (std::size_t i = 0; i < whole.kernels.size(); ++i) {
    EXPECT_EQ(roomy.kernels[i].cases, whole.kernels[i].cases);
    EXPECT_EQ(roomy.kernels[i].max_ulp, whole.kernels[i].max_ulp);
  }

  // A third of the modelled seconds: fewer cases, none dearer kept in place of a cheaper one.
  const double all = roomy.budget.modelled_seconds;
  opt.budget = {all / 3, all / 3};
  const Report tight = run_suite(ks, opt);
  EXPECT_LE(tight.budget.modelled_seconds, all / 3);
  EXPECT_GT(tight.budget.cases_run, 0u);
  EXPECT_LT(tight.budget.cases_run, tight.budget.cases);
  EXPECT_EQ(tight.budget.cases_run + tight.budget.skipped.size(), tight.budget.cases);
  std::uint64_t cases_left_out = 0;
  for (const KernelSummary& k : tight.kernels) {
    EXPECT_GT(k.cases, 0u) << k.kernel << " ran no case";
    EXPECT_LE(k.cases, summary(whole, k.kernel, k.op).cases) << k.kernel;
    cases_left_out += summary(whole, k.kernel, k.op).cases - k.cases;
  }
  EXPECT_GT(cases_left_out, 0u);
  // Within one family, format and temperature a longer row costs more: when a
  // row length is skipped, every longer one is skipped too.
  const auto skipped = [&](SkippedCase sk, std::int64_t cols) {
    sk.cols = cols;
    return std::find(tight.budget.skipped.begin(), tight.budget.skipped.end(), sk) != tight.budget.skipped.end();
  };
  for (const SkippedCase& sk : tight.budget.skipped)
    for (std::int64_t longer : {3, 300, 4096})
      if (longer > sk.cols) {
        EXPECT_TRUE(skipped(sk, longer)) << sk.family << " " << sk.format << " n=" << longer;
      }
  EXPECT_EQ(to_json(tight), to_json(run_suite(ks, [&] {
              RunOptions o = opt;
              o.jobs = 3;
              return o;
            }())));

  // A budget with a shard, or a share beyond the budget, is refused.
  RunOptions sharded = opt;
  sharded.shard.count = 2;
  EXPECT_THROW(run_suite(ks, sharded), std::invalid_argument);
  RunOptions beyond = opt;
  beyond.budget = {1, 2};
  EXPECT_THROW(run_suite(ks, beyond), std::invalid_argument);
  // Less than one case of each entry: refused, never an entry that ran nothing.
  RunOptions starved = opt;
  starved.budget = {1e-9, 1e-9};
  EXPECT_THROW(run_suite(ks, starved), std::invalid_argument);
}
