// The hex-exact row syntax of repro lines, and replay's input checks.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <sstream>

#include "softcheck/generators.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::props {
namespace {

bool same(double a, double b) {
  return std::isnan(a) ? std::isnan(b) : std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

TEST(ParseValue, AcceptsDecimalHexAndSpecials) {
  const std::pair<const char*, double> ok[] = {
      {"0x1p+0", 1.0},   {"-0x1.8p-3", -0.1875}, {"2.5", 2.5},       {" 1e-3 ", 1e-3},
      {"+4", 4.0},       {"inf", INFINITY},      {"+inf", INFINITY}, {"-inf", -INFINITY},
      {"Infinity", INFINITY}, {"-0", -0.0},      {"0X1P-1074", 0x1p-1074}, {".5", 0.5}};
  for (const auto& [text, value] : ok) {
    const Expected<double> v = parse_value(text);
    ASSERT_TRUE(v.has_value()) << text << ": " << v.error();
    EXPECT_TRUE(same(*v, value)) << text;
  }
  EXPECT_TRUE(std::isnan(*parse_value("nan")));
  EXPECT_TRUE(std::isnan(*parse_value("NaN")));
}

TEST(ParseValue, RejectsJunkWithAMessage) {
  for (const char* text : {"", " ", "abc", "0x", "--1", "+-1", "0x-1", "1.5x", "1e999", "nan(1)", "1 2", "0xg"}) {
    const Expected<double> v = parse_value(text);
    EXPECT_FALSE(v.has_value()) << "'" << text << "' parsed as " << (v ? *v : 0.0);
    if (!v) {
      EXPECT_FALSE(v.error().empty());
    }
  }
}

TEST(ParseRow, SplitsOnCommasAndNamesTheBadEntry) {
  const auto row = parse_row("0x1p+0,-inf, 3 ,nan");
  ASSERT_TRUE(row.has_value()) << row.error();
  ASSERT_EQ(row->size(), 4u);
  EXPECT_EQ((*row)[2], 3.0);
  for (const char* bad : {"", "1,", ",1", "1,,2", "1,x"}) EXPECT_FALSE(parse_row(bad).has_value()) << bad;
  const auto err = parse_row("1,2,junk");
  ASSERT_FALSE(err.has_value());
  EXPECT_NE(err.error().find("entry 3"), std::string::npos) << err.error();
}

// Any generated row survives format_row -> parse_row bit for bit.
RC_GTEST_PROP(ParseRow, RoundTripsEveryGeneratedRow, ()) {
  const Format f = *rc::gen::element(Format::f64, Format::f32, Format::f16, Format::bf16);
  const std::vector<double> row = *gen::any_row(f, gen::RowOptions{64, 0});
  const auto back = parse_row(format_row(row));
  RC_ASSERT(back.has_value());
  RC_ASSERT(back->size() == row.size());
  for (std::size_t i = 0; i < row.size(); ++i) RC_ASSERT(same((*back)[i], row[i]));
}

TEST(ReproCommand, NamesEverythingNeededToReplay) {
  const std::string line = repro_command("shifted_f32", Op::log_softmax, "accuracy", Case{{1.0, -INFINITY}, 0.5});
  EXPECT_EQ(line,
            "softcheck repro --impl shifted_f32 --op log_softmax --property accuracy --temperature=0x1p-1 "
            "--row=0x1p+0,-inf");
  // A plugin kernel is replayed with the options that loaded it.
  EXPECT_EQ(repro_command("k_f32", Op::softmax, "sum_to_one", Case{{2.0}, 1}, "--plugin /p/lib.so --isolate"),
            "softcheck repro --plugin /p/lib.so --isolate --impl k_f32 --op softmax --property sum_to_one "
            "--temperature=0x1p+0 --row=0x1p+1");
}

TEST(Replay, RejectsBadInputsClearly) {
  const Kernel* k = find_kernel("shifted_log1p_f32");
  ASSERT_NE(k, nullptr);
  EXPECT_FALSE(replay(*k, Op::softmax, "nosuch", Case{{1.0}, 1.0}).has_value());
  EXPECT_FALSE(replay(*k, Op::softmax, "accuracy", Case{{}, 1.0}).has_value());
  EXPECT_FALSE(replay(*k, Op::softmax, "accuracy", Case{{1.0}, 0.0}).has_value());
  EXPECT_FALSE(replay(*k, Op::softmax, "accuracy", Case{{1.0}, NAN}).has_value());
  const auto inexact = replay(*k, Op::softmax, "accuracy", Case{{0.1}, 1.0});
  ASSERT_FALSE(inexact.has_value());
  EXPECT_NE(inexact.error().find("not exactly representable in f32"), std::string::npos) << inexact.error();
  const Kernel* online = find_kernel("online_f32");
  ASSERT_NE(online, nullptr);
  EXPECT_FALSE(replay(*online, Op::log_softmax, "accuracy", Case{{1.0}, 1.0}).has_value());
}

// A gradient op's case carries its target or upstream gradient; the line
// parses back to the same case, and replay rejects one without them.
TEST(ReproCommand, CarriesTargetAndUpstream) {
  const Case ce{{1.0, -INFINITY, 0.25}, 2.0, 2, {}};
  const std::string line = repro_command("cross_entropy_f32", Op::cross_entropy, "ce_signs", ce);
  EXPECT_EQ(line,
            "softcheck repro --impl cross_entropy_f32 --op cross_entropy --property ce_signs --target=2 "
            "--temperature=0x1p+1 --row=0x1p+0,-inf,0x1p-2");
  const auto back = parse_repro_case(line);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->target, std::optional<std::int64_t>(2));
  EXPECT_EQ(back->temperature, 2.0);
  ASSERT_EQ(back->row.size(), 3u);
  EXPECT_EQ(back->row[1], -INFINITY);
  EXPECT_TRUE(back->upstream.empty());

  const Case sb{{1.0, 2.0}, 1.0, std::nullopt, {0.5, -3.0}};
  const auto g = parse_repro_case(repro_command("softmax_backward_f64", Op::softmax_backward, "gradient_accuracy", sb));
  ASSERT_TRUE(g.has_value()) << g.error();
  EXPECT_EQ(g->upstream, (std::vector<double>{0.5, -3.0}));
  EXPECT_FALSE(g->target.has_value());
  EXPECT_FALSE(parse_repro_case("softcheck repro --target=x1 --row=1").has_value());
  EXPECT_FALSE(parse_repro_case("softcheck repro --upstream=1,,2 --row=1").has_value());
}

TEST(Replay, GradientCaseNeedsItsInputs) {
  const Kernel* ce = find_kernel("cross_entropy_f64");
  const Kernel* sb = find_kernel("softmax_backward_f64");
  ASSERT_NE(ce, nullptr);
  ASSERT_NE(sb, nullptr);
  const auto missing = replay(*ce, Op::cross_entropy, "ce_signs", Case{{1.0, 2.0}, 1.0});
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().find("--target"), std::string::npos) << missing.error();
  EXPECT_FALSE(replay(*ce, Op::cross_entropy, "ce_signs", Case{{1.0, 2.0}, 1.0, 2}).has_value());  // out of range
  EXPECT_FALSE(replay(*ce, Op::cross_entropy, "ce_signs", Case{{1.0, 2.0}, 1.0, 0, {1.0, 1.0}}).has_value());
  EXPECT_FALSE(replay(*sb, Op::softmax_backward, "gradient_accuracy", Case{{1.0, 2.0}, 1.0, std::nullopt, {1.0}})
                   .has_value());  // g of another length
  EXPECT_FALSE(replay(*sb, Op::softmax_backward, "gradient_accuracy", Case{{1.0, 2.0}, 1.0, std::nullopt, {1.0, NAN}})
                   .has_value());
  const auto ok = replay(*ce, Op::cross_entropy, "ce_signs", Case{{1.0, 2.0}, 1.0, ignore_index});
  ASSERT_TRUE(ok.has_value()) << ok.error();
  EXPECT_EQ(ok->result.status, CaseStatus::pass) << ok->result.message;
}

// A gradient property on a logits-only op (or the reverse) is a usage
// error, never a run.
TEST(Replay, PropertyAndOpMustTakeTheSameInputs) {
  const Kernel* k = find_kernel("shifted_log1p_f64");
  ASSERT_NE(k, nullptr);
  const auto r = replay(*k, Op::softmax, "gradient_sum_zero", Case{{0.0, 1.0}, 1.0});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("logits alone"), std::string::npos) << r.error();
  const Kernel* ce = find_kernel("cross_entropy_f64");
  ASSERT_NE(ce, nullptr);
  EXPECT_FALSE(replay(*ce, Op::cross_entropy, "accuracy", Case{{0.0, 1.0}, 1.0, 0}).has_value());
}

// An exact dx beyond f16's range: the kernel's -inf is right (the judge
// accepts it), so the sums of gradient_sum_zero / gradient_check do not
// apply; gradient_accuracy holds. Row [20, 0 x 19], g = 4096: dx_0 = g (1 -
// 20 p_0) ~ -77824 < -65504.
TEST(Replay, GradientBeyondTheFormatsRangeIsNotAFailure) {
  const Kernel* k = find_kernel("f16_log_softmax_backward_f32acc");
  ASSERT_NE(k, nullptr);
  std::vector<double> row(20, 0.0);
  row[0] = 20;
  const Case c{row, 1.0, std::nullopt, std::vector<double>(20, 4096.0)};
  for (const char* p : {"gradient_sum_zero", "gradient_check"}) {
    const auto r = replay(*k, Op::log_softmax_backward, p, c);
    ASSERT_TRUE(r.has_value()) << r.error();
    EXPECT_EQ(r->result.status, CaseStatus::not_applicable) << p << ": " << r->result.message;
  }
  const auto a = replay(*k, Op::log_softmax_backward, "gradient_accuracy", c);
  ASSERT_TRUE(a.has_value()) << a.error();
  EXPECT_EQ(a->result.status, CaseStatus::pass) << a->result.message;
}

TEST(Replay, RunsOneCase) {
  const Kernel* k = find_kernel("shifted_log1p_f64");
  ASSERT_NE(k, nullptr);
  const auto r = replay(*k, Op::softmax, "accuracy", Case{{1000, 1001, 1002}, 1.0});
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_TRUE(r->claim.claimed);
  EXPECT_EQ(r->result.status, CaseStatus::pass) << r->result.message;
  EXPECT_LE(r->result.measured, r->result.allowed);
  std::ostringstream os;
  print_replay(os, *k, Op::softmax, "accuracy", Case{{1000, 1001, 1002}, 1.0}, *r);
  EXPECT_NE(os.str().find("result:      pass"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("0x1.f4p+9,0x1.f48p+9,0x1.f5p+9"), std::string::npos) << os.str();
}

}  // namespace
}  // namespace softcheck::props
