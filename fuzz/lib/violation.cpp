#include "violation.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace softcheck::fuzz {

std::optional<Violation> confirm(const Kernel& k, Op op, std::string_view property, props::Case c,
                                 std::string context) {
  props::CaseResult r = props::check_case(k, op, property, c);
  if (r.status != props::CaseStatus::fail) return std::nullopt;
  return Violation{&k, op, std::string(property), std::move(c), std::move(r), std::move(context)};
}

std::string report_text(const Violation& v) {
  std::ostringstream os;
  os << "==softcheck-fuzz== INVARIANT VIOLATED\n"
     << "  kernel:      " << v.kernel->name << " (" << name(v.kernel->format) << ", masked-row policy "
     << name(v.kernel->masked_policy) << (v.kernel->test_only ? ", TEST-ONLY MUTANT" : "") << ")\n"
     << "  op:          " << name(v.op) << "\n"
     << "  property:    " << v.property << "\n"
     << "  from:        " << v.context << "\n"
     << "  temperature: " << props::format_value(v.c.temperature) << "\n"
     << "  row (n=" << v.c.row.size() << "): " << props::format_row(v.c.row) << "\n"
     << "  measured " << v.result.measured << " " << v.result.unit << " vs allowed " << v.result.allowed << " "
     << v.result.unit << ": " << v.result.message << "\n"
     << "  repro: " << props::repro_command(v.kernel->name, v.op, v.property, v.c, v.kernel->load_options) << "\n";
  return os.str();
}

void report_and_abort(const Violation& v) {
  const std::string text = report_text(v);
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace softcheck::fuzz
