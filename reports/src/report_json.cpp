#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "softcheck/kernel.hpp"
#include "softcheck/report.hpp"

namespace softcheck {

namespace {

using Json = nlohmann::ordered_json;  // keys in insertion order: deterministic output

// JSON has no NaN or infinity. A bound that is infinite (vacuous, or no
// contract) is written as null; a non-finite kernel output as its name.
Json number_or_null(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
Json value_or_name(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

Json worst_json(const WorstCase& w) {
  if (!w.present) return nullptr;
  return Json{{"family", w.family},   {"cols", w.cols},
              {"temperature", w.temperature},
              {"row", w.row},         {"element", w.element},
              {"got", value_or_name(w.got)},
              {"exact", w.exact},     {"ulp", number_or_null(w.ulp)},
              {"bound", number_or_null(w.bound)},
              {"input", w.input},     {"repro", w.repro}};
}

Json distribution_json(const ErrorDistribution& d) {
  return Json{{"measured", d.measured},
              {"mean_signed_ulp", number_or_null(d.mean_signed_ulp)},
              {"mean_signed_rel", number_or_null(d.mean_signed_rel)},
              {"above", d.above},
              {"below", d.below},
              {"p50_ulp", number_or_null(d.p50_ulp)},
              {"p99_ulp", number_or_null(d.p99_ulp)},
              {"max_ulp", number_or_null(d.max_ulp)},
              {"p50_ratio", number_or_null(d.p50_ratio)},
              {"p99_ratio", number_or_null(d.p99_ratio)},
              {"max_ratio", number_or_null(d.max_ratio)},
              {"rows_above", d.rows_above},
              {"rows_below", d.rows_below},
              {"bias_z", d.bias_z()},
              {"biased", d.biased()}};
}

Json family_json(const FamilySummary& f) {
  return Json{{"family", f.family},         {"rows", f.rows},
              {"max_ulp", f.max_ulp},       {"nonfinite", f.nonfinite},
              {"violations", f.violations}, {"distribution", distribution_json(f.distribution)}};
}

Json cell_json(const CellSummary& c) {
  return Json{{"family", c.family},
              {"cols", c.cols},
              {"rows", c.rows},
              {"measured", c.measured},
              {"nonfinite", c.nonfinite},
              {"violations", c.violations},
              {"max_ulp", number_or_null(c.max_ulp)},
              {"mean_ulp", number_or_null(c.mean_ulp)},
              {"max_ratio", number_or_null(c.max_ratio)},
              {"mean_signed_ulp", number_or_null(c.mean_signed_ulp)},
              {"rows_above", c.rows_above},
              {"rows_below", c.rows_below},
              {"bound", number_or_null(c.bound)}};
}

Json reference_json(const ReferenceCheck& r) {
  if (r.kernel.empty()) return Json{{"not_applied", r.not_applied}};
  return Json{{"kernel", r.kernel},
              {"rows", r.rows},
              {"violations", r.violations},
              {"max_ratio", number_or_null(r.max_ratio)}};
}

Json property_json(const PropertySummary& p) {
  return Json{{"property", p.property}, {"verdict", p.verdict}, {"tests", p.tests},
              {"detail", p.detail},     {"repro", p.repro}};
}

// One bin of a sweep, its key under `key_name` (an integer for cols and decade).
Json bin_json(const ErrorBin& b, const char* key_name, bool integer_key) {
  Json j;
  j[key_name] = integer_key ? Json(static_cast<std::int64_t>(b.key)) : Json(b.key);
  j["rows"] = b.rows;
  j["measured"] = b.measured;
  j["max_ulp"] = b.max_ulp;
  j["mean_ulp"] = b.mean_ulp;
  j["nonfinite"] = b.nonfinite;
  return j;
}

Json bins_json(const std::vector<ErrorBin>& bins, const char* key_name, bool integer_key) {
  Json a = Json::array();
  for (const ErrorBin& b : bins) a.push_back(bin_json(b, key_name, integer_key));
  return a;
}

Json bench_result_json(const BenchResult& b) {
  return Json{{"kernel", b.kernel},
              {"format", b.format},
              {"op", b.op},
              {"rows", b.rows},
              {"cols", b.cols},
              {"items_per_second", b.items_per_second},
              {"bytes_per_second", b.bytes_per_second},
              {"copy_bytes_per_second", b.copy_bytes_per_second},
              {"copy_fraction", b.copy_fraction()}};
}

Json kernel_json(const KernelSummary& k) {
  Json by_family = Json::array();
  for (const FamilySummary& f : k.by_family) by_family.push_back(family_json(f));
  Json properties = Json::array();
  for (const PropertySummary& p : k.properties) properties.push_back(property_json(p));
  Json contract = Json{{"declared", k.contract_declared},
                       {"formula", k.contract_formula},
                       {"why", k.contract_why}};
  Json j{{"kernel", k.kernel},
              {"algorithm", k.algorithm},
              {"format", k.format},
              {"op", k.op},
              {"description", k.description},
              {"masked_row_policy", k.masked_policy},
              {"contract", contract},
              {"status", k.status},
              {"unavailable_reason", k.unavailable_reason},
              {"cases", k.cases},
              {"rows", k.rows},
              {"elements", k.elements},
              {"measured", k.measured},
              {"max_ulp", k.max_ulp},
              {"mean_ulp", k.mean_ulp},
              {"max_bits", k.max_bits},
              {"mean_bits", k.mean_bits},
              {"max_rel", number_or_null(k.max_rel)},
              {"max_normwise", k.max_normwise},
              {"max_bound_ratio", k.max_bound_ratio},
              {"unbounded_rows", k.unbounded_rows},
              {"nonfinite", k.nonfinite},
              {"special_mismatch", k.special_mismatch},
              {"contract_violations", k.contract_violations},
              {"policy_rows", k.policy_rows},
              {"policy_violations", k.policy_violations},
              {"worst", worst_json(k.worst)},
              {"distribution", distribution_json(k.distribution)},
              {"by_family", by_family},
              {"properties", properties},
              {"ulp_histogram", k.ulp_histogram},
              {"by_size", bins_json(k.by_size, "cols", true)},
              {"by_temperature", bins_json(k.by_temperature, "temperature", false)},
              {"by_magnitude", bins_json(k.by_magnitude, "decade", true)}};
  // Sparse ops only (absent otherwise, so softmax reports keep their bytes).
  if (is_sparse_op_name(k.op)) {
    j["false_zeros"] = k.false_zeros;
    j["false_nonzeros"] = k.false_nonzeros;
  }
  if (!k.load_options.empty()) j["load_options"] = k.load_options;
  // Ops with several outputs only: which output the entry judges.
  if (!k.output.empty()) j["output"] = k.output;
  if (!k.output_format.empty()) j["output_format"] = k.output_format;
  if (!k.input_format.empty()) j["input_format"] = k.input_format;
  // Entries without a declared contract: the floor's checks.
  if (k.floor_checked) {
    Json check = Json::object();
    if (k.floor_opt_out.empty())
      check["violations"] = k.floor_violations;
    else
      check["opted_out"] = k.floor_opt_out;
    Json floor = Json::object();
    floor[std::string(floor_no_nonfinite)] = std::move(check);
    j["floor"] = std::move(floor);
  }
  // Entries the reference rule judges, or should have and could not.
  if (k.reference.present()) j["reference"] = reference_json(k.reference);
  // Backward ops' dx only: the conditional mode (report.hpp ConditionalError).
  if (k.conditional.present)
    j["conditional"] = Json{{"rows", k.conditional.rows},
                            {"broken", k.conditional.broken},
                            {"max_error", number_or_null(k.conditional.max_error)}};
  // Probability outputs: the mass of their rows (report.hpp MassSummary).
  if (k.mass.rows > 0)
    j["mass"] = Json{{"rows", k.mass.rows},
                     {"max_lost", k.mass.max_lost},
                     {"max_gained", k.mass.max_gained},
                     {"mean_error", k.mass.mean_error}};
  Json cells = Json::array();
  for (const CellSummary& c : k.cells) cells.push_back(cell_json(c));
  j["cells"] = std::move(cells);
  return j;
}

Json performance_json(const Performance& p) {
  Json results = Json::array();
  for (const BenchResult& b : p.results) results.push_back(bench_result_json(b));
  return Json{{"host", p.host},
              {"cpus", p.cpus},
              {"mhz_per_cpu", p.mhz_per_cpu},
              {"library_build_type", p.library_build_type},
              {"min_time", p.min_time},
              {"results", results}};
}

}  // namespace

double sign_test_z(std::uint64_t rows_above, std::uint64_t rows_below) {
  const std::uint64_t n = rows_above + rows_below;
  if (n == 0) return 0;
  return (static_cast<double>(rows_above) - static_cast<double>(rows_below)) / std::sqrt(static_cast<double>(n));
}

double ErrorDistribution::bias_z() const { return sign_test_z(rows_above, rows_below); }

bool ErrorDistribution::biased() const { return std::fabs(bias_z()) >= bias_z_threshold; }

bool Report::all_held() const {
  for (const KernelSummary& k : kernels) {
    if (k.status == "violated") return false;
    for (const PropertySummary& p : k.properties)
      if (p.verdict == "failed") return false;
  }
  return true;
}

std::string to_json(const Report& r) {
  Json kernels = Json::array();
  for (const KernelSummary& k : r.kernels) kernels.push_back(kernel_json(k));
  Json run = Json{{"suite", r.suite},
                  {"seed", r.seed},
                  {"oracle_bits", r.oracle_bits},
                  {"families", r.families},
                  {"sizes", r.sizes},
                  {"temperatures", r.temperatures}};
  if (!r.oracle.mode.empty())
    run["oracle"] = Json{{"mode", r.oracle.mode}, {"rows", r.oracle.rows}, {"mpfr_rows", r.oracle.mpfr_rows}};
  if (r.selection_recorded) {
    run["selection"] = Json{{"families", r.selected_families},
                            {"sizes", r.selected_sizes},
                            {"temperatures", r.selected_temperatures}};
    if (!r.selected_ops.empty()) run["selection"]["ops"] = r.selected_ops;
  }
  if (!r.inputs_digest.empty()) run["inputs"] = r.inputs_digest;
  if (r.fp_env != "default") run["fp_env"] = r.fp_env;  // written only when not the default
  if (r.budget.present()) {  // `run --budget` only
    Json skipped = Json::array();
    for (const SkippedCase& c : r.budget.skipped)
      skipped.push_back(Json{{"family", c.family}, {"format", c.format}, {"n", c.cols}, {"temperature", c.temperature}});
    run["budget"] = Json{{"seconds", r.budget.seconds},
                         {"suite_seconds", r.budget.suite_seconds},
                         {"modelled_seconds", r.budget.modelled_seconds},
                         {"cases_run", r.budget.cases_run},
                         {"cases", r.budget.cases},
                         {"skipped", skipped}};
  }
  if (!r.reference_rule.scope.empty())
    run["reference_rule"] =
        Json{{"scope", r.reference_rule.scope}, {"k", r.reference_rule.k}, {"slack_u", r.reference_rule.slack}};
  Json doc = Json{{"schema", "softcheck-report"},
                  {"schema_version", report_schema_version},
                  {"tool", Json{{"name", "softcheck"}, {"version", r.tool_version}}},
                  {"run", run},
                  {"verdict", r.all_held() ? "held" : "violated"},
                  {"kernels", kernels}};
  if (r.performance.present) doc["performance"] = performance_json(r.performance);
  // The suite's state is softcheck's own format (suite/src/suite_state.hpp),
  // kept as one compact string: only `report --merge` reads it.
  if (r.shard.present())
    doc["shard"] = Json{{"index", r.shard.index},
                        {"count", r.shard.count},
                        {"properties_of", r.shard.properties_of},
                        {"state", r.shard.state}};
  return doc.dump(2) + "\n";
}

std::string performance_to_json(const Performance& p) {
  Json doc = Json{{"schema", "softcheck-bench"}, {"schema_version", report_schema_version}};
  doc["performance"] = performance_json(p);
  return doc.dump(2) + "\n";
}

}  // namespace softcheck
