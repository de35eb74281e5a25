// softcheck list: the registry with each kernel's declarations.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kernel_selection.hpp"
#include "softcheck/input_families.hpp"
#include "softcheck/kernel.hpp"
#include "text_table.hpp"

namespace softcheck::cli {

namespace {

nlohmann::ordered_json kernel_json(const Kernel& k) {
  // One entry per (op, output); "output" names it for an op with several
  // (as in report.json, docs/report-schema.md).
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const OpDecl& d : k.ops)
    for (std::size_t o = 0; o < spec(d.op).out.size(); ++o) {
      const Contract& c = d.contract_of(o);
      nlohmann::ordered_json entry = {{"op", name(d.op)}};
      if (spec(d.op).several_outputs()) entry["output"] = spec(d.op).out[o].name;
      entry["contract"] = {{"declared", c.declared},
                           {"formula", c.declared ? c.formula() : "none"},
                           {"a", c.a}, {"b", c.b}, {"c", c.c}, {"d", c.d}, {"t", c.t},
                           {"why", c.why}};
      if (c.hd != 0 || c.dot != 0) {  // the attention terms (kernel.hpp)
        entry["contract"]["hd"] = c.hd;
        entry["contract"]["dot"] = c.dot;
      }
      if (c.head != 0) entry["contract"]["head"] = c.head;  // relu and linear attention's h
      ops.push_back(std::move(entry));
    }
  nlohmann::ordered_json j = {{"name", k.name},
                               {"algorithm", k.algorithm},
                               {"format", name(k.format)},
                               {"output_format", name(k.output_format())},
                               {"masked_row_policy", name(k.masked_policy)},
                               {"available", k.available},
                               {"unavailable_reason", k.unavailable_reason},
                               {"test_only", k.test_only},
                               {"description", k.description},
                               {"ops", ops}};
  if (k.mx_inputs) j["input_format"] = mx_format_name(*k.mx_inputs);  // rows read as MX blocks
  return j;
}

std::string status_text(const Kernel& k) {
  if (!k.available) return "unavailable: " + k.unavailable_reason;
  return k.test_only ? "test-only (deliberately broken)" : "available";
}

constexpr std::string_view contract_legend =
    "n = row length, R = range and M = largest magnitude of the contributing x/T (docs/kernels.md); "
    "[T!=1] applies when the temperature is not 1; attention (docs/attention.md): n, R and M of the scores, "
    "h = head dimension, D = the dot products' mass.";

// `list --wide`: every column in full, however wide.
void print_wide_table(const std::vector<const Kernel*>& ks) {
  // Every column as wide as its longest entry (at least its header's), so no
  // two run together: rows of (kernel, algorithm, fmt, policy, op, contract, status).
  using Row = std::array<std::string, 7>;
  std::vector<Row> rows{{"kernel", "algorithm", "fmt", "policy", "op", "contract (max ULP)", "status"}};
  const auto add = [&](const Kernel& k, std::string_view op, const std::string& contract) {
    rows.push_back({k.name, k.algorithm, k.format_label(), std::string(name(k.masked_policy)),
                    std::string(op), contract, status_text(k)});
  };
  for (const Kernel* k : ks) {
    if (k->ops.empty()) add(*k, "-", "-");  // e.g. a plugin kernel whose op this version cannot run
    for (const OpDecl& d : k->ops)
      for (std::size_t o = 0; o < spec(d.op).out.size(); ++o)
        add(*k, output_label(d.op, o), d.contract_of(o).declared ? d.contract_of(o).formula() : "none");
  }
  std::array<std::size_t, 7> width{};
  for (const Row& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const Row& r : rows) {
    std::string line;
    for (std::size_t c = 0; c + 1 < r.size(); ++c) line += fmt::format("{:<{}} ", r[c], width[c]);
    fmt::print("{}{}\n", line, r.back());
  }
  fmt::print("\n{}\n", contract_legend);
}

// A coefficient in 3 significant digits, rounded up: the short form of a
// contract never promises less error than the contract itself.
std::string short_coefficient(double v) {
  if (!(v > 0) || !std::isfinite(v)) return fmt::format("{:g}", v);
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(v)));
  // (1 - 1e-12): a product a hair above an integer is that integer, not the next.
  return fmt::format("{:.3g}", std::ceil(v * scale * (1 - 1e-12)) / scale);
}

// "2 + n + 2R + 4M[T!=1]": formula() without the '*' and with short coefficients.
std::string short_formula(const Contract& c) {
  return c.formula([](double v, std::string_view var) {
    return (var.empty() || v != 1 ? short_coefficient(v) : "") + std::string(var);
  });
}

// The table that fits terminal_width (text_table.hpp): the algorithm column
// left out (the kernel name without its format, or a plugin's "plugin:<file>",
// which `--wide` shows), short contracts, a reason of unavailability once per
// group of kernels as a note.
void print_table(const std::vector<const Kernel*>& ks) {
  TextTable table({{"kernel"}, {"fmt"}, {"policy"}, {"op"}, {"status"}, {"contract (max ULP)"}});
  ReasonNotes unavailable;
  bool test_only = false;
  std::vector<std::string> shown;
  for (const Kernel* k : ks) {
    shown.push_back(k->name);
    test_only = test_only || k->test_only;
    if (!k->available) unavailable.add(k->name, k->unavailable_reason);
    const std::string status = !k->available ? "unavailable" : k->test_only ? "test-only" : "available";
    const auto add = [&](std::string_view op, std::string contract) {
      table.add({k->name, k->format_label(), std::string(name(k->masked_policy)), std::string(op), status,
                 std::move(contract)});
    };
    if (k->ops.empty()) add("-", "-");  // e.g. a plugin kernel whose op this version cannot run
    for (const OpDecl& d : k->ops)
      for (std::size_t o = 0; o < spec(d.op).out.size(); ++o) add(output_label(d.op, o), short_formula(d.contract_of(o)));
  }
  const std::string notes = unavailable.render(shown, "unavailable");
  fmt::print("{}{}{}", table.render(), notes.empty() ? "" : "\n", notes);
  fmt::print("\n{}", wrapped(std::string(contract_legend) +
                             " Coefficients rounded up to 3 digits; `softcheck list --wide` gives them exactly, "
                             "with each kernel's algorithm and status in full.",
                             ""));
  if (test_only) fmt::print("{}", wrapped("test-only: a deliberately broken kernel (the mutation self-test).", ""));
  // Which library each plugin kernel comes from: one line per library.
  std::vector<std::pair<std::string, std::string>> libraries;  // "plugin:<file>", its kernels
  for (const Kernel* k : ks) {
    if (!k->algorithm.starts_with("plugin:")) continue;
    auto it = std::find_if(libraries.begin(), libraries.end(), [&](const auto& l) { return l.first == k->algorithm; });
    if (it == libraries.end()) it = libraries.insert(libraries.end(), {k->algorithm, ""});
    it->second += (it->second.empty() ? "" : ", ") + k->name;
  }
  for (const auto& [library, names] : libraries) fmt::print("{}", wrapped(library + ": " + names));
}

void print_families() {
  for (const auto* list : {&input_families(), &attention_input_families()}) {
    if (list == &attention_input_families()) fmt::print("\nattention (`run --attention`; the row is the score bias):\n");
    for (const InputFamily& f : *list) {
      const std::vector<std::string> lines = wrap_words(f.description, terminal_width - 23);
      for (std::size_t i = 0; i < lines.size(); ++i) fmt::print("{:<22} {}\n", i == 0 ? f.name : "", lines[i]);
    }
  }
}

}  // namespace

Command add_list(CLI::App& app) {
  auto* sub = app.add_subcommand("list", "List kernels (and their declared contracts) or input families");
  auto json = std::make_shared<bool>(false);
  auto fams = std::make_shared<bool>(false);
  auto mutants = std::make_shared<bool>(false);
  auto sparse = std::make_shared<bool>(false);
  auto gradients = std::make_shared<bool>(false);
  auto attention = std::make_shared<bool>(false);
  auto wide = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->add_flag("--wide", *wide,
                "Every column in full (algorithm, exact contract coefficients, each unavailable reason on its "
                "row) instead of a table that fits 100 columns");
  sub->add_flag("--families", *fams, "List the input families of the run suite instead");
  sub->add_flag("--mutants", *mutants, "Include the deliberately broken test-only kernels");
  sub->add_flag("--sparse", *sparse, "Include the sparse kernels (sparsemax, entmax, top-k, threshold; docs/sparse.md)");
  sub->add_flag("--gradients", *gradients,
                "Include the gradient kernels (cross-entropy loss and gradient; docs/gradients.md; with --mutants "
                "the careless one too)");
  sub->add_flag("--attention", *attention,
                "Include the attention kernels (docs/attention.md; with --mutants the broken flash kernels too)");
  auto plugins = std::make_shared<PluginArgs>();
  add_plugin_options(*sub, *plugins);
  return [=] {
    if (*fams) {
      if (*json) {
        nlohmann::ordered_json a = nlohmann::ordered_json::array();
        for (const InputFamily& f : input_families())
          a.push_back({{"name", f.name}, {"description", f.description}, {"fixed_cols", f.fixed_cols}});
        for (const InputFamily& f : attention_input_families())
          a.push_back({{"name", f.name}, {"description", f.description}, {"fixed_cols", f.fixed_cols},
                       {"head_dim", f.head_dim}});
        fmt::print("{}\n", a.dump(2));
      } else {
        print_families();
      }
      return exit_ok;
    }
    const KernelSet kernel_set(*plugins);
    std::vector<const Kernel*> ks = kernel_set.all();
    if (*sparse)
      for (const Kernel& k : sparse_kernels()) ks.push_back(&k);
    if (*gradients)
      for (const Kernel& k : gradient_kernels())
        if (!k.test_only || *mutants) ks.push_back(&k);
    if (*attention)
      for (const Kernel& k : attention_kernels())
        if (!k.test_only || *mutants) ks.push_back(&k);
    for (const Kernel& k : quantised_kernels())
      if (!k.test_only || *mutants) ks.push_back(&k);
    if (*mutants)
      for (const Kernel& k : mutant_kernels()) ks.push_back(&k);
    if (*json) {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (const Kernel* k : ks) a.push_back(kernel_json(*k));
      fmt::print("{}\n", a.dump(2));
    } else if (*wide) {
      print_wide_table(ks);
    } else {
      print_table(ks);
    }
    return exit_ok;
  };
}

}  // namespace softcheck::cli
