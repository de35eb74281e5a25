// A suite run's state as text (a shard's report.json carries it) and the
// merge of the shards' states into the whole run's report.
#include <fmt/format.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "softcheck/run_suite.hpp"
#include "suite_state.hpp"

namespace softcheck {

namespace suite_state {

namespace {

using Json = nlohmann::ordered_json;

// Doubles as C99 hex floats: exact, and "inf" / "nan" where JSON has no number.
Json hex(double v) { return fmt::format("{:a}", v); }

struct Reader {
  std::string where;
  [[noreturn]] void fail(const std::string& what) const {
    throw ReportFormatError("shard state" + (where.empty() ? "" : " " + where) + ": " + what);
  }
  const Json& at(const Json& j, const char* key) const {
    if (!j.is_object() || !j.contains(key)) fail(std::string("missing '") + key + "'");
    return j.at(key);
  }
  std::uint64_t count(const Json& j, const char* key) const {
    const Json& v = at(j, key);
    if (!v.is_number_unsigned()) fail(std::string("'") + key + "' is not a non-negative integer");
    return v.get<std::uint64_t>();
  }
  std::int64_t integer(const Json& v, const char* what) const {
    if (!v.is_number_integer()) fail(std::string(what) + " is not an integer");
    return v.get<std::int64_t>();
  }
  double real(const Json& v, const char* what) const {
    if (!v.is_string()) fail(std::string(what) + " is not a hex float string");
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) fail(std::string(what) + " '" + s + "' is not a hex float");
    return d;
  }
  double real(const Json& j, const char* key, int) const { return real(at(j, key), key); }
  std::string str(const Json& j, const char* key) const {
    const Json& v = at(j, key);
    if (!v.is_string()) fail(std::string("'") + key + "' is not a string");
    return v.get<std::string>();
  }
  const Json& array(const Json& j, const char* key) const {
    const Json& v = at(j, key);
    if (!v.is_array()) fail(std::string("'") + key + "' is not an array");
    return v;
  }
};

Json bin_json(const ErrorBin& b) {
  return Json::array({hex(b.key), b.rows, b.measured, b.nonfinite, hex(b.max_ulp), hex(b.mean_ulp)});
}
ErrorBin read_bin(const Reader& r, const Json& j) {
  if (!j.is_array() || j.size() != 6) r.fail("an error bin is not [key, rows, measured, nonfinite, max, sum]");
  for (std::size_t i = 1; i < 4; ++i)
    if (!j[i].is_number_unsigned()) r.fail("an error bin's count is not a non-negative integer");
  ErrorBin b;
  b.key = r.real(j[0], "bin key");
  b.rows = j[1].get<std::uint64_t>();
  b.measured = j[2].get<std::uint64_t>();
  b.nonfinite = j[3].get<std::uint64_t>();
  b.max_ulp = r.real(j[4], "bin max");
  b.mean_ulp = r.real(j[5], "bin sum");
  return b;
}

Json worst_json(const WorstCase& w) {
  return Json{{"present", w.present}, {"family", w.family},       {"cols", w.cols},   {"temperature", hex(w.temperature)},
              {"row", w.row},         {"element", w.element},     {"got", hex(w.got)}, {"exact", w.exact},
              {"ulp", hex(w.ulp)},    {"bound", hex(w.bound)},    {"input", w.input}, {"repro", w.repro}};
}
WorstCase read_worst(const Reader& r, const Json& j) {
  WorstCase w;
  const Json& present = r.at(j, "present");
  if (!present.is_boolean()) r.fail("'present' is not a boolean");
  w.present = present.get<bool>();
  w.family = r.str(j, "family");
  w.cols = r.integer(r.at(j, "cols"), "cols");
  w.temperature = r.real(j, "temperature", 0);
  w.row = r.integer(r.at(j, "row"), "row");
  w.element = r.integer(r.at(j, "element"), "element");
  w.got = r.real(j, "got", 0);
  w.exact = r.str(j, "exact");
  w.ulp = r.real(j, "ulp", 0);
  w.bound = r.real(j, "bound", 0);
  w.input = r.str(j, "input");
  w.repro = r.str(j, "repro");
  return w;
}

// Every field finish_report reads (the sketches travel per target and
// family, not per case; `seconds` is a timing and never in a report; the
// worst row is gone once resolve_worst_texts gave its text).
static_assert(sizeof(Accum) == 1280,
              "Accum changed: write and read its new field here, then update this size (docs/scaling.md: "
              "the merged report must equal the unsharded one byte for byte)");

// `with_worst`: whether a's worst case can be its entry's (the first of the
// largest key over the items a shard ran); one of another shard then wins
// over the others, so only these travel.
Json accum_json(const Accum& a, bool with_worst) {
  Json by_magnitude = Json::array();
  for (const ErrorBin& b : a.by_magnitude) by_magnitude.push_back(bin_json(b));
  Json histogram = Json::array();  // (bin, count) of the non-empty bins
  for (std::size_t i = 0; i < a.histogram.size(); ++i)
    if (a.histogram[i] != 0) histogram.push_back(Json::array({i, a.histogram[i]}));
  return Json{{"rows", a.rows},
              {"elements", a.elements},
              {"measured", a.measured},
              {"max_ulp", hex(a.max_ulp)},
              {"sum_ulp", hex(a.sum_ulp)},
              {"max_bits", hex(a.max_bits)},
              {"sum_bits", hex(a.sum_bits)},
              {"max_rel", hex(a.max_rel)},
              {"max_normwise", hex(a.max_normwise)},
              {"max_bound_ratio", hex(a.max_bound_ratio)},
              {"unbounded_rows", a.unbounded_rows},
              {"nonfinite", a.nonfinite},
              {"special_mismatch", a.special_mismatch},
              {"contract_violations", a.contract_violations},
              {"false_zeros", a.false_zeros},
              {"false_nonzeros", a.false_nonzeros},
              {"policy_rows", a.policy_rows},
              {"policy_violations", a.policy_violations},
              {"floor_violations", a.floor_violations},
              {"worst_key", hex(a.worst_key)},
              {"worst", with_worst ? worst_json(a.worst) : Json(nullptr)},
              {"sum_signed_ulp", hex(a.sum_signed_ulp)},
              {"sum_signed_rel", hex(a.sum_signed_rel)},
              {"rel_measured", a.rel_measured},
              {"above", a.above},
              {"below", a.below},
              {"rows_above", a.rows_above},
              {"rows_below", a.rows_below},
              {"reference_rows", a.reference_rows},
              {"reference_violations", a.reference_violations},
              {"reference_max_ratio", hex(a.reference_max_ratio)},
              {"conditional_rows", a.conditional_rows},
              {"conditional_broken", a.conditional_broken},
              {"conditional_max", hex(a.conditional_max)},
              {"mass_rows", a.mass_rows},
              {"mass_sum", hex(a.mass_sum)},
              {"mass_max_lost", hex(a.mass_max_lost)},
              {"mass_max_gained", hex(a.mass_max_gained)},
              {"min_bound", hex(a.min_bound)},
              {"violated_rows", a.violated_rows},
              {"measured_rows", bin_json(a.measured_rows)},
              {"by_magnitude", by_magnitude},
              {"histogram", histogram}};
}

Accum read_accum(const Reader& r, const Json& j) {
  Accum a;
  a.rows = r.count(j, "rows");
  a.elements = r.count(j, "elements");
  a.measured = r.count(j, "measured");
  a.max_ulp = r.real(j, "max_ulp", 0);
  a.sum_ulp = r.real(j, "sum_ulp", 0);
  a.max_bits = r.real(j, "max_bits", 0);
  a.sum_bits = r.real(j, "sum_bits", 0);
  a.max_rel = r.real(j, "max_rel", 0);
  a.max_normwise = r.real(j, "max_normwise", 0);
  a.max_bound_ratio = r.real(j, "max_bound_ratio", 0);
  a.unbounded_rows = r.count(j, "unbounded_rows");
  a.nonfinite = r.count(j, "nonfinite");
  a.special_mismatch = r.count(j, "special_mismatch");
  a.contract_violations = r.count(j, "contract_violations");
  a.false_zeros = r.count(j, "false_zeros");
  a.false_nonzeros = r.count(j, "false_nonzeros");
  a.policy_rows = r.count(j, "policy_rows");
  a.policy_violations = r.count(j, "policy_violations");
  a.floor_violations = r.count(j, "floor_violations");
  a.worst_key = r.real(j, "worst_key", 0);
  if (!r.at(j, "worst").is_null()) a.worst = read_worst(r, r.at(j, "worst"));
  a.sum_signed_ulp = r.real(j, "sum_signed_ulp", 0);
  a.sum_signed_rel = r.real(j, "sum_signed_rel", 0);
  a.rel_measured = r.count(j, "rel_measured");
  a.above = r.count(j, "above");
  a.below = r.count(j, "below");
  a.rows_above = r.count(j, "rows_above");
  a.rows_below = r.count(j, "rows_below");
  a.reference_rows = r.count(j, "reference_rows");
  a.reference_violations = r.count(j, "reference_violations");
  a.reference_max_ratio = r.real(j, "reference_max_ratio", 0);
  a.conditional_rows = r.count(j, "conditional_rows");
  a.conditional_broken = r.count(j, "conditional_broken");
  a.conditional_max = r.real(j, "conditional_max", 0);
  a.mass_rows = r.count(j, "mass_rows");
  a.mass_sum = r.real(j, "mass_sum", 0);
  a.mass_max_lost = r.real(j, "mass_max_lost", 0);
  a.mass_max_gained = r.real(j, "mass_max_gained", 0);
  a.min_bound = r.real(j, "min_bound", 0);
  a.violated_rows = r.count(j, "violated_rows");
  a.measured_rows = read_bin(r, r.at(j, "measured_rows"));
  for (const Json& b : r.array(j, "by_magnitude")) a.by_magnitude.push_back(read_bin(r, b));
  for (const Json& h : r.array(j, "histogram")) {
    if (!h.is_array() || h.size() != 2 || !h[0].is_number_unsigned() || !h[1].is_number_unsigned() ||
        h[0].get<std::uint64_t>() >= a.histogram.size())
      r.fail("a histogram entry is not [bin, count]");
    a.histogram[h[0].get<std::size_t>()] = h[1].get<std::uint64_t>();
  }
  return a;
}

// A sketch's bins packed (a run's sketches are most of a shard's state: up
// to 32 bins per octave of error, per entry and family): per bin the key's
// step from the previous one and the count as LEB128 varints, then the
// maximum's 8 bytes (little-endian), all in base64.
constexpr char base64_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::string& bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t v = 0;
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    for (std::size_t k = 0; k < 3; ++k)
      v = v << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? base64_digits[v >> (18 - 6 * k) & 63] : '=';
  }
  return out;
}

std::optional<std::string> unbase64(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t v = 0;
    std::size_t pad = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const char* at = c == '=' ? nullptr : std::strchr(base64_digits, c);
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        pad++;
        v <<= 6;
        continue;
      }
      if (at == nullptr || c == '\0' || pad > 0) return std::nullopt;
      v = v << 6 | static_cast<std::uint32_t>(at - base64_digits);
    }
    for (std::size_t k = 0; k < 3 - pad; ++k) out += static_cast<char>(v >> (16 - 8 * k) & 255);
  }
  return out;
}

void put_varint(std::string& out, std::uint64_t v) {
  for (; v >= 128; v >>= 7) out += static_cast<char>((v & 127) | 128);
  out += static_cast<char>(v);
}

Json sketch_json(const detail::QuantileSketch& s) {
  const auto p = s.parts();
  std::string bytes;
  std::int64_t previous = 0;
  for (std::size_t i = 0; i < p.bins.size(); ++i) {
    const std::int64_t step = p.bins[i].key - previous;  // > 0 after the first bin
    put_varint(bytes, i == 0 ? (static_cast<std::uint64_t>(step) << 1) ^ static_cast<std::uint64_t>(step >> 63)
                             : static_cast<std::uint64_t>(step));
    previous = p.bins[i].key;
    put_varint(bytes, p.bins[i].count);
    const auto bits = std::bit_cast<std::uint64_t>(p.bins[i].max);
    for (int k = 0; k < 8; ++k) bytes += static_cast<char>(bits >> (8 * k) & 255);
  }
  return Json::array({p.zeros, p.infinities, p.total, base64(bytes)});
}

detail::QuantileSketch read_sketch(const Reader& r, const Json& j) {
  if (!j.is_array() || j.size() != 4 || !j[0].is_number_unsigned() || !j[1].is_number_unsigned() ||
      !j[2].is_number_unsigned() || !j[3].is_string())
    r.fail("a sketch is not [zeros, infinities, total, bins]");
  detail::QuantileSketch::Parts p;
  p.zeros = j[0].get<std::uint64_t>();
  p.infinities = j[1].get<std::uint64_t>();
  p.total = j[2].get<std::uint64_t>();
  const auto bytes = unbase64(j[3].get<std::string>());
  if (!bytes) r.fail("a sketch's bins are not base64");
  std::size_t at = 0;
  const auto varint = [&]() -> std::uint64_t {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= bytes->size()) r.fail("a sketch's bins end early");
      const auto b = static_cast<unsigned char>((*bytes)[at++]);
      v |= static_cast<std::uint64_t>(b & 127) << shift;
      if (b < 128) return v;
    }
    r.fail("a sketch's varint is too long");
  };
  std::int64_t key = 0;
  while (at < bytes->size()) {
    const std::uint64_t step = varint();
    key = p.bins.empty() ? static_cast<std::int64_t>(step >> 1) ^ -static_cast<std::int64_t>(step & 1)
                         : key + static_cast<std::int64_t>(step);
    const std::uint64_t count = varint();
    if (bytes->size() - at < 8) r.fail("a sketch's bins end early");
    std::uint64_t bits = 0;
    for (int k = 0; k < 8; ++k) bits |= static_cast<std::uint64_t>(static_cast<unsigned char>((*bytes)[at++])) << (8 * k);
    p.bins.push_back({key, count, std::bit_cast<double>(bits)});
  }
  auto s = detail::QuantileSketch::from_parts(p);
  if (!s) r.fail("a sketch's bins do not add up");
  return *s;
}

}  // namespace

std::string state_to_json(const SuiteState& state) {
  for (const CaseResult& r : state.results)
    for (const Accum& a : r.acc)
      if (a.worst_text_pending) throw std::logic_error("state_to_json: call resolve_worst_texts first");
  Json items = Json::array(), ran = Json::array(), results = Json::array(), sketches = Json::array();
  for (const PlannedItem& it : state.items)
    items.push_back(Json::array({it.family, it.cols, hex(it.temperature), it.targets}));
  std::set<const Accum*> worst;
  for (std::size_t t = 0; t < state.sketches.size(); ++t) worst.insert(worst_accum(state, t));
  for (std::size_t i = 0; i < state.items.size(); ++i) {
    if (!state.ran[i]) continue;
    ran.push_back(i);
    Json acc = Json::array();
    for (const Accum& a : state.results[i].acc) acc.push_back(accum_json(a, worst.count(&a) > 0));
    results.push_back(
        Json{{"oracle_rows", state.results[i].oracle_rows},
             {"mpfr_rows", state.results[i].mpfr_rows},
             {"inputs_fnv", state.results[i].inputs_fnv},
             {"acc", acc}});
  }
  for (std::size_t t = 0; t < state.sketches.size(); ++t)
    for (const auto& [family, s] : state.sketches[t])
      sketches.push_back(Json::array({t, family, sketch_json(s.ulp), sketch_json(s.ratio), s.rel_measured}));
  return Json{{"targets", state.sketches.size()}, {"items", items}, {"ran", ran}, {"results", results},
              {"sketches", sketches}}
      .dump();
}

SuiteState state_from_json(std::string_view text) {
  Reader r;
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    r.fail(std::string("not JSON: ") + e.what());
  }
  SuiteState state;
  const std::uint64_t targets = r.count(j, "targets");
  if (targets > (std::uint64_t{1} << 24)) r.fail("too many targets");
  state.sketches.resize(targets);
  for (const Json& it : r.array(j, "items")) {
    if (!it.is_array() || it.size() != 4 || !it[0].is_string() || !it[3].is_array())
      r.fail("an item is not [family, cols, temperature, targets]");
    PlannedItem p{it[0].get<std::string>(), r.integer(it[1], "item cols"), r.real(it[2], "item temperature"), {}};
    for (const Json& t : it[3]) {
      if (!t.is_number_unsigned() || t.get<std::uint64_t>() >= targets) r.fail("an item's target is out of range");
      p.targets.push_back(t.get<std::size_t>());
    }
    state.items.push_back(std::move(p));
  }
  state.results.resize(state.items.size());
  state.ran.assign(state.items.size(), 0);
  const Json& ran = r.array(j, "ran");
  const Json& results = r.array(j, "results");
  if (ran.size() != results.size()) r.fail("'ran' and 'results' differ in length");
  for (std::size_t k = 0; k < ran.size(); ++k) {
    if (!ran[k].is_number_unsigned() || ran[k].get<std::uint64_t>() >= state.items.size())
      r.fail("a ran item is out of range");
    const std::size_t i = ran[k].get<std::size_t>();
    if (state.ran[i]) r.fail(fmt::format("item {} ran twice", i));
    state.ran[i] = 1;
    Reader ri{fmt::format("item {}", i)};
    CaseResult& res = state.results[i];
    res.oracle_rows = ri.count(results[k], "oracle_rows");
    res.mpfr_rows = ri.count(results[k], "mpfr_rows");
    res.inputs_fnv = ri.count(results[k], "inputs_fnv");
    for (const Json& a : ri.array(results[k], "acc")) res.acc.push_back(read_accum(ri, a));
    if (res.acc.size() != state.items[i].targets.size()) ri.fail("one accumulator per target expected");
  }
  for (const Json& s : r.array(j, "sketches")) {
    if (!s.is_array() || s.size() != 5 || !s[0].is_number_unsigned() || s[0].get<std::uint64_t>() >= targets ||
        !s[1].is_string() || !s[4].is_number_unsigned())
      r.fail("a sketch entry is not [target, family, ulp, ratio, rel_measured]");
    Sketches& into = state.sketches[s[0].get<std::size_t>()][s[1].get<std::string>()];
    into.ulp = read_sketch(r, s[2]);
    into.ratio = read_sketch(r, s[3]);
    into.rel_measured = s[4].get<std::uint64_t>();
  }
  return state;
}

}  // namespace suite_state

namespace {

// An entry as described before its run (run_suite's describe): what every
// shard's report holds alike.
KernelSummary described(const KernelSummary& e) {
  KernelSummary s;
  s.kernel = e.kernel;
  s.algorithm = e.algorithm;
  s.format = e.format;
  s.output_format = e.output_format;
  s.input_format = e.input_format;
  s.op = e.op;
  s.output = e.output;
  s.masked_policy = e.masked_policy;
  s.description = e.description;
  s.contract_declared = e.contract_declared;
  s.contract_formula = e.contract_formula;
  s.contract_why = e.contract_why;
  s.floor_checked = e.floor_checked;
  s.floor_opt_out = e.floor_opt_out;
  s.reference.kernel = e.reference.kernel;
  s.reference.not_applied = e.reference.not_applied;
  s.conditional.present = e.conditional.present;
  s.unavailable_reason = e.unavailable_reason;
  s.load_options = e.load_options;
  if (e.status == "unavailable") s.status = e.status;
  return s;
}

// The run as it was set up, before any case: equal in every shard of one run.
Report described(const Report& r) {
  Report d = r;
  d.oracle.rows = d.oracle.mpfr_rows = 0;
  d.inputs_digest.clear();  // each shard's covers its own cases; the merge's is formed again
  d.shard = {};
  d.performance = {};
  for (KernelSummary& e : d.kernels) e = described(e);
  return d;
}

}  // namespace

Report merge_shard_reports(const std::vector<Report>& shards) {
  using suite_state::SuiteState;
  if (shards.empty()) throw std::invalid_argument("no shard reports to merge");
  const std::size_t n = shards.front().shard.count;
  std::vector<const Report*> by_index(n, nullptr);
  for (std::size_t k = 0; k < shards.size(); ++k) {
    const ShardInfo& s = shards[k].shard;
    if (!s.present())
      throw std::invalid_argument(fmt::format("report {} of the list is not a shard's (no \"shard\" object): "
                                              "merge only the reports of `run --shard I/N`", k + 1));
    if (s.count != n)
      throw std::invalid_argument(
          fmt::format("the shards are of different splits: {} shards and {} shards", n, s.count));
    if (by_index[s.index] != nullptr) throw std::invalid_argument(fmt::format("shard {}/{} is given twice", s.index, n));
    by_index[s.index] = &shards[k];
  }
  std::string missing;
  for (std::size_t i = 0; i < n; ++i)
    if (by_index[i] == nullptr) missing += fmt::format("{}{}/{}", missing.empty() ? "" : ", ", i, n);
  if (!missing.empty()) throw std::invalid_argument("shard reports missing: " + missing);

  Report merged = described(*by_index[0]);
  const std::string setup = to_json(merged);
  SuiteState state;
  std::map<std::string, std::size_t> properties_from;  // kernel -> shard
  for (std::size_t i = 0; i < n; ++i) {
    const Report& r = *by_index[i];
    if (to_json(described(r)) != setup)
      throw std::invalid_argument(fmt::format(
          "shard {}/{} is not of the same run as shard 0/{}: its settings, kernels or cases differ", i, n, n));
    SuiteState s;
    try {
      s = suite_state::state_from_json(r.shard.state);
    } catch (const ReportFormatError& e) {
      throw std::invalid_argument(fmt::format("shard {}/{}: {}", i, n, e.what()));
    }
    if (i == 0) {
      state.items = s.items;
      state.results.resize(s.items.size());
      state.ran.assign(s.items.size(), 0);
      state.sketches.resize(s.sketches.size());
    }
    const auto same_items = [&] {
      if (s.items.size() != state.items.size() || s.sketches.size() != state.sketches.size()) return false;
      for (std::size_t k = 0; k < s.items.size(); ++k)
        if (s.items[k].family != state.items[k].family || s.items[k].cols != state.items[k].cols ||
            s.items[k].temperature != state.items[k].temperature || s.items[k].targets != state.items[k].targets)
          return false;
      return true;
    };
    if (!same_items() || s.sketches.size() != merged.kernels.size())
      throw std::invalid_argument(fmt::format("shard {}/{} planned other cases than shard 0/{}", i, n, n));
    for (std::size_t k = 0; k < s.items.size(); ++k) {
      if (!s.ran[k]) continue;
      if (state.ran[k])
        throw std::invalid_argument(fmt::format("case {} ({} n={}) ran in two shards", k, s.items[k].family,
                                                s.items[k].cols));
      state.ran[k] = 1;
      state.results[k] = std::move(s.results[k]);
    }
    for (std::size_t t = 0; t < s.sketches.size(); ++t)
      for (auto& [family, sk] : s.sketches[t]) {
        suite_state::Sketches& into = state.sketches[t][family];
        into.ulp.merge(sk.ulp);
        into.ratio.merge(sk.ratio);
        into.rel_measured += sk.rel_measured;
      }
    for (const std::string& kernel : r.shard.properties_of)
      if (!properties_from.emplace(kernel, i).second)
        throw std::invalid_argument(fmt::format("kernel {}'s properties were checked by two shards", kernel));
  }
  for (std::size_t k = 0; k < state.items.size(); ++k)
    if (!state.ran[k])
      throw std::invalid_argument(fmt::format("case {} ({} n={}) ran in no shard", k, state.items[k].family,
                                              state.items[k].cols));
  suite_state::finish_report(merged, state, nullptr);
  for (std::size_t e = 0; e < merged.kernels.size(); ++e) {
    const auto from = properties_from.find(merged.kernels[e].kernel);
    if (from != properties_from.end()) merged.kernels[e].properties = by_index[from->second]->kernels[e].properties;
  }
  return merged;
}

}  // namespace softcheck
