// The check driver: runs one property x op of a kernel through RapidCheck
// programmatically (rc::detail::checkProperty with explicit TestParams: the seed
// makes it deterministic), captures the shrunk counterexample and turns the
// result into a PropertyVerdict.
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <stdexcept>
#include <unordered_map>

#include "registry.hpp"
#include "softcheck/input_families.hpp"
#include "softcheck/properties.hpp"
#include "support.hpp"

namespace softcheck::props {

using detail::PropertyDef;

std::string_view name(CaseStatus s) {
  switch (s) {
    case CaseStatus::pass: return "pass";
    case CaseStatus::fail: return "fail";
    case CaseStatus::not_applicable: return "not_applicable";
  }
  return "?";
}

std::string_view name(Verdict v) {
  switch (v) {
    case Verdict::passed: return "passed";
    case Verdict::failed: return "failed";
    case Verdict::not_claimed: return "not_claimed";
    case Verdict::skipped: return "skipped";
    case Verdict::gave_up: return "gave_up";
    case Verdict::error: return "error";
  }
  return "?";
}

const std::vector<PropertyInfo>& property_list() {
  static const std::vector<PropertyInfo> all = [] {
    std::vector<PropertyInfo> v;
    for (const PropertyDef& d : detail::registry()) v.push_back(d.info);
    return v;
  }();
  return all;
}

const PropertyInfo* find_property(std::string_view name) {
  const PropertyDef* d = detail::find_def(name);
  return d != nullptr ? &d->info : nullptr;
}

Claim claim(const Kernel& kernel, Op op, std::string_view property) {
  const PropertyDef* d = detail::find_def(property);
  if (d == nullptr) return {false, "unknown property " + std::string(property)};
  if (const std::optional<Claim> c = detail::cannot_claim(*d, kernel, op)) return *c;
  return d->claim(kernel, op);
}

namespace {

// Evaluates one case; a kernel that throws fails the case.
CaseResult evaluate(const PropertyDef& p, const Kernel& k, Op op, const Case& c) {
  try {
    return p.check(k, op, c);
  } catch (const detail::KernelThrew& e) {
    return detail::fail(INFINITY, 0, "", "kernel threw: " + e.what);
  }
}

}  // namespace

CaseResult check_case(const Kernel& kernel, Op op, std::string_view property, const Case& c) {
  const PropertyDef* d = detail::find_def(property);
  if (d == nullptr) throw std::invalid_argument("unknown property: " + std::string(property));
  return evaluate(*d, kernel, op, c);
}

namespace {

class SilentListener : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// What the property callback saw. Every failing evaluation during shrinking is
// an accepted shrink, so the last failing case is the shrunk counterexample.
struct RunState {
  const PropertyDef* def = nullptr;
  const Kernel* kernel = nullptr;
  Op op = Op::softmax;
  int max_shrink_evals = 0;
  int failures = 0;
  int shrink_evals = 0;
  int discards = 0;
  bool truncated = false;
  std::optional<Case> last_failing;
  CaseResult last_result;
  double closest_ratio = -1;  // largest measured/allowed among passing cases
  CaseResult closest;
  Coverage coverage;  // of the passing cases before the first failure
  std::optional<std::string> harness_error;
};

// Keeps the passing case that came closest to its bound (for reports).
void note_pass(RunState& st, const CaseResult& r) {
  const double ratio = r.allowed > 0 && std::isfinite(r.allowed) ? r.measured / r.allowed : 0.0;
  if (ratio > st.closest_ratio) {
    st.closest_ratio = ratio;
    st.closest = r;
  }
}

void count_case(Coverage& cov, const Case& c, Format f) {
  ++cov.cases;
  const std::array<bool, case_class_count> in = classify(c, f);
  for (std::size_t i = 0; i < case_class_count; ++i) cov.counts[i] += in[i] ? 1 : 0;
}

rc::detail::CaseResult callback(RunState& st, const Case& generated) {
  const Case c = detail::inputs_for(st.op, generated);
  using Type = rc::detail::CaseResult::Type;
  if (st.failures > 0 && ++st.shrink_evals > st.max_shrink_evals) {
    st.truncated = true;
    return {Type::Discard, "shrink budget exhausted"};
  }
  CaseResult r;
  try {
    r = evaluate(*st.def, *st.kernel, st.op, c);
  } catch (const std::exception& e) {  // oracle/harness failure: not the kernel's fault
    st.harness_error = e.what();
    ++st.discards;
    return {Type::Discard, std::string("harness error: ") + e.what()};
  }
  switch (r.status) {
    case CaseStatus::pass:
      note_pass(st, r);
      if (st.failures == 0) count_case(st.coverage, c, st.kernel->format);
      return {Type::Success, r.message};
    case CaseStatus::not_applicable: ++st.discards; return {Type::Discard, r.message};
    case CaseStatus::fail: break;
  }
  ++st.failures;
  st.last_failing = c;
  st.last_result = r;
  return {Type::Failure, r.message};
}

rc::detail::TestParams params_for(const CheckOptions& o, std::uint64_t rc_seed) {
  rc::detail::TestParams p;
  p.seed = rc_seed;
  p.maxSuccess = o.tests;
  p.maxSize = o.max_size;
  p.maxDiscardRatio = 10;
  p.disableShrinking = !o.shrink;
  return p;
}

void record_failure(PropertyVerdict& v, const RunState& st) {
  v.verdict = Verdict::failed;
  v.counterexample = st.last_failing;
  v.failure = st.last_result;
  v.shrink_steps = st.failures - 1;
  v.shrink_truncated = st.truncated;
  // Replaying the shrunk case must fail again (kernels and oracle are deterministic).
  const CaseResult again = evaluate(*st.def, *st.kernel, st.op, *st.last_failing);
  if (again.status != CaseStatus::fail) v.failure.message += " [warning: replay did not fail: nondeterministic kernel?]";
  v.repro = repro_command(v.kernel, v.op, v.property, *st.last_failing, st.kernel->load_options);
}

void translate(PropertyVerdict& v, const rc::detail::TestResult& result, const RunState& st) {
  v.discarded = st.discards;
  v.coverage = st.coverage;
  v.closest_ratio = std::max(st.closest_ratio, 0.0);
  v.closest = st.closest;
  if (result.is<rc::detail::SuccessResult>()) {
    v.tests_passed = result.get<rc::detail::SuccessResult>().numSuccess;
    v.verdict = v.claimed ? Verdict::passed : Verdict::not_claimed;
    if (!v.claimed) v.reason += " (held on " + std::to_string(v.tests_passed) + " forced cases)";
  } else if (result.is<rc::detail::FailureResult>() && st.last_failing) {
    v.tests_passed = result.get<rc::detail::FailureResult>().numSuccess;
    record_failure(v, st);
  } else if (result.is<rc::detail::GaveUpResult>()) {
    v.verdict = Verdict::gave_up;
    v.tests_passed = result.get<rc::detail::GaveUpResult>().numSuccess;
    v.reason = "too many cases outside the property's scope: " + result.get<rc::detail::GaveUpResult>().description;
  } else if (result.is<rc::detail::FailureResult>()) {
    v.verdict = Verdict::error;
    v.reason = "RapidCheck failure without a recorded case: " + result.get<rc::detail::FailureResult>().description;
  } else {
    v.verdict = Verdict::error;
    v.reason = result.is<rc::detail::Error>() ? result.get<rc::detail::Error>().description : "unknown result";
  }
  if (st.harness_error && v.verdict != Verdict::failed) {
    v.verdict = Verdict::error;
    v.reason = "harness error: " + *st.harness_error;
  }
}

}  // namespace

PropertyVerdict check_property(const Kernel& kernel, Op op, std::string_view property, const CheckOptions& o) {
  PropertyVerdict v;
  v.kernel = kernel.name;
  v.op = op;
  v.property = std::string(property);
  v.seed = o.seed;
  const PropertyDef* def = detail::find_def(property);
  if (def == nullptr) {
    v.verdict = Verdict::error;
    v.reason = "unknown property";
    return v;
  }
  // A property stated for the logits alone never runs on an op with more
  // inputs, nor the reverse, whatever --force says: it could not call it.
  if (const std::optional<Claim> c = detail::cannot_claim(*def, kernel, op)) {
    v.reason = c->reason;
    return v;  // not_claimed
  }
  const Claim cl = def->claim(kernel, op);
  v.claimed = cl.claimed;
  v.reason = cl.reason;
  if (kernel.find(op) == nullptr || (!cl.claimed && !o.force)) return v;  // not_claimed
  if (!kernel.available) {
    v.verdict = Verdict::skipped;
    v.reason = "kernel unavailable: " + kernel.unavailable_reason;
    return v;
  }
  v.rc_seed = hash_mix(o.seed, def->info.name);
  RunState st;
  st.def = def;
  st.kernel = &kernel;
  st.op = op;
  st.max_shrink_evals = o.max_shrink_evals;
  rc::Gen<Case> cases = def->cases(kernel.format, gen::RowOptions{o.max_cols, o.long_row_probability});
  // A kernel reading MX blocks is given MX rows: each generated (and
  // shrunk) row converted block by block, masks kept (minifloat.hpp).
  if (kernel.mx_inputs)
    cases = rc::gen::map(std::move(cases), [element = *kernel.mx_inputs](Case c) {
      c.row = mx_row(c.row, element);
      return c;
    });
  const auto prop = rc::detail::toProperty([&st, cases] { return callback(st, *cases); });
  rc::detail::TestMetadata meta;
  meta.id = kernel.name + "/" + std::string(name(op)) + "/" + v.property;
  meta.description = meta.id;
  SilentListener listener;
  // The overload with an explicit (empty) reproduce map does not load RapidCheck's
  // global configuration: RC_PARAMS never overrides CheckOptions, and nothing is
  // printed to stderr.
  const std::unordered_map<std::string, rc::detail::Reproduce> no_reproduce;
  translate(v, rc::detail::checkProperty(prop, meta, params_for(o, v.rc_seed), listener, no_reproduce), st);
  return v;
}

std::vector<PropertyVerdict> check_kernel(const Kernel& kernel, const CheckOptions& o) {
  std::vector<Op> ops = o.ops;
  if (ops.empty())
    for (const OpDecl& d : kernel.ops) ops.push_back(d.op);
  std::vector<std::string> names = o.properties;
  if (names.empty())
    for (const PropertyInfo& p : property_list()) names.emplace_back(p.name);
  std::vector<PropertyVerdict> out;
  for (Op op : ops)
    for (const std::string& p : names) out.push_back(check_property(kernel, op, p, o));
  return out;
}

bool all_held(std::span<const PropertyVerdict> verdicts) {
  for (const PropertyVerdict& v : verdicts) {
    if (v.verdict == Verdict::failed && !v.claimed) continue;  // forced, unclaimed: informational
    if (v.verdict == Verdict::failed || v.verdict == Verdict::gave_up || v.verdict == Verdict::error) return false;
  }
  return true;
}

}  // namespace softcheck::props
