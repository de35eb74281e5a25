// Reading report.json (and bench.json) back, with strict validation: every
// error names the field, e.g. "kernels[3].max_ulp: expected a number, found a
// string". Fields added to schema 1 after its first release are optional on
// read (docs/report-schema.md lists them); unknown keys are ignored.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

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

WorstCase read_worst(const Node& k) {
  WorstCase w;
  if (k.raw("worst").is_null()) return w;
  const Node n = k.child("worst");
  w.present = true;
  w.family = n.str("family");
  w.cols = n.integer("cols");
  w.temperature = n.number("temperature");
  w.row = n.integer("row");
  w.element = n.integer("element");
  w.got = n.value_or_name("got");
  w.exact = n.str("exact");
  w.ulp = n.number("ulp");
  w.bound = n.number("bound");
  w.input = n.str("input");
  w.repro = n.str("repro");
  return w;
}

FamilySummary read_family(const Node& n) {
  FamilySummary f;
  f.family = n.str("family");
  f.rows = n.count("rows");
  f.max_ulp = n.number("max_ulp");
  f.nonfinite = n.count("nonfinite");
  f.violations = n.count("violations");
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

ErrorBin read_bin(const Node& n, const char* key_name, bool integer_key) {
  ErrorBin b;
  b.key = integer_key ? static_cast<double>(n.integer(key_name)) : n.number(key_name);
  b.rows = n.count("rows");
  b.measured = n.count("measured");
  b.max_ulp = n.number("max_ulp");
  b.mean_ulp = n.number("mean_ulp");
  b.nonfinite = n.count("nonfinite");
  return b;
}

// Optional sweep (added after schema 1's first release): absent means empty.
std::vector<ErrorBin> read_bins(const Node& k, const char* key, const char* key_name, bool integer_key) {
  std::vector<ErrorBin> bins;
  if (!k.has(key)) return bins;
  k.each(key, [&](const Node& n) { bins.push_back(read_bin(n, key_name, integer_key)); });
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

void read_counts(const Node& k, KernelSummary& s) {
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
}

void read_errors(const Node& k, KernelSummary& s) {
  s.max_ulp = k.number("max_ulp");
  s.mean_ulp = k.number("mean_ulp");
  s.max_bits = k.number("max_bits");
  s.mean_bits = k.number("mean_bits");
  s.max_rel = k.number("max_rel");
  s.max_normwise = k.number("max_normwise");
  s.max_bound_ratio = k.number("max_bound_ratio");
}

void read_sweeps(const Node& k, KernelSummary& s) {
  if (k.has("ulp_histogram")) {
    k.each_value("ulp_histogram", [&](const Json& v, const std::string& where) {
      s.ulp_histogram.push_back(count_element(v, where));
    });
    if (s.ulp_histogram.size() > ulp_histogram_bins)
      k.fail("ulp_histogram", "more than " + std::to_string(ulp_histogram_bins) + " bins");
  }
  s.by_size = read_bins(k, "by_size", "cols", true);
  s.by_temperature = read_bins(k, "by_temperature", "temperature", false);
  s.by_magnitude = read_bins(k, "by_magnitude", "decade", true);
}

KernelSummary read_kernel(const Node& k) {
  KernelSummary s;
  s.kernel = k.str("kernel");
  if (s.kernel.empty()) k.fail("kernel", "empty kernel name");
  s.algorithm = k.str("algorithm");
  s.format = k.str("format");
  // softmax, log_softmax and the sparse ops (report.hpp's is_sparse_op_name; docs/sparse.md).
  s.op = k.word("op", {"softmax", "log_softmax", "sparsemax", "entmax15", "entmax", "topk_softmax",
                       "threshold_softmax"});
  s.description = k.str("description");
  s.masked_policy = k.word("masked_row_policy", {"nan", "zeros", "uniform"});
  read_contract(k, s);
  s.status = k.word("status", {"held", "violated", "no_contract", "unavailable"});
  s.unavailable_reason = k.str("unavailable_reason");
  read_counts(k, s);
  read_errors(k, s);
  s.worst = read_worst(k);
  k.each("by_family", [&](const Node& n) { s.by_family.push_back(read_family(n)); });
  k.each("properties", [&](const Node& n) { s.properties.push_back(read_property(n)); });
  read_sweeps(k, s);
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
  run.each_value("families", [&](const Json& v, const std::string& w) { r.families.push_back(string_element(v, w)); });
  run.each_value("sizes", [&](const Json& v, const std::string& w) { r.sizes.push_back(integer_element(v, w)); });
  run.each_value("temperatures",
                 [&](const Json& v, const std::string& w) { r.temperatures.push_back(number_element(v, w)); });
}

BenchResult read_bench_result(const Node& n) {
  BenchResult b;
  b.kernel = n.str("kernel");
  b.format = n.str("format");
  b.op = n.word("op", {"softmax", "log_softmax"});
  b.rows = n.integer("rows");
  b.cols = n.integer("cols");
  b.items_per_second = n.number("items_per_second");
  b.bytes_per_second = n.number("bytes_per_second");
  b.copy_bytes_per_second = n.number("copy_bytes_per_second");
  n.number("copy_fraction");  // derived; checked for type only
  return b;
}

Performance read_performance(const Node& n) {
  Performance p;
  p.present = true;
  p.host = n.str("host");
  p.cpus = n.count("cpus");
  p.mhz_per_cpu = n.number("mhz_per_cpu");
  p.library_build_type = n.str("library_build_type");
  p.min_time = n.number("min_time");
  n.each("results", [&](const Node& b) { p.results.push_back(read_bench_result(b)); });
  return p;
}

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ReportFormatError(file.string() + ": cannot open: " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw ReportFormatError(file.string() + ": read error");
  return s.str();
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
  if (doc.has("performance")) r.performance = read_performance(doc.child("performance"));
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
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) throw ReportFormatError(file.string() + ": no such file");
  if (std::filesystem::is_directory(file, ec)) throw ReportFormatError(file.string() + ": is a directory");
  const std::string text = slurp(file);
  try {
    return from_json(text);
  } catch (const ReportFormatError& e) {
    throw ReportFormatError(file.string() + ": " + e.what());
  }
}

}  // namespace softcheck
