// Reading report.json (and bench.json) back, with strict validation: every
// error names the field, e.g. "kernels[3].max_ulp: expected a number, found a
// string". Fields added to schema 1 after its first release are optional on
// read (docs/report-schema.md lists them); unknown keys are ignored.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <tuple>

#include "softcheck/input_families.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/report.hpp"

namespace softcheck {

namespace {

using Json = nlohmann::json;

constexpr double inf = std::numeric_limits<double>::infinity();

std::string type_name(const Json& j) {
  if (j.is_number_integer() && j.is_number_unsigned()) return "an unsigned integer";
  if (j.is_number_integer()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_null()) return "null";
  if (j.is_array()) return "an array";
  return "an object";
}

// A JSON object at a known place in the document ("kernels[2].worst").
class Node {
 public:
  Node(const Json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) fail_here("expected an object, found " + type_name(j_));
  }

  bool has(const char* key) const { return j_.contains(key); }

  std::string str(const char* key) const {
    const Json& v = at(key);
    if (!v.is_string()) fail(key, "expected a string, found " + type_name(v));
    return v.get<std::string>();
  }

  // A string from a fixed vocabulary.
  std::string word(const char* key, std::initializer_list<const char*> allowed) const {
    std::string v = str(key);
    for (const char* a : allowed)
      if (v == a) return v;
    std::string list;
    for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
    fail(key, "'" + v + "' is not one of " + list);
  }

  // An op name of the op table.
  std::string op(const char* key) const {
    std::string v = str(key);
    if (!parse_op(v)) fail(key, "'" + v + "' is not one of " + op_names());
    return v;
  }

  bool boolean(const char* key) const {
    const Json& v = at(key);
    if (!v.is_boolean()) fail(key, "expected a boolean, found " + type_name(v));
    return v.get<bool>();
  }

  std::uint64_t count(const char* key) const {
    const Json& v = at(key);
    if (!v.is_number_unsigned()) fail(key, "expected a non-negative integer, found " + type_name(v));
    return v.get<std::uint64_t>();
  }

  std::int64_t integer(const char* key) const {
    const Json& v = at(key);
    if (!v.is_number_integer()) fail(key, "expected an integer, found " + type_name(v));
    return v.get<std::int64_t>();
  }

  // Floating-point fields: JSON has no inf/NaN, so the writer stores a
  // non-finite value as null; it reads back as +inf.
  double number(const char* key) const { return number_value(at(key), key); }

  // Errors, ratios, rates and sizes: a number >= 0, or null (+inf, as above).
  // `who` names the kernel an entry belongs to, for the message.
  double non_negative(const char* key, const std::string& who = "") const {
    const double v = number(key);
    if (!(v >= 0)) fail(key, at(key).dump() + " is negative" + who + ": expected a number >= 0 or null");
    return v;
  }

  // A positive finite number (temperatures).
  double positive(const char* key, const std::string& who = "") const {
    const Json& v = at(key);
    const double d = number(key);
    if (!(d > 0) || d == inf) fail(key, v.dump() + " is not a finite number > 0" + who);
    return d;
  }

  // An integer in [lo, hi].
  std::int64_t integer_in(const char* key, std::int64_t lo, std::int64_t hi, const std::string& who = "") const {
    const std::int64_t v = integer(key);
    if (v < lo || v > hi)
      fail(key, std::to_string(v) + " is out of range" + who + " (" + range_text(lo, hi) + ")");
    return v;
  }

  static std::string range_text(std::int64_t lo, std::int64_t hi) {
    if (hi == std::numeric_limits<std::int64_t>::max()) return "expected >= " + std::to_string(lo);
    return "expected " + std::to_string(lo) + " to " + std::to_string(hi);
  }

  // A kernel output: a number or "nan", "inf", "-inf".
  double value_or_name(const char* key) const {
    const Json& v = at(key);
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (s == "inf") return inf;
      if (s == "-inf") return -inf;
      fail(key, "expected a number, \"nan\", \"inf\" or \"-inf\", found \"" + s + "\"");
    }
    return number_value(v, key);
  }

  Node child(const char* key) const { return Node(at(key), path(key)); }

  // Calls f(Node) for each object of an array.
  template <class F>
  void each(const char* key, F f) const {
    const Json& a = array(key);
    for (std::size_t i = 0; i < a.size(); ++i) f(Node(a[i], path(key) + "[" + std::to_string(i) + "]"));
  }

  // Calls f(element, where) for each element of an array.
  template <class F>
  void each_value(const char* key, F f) const {
    const Json& a = array(key);
    for (std::size_t i = 0; i < a.size(); ++i) f(a[i], path(key) + "[" + std::to_string(i) + "]");
  }

  const Json& raw(const char* key) const { return at(key); }
  std::string path(const char* key) const { return where_.empty() ? key : where_ + "." + key; }
  [[noreturn]] void fail(const char* key, const std::string& what) const {
    throw ReportFormatError(path(key) + ": " + what);
  }

 private:
  const Json& at(const char* key) const {
    const auto it = j_.find(key);
    if (it == j_.end()) fail(key, "required field is missing");
    return *it;
  }

  const Json& array(const char* key) const {
    const Json& v = at(key);
    if (!v.is_array()) fail(key, "expected an array, found " + type_name(v));
    return v;
  }

  double number_value(const Json& v, const char* key) const {
    if (v.is_null()) return inf;
    if (!v.is_number()) fail(key, "expected a number or null, found " + type_name(v));
    return v.get<double>();
  }

  [[noreturn]] void fail_here(const std::string& what) const {
    throw ReportFormatError((where_.empty() ? std::string("document") : where_) + ": " + what);
  }

  const Json& j_;
  std::string where_;
};

// Reads a bare array element with its path for errors.
double number_element(const Json& v, const std::string& where) {
  if (!v.is_number()) throw ReportFormatError(where + ": expected a number, found " + type_name(v));
  return v.get<double>();
}
std::int64_t integer_element(const Json& v, const std::string& where) {
  if (!v.is_number_integer()) throw ReportFormatError(where + ": expected an integer, found " + type_name(v));
  return v.get<std::int64_t>();
}
std::int64_t positive_integer_element(const Json& v, const std::string& where) {
  const std::int64_t i = integer_element(v, where);
  if (i < 1) throw ReportFormatError(where + ": " + std::to_string(i) + " is out of range (expected >= 1)");
  return i;
}
double positive_element(const Json& v, const std::string& where) {
  const double d = number_element(v, where);
  if (!(d > 0) || d == inf) throw ReportFormatError(where + ": " + v.dump() + " is not a finite number > 0");
  return d;
}
std::uint64_t count_element(const Json& v, const std::string& where) {
  if (!v.is_number_unsigned())
    throw ReportFormatError(where + ": expected a non-negative integer, found " + type_name(v));
  return v.get<std::uint64_t>();
}
std::string string_element(const Json& v, const std::string& where) {
  if (!v.is_string()) throw ReportFormatError(where + ": expected a string, found " + type_name(v));
  return v.get<std::string>();
}

Json parse(std::string_view text) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    throw ReportFormatError(std::string("not valid JSON: ") + e.what());
  } catch (const Json::out_of_range& e) {  // e.g. a number beyond double's range: 1e991 (found by fuzz_inputs)
    throw ReportFormatError(std::string("not a usable JSON document: ") + e.what());
  }
}

// The header every softcheck document carries.
void check_header(const Node& doc, const char* expected_schema) {
  if (!doc.has("schema"))
    throw ReportFormatError(std::string("not a ") + expected_schema + " document (no \"schema\" field)");
  const std::string schema = doc.str("schema");
  if (schema != expected_schema)
    throw ReportFormatError("schema is '" + schema + "', expected '" + expected_schema + "'");
  const std::int64_t version = doc.integer("schema_version");
  if (version != report_schema_version)
    throw ReportFormatError("unsupported schema_version " + std::to_string(version) + " (this softcheck reads " +
                            std::to_string(report_schema_version) + ")");
}

constexpr std::int64_t int_max = std::numeric_limits<std::int64_t>::max();

// The values per row of entry s's output on a row of `cols` inputs of
// `family`: cols, or for a head-shaped output (attention's O) the head
// dimension its attention family fixes (0 when the family is unknown).
std::int64_t output_values(const KernelSummary& s, const std::string& family, std::int64_t cols) {
  const std::optional<Op> op = parse_op(s.op);
  if (!op) return cols;
  for (const Operand& o : spec(*op).out)
    if (o.shape == OperandShape::head && (o.name == s.output || (!spec(*op).several_outputs() && s.output.empty()))) {
      const InputFamily* f = find_input_family(family);
      return f != nullptr ? f->head_dim : 0;
    }
  return cols;
}

WorstCase read_worst(const Node& k, const KernelSummary& s, const std::string& who) {
  WorstCase w;
  if (k.raw("worst").is_null()) return w;
  const Node n = k.child("worst");
  w.present = true;
  w.family = n.str("family");
  w.cols = n.integer_in("cols", 1, int_max, who);
  w.temperature = n.positive("temperature", who);
  w.row = n.integer_in("row", 0, int_max, who);
  const std::int64_t values = output_values(s, w.family, w.cols);
  if (values < 1) n.fail("family", "'" + w.family + "' is no attention family, as " + s.label() + " needs" + who);
  w.element = n.integer_in("element", 0, values - 1, who);
  w.got = n.value_or_name("got");
  w.exact = n.str("exact");
  w.ulp = n.non_negative("ulp", who);
  w.bound = n.non_negative("bound", who);
  w.input = n.str("input");
  w.repro = n.str("repro");
  return w;
}

// Optional (added after schema 1's first release): absent means zeros.
ErrorDistribution read_distribution(const Node& parent, const std::string& who) {
  ErrorDistribution d;
  if (!parent.has("distribution")) return d;
  const Node n = parent.child("distribution");
  d.measured = n.count("measured");
  d.mean_signed_ulp = n.number("mean_signed_ulp");
  d.mean_signed_rel = n.number("mean_signed_rel");
  d.above = n.count("above");
  d.below = n.count("below");
  if (d.above + d.below > d.measured) n.fail("above", "above + below larger than measured" + who);
  d.p50_ulp = n.non_negative("p50_ulp", who);
  d.p99_ulp = n.non_negative("p99_ulp", who);
  d.max_ulp = n.non_negative("max_ulp", who);
  if (!(d.p50_ulp <= d.p99_ulp && d.p99_ulp <= d.max_ulp * (1 + 0x1p-5)))
    n.fail("p99_ulp", "percentiles not ascending (p50 <= p99 <= max)" + who);
  d.p50_ratio = n.non_negative("p50_ratio", who);
  d.p99_ratio = n.non_negative("p99_ratio", who);
  d.max_ratio = n.non_negative("max_ratio", who);
  d.rows_above = n.count("rows_above");
  d.rows_below = n.count("rows_below");
  n.number("bias_z");   // derived; checked, not kept
  n.boolean("biased");  // derived; checked, not kept
  return d;
}

CellSummary read_cell(const Node& n, const std::string& who) {
  CellSummary c;
  c.family = n.str("family");
  c.cols = n.integer_in("cols", 1, int_max, who);
  c.rows = n.count("rows");
  c.measured = n.count("measured");
  c.nonfinite = n.count("nonfinite");
  c.violations = n.count("violations");
  if (c.violations > c.rows) n.fail("violations", "larger than rows" + who);
  c.max_ulp = n.non_negative("max_ulp", who);
  c.mean_ulp = n.non_negative("mean_ulp", who);
  c.max_ratio = n.non_negative("max_ratio", who);
  c.mean_signed_ulp = n.number("mean_signed_ulp");
  c.rows_above = n.count("rows_above");
  c.rows_below = n.count("rows_below");
  if (c.rows_above + c.rows_below > c.rows) n.fail("rows_above", "rows_above + rows_below larger than rows" + who);
  c.bound = n.non_negative("bound", who);
  return c;
}

FamilySummary read_family(const Node& n, const std::string& who) {
  FamilySummary f;
  f.family = n.str("family");
  f.rows = n.count("rows");
  f.max_ulp = n.non_negative("max_ulp", who);
  f.nonfinite = n.count("nonfinite");
  f.violations = n.count("violations");
  if (f.violations > f.rows) n.fail("violations", "larger than rows" + who);
  f.distribution = read_distribution(n, who);
  return f;
}

PropertySummary read_property(const Node& n) {
  PropertySummary p;
  p.property = n.str("property");
  p.verdict = n.word("verdict", {"passed", "failed", "not_claimed", "skipped"});
  p.tests = n.count("tests");
  p.detail = n.str("detail");
  p.repro = n.str("repro");
  return p;
}

// The key of a sweep bin: a row length (>= 1), a temperature (finite, > 0)
// or a decade (magnitude_min_decade to magnitude_max_decade).
enum class BinKey { cols, temperature, decade };

ErrorBin read_bin(const Node& n, const char* key_name, BinKey kind, const std::string& who) {
  ErrorBin b;
  switch (kind) {
    case BinKey::cols: b.key = static_cast<double>(n.integer_in(key_name, 1, int_max, who)); break;
    case BinKey::temperature: b.key = n.positive(key_name, who); break;
    case BinKey::decade:
      b.key = static_cast<double>(n.integer_in(key_name, magnitude_min_decade, magnitude_max_decade, who));
      break;
  }
  b.rows = n.count("rows");
  b.measured = n.count("measured");
  b.max_ulp = n.non_negative("max_ulp", who);
  b.mean_ulp = n.non_negative("mean_ulp", who);
  b.nonfinite = n.count("nonfinite");
  return b;
}

// Optional sweep (added after schema 1's first release): absent means empty.
std::vector<ErrorBin> read_bins(const Node& k, const char* key, const char* key_name, BinKey kind,
                                const std::string& who) {
  std::vector<ErrorBin> bins;
  if (!k.has(key)) return bins;
  k.each(key, [&](const Node& n) { bins.push_back(read_bin(n, key_name, kind, who)); });
  for (std::size_t i = 1; i < bins.size(); ++i)
    if (!(bins[i - 1].key < bins[i].key)) k.fail(key, "keys are not strictly ascending");
  return bins;
}

void read_contract(const Node& k, KernelSummary& s) {
  const Node c = k.child("contract");
  s.contract_declared = c.boolean("declared");
  s.contract_formula = c.str("formula");
  s.contract_why = c.str("why");
}

void read_counts(const Node& k, KernelSummary& s, const std::string& who) {
  s.cases = k.count("cases");
  s.rows = k.count("rows");
  s.elements = k.count("elements");
  s.measured = k.count("measured");
  s.nonfinite = k.count("nonfinite");
  s.special_mismatch = k.count("special_mismatch");
  // Sparse ops only (docs/report-schema.md); absent means 0.
  if (k.has("false_zeros")) s.false_zeros = k.count("false_zeros");
  if (k.has("false_nonzeros")) s.false_nonzeros = k.count("false_nonzeros");
  s.contract_violations = k.count("contract_violations");
  s.policy_rows = k.count("policy_rows");
  s.policy_violations = k.count("policy_violations");
  // Written since the field was added; a report from before it counted no
  // such rows (its "held" may cover rows without a finite bound).
  if (k.has("unbounded_rows")) s.unbounded_rows = k.count("unbounded_rows");
  if (s.unbounded_rows > s.rows) k.fail("unbounded_rows", "larger than rows" + who);
  if (s.measured > s.elements) k.fail("measured", "larger than elements" + who);
  if (s.policy_violations > s.policy_rows) k.fail("policy_violations", "larger than policy_rows" + who);
}

// Error measures are magnitudes: a negative one (or NaN) is no measurement.
void read_errors(const Node& k, KernelSummary& s, const std::string& who) {
  s.max_ulp = k.non_negative("max_ulp", who);
  s.mean_ulp = k.non_negative("mean_ulp", who);
  s.max_bits = k.non_negative("max_bits", who);
  s.mean_bits = k.non_negative("mean_bits", who);
  s.max_rel = k.non_negative("max_rel", who);
  s.max_normwise = k.non_negative("max_normwise", who);
  s.max_bound_ratio = k.non_negative("max_bound_ratio", who);
}

void read_sweeps(const Node& k, KernelSummary& s, const std::string& who) {
  if (k.has("ulp_histogram")) {
    k.each_value("ulp_histogram", [&](const Json& v, const std::string& where) {
      s.ulp_histogram.push_back(count_element(v, where));
    });
    if (s.ulp_histogram.size() > ulp_histogram_bins)
      k.fail("ulp_histogram", "more than " + std::to_string(ulp_histogram_bins) + " bins");
  }
  s.by_size = read_bins(k, "by_size", "cols", BinKey::cols, who);
  s.by_temperature = read_bins(k, "by_temperature", "temperature", BinKey::temperature, who);
  s.by_magnitude = read_bins(k, "by_magnitude", "decade", BinKey::decade, who);
}

KernelSummary read_kernel(const Node& k) {
  KernelSummary s;
  s.kernel = k.str("kernel");
  if (s.kernel.empty()) k.fail("kernel", "empty kernel name");
  s.algorithm = k.str("algorithm");
  s.format = k.str("format");
  s.op = k.op("op");
  // An op with several outputs has one entry per output, named by "output".
  const OperandList outs = spec(*parse_op(s.op)).out;
  if (outs.size() > 1) {
    s.output = k.str("output");
    if (std::none_of(outs.begin(), outs.end(), [&](const Operand& o) { return o.name == s.output; }))
      k.fail("output", "'" + s.output + "' is not an output of " + s.op);
  } else if (k.has("output")) {
    k.fail("output", s.op + " has one output: no \"output\" field expected");
  }
  s.description = k.str("description");
  s.masked_policy = k.word("masked_row_policy", {"nan", "zeros", "uniform"});
  read_contract(k, s);
  s.status = k.word("status", {"held", "violated", "no_contract", "unavailable"});
  s.unavailable_reason = k.str("unavailable_reason");
  if (k.has("load_options")) s.load_options = k.str("load_options");
  if (k.has("output_format")) {
    s.output_format = k.str("output_format");
    if (!parse_result_format(s.output_format))
      k.fail("output_format", "'" + s.output_format + "' is not a result format (e4m3, e4m3_div256)");
  }
  if (k.has("input_format")) {
    s.input_format = k.str("input_format");
    if (std::none_of(mini_formats.begin(), mini_formats.end(),
                     [&](const MiniFloat& m) { return mx_format_name(m) == s.input_format; }))
      k.fail("input_format", "'" + s.input_format + "' is not an MX format (mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3, "
                             "mxfp6_e3m2, mxfp4_e2m1)");
  }
  // The floor's checks: entries without a declared contract only.
  if (k.has("floor")) {
    if (s.contract_declared) k.fail("floor", "an entry with a declared contract has no floor checks");
    if (s.status == "unavailable") k.fail("floor", "an unavailable entry has no floor checks");
    const Node check = k.child("floor").child(floor_no_nonfinite.data());
    s.floor_checked = true;
    if (check.has("opted_out")) {
      s.floor_opt_out = check.str("opted_out");
      if (s.floor_opt_out.empty()) check.fail("opted_out", "an opt-out needs its reason");
    } else {
      s.floor_violations = check.count("violations");
      if (s.floor_violations > 0 && s.status != "violated")
        check.fail("violations", "floor violations with status '" + s.status + "'");
    }
  }
  const std::string who = " (kernel '" + s.kernel + "', op " + s.label() + ")";
  read_counts(k, s, who);
  // Each floor row is a row with at least one NaN/inf output.
  if (s.floor_violations > s.rows || s.floor_violations > s.nonfinite)
    k.fail("floor", std::to_string(s.floor_violations) + " floor rows with " + std::to_string(s.rows) + " rows and " +
                        std::to_string(s.nonfinite) + " NaN/inf outputs");
  read_errors(k, s, who);
  s.worst = read_worst(k, s, who);
  s.distribution = read_distribution(k, who);
  k.each("by_family", [&](const Node& n) { s.by_family.push_back(read_family(n, who)); });
  if (k.has("cells")) {
    k.each("cells", [&](const Node& n) { s.cells.push_back(read_cell(n, who)); });
    // The gate matches cells by (family, cols): a second one would be ambiguous.
    std::set<std::pair<std::string, std::int64_t>> seen;
    for (const CellSummary& c : s.cells)
      if (!seen.emplace(c.family, c.cols).second)
        k.fail("cells", "cell (" + c.family + ", " + std::to_string(c.cols) + ") appears twice" + who);
  }
  if (k.has("reference")) {
    const Node ref = k.child("reference");
    if (ref.has("not_applied")) {
      s.reference.not_applied = ref.str("not_applied");
      if (s.reference.not_applied.empty()) ref.fail("not_applied", "needs its reason");
    } else {
      s.reference.kernel = ref.str("kernel");
      if (s.reference.kernel.empty()) ref.fail("kernel", "empty kernel name");
      s.reference.rows = ref.count("rows");
      s.reference.violations = ref.count("violations");
      s.reference.max_ratio = ref.non_negative("max_ratio", who);
      if (s.reference.violations > s.reference.rows) ref.fail("violations", "larger than rows" + who);
      if (s.reference.violations > 0 && s.status != "violated")
        ref.fail("violations", "reference rule violations with status '" + s.status + "'");
    }
  }
  if (k.has("conditional")) {
    const Node cond = k.child("conditional");
    std::size_t o = 0;
    while (o + 1 < outs.size() && outs[o].name != s.output) ++o;
    const OutputKind kind = outs[o].kind;
    if (kind != OutputKind::softmax_gradient && kind != OutputKind::log_softmax_gradient)
      k.fail("conditional", "only a softmax or log-softmax backward's dx has a conditional mode" + who);
    s.conditional.present = true;
    s.conditional.rows = cond.count("rows");
    s.conditional.broken = cond.count("broken");
    s.conditional.max_error = cond.non_negative("max_error", who);
    if (s.conditional.broken > s.conditional.rows) cond.fail("broken", "larger than rows" + who);
  }
  if (k.has("mass")) {
    const Node mass = k.child("mass");
    std::size_t o = 0;
    while (o + 1 < outs.size() && outs[o].name != s.output) ++o;
    if (outs[o].kind != OutputKind::probabilities) k.fail("mass", "only a probability output has a mass" + who);
    s.mass.rows = mass.count("rows");
    if (s.mass.rows == 0 || s.mass.rows > s.rows) mass.fail("rows", "expected 1 to the entry's rows" + who);
    s.mass.max_lost = mass.non_negative("max_lost", who);
    s.mass.max_gained = mass.non_negative("max_gained", who);
    s.mass.mean_error = mass.number("mean_error");
    if (s.mass.mean_error < -s.mass.max_lost || s.mass.mean_error > s.mass.max_gained)
      mass.fail("mean_error", "outside [-max_lost, max_gained]" + who);
  }
  k.each("properties", [&](const Node& n) { s.properties.push_back(read_property(n)); });
  // The gate matches property verdicts by name: two would make it pick one.
  for (std::size_t i = 0; i < s.properties.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (s.properties[i].property == s.properties[j].property)
        k.fail("properties", "property '" + s.properties[i].property + "' appears twice" + who);
  read_sweeps(k, s, who);
  return s;
}

void read_run(const Node& doc, Report& r) {
  const Node run = doc.child("run");
  r.suite = run.str("suite");
  r.seed = run.count("seed");
  const std::uint64_t bits = run.count("oracle_bits");
  if (bits > std::numeric_limits<unsigned>::max()) run.fail("oracle_bits", "out of range");
  r.oracle_bits = static_cast<unsigned>(bits);
  if (run.has("oracle")) {  // added after the first release: optional
    const Node o = run.child("oracle");
    r.oracle.mode = o.word("mode", {"tiered", "mpfr"});
    r.oracle.rows = o.count("rows");
    r.oracle.mpfr_rows = o.count("mpfr_rows");
    if (r.oracle.mpfr_rows > r.oracle.rows) o.fail("mpfr_rows", "larger than rows");
  }
  if (run.has("selection")) {  // added after the first release: optional
    const Node sel = run.child("selection");
    r.selection_recorded = true;
    sel.each_value("families",
                   [&](const Json& v, const std::string& w) { r.selected_families.push_back(string_element(v, w)); });
    sel.each_value("sizes", [&](const Json& v, const std::string& w) {
      r.selected_sizes.push_back(positive_integer_element(v, w));
    });
    sel.each_value("temperatures", [&](const Json& v, const std::string& w) {
      r.selected_temperatures.push_back(positive_element(v, w));
    });
    if (sel.has("ops"))  // `run --op` only
      sel.each_value("ops", [&](const Json& v, const std::string& w) {
        std::string op = string_element(v, w);
        if (!parse_op(op)) sel.fail("ops", "unknown op '" + op + "'");
        r.selected_ops.push_back(std::move(op));
      });
  }
  if (run.has("inputs")) {  // added after the first release: optional
    r.inputs_digest = run.str("inputs");
    const bool well_formed = r.inputs_digest.size() == 24 && r.inputs_digest.starts_with("fnv1a64:") &&
                             r.inputs_digest.find_first_not_of("0123456789abcdef", 8) == std::string::npos;
    if (!well_formed) run.fail("inputs", "expected \"fnv1a64:\" and 16 lower-case hex digits");
  }
  r.fp_env = run.has("fp_env") ? run.word("fp_env", {"ftz", "daz", "ftz_daz", "upward", "downward", "toward_zero"})
                               : "default";  // written only when not the default
  if (run.has("budget")) {  // `run --budget` only
    const Node b = run.child("budget");
    r.budget.seconds = b.number("seconds");
    if (!(r.budget.seconds > 0) || !std::isfinite(r.budget.seconds)) b.fail("seconds", "expected a finite number > 0");
    r.budget.suite_seconds = b.number("suite_seconds");
    r.budget.modelled_seconds = b.number("modelled_seconds");
    if (!(r.budget.suite_seconds >= 0) || r.budget.suite_seconds > r.budget.seconds)
      b.fail("suite_seconds", "expected a number in [0, seconds]");
    if (!(r.budget.modelled_seconds >= 0) || r.budget.modelled_seconds > r.budget.suite_seconds)
      b.fail("modelled_seconds", "expected a number in [0, suite_seconds]");
    r.budget.cases_run = static_cast<std::size_t>(b.count("cases_run"));
    r.budget.cases = static_cast<std::size_t>(b.count("cases"));
    b.each("skipped", [&](const Node& c) {
      SkippedCase s;
      s.family = c.str("family");
      s.format = c.str("format");
      s.cols = c.integer_in("n", 1, std::numeric_limits<std::int64_t>::max());
      s.temperature = c.number("temperature");
      if (!(s.temperature > 0) || !std::isfinite(s.temperature)) c.fail("temperature", "expected a finite number > 0");
      r.budget.skipped.push_back(std::move(s));
    });
    if (r.budget.cases_run + r.budget.skipped.size() != r.budget.cases)
      b.fail("cases", "differs from cases_run + the skipped cases");
  }
  r.reference_rule.scope.clear();  // not recorded (reports written before the rule existed)
  if (run.has("reference_rule")) {  // added after the first release: optional
    const Node rule = run.child("reference_rule");
    r.reference_rule.scope = rule.word("scope", {"no_contract", "all", "off"});
    r.reference_rule.k = rule.number("k");
    r.reference_rule.slack = rule.number("slack_u");
    if (!(r.reference_rule.k >= 1) || !std::isfinite(r.reference_rule.k)) rule.fail("k", "expected a finite number >= 1");
    if (!(r.reference_rule.slack >= 0) || !std::isfinite(r.reference_rule.slack))
      rule.fail("slack_u", "expected a finite number >= 0");
  }
  run.each_value("families", [&](const Json& v, const std::string& w) { r.families.push_back(string_element(v, w)); });
  run.each_value("sizes",
                 [&](const Json& v, const std::string& w) { r.sizes.push_back(positive_integer_element(v, w)); });
  run.each_value("temperatures",
                 [&](const Json& v, const std::string& w) { r.temperatures.push_back(positive_element(v, w)); });
}

BenchResult read_bench_result(const Node& n) {
  BenchResult b;
  b.kernel = n.str("kernel");
  b.format = n.str("format");
  b.op = n.op("op");
  const std::string who = " (kernel '" + b.kernel + "', op " + b.op + ")";
  b.rows = n.integer_in("rows", 1, int_max, who);
  b.cols = n.integer_in("cols", 1, int_max, who);
  b.items_per_second = n.non_negative("items_per_second", who);
  b.bytes_per_second = n.non_negative("bytes_per_second", who);
  b.copy_bytes_per_second = n.non_negative("copy_bytes_per_second", who);
  n.non_negative("copy_fraction", who);  // derived; checked, not kept
  return b;
}

Performance read_performance(const Node& n) {
  Performance p;
  p.present = true;
  p.host = n.str("host");
  p.cpus = n.count("cpus");
  p.mhz_per_cpu = n.non_negative("mhz_per_cpu");
  p.library_build_type = n.str("library_build_type");
  p.min_time = n.non_negative("min_time");
  n.each("results", [&](const Node& b) { p.results.push_back(read_bench_result(b)); });
  // One result per (kernel, op, format, shape): the table and plot show one.
  std::set<std::tuple<std::string, std::string, std::string, std::int64_t, std::int64_t>> seen;
  for (std::size_t i = 0; i < p.results.size(); ++i) {
    const BenchResult& b = p.results[i];
    if (!seen.emplace(b.kernel, b.op, b.format, b.rows, b.cols).second)
      n.fail("results", "results[" + std::to_string(i) + "] repeats kernel '" + b.kernel + "', op " + b.op + ", " +
                            b.format + ", " + std::to_string(b.rows) + " x " + std::to_string(b.cols));
  }
  return p;
}

// A report is a regular file of bounded size. stat(2) before open(2), so a
// FIFO (which would block in open until a writer comes) or a device such as
// /dev/zero (endless) is refused without being opened; fstat(2) after, in case
// the name was replaced in between; and the read stops past the limit in case
// the file grew.
std::string slurp(const std::filesystem::path& file) {
  const std::string limit = std::to_string(max_report_bytes >> 20) + " MiB limit";
  const auto check = [&](const struct stat& st) {
    if (S_ISDIR(st.st_mode)) throw ReportFormatError(file.string() + ": is a directory");
    if (!S_ISREG(st.st_mode))
      throw ReportFormatError(file.string() + ": not a regular file (a device, FIFO or socket is not read)");
    if (static_cast<std::uintmax_t>(st.st_size) > max_report_bytes)
      throw ReportFormatError(file.string() + ": larger than the " + limit);
  };
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) throw ReportFormatError(file.string() + ": no such file");
    throw ReportFormatError(file.string() + ": cannot open: " + std::strerror(errno));
  }
  check(st);
  // O_NONBLOCK: should a FIFO have taken the name since the stat, open returns at once.
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) throw ReportFormatError(file.string() + ": cannot open: " + std::strerror(errno));
  std::string text;
  try {
    if (::fstat(fd, &st) != 0) throw ReportFormatError(file.string() + ": cannot stat: " + std::strerror(errno));
    check(st);
    text.resize(static_cast<std::size_t>(st.st_size) + 1);
    std::size_t got = 0;
    for (;;) {
      if (got == text.size()) {
        if (text.size() > max_report_bytes) throw ReportFormatError(file.string() + ": larger than the " + limit);
        text.resize(std::min<std::size_t>(text.size() * 2, max_report_bytes + 1));
      }
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw ReportFormatError(file.string() + ": read error: " + std::strerror(errno));
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    text.resize(got);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return text;
}

}  // namespace

Report from_json(std::string_view text) {
  const Json j = parse(text);
  const Node doc(j, "");
  check_header(doc, "softcheck-report");
  Report r;
  const Node tool = doc.child("tool");
  if (tool.str("name") != "softcheck") tool.fail("name", "expected \"softcheck\"");
  r.tool_version = tool.str("version");
  read_run(doc, r);
  const std::string verdict = doc.word("verdict", {"held", "violated"});
  doc.each("kernels", [&](const Node& k) { r.kernels.push_back(read_kernel(k)); });
  // The gate matches entries by (kernel, op, output): a second one would be ambiguous.
  std::map<std::pair<std::string, std::string>, std::size_t> first;
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    const auto [at, fresh] = first.emplace(std::pair{r.kernels[i].kernel, r.kernels[i].label()}, i);
    if (!fresh)
      throw ReportFormatError("kernels[" + std::to_string(i) + "]: duplicate entry for kernel '" +
                              r.kernels[i].kernel + "', op " + r.kernels[i].label() + " (also kernels[" +
                              std::to_string(at->second) + "])");
  }
  if (doc.has("performance")) r.performance = read_performance(doc.child("performance"));
  if (doc.has("shard")) {
    const Node shard = doc.child("shard");
    r.shard.count = static_cast<std::size_t>(shard.integer_in("count", 2, std::int64_t{1} << 32));
    r.shard.index = static_cast<std::size_t>(shard.integer_in("index", 0, static_cast<std::int64_t>(r.shard.count) - 1));
    shard.each_value("properties_of", [&](const Json& v, const std::string& w) {
      r.shard.properties_of.push_back(string_element(v, w));
    });
    r.shard.state = shard.str("state");
  }
  if ((verdict == "held") != r.all_held())
    doc.fail("verdict", "'" + verdict + "' contradicts the kernels' statuses and property verdicts");
  return r;
}

Performance performance_from_json(std::string_view text) {
  const Json j = parse(text);
  const Node doc(j, "");
  check_header(doc, "softcheck-bench");
  return read_performance(doc.child("performance"));
}

Report read_report(const std::filesystem::path& file) {
  const std::string text = slurp(file);
  try {
    return from_json(text);
  } catch (const ReportFormatError& e) {
    throw ReportFormatError(file.string() + ": " + e.what());
  }
}

}  // namespace softcheck
