#include "violation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "plugin_kernels.hpp"

namespace softcheck::fuzz {

std::optional<Violation> confirm(const Kernel& k, Op op, std::string_view property, props::Case c,
                                 std::string context) {
  props::CaseResult r = props::check_case(k, op, property, c);
  if (r.status != props::CaseStatus::fail) return std::nullopt;
  return Violation{&k, op, std::string(property), std::move(c), std::move(r), std::move(context), std::nullopt};
}

namespace {

// The row as the oracle's positional values: hex floats, space-separated.
std::string spaced(std::span<const double> row) {
  std::string s;
  for (double v : row) (s += s.empty() ? "" : " ") += props::format_value(v);
  return s;
}

}  // namespace

std::string oracle_command(const Violation& v) {
  if (!v.gradient || std::all_of(v.c.row.begin(), v.c.row.end(), [](double x) { return x == -INFINITY; })) return "";
  std::string s = "softcheck oracle --op " + std::string(name(v.op));
  if (v.c.target) s += " --target=" + std::to_string(*v.c.target);
  // --upstream before another option: CLI11 lets a list option swallow a `--` right after it.
  if (!v.c.upstream.empty()) s += " --upstream=" + props::format_row(v.c.upstream);
  s += std::string(" --dtype ") + (v.kernel->format == Format::f32 ? "f32" : "f64");
  s += " --temperature=" + props::format_value(v.c.temperature) + " --digits 21 -- " + spaced(v.c.row);
  return s;
}

std::string report_text(const Violation& v) {
  std::ostringstream os;
  os << "==softcheck-fuzz== INVARIANT VIOLATED\n"
     << "  kernel:      " << v.kernel->name << " (" << name(v.kernel->format) << ", masked-row policy "
     << name(v.kernel->masked_policy) << (v.kernel->test_only ? ", TEST-ONLY MUTANT" : "") << ")\n";
  if (const std::string* plugin = fuzz_plugin_path(*v.kernel)) os << "  plugin:      " << *plugin << "\n";
  os     << "  op:          " << name(v.op) << "\n"
     << "  property:    " << v.property << "\n"
     << "  from:        " << v.context << "\n"
     << "  temperature: " << props::format_value(v.c.temperature) << "\n"
     << "  row (n=" << v.c.row.size() << "): " << props::format_row(v.c.row) << "\n";
  if (v.c.target) os << "  target:      " << *v.c.target << (*v.c.target == ignore_index ? " (ignore_index)" : "") << "\n";
  if (!v.c.upstream.empty()) os << "  upstream g:  " << props::format_row(v.c.upstream) << "\n";
  if (v.gradient) {
    if (!v.gradient->output.empty()) os << "  output:      " << v.gradient->output << "\n";
    for (const auto& [output, values] : v.gradient->outputs)
      os << "  got " << output << ": " << props::format_row(values) << "\n";
  }
  os << "  measured " << v.result.measured << " " << v.result.unit << " vs allowed " << v.result.allowed << " "
     << v.result.unit << ": " << v.result.message << "\n"
     << "  repro: " << props::repro_command(v.kernel->name, v.op, v.property, v.c, v.kernel->load_options) << "\n";
  if (const std::string exact = oracle_command(v); !exact.empty()) os << "  exact: " << exact << "\n";
  return os.str();
}

void report_and_abort(const Violation& v) {
  const std::string text = report_text(v);
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace softcheck::fuzz
