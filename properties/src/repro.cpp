// Repro lines: the exact row syntax, replay of one case, and the printed tables.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "registry.hpp"
#include "softcheck/properties.hpp"
#include "support.hpp"

namespace softcheck::props {

// ---- values and rows ----------------------------------------------------------------

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// Parses the whole of `body` (no sign) as a hex or decimal float.
Expected<double> parse_unsigned(std::string_view body, std::string_view original) {
  const std::string quoted = "'" + std::string(original) + "'";
  // Signs were taken by the caller; inf/nan spellings other than the plain ones
  // (e.g. "nan(1)") are rejected here.
  if (body.empty() || body.front() == '+' || body.front() == '-' || std::isalpha(static_cast<unsigned char>(body.front())))
    return Expected<double>::failure("not a number: " + quoted);
  std::chars_format fmt = std::chars_format::general;
  if (body.size() >= 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
    body.remove_prefix(2);
    fmt = std::chars_format::hex;
    if (body.empty() || body.front() == '+' || body.front() == '-')
      return Expected<double>::failure("malformed hex float: " + quoted);
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v, fmt);
  if (ec == std::errc::result_out_of_range) return Expected<double>::failure("out of double range: " + quoted);
  if (ec != std::errc() || end != body.data() + body.size()) return Expected<double>::failure("not a number: " + quoted);
  return v;
}

}  // namespace

Expected<double> parse_value(std::string_view text) {
  const std::string_view t = trim(text);
  if (t.empty()) return Expected<double>::failure("empty value");
  std::string_view body = t;
  double sign = 1;
  if (body.front() == '+' || body.front() == '-') {
    sign = body.front() == '-' ? -1 : 1;
    body.remove_prefix(1);
  }
  const std::string word = lower(body);
  if (word == "inf" || word == "infinity") return sign * INFINITY;
  if (word == "nan") return static_cast<double>(NAN);
  const Expected<double> v = parse_unsigned(body, t);
  if (!v) return v;
  return sign * *v;
}

Expected<std::vector<double>> parse_row(std::string_view text) {
  using R = Expected<std::vector<double>>;
  if (trim(text).empty()) return R::failure("empty row");
  std::vector<double> row;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const Expected<double> v = parse_value(item);
    if (!v) return R::failure("row entry " + std::to_string(row.size() + 1) + ": " + v.error());
    row.push_back(*v);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return row;
}

std::string format_value(double v) { return detail::hex(v); }

std::string format_row(std::span<const double> row) {
  std::string out;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (i > 0) out += ',';
    out += format_value(row[i]);
  }
  return out;
}

Expected<KeyWindow> parse_window(std::string_view text) {
  using R = Expected<KeyWindow>;
  std::int64_t v[3] = {};
  std::size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t comma = i < 2 ? text.find(',', at) : text.size();
    if (comma == std::string_view::npos)
      return R::failure("expected three integers position,left,right, got '" + std::string(text) + "'");
    const std::string_view part = text.substr(at, comma - at);
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v[i]);
    if (ec != std::errc() || end != part.data() + part.size() || part.empty())
      return R::failure("not an integer: '" + std::string(part) + "' (expected position,left,right)");
    at = comma + 1;
  }
  return KeyWindow{v[0], v[1], v[2]};
}

std::string format_window(const KeyWindow& w) {
  return std::to_string(w.position) + "," + std::to_string(w.left) + "," + std::to_string(w.right);
}

std::string repro_command(std::string_view kernel, Op op, std::string_view property, const Case& c,
                          std::string_view load_options) {
  std::string extra;
  if (c.target) extra += " --target=" + std::to_string(*c.target);
  if (!c.upstream.empty()) extra += " --upstream=" + format_row(c.upstream);
  // Attention: q, K and V in full, hex-exact like the row (the bias); a
  // shrunk case is small, and the line replays it without the seed.
  if (c.head_dim != 0)
    extra += " --head-dim=" + std::to_string(c.head_dim) + " --query=" + format_row(c.query) +
             " --keys=" + format_row(c.keys) + " --values=" + format_row(c.values);
  if (c.window.bounded()) extra += " --window=" + format_window(c.window);
  return "softcheck repro " + (load_options.empty() ? std::string() : std::string(load_options) + " ") + "--impl " +
         std::string(kernel) + " --op " + std::string(name(op)) + " --property " + std::string(property) + extra +
         " --temperature=" + format_value(c.temperature) + " --row=" + format_row(c.row);
}

namespace {

// The text of option `--name=` in a repro line, up to the next " --" (the
// row, the last option, up to the end).
std::optional<std::string_view> option_text(std::string_view line, std::string_view name) {
  const std::string key = " --" + std::string(name) + "=";
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + key.size());
  if (name != "row") rest = rest.substr(0, rest.find(" --"));
  return rest;
}

}  // namespace

Expected<Case> parse_repro_case(std::string_view line) {
  using R = Expected<Case>;
  Case c;
  const auto row_text = option_text(line, "row");
  if (!row_text) return R::failure("no --row= in the repro line");
  const auto row = parse_row(*row_text);
  if (!row) return R::failure("--row: " + row.error());
  c.row = *row;
  if (const auto t = option_text(line, "temperature")) {
    const auto v = parse_value(*t);
    if (!v) return R::failure("--temperature: " + v.error());
    c.temperature = *v;
  }
  if (const auto t = option_text(line, "target")) {
    std::int64_t target = 0;
    const auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), target);
    if (ec != std::errc() || end != t->data() + t->size()) return R::failure("--target: not an integer: '" + std::string(*t) + "'");
    c.target = target;
  }
  if (const auto g = option_text(line, "upstream")) {
    const auto up = parse_row(*g);
    if (!up) return R::failure("--upstream: " + up.error());
    c.upstream = *up;
  }
  if (const auto t = option_text(line, "head-dim")) {
    std::int64_t d = 0;
    const auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), d);
    if (ec != std::errc() || end != t->data() + t->size()) return R::failure("--head-dim: not an integer: '" + std::string(*t) + "'");
    c.head_dim = d;
  }
  if (const auto t = option_text(line, "window")) {
    const auto w = parse_window(*t);
    if (!w) return R::failure("--window: " + w.error());
    c.window = *w;
  }
  const std::pair<const char*, std::vector<double>*> attention[] = {
      {"query", &c.query}, {"keys", &c.keys}, {"values", &c.values}};
  for (const auto& [option, values] : attention)
    if (const auto t = option_text(line, option)) {
      const auto v = parse_row(*t);
      if (!v) return R::failure("--" + std::string(option) + ": " + v.error());
      *values = *v;
    }
  return c;
}

// ---- replay ----------------------------------------------------------------------------

Expected<Replay> replay(const Kernel& kernel, Op op, std::string_view property, const Case& c) {
  using R = Expected<Replay>;
  const detail::PropertyDef* def = detail::find_def(property);
  if (def == nullptr) {
    std::string known;
    for (const PropertyInfo& p : property_list()) known += (known.empty() ? "" : ", ") + std::string(p.name);
    return R::failure("unknown property '" + std::string(property) + "' (known: " + known + ")");
  }
  if (kernel.find(op) == nullptr) return R::failure("kernel " + kernel.name + " does not provide " + std::string(name(op)));
  if (const std::optional<Claim> m = detail::cannot_claim(*def, kernel, op))
    return R::failure("property " + std::string(property) + " on " + std::string(name(op)) + ": " + m->reason);
  if (!kernel.available) return R::failure("kernel " + kernel.name + " is unavailable: " + kernel.unavailable_reason);
  if (c.row.empty()) return R::failure("empty row");
  if (!std::isfinite(c.temperature) || !(c.temperature > 0)) return R::failure("temperature must be finite and > 0");
  for (std::size_t i = 0; i < c.row.size(); ++i) {
    const double v = c.row[i];
    if (!std::isnan(v) && round_to_format(v, kernel.format) != v)
      return R::failure("row entry " + std::to_string(i + 1) + " (" + format_value(v) + ") is not exactly representable in " +
                        std::string(name(kernel.format)) + " (nearest " + format_value(round_to_format(v, kernel.format)) + ")");
  }
  if (kernel.mx_inputs) {  // the row as its MX blocks hold it, entry for entry
    const std::vector<double> held = mx_row(c.row, *kernel.mx_inputs);
    for (std::size_t i = 0; i < c.row.size(); ++i)
      if (!(held[i] == c.row[i] || (std::isnan(held[i]) && std::isnan(c.row[i]))))
        return R::failure("row entry " + std::to_string(i + 1) + " (" + format_value(c.row[i]) + ") is not what its " +
                          mx_format_name(*kernel.mx_inputs) + " block holds (" + format_value(held[i]) + ")");
  }
  if (const std::string bad = detail::extra_inputs_error(kernel, op, c); !bad.empty()) return R::failure(bad);
  Replay r;
  r.claim = claim(kernel, op, property);
  try {
    r.result = check_case(kernel, op, property, c);
  } catch (const std::exception& e) {
    return R::failure(std::string("harness error: ") + e.what());
  }
  return r;
}

namespace {

std::string elided_row(std::span<const double> row, std::size_t max_print) {
  if (row.size() <= max_print) return format_row(row);
  const std::size_t half = max_print / 2;
  return format_row(row.first(half)) + ", ... (" + std::to_string(row.size() - 2 * half) + " more) ..., " +
         format_row(row.last(half));
}

// Attention's q, K and V, one line each after `indent` (K and V elided past
// max_print values; the repro line holds them in full).
void print_attention_inputs(std::ostream& os, const Case& c, std::string_view indent, std::size_t max_print) {
  if (c.head_dim == 0) return;
  os << indent << "head dim:    " << c.head_dim << "\n"
     << indent << "q:           " << elided_row(c.query, max_print) << "\n"
     << indent << "K (n x d):   " << elided_row(c.keys, max_print) << "\n"
     << indent << "V (n x d):   " << elided_row(c.values, max_print) << "\n";
  if (c.window.bounded())
    os << indent << "window:      position " << c.window.position << ", left " << c.window.left << ", right "
       << c.window.right << " (keys " << c.window.first(static_cast<std::int64_t>(c.row.size())) << " .. "
       << c.window.end(static_cast<std::int64_t>(c.row.size())) - 1 << " visible)\n";
}

}  // namespace

void print_replay(std::ostream& os, const Kernel& kernel, Op op, std::string_view property, const Case& c,
                  const Replay& r) {
  const PropertyInfo* info = find_property(property);
  os << "kernel:      " << kernel.name << " (" << kernel.format_label() << ")\n"
     << "op:          " << name(op) << "\n"
     << "property:    " << property << (info ? " - " + std::string(info->statement) : std::string()) << "\n"
     << "claimed:     " << (r.claim.claimed ? "yes" : "no") << (r.claim.reason.empty() ? "" : " (" + r.claim.reason + ")")
     << "\n"
     << "row (n=" << c.row.size() << "): " << format_row(c.row) << "\n";
  if (c.target) os << "target:      " << *c.target << "\n";
  if (!c.upstream.empty()) os << "upstream:    " << format_row(c.upstream) << "\n";
  print_attention_inputs(os, c, "", 64);
  os << "temperature: " << format_value(c.temperature) << "\n"
     << "result:      " << name(r.result.status);
  if (r.result.status != CaseStatus::not_applicable)
    os << ": measured " << detail::num(r.result.measured) << " " << r.result.unit << " vs allowed "
       << detail::num(r.result.allowed) << " " << r.result.unit;
  os << "\n" << "detail:      " << r.result.message << "\n";
}

// ---- tables ---------------------------------------------------------------------------------

namespace {

// Failed: the shrunk case's measurement; passed: the case closest to the bound.
std::string note_text(const PropertyVerdict& v) {
  if (v.verdict == Verdict::failed)
    return detail::num(v.failure.measured) + " > " + detail::num(v.failure.allowed) + " " + v.failure.unit;
  if (v.verdict == Verdict::passed && !v.closest.unit.empty()) {
    // A property the floor claims says so: its bound is not the kernel's own.
    const bool floor = v.reason.starts_with(detail::floor_claim_prefix);
    return "worst " + detail::num(v.closest.measured) + " <= " + detail::num(v.closest.allowed) + " " +
           v.closest.unit + (floor ? "; " + v.reason : "");
  }
  return v.reason;
}

void print_failure(std::ostream& os, const PropertyVerdict& v, std::size_t max_row_print) {
  const Case& c = *v.counterexample;
  const PropertyInfo* info = find_property(v.property);
  os << "\nFAILED " << v.kernel << " " << name(v.op) << " " << v.property << (v.claimed ? "" : " (not claimed)")
     << "\n  property:    " << (info ? info->statement : "") << "\n  bound:       " << (info ? info->bound : "")
     << "\n  row (n=" << c.row.size() << ", " << v.shrink_steps << " shrink steps"
     << (v.shrink_truncated ? ", shrinking truncated" : "") << "): " << elided_row(c.row, max_row_print);
  if (c.target) os << "\n  target:      " << *c.target;
  if (!c.upstream.empty()) os << "\n  upstream:    " << elided_row(c.upstream, max_row_print);
  if (has_head_dim(v.op)) {
    // q, K and V from the repro line: `check --jobs N` hands verdicts
    // between processes with the row, target and upstream gradient only,
    // and the block must read the same for any N.
    const Expected<Case> full = parse_repro_case(v.repro);
    os << "\n";
    if (full) print_attention_inputs(os, *full, "  ", max_row_print);
    os << "  temperature: " << format_value(c.temperature);
  } else {
    os << "\n  temperature: " << format_value(c.temperature);
  }
  os << "\n  measured " << detail::num(v.failure.measured)
     << " " << v.failure.unit << " vs allowed " << detail::num(v.failure.allowed) << " " << v.failure.unit
     << "\n  detail:      " << v.failure.message << "\n  seed " << v.seed << " (RapidCheck seed " << v.rc_seed
     << ", " << v.tests_passed << " cases passed before)\n  repro: " << v.repro << "\n";
}

}  // namespace

void print_verdicts(std::ostream& os, std::span<const PropertyVerdict> verdicts, std::size_t max_row_print) {
  // Columns as wide as their longest entry plus two spaces (at least the
  // header's), so that no two columns run together.
  std::size_t kw = 8, ow = 12, pw = 20;
  for (const PropertyVerdict& v : verdicts) {
    kw = std::max(kw, v.kernel.size() + 2);
    ow = std::max(ow, name(v.op).size() + 2);
    pw = std::max(pw, v.property.size() + 2);
  }
  const int kernel_width = static_cast<int>(kw), op_width = static_cast<int>(ow), property_width = static_cast<int>(pw);
  os << std::left << std::setw(kernel_width) << "kernel" << std::setw(op_width) << "op" << std::setw(property_width)
     << "property" << std::setw(12) << "verdict" << std::setw(7) << "cases" << "measured / note\n";
  for (const PropertyVerdict& v : verdicts) {
    const std::string note = note_text(v);
    os << std::left << std::setw(kernel_width) << v.kernel << std::setw(op_width) << name(v.op)
       << std::setw(property_width) << v.property << std::setw(12) << name(v.verdict) << std::setw(7) << v.tests_passed
       << note << "\n";
  }
  for (const PropertyVerdict& v : verdicts)
    if (v.verdict == Verdict::failed && v.counterexample) print_failure(os, v, max_row_print);
}

void print_kill_table(std::ostream& os, std::span<const PropertyVerdict> verdicts) {
  std::vector<std::string> props;
  for (const PropertyInfo& p : property_list())
    if (std::any_of(verdicts.begin(), verdicts.end(), [&](const auto& v) { return v.property == p.name; }))
      props.emplace_back(p.name);
  std::vector<std::string> rows;
  std::map<std::pair<std::string, std::string>, const PropertyVerdict*> cell;
  std::map<std::string, std::string> kernel_of;  // row -> kernel
  std::set<std::string> caught;                   // kernels with a claimed property failed
  std::size_t width = 10;
  for (const PropertyVerdict& v : verdicts) {
    const std::string row = v.kernel + " " + std::string(name(v.op));
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
    cell[{row, v.property}] = &v;
    kernel_of[row] = v.kernel;
    if (v.claimed && v.verdict == Verdict::failed) caught.insert(v.kernel);
    width = std::max(width, row.size() + 2);
  }
  os << std::left << std::setw(static_cast<int>(width)) << "kernel op";
  for (const std::string& p : props) os << std::setw(std::max<int>(static_cast<int>(p.size()) + 2, 9)) << p;
  os << "kernel caught\n";
  for (const std::string& row : rows) {
    os << std::setw(static_cast<int>(width)) << row;
    for (const std::string& p : props) {
      const auto it = cell.find({row, p});
      std::string text = "-";
      if (it != cell.end()) {
        const PropertyVerdict& v = *it->second;
        switch (v.verdict) {
          case Verdict::failed: text = v.claimed ? "KILLED" : "fail(n/c)"; break;
          case Verdict::passed: text = "survived"; break;
          case Verdict::not_claimed: text = "n/c"; break;
          default: text = std::string(name(v.verdict)); break;
        }
      }
      os << std::setw(std::max<int>(static_cast<int>(p.size()) + 2, 9)) << text;
    }
    os << (caught.count(kernel_of[row]) > 0 ? "yes" : "NO") << "\n";
  }
}

}  // namespace softcheck::props
