// Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/seed-*):
// rows of the input families (input_families.hpp) and of the property generators
// (generators.hpp), encoded in the numeric targets' input format, one row per
// gradient kernel with its class target or upstream gradient (seed-grad-*),
// and sample texts for every parser of fuzz_inputs. Deterministic: the same build writes
// the same files. Small on purpose (tens of files, a few KB): libFuzzer finds
// the rest; crash regressions are committed next to them as crash-*.
//
//   fuzz_make_corpus fuzz/corpus
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "fuzz_case.hpp"
#include "pool.hpp"
#include "softcheck/input_families.hpp"
#include "softcheck/generators.hpp"
#include "softcheck/properties.hpp"
#include "softcheck/report.hpp"

namespace {

namespace fs = std::filesystem;
using namespace softcheck;
using fuzz::FuzzCase;
using fuzz::OpChoice;
using fuzz::Pool;

constexpr std::int64_t max_seed_cols = 48;  // keeps every seed file under ~250 bytes

void write_file(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::vector<std::uint8_t> text_input(std::uint8_t parser, const std::string& text) {
  std::vector<std::uint8_t> b(text.size() + 1);
  b[0] = parser;
  for (std::size_t i = 0; i < text.size(); ++i) b[i + 1] = static_cast<std::uint8_t>(text[i]);
  return b;
}

// Kernels (and ops) the seeds cycle through, for one target's op choice.
struct Slot {
  const Kernel* kernel;
  Op op;
};
std::vector<Slot> slots(const Pool& pool, OpChoice choice) {
  std::vector<Slot> out;
  for (const Kernel* k : pool)
    for (const OpDecl& d : k->ops)
      if (eligible(d, choice)) out.push_back({k, d.op});  // the ops the decoder can pick
  return out;
}

// One row per seed: `values` for the slot's kernel (rounded to its format when
// the source was another format's), truncated to max_seed_cols.
FuzzCase make_case(const Slot& s, std::vector<double> values, double temperature) {
  FuzzCase c;
  c.kernel = s.kernel;
  c.op = s.op;
  if (static_cast<std::int64_t>(values.size()) > max_seed_cols) values.resize(max_seed_cols);
  if (values.empty()) values.push_back(0.0);
  for (double& v : values) v = round_to_format(v, s.kernel->format);
  c.rows = 1;
  c.cols = static_cast<std::int64_t>(values.size());
  c.temperature = temperature;
  c.values = std::move(values);
  return c;
}

using RowGen = std::function<rc::Gen<std::vector<double>>(Format)>;

std::vector<std::pair<std::string, RowGen>> generators() {
  const gen::RowOptions o{static_cast<std::size_t>(max_seed_cols), 0.0};
  return {
      {"finite", [o](Format f) { return gen::finite_row(f, o); }},
      {"masked", [o](Format f) { return gen::masked_row(f, o); }},
      {"fully_masked", [o](Format f) { return gen::fully_masked_row(f, o); }},
      {"nonfinite", [o](Format f) { return gen::nonfinite_row(f, o); }},
      {"mask_1e9", [o](Format f) { return gen::mask_1e9_row(f, o); }},
      {"underflow", [o](Format f) { return gen::underflow_row(f, o); }},
      {"lattice", [o](Format f) { return gen::lattice_row(f, o); }},
  };
}

// Seeds of a numeric target: one per input family, then two per generator.
void numeric_seeds(const fs::path& dir, OpChoice choice, std::uint8_t partner) {
  const Pool& pool = fuzz::process_pool();
  const std::vector<Slot> all = slots(pool, choice);
  std::size_t next = 0;
  const std::vector<double> temperatures = {1.0, 1.0, 1.0, 0.5, 2.0, 0.1};
  auto emit = [&](const std::string& stem, std::vector<double> row) {
    const Slot& s = all[next % all.size()];
    const FuzzCase c = make_case(s, std::move(row), temperatures[next % temperatures.size()]);
    ++next;
    write_file(dir / ("seed-" + stem + "-" + s.kernel->name + "-" + std::string(name(s.op))),
               fuzz::encode(c, pool, choice, partner));
  };
  for (const InputFamily& fam : input_families()) {
    const std::int64_t cols = fam.fixed_cols > 0 ? fam.fixed_cols : 24;
    emit("family-" + fam.name, fill_rows(fam, Format::f64, 1, cols, 7));
  }
  std::uint64_t seed = 1;
  for (const auto& [label, make] : generators())
    for (int i = 0; i < 2; ++i) {
      const Slot& s = all[next % all.size()];
      const rc::Gen<std::vector<double>> g = make(s.kernel->format);
      emit("gen-" + label + "-" + std::to_string(i), g(rc::Random(seed++), 30).value());
    }
}

// ---- the gradient ops (docs/gradients.md) ------------------------------------------------

// What a seed row of a gradient op holds: a family's row, which target
// (cross_entropy) and which g (the backward ops): the cases of
// fill_class_targets and fill_upstream_gradients, and the ones they reach
// rarely (a masked target, a fully masked row, a nearly constant g).
enum class TargetRule { largest, masked, ignored, smallest, second };
enum class UpstreamRule { normal, constant, one_hot, nearly_constant };
struct GradientRecipe {
  const char* label;
  const char* family;
  TargetRule target;
  UpstreamRule upstream;
};
const GradientRecipe gradient_recipes[] = {
    {"confident", "one_dominant", TargetRule::largest, UpstreamRule::normal},  // p_t - 1 and the loss cancel
    {"masked", "mask_neg_inf", TargetRule::masked, UpstreamRule::constant},    // +inf loss; <y, g> cancels g
    {"ignored", "normal_s10", TargetRule::ignored, UpstreamRule::one_hot},
    {"fully_masked", "fully_masked", TargetRule::largest, UpstreamRule::normal},
    {"benchdnn", "benchdnn", TargetRule::smallest, UpstreamRule::normal},
    {"xnnpack", "xnnpack_u90_100", TargetRule::second, UpstreamRule::nearly_constant},
};

std::int64_t seed_target(TargetRule rule, std::span<const double> row) {
  const auto n = static_cast<std::int64_t>(row.size());
  std::int64_t largest = 0, smallest = -1, masked = -1;
  for (std::int64_t j = 0; j < n; ++j) {
    const double v = row[static_cast<std::size_t>(j)];
    if (v > row[static_cast<std::size_t>(largest)]) largest = j;
    if (std::isfinite(v) && (smallest < 0 || v < row[static_cast<std::size_t>(smallest)])) smallest = j;
    if (v == -INFINITY && masked < 0) masked = j;
  }
  switch (rule) {
    case TargetRule::largest: return largest;
    case TargetRule::masked: return masked >= 0 ? masked : largest;
    case TargetRule::ignored: return ignore_index;
    case TargetRule::smallest: return smallest >= 0 ? smallest : 0;
    case TargetRule::second: return std::min<std::int64_t>(1, n - 1);
  }
  return largest;
}

// g for one row of n in format f, within the decoder's range (fuzz_case.hpp).
std::vector<double> seed_upstream(UpstreamRule rule, std::size_t n, Format f, Rng& rng) {
  std::vector<double> g(n, 0.0);
  const double c = round_to_format(rng.normal(0.0, 1.0), f);
  for (std::size_t j = 0; j < n; ++j) {
    switch (rule) {
      case UpstreamRule::normal: g[j] = rng.normal(0.0, 1.0); break;
      case UpstreamRule::constant: g[j] = c; break;
      case UpstreamRule::one_hot: g[j] = j == n / 2 ? 1.0 : 0.0; break;
      case UpstreamRule::nearly_constant: g[j] = c * (1 + static_cast<double>(j % 3) * unit_roundoff(f) * 2); break;
    }
    g[j] = round_to_format(std::clamp(g[j], -fuzz::max_upstream, fuzz::max_upstream), f);
  }
  return g;
}

FuzzCase gradient_case(const Slot& s, const GradientRecipe& recipe, std::int64_t cols, double temperature,
                       std::uint64_t seed) {
  const InputFamily* fam = find_input_family(recipe.family);
  if (fam == nullptr) throw std::runtime_error(std::string("no input family ") + recipe.family);
  const Format f = s.kernel->format;
  FuzzCase c;
  c.kernel = s.kernel;
  c.op = s.op;
  c.rows = 1;
  c.cols = fam->fixed_cols > 0 ? fam->fixed_cols : cols;
  c.temperature = temperature;
  c.values = fill_rows(*fam, f, 1, c.cols, seed);
  if (fuzz::takes(s.op, InputKind::class_index)) c.targets = {seed_target(recipe.target, c.values)};
  if (fuzz::takes(s.op, InputKind::upstream_gradient)) {
    Rng rng(seed);
    c.upstream = seed_upstream(recipe.upstream, c.values.size(), f, rng);
  }
  return c;
}

// One seed per gradient kernel (op), the recipes in turn, and for the
// chunk-16 kernels a row of 200 (13 chunks: the merges).
void gradient_seeds(const fs::path& dir, OpChoice choice, std::uint8_t partner) {
  const Pool& pool = fuzz::process_pool();
  std::size_t next = 0;
  const std::vector<double> temperatures = {1.0, 1.0, 0.5, 1.0, 2.0, 0.7};
  const auto emit = [&](const std::string& stem, const FuzzCase& c) {
    write_file(dir / ("seed-grad-" + stem + "-" + c.kernel->name + "-" + std::string(name(c.op))),
               fuzz::encode(c, pool, choice, partner));
  };
  for (const Slot& s : slots(pool, choice)) {
    if (!spec(s.op).several_inputs()) continue;
    const GradientRecipe& recipe = gradient_recipes[next % std::size(gradient_recipes)];
    emit(recipe.label, gradient_case(s, recipe, 24, temperatures[next % temperatures.size()], 100 + next));
    if (s.kernel->name.find("chunked16") != std::string::npos)
      emit("wide", gradient_case(s, gradient_recipes[0], 200, 1.0, 200 + next));
    ++next;
  }
}

// A small report with one kernel (every section present), as report.json.
std::string sample_report_json() {
  Report r;
  r.tool_version = "0.1.0";
  r.suite = "quick";
  r.seed = 1;
  r.oracle_bits = 256;
  r.families = {"normal_s1", "mask_neg_inf"};
  r.sizes = {3, 17};
  r.temperatures = {1.0};
  KernelSummary k;
  k.kernel = "shifted_f32";
  k.algorithm = "shifted";
  k.format = "f32";
  k.op = std::string(name(Op::softmax));
  k.masked_policy = "nan";
  k.contract_declared = true;
  k.contract_formula = "2 + 1*n + 2*R + 4*M[T!=1]";
  k.status = "held";
  k.cases = k.rows = 2;
  k.elements = k.measured = 20;
  k.max_ulp = 1.5;
  k.worst.present = true;
  k.worst.family = "normal_s1";
  k.worst.cols = 3;
  k.worst.got = 0.5;
  k.worst.exact = "5.00000000000000000000e-01";
  k.worst.input = "0x1p+0,-inf,0x1p+0";
  FamilySummary fam;
  fam.family = "normal_s1";
  fam.rows = 1;
  fam.max_ulp = 1.5;
  k.by_family.push_back(fam);
  PropertySummary prop;
  prop.property = "sum_to_one";
  prop.verdict = "passed";
  prop.tests = 40;
  k.properties.push_back(prop);
  r.kernels.push_back(k);
  return to_json(r);
}

void input_seeds(const fs::path& dir) {
  const std::vector<std::pair<std::string, std::vector<std::uint8_t>>> seeds = {
      {"row-hex", text_input(0, "0x1p+0,-inf,nan, 0x1.8p-3")},
      {"row-decimal", text_input(0, "1000,1001,1002")},
      {"row-specials", text_input(0, "-1e9,+inf,-Infinity,NaN,0x1.fffffep+127,-0x0.000002p-126,65504")},
      {"row-bad", text_input(0, "1,,2,abc,1e999")},
      {"value-hex", text_input(1, "-0x1.62e42fefa39efp+6")},
      {"value-words", text_input(1, " -infinity ")},
      {"cli-oracle", text_input(2, "oracle\n--op\nlog_softmax\n--dtype\nf32\n--temperature\n0.5\n--\n1\n-inf\n3")},
      {"cli-oracle-bad", text_input(2, "oracle\n--dtype\nf32\n1e39\nnan")},
      {"cli-run", text_input(2, "run\n--impl\nshifted_f32\n--suite\nfull\n--seed\n7\n--oracle-bits\n64\n--size\n17")},
      {"cli-list", text_input(2, "list\n--json\n--mutants")},
      {"names-kernel", text_input(3, "shifted_log1p_f32")},
      {"names-property", text_input(3, "sum_to_one")},
      {"report-json", text_input(4, sample_report_json())},
      {"report-json-bad", text_input(4, "{\"schema\": \"softcheck-report\", \"schema_version\": 99}")},
      {"bench-json", text_input(5, performance_to_json(Performance{}))},
      {"gate-rule", text_input(6, "shifted_f32:2")},
      {"cli-repro", text_input(2, "repro\n--impl\nshifted_log1p_f32\n--op\nlog_softmax\n--property\naccuracy\n"
                                  "--temperature=0x1p-1\n--row=0x1p+0,-inf,0x1.62e43p+6")},
      {"repro-line", text_input(7, "softcheck repro --impl mutant_masked_nan --op softmax --property fully_masked "
                                   "--temperature=0x1p+0 --row=-inf,-inf,-inf")},
  };
  for (const auto& [stem, bytes] : seeds) write_file(dir / ("seed-" + stem), bytes);
}

void remove_old_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("seed-", 0) == 0) fs::remove(e.path());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_ROOT (e.g. fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* t : {"fuzz_nan_inf", "fuzz_differential", "fuzz_inputs"}) remove_old_seeds(root / t);
  numeric_seeds(root / "fuzz_nan_inf", OpChoice::any, 0);
  numeric_seeds(root / "fuzz_differential", OpChoice::contract_only, 1);
  gradient_seeds(root / "fuzz_nan_inf", OpChoice::any, 0);
  gradient_seeds(root / "fuzz_differential", OpChoice::contract_only, 1);
  input_seeds(root / "fuzz_inputs");
  std::fprintf(stderr, "seed corpora written under %s\n", root.c_str());
  return 0;
}
