// Coverage of the generated cases (properties.hpp, CaseClass): each class on
// hand-made cases, the counts of a run against the cases the kernel was
// actually given, and the "never met" lines of print_coverage.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include "fake_kernels.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"
#include "test_options.hpp"

namespace softcheck::props {
namespace {

bool in(const Case& c, Format f, CaseClass k) { return classify(c, f)[static_cast<std::size_t>(k)]; }

TEST(Classify, EachClassOnItsOwn) {
  const Format f32 = Format::f32;
  const Case plain{{0.0, 1.0, -2.5}, 1.0};
  for (std::size_t i = 0; i < case_class_count; ++i)
    EXPECT_FALSE(classify(plain, f32)[i]) << name(static_cast<CaseClass>(i));

  EXPECT_TRUE(in({{0.0, -INFINITY}, 1.0}, f32, CaseClass::masks));
  EXPECT_TRUE(in({{0.5, 3.0, 0.5}, 1.0}, f32, CaseClass::ties));
  EXPECT_FALSE(in({{-INFINITY, -INFINITY, 1.0}, 1.0}, f32, CaseClass::ties));  // masks are not ties
  // ln(FLT_MAX) = 88.72: 88 is within 2 of it, 95 in XNNPACK's band, 60 neither;
  // x / T counts (44 at T = 0.5 is 88).
  EXPECT_TRUE(in({{88.0}, 1.0}, f32, CaseClass::overflow_edge));
  EXPECT_TRUE(in({{-95.0, 0.0}, 1.0}, f32, CaseClass::overflow_edge));
  EXPECT_FALSE(in({{60.0}, 1.0}, f32, CaseClass::overflow_edge));
  EXPECT_TRUE(in({{44.0}, 0.5}, f32, CaseClass::overflow_edge));
  EXPECT_FALSE(in({{88.0}, 1.0}, Format::f64, CaseClass::overflow_edge));  // f64: ln(DBL_MAX) = 709.78
  // e^-100 = 3.7e-44 is a subnormal f32 (smallest normal 1.2e-38) but a normal f64.
  EXPECT_TRUE(in({{0.0, -100.0}, 1.0}, f32, CaseClass::subnormal_outputs));
  EXPECT_FALSE(in({{0.0, -100.0}, 1.0}, Format::f64, CaseClass::subnormal_outputs));
  EXPECT_FALSE(in({{0.0, -120.0}, 1.0}, f32, CaseClass::subnormal_outputs));  // rounds to 0
  EXPECT_TRUE(in({{0.0, -50.0}, 0.5}, f32, CaseClass::subnormal_outputs));    // z = -100
  EXPECT_FALSE(in({{0.0, NAN}, 1.0}, f32, CaseClass::subnormal_outputs));     // no exact softmax
  EXPECT_TRUE(in({{1.0}, 0.7}, f32, CaseClass::t_not_1));
  EXPECT_FALSE(in({std::vector<double>(512, 1.0), 1.0}, f32, CaseClass::long_rows));
  EXPECT_TRUE(in({std::vector<double>(513, 1.0), 1.0}, f32, CaseClass::long_rows));
}

// Long rows' classes are kept and reused: a row classified again, and one
// that differs from it in one bit, in its temperature or its format, must
// each get its own classes (a row in f64 may not overflow where it does in
// f32; a tie made by one entry counts).
TEST(Classify, LongRowsRepeatedOrChangedByOneBit) {
  std::vector<double> row(4096);
  for (std::size_t i = 0; i < row.size(); ++i) row[i] = -static_cast<double>(i) * 0.01 + 88.0;  // no tie; 88 at the f32 edge
  const Case c{row, 1.0};
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_FALSE(in(c, Format::f32, CaseClass::ties));
    EXPECT_TRUE(in(c, Format::f32, CaseClass::overflow_edge));
    EXPECT_FALSE(in(c, Format::f64, CaseClass::overflow_edge));
    EXPECT_TRUE(in(c, Format::f32, CaseClass::long_rows));
  }
  Case tie = c;
  tie.row[4095] = tie.row[4094];
  EXPECT_TRUE(in(tie, Format::f32, CaseClass::ties));
  Case next = c;
  next.row[100] = std::nextafter(next.row[100], 0.0);  // one bit: still no tie
  EXPECT_FALSE(in(next, Format::f32, CaseClass::ties));
  next.row[100] = next.row[101];
  EXPECT_TRUE(in(next, Format::f32, CaseClass::ties));
  EXPECT_FALSE(in({row, 2.0}, Format::f32, CaseClass::overflow_edge));  // z = 44 at T = 2
  EXPECT_TRUE(in({row, 2.0}, Format::f32, CaseClass::t_not_1));
  EXPECT_FALSE(in(c, Format::f32, CaseClass::t_not_1));
}

// The reference kernel wrapped to record every row it is given.
struct Recorder {
  Kernel kernel;
  std::shared_ptr<std::vector<Case>> seen = std::make_shared<std::vector<Case>>();
};

Recorder recording_reference() {
  Recorder r{testing::reference_kernel(Format::f64)};
  const ComputeFn inner = r.kernel.compute;
  r.kernel.compute = [inner, seen = r.seen](const OpCall& c) {
    const auto* x = static_cast<const double*>(c.in[0]);
    for (std::int64_t i = 0; i < c.rows; ++i)
      seen->push_back(Case{std::vector<double>(x + i * c.cols, x + (i + 1) * c.cols), c.temperature});
    inner(c);
  };
  return r;
}

// `range` runs the kernel once per case in scope (out-of-scope cases are
// discarded before), and the reference passes every case: the coverage counts
// are exactly the classes of the rows the kernel saw.
TEST(Coverage, CountsTheCasesTheKernelWasGiven) {
  const Recorder r = recording_reference();
  CheckOptions o = testing::ci_options();
  o.tests = 200;
  const PropertyVerdict v = check_property(r.kernel, Op::softmax, "range", o);
  ASSERT_EQ(v.verdict, Verdict::passed);
  ASSERT_TRUE(v.coverage.has_value());
  EXPECT_EQ(v.coverage->cases, v.tests_passed);
  ASSERT_EQ(r.seen->size(), static_cast<std::size_t>(v.tests_passed));
  std::array<int, case_class_count> expected{};
  for (const Case& c : *r.seen) {
    const auto classes = classify(c, Format::f64);
    for (std::size_t i = 0; i < case_class_count; ++i) expected[i] += classes[i] ? 1 : 0;
  }
  EXPECT_EQ(v.coverage->counts, expected);
  // 200 cases of contract rows meet masks, ties and T != 1 (the generators'
  // rates are 20 %, 15 % and 45 %).
  for (CaseClass c : {CaseClass::masks, CaseClass::ties, CaseClass::t_not_1}) EXPECT_GT((*v.coverage)[c], 0) << name(c);
  EXPECT_TRUE(never_met(v).empty());
}

// Every case of masked_entries has a mask; a fully masked row has no ties.
TEST(Coverage, ScopesShowInTheCounts) {
  CheckOptions o = testing::ci_options();
  o.tests = 30;
  const PropertyVerdict m = check_property(testing::reference_kernel(), Op::softmax, "masked_entries", o);
  ASSERT_EQ(m.verdict, Verdict::passed);
  EXPECT_EQ((*m.coverage)[CaseClass::masks], m.coverage->cases);
  const PropertyVerdict f = check_property(testing::reference_kernel(), Op::softmax, "fully_masked", o);
  ASSERT_EQ(f.verdict, Verdict::passed);
  EXPECT_EQ((*f.coverage)[CaseClass::masks], f.coverage->cases);
  EXPECT_EQ((*f.coverage)[CaseClass::ties], 0);
}

// A failed property counts the cases that passed before its failure (not the
// shrinking); an unclaimed one does not run and has no coverage.
TEST(Coverage, FailedAndUnclaimed) {
  const testing::Fake& fake = testing::fakes().front();
  const PropertyVerdict v = check_property(fake.kernel, fake.op, fake.property, testing::ci_options());
  ASSERT_EQ(v.verdict, Verdict::failed);
  ASSERT_TRUE(v.coverage.has_value());
  EXPECT_EQ(v.coverage->cases, v.tests_passed);
  const PropertyVerdict n = check_property(*find_kernel("naive_f64"), Op::softmax, "accuracy", testing::ci_options());
  EXPECT_EQ(n.verdict, Verdict::not_claimed);
  EXPECT_FALSE(n.coverage.has_value());
}

PropertyVerdict passed(std::string property, Coverage c) {
  PropertyVerdict v;
  // Moved in, not assigned from the literal: GCC 12's -Wrestrict misfires on
  // the inlined std::string assignment here at -O2 (GCC bug 105329).
  v.kernel = std::string("k");
  v.op = Op::softmax;
  v.property = std::move(property);
  v.verdict = Verdict::passed;
  v.claimed = true;
  v.tests_passed = c.cases;
  v.coverage = c;
  return v;
}

std::string printed(const std::vector<PropertyVerdict>& v) {
  std::ostringstream os;
  print_coverage(os, v);
  return os.str();
}

// masks, ties and T != 1 for every property (less what its scope rules out),
// plus the class a property is about; only for a passed property.
TEST(Coverage, NeverMetLines) {
  Coverage all;
  all.cases = 10;
  all.counts.fill(3);
  Coverage no_masks_no_t = all;
  no_masks_no_t.counts[static_cast<std::size_t>(CaseClass::masks)] = 0;
  no_masks_no_t.counts[static_cast<std::size_t>(CaseClass::t_not_1)] = 0;
  Coverage nothing;
  nothing.cases = 10;

  const std::string out = printed({passed("permutation", all), passed("shift_invariance", no_masks_no_t)});
  EXPECT_NE(out.find("coverage k softmax permutation      cases=10 masks=3 ties=3 overflow_edge=3 "
                     "subnormal_outputs=3 t_not_1=3 long_rows=3\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("never met: k softmax permutation"), std::string::npos) << out;
  EXPECT_NE(out.find("never met: k softmax shift_invariance: none of its 10 passing cases had masks, t_not_1\n"),
            std::string::npos)
      << out;

  // Finite-row properties are not expected to meet masks; no_nonfinite is
  // about the overflow edge, underflow about subnormal outputs, fully_masked
  // rows have no ties.
  EXPECT_EQ(never_met(passed("no_nonfinite", nothing)),
            (std::vector<CaseClass>{CaseClass::ties, CaseClass::overflow_edge, CaseClass::t_not_1}));
  EXPECT_EQ(never_met(passed("underflow", nothing)),
            (std::vector<CaseClass>{CaseClass::masks, CaseClass::ties, CaseClass::subnormal_outputs,
                                    CaseClass::t_not_1}));
  EXPECT_EQ(never_met(passed("fully_masked", nothing)), (std::vector<CaseClass>{CaseClass::masks, CaseClass::t_not_1}));

  PropertyVerdict failed = passed("permutation", nothing);
  failed.verdict = Verdict::failed;
  EXPECT_TRUE(never_met(failed).empty());
  EXPECT_EQ(printed({failed}).find("never met"), std::string::npos);
  PropertyVerdict not_run = passed("permutation", nothing);
  not_run.coverage.reset();
  EXPECT_EQ(printed({not_run}), "");
}

}  // namespace
}  // namespace softcheck::props
