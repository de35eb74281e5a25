// softcheck list: the registry with each kernel's declarations.
#include <array>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kernel_selection.hpp"
#include "softcheck/families.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::cli {

namespace {

nlohmann::ordered_json kernel_json(const Kernel& k) {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const OpDecl& d : k.ops)
    ops.push_back({{"op", name(d.op)},
                   {"contract", {{"declared", d.contract.declared},
                                 {"formula", d.contract.declared ? d.contract.formula() : "none"},
                                 {"a", d.contract.a}, {"b", d.contract.b}, {"c", d.contract.c},
                                 {"d", d.contract.d}, {"t", d.contract.t},
                                 {"why", d.contract.why}}}});
  return {{"name", k.name},
          {"algorithm", k.algorithm},
          {"format", name(k.format)},
          {"masked_row_policy", name(k.masked_policy)},
          {"available", k.available},
          {"unavailable_reason", k.unavailable_reason},
          {"test_only", k.test_only},
          {"description", k.description},
          {"ops", ops}};
}

std::string status_text(const Kernel& k) {
  if (!k.available) return "unavailable: " + k.unavailable_reason;
  return k.test_only ? "test-only (deliberately broken)" : "available";
}

void print_table(const std::vector<const Kernel*>& ks) {
  // Every column as wide as its longest entry (at least its header's), so no
  // two run together: rows of (kernel, algorithm, fmt, policy, op, contract, status).
  using Row = std::array<std::string, 7>;
  std::vector<Row> rows{{"kernel", "algorithm", "fmt", "policy", "op", "contract (max ULP)", "status"}};
  const auto add = [&](const Kernel& k, std::string_view op, const std::string& contract) {
    rows.push_back({k.name, k.algorithm, std::string(name(k.format)), std::string(name(k.masked_policy)),
                    std::string(op), contract, status_text(k)});
  };
  for (const Kernel* k : ks) {
    if (k->ops.empty()) add(*k, "-", "-");  // e.g. a plugin kernel whose op this version cannot run
    for (const OpDecl& d : k->ops) add(*k, name(d.op), d.contract.declared ? d.contract.formula() : "none");
  }
  std::array<std::size_t, 7> width{};
  for (const Row& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const Row& r : rows) {
    std::string line;
    for (std::size_t c = 0; c + 1 < r.size(); ++c) line += fmt::format("{:<{}} ", r[c], width[c]);
    fmt::print("{}{}\n", line, r.back());
  }
  fmt::print("\nn = row length, R = range and M = largest magnitude of the contributing x/T "
             "(docs/kernels.md); [T!=1] applies when the temperature is not 1.\n");
}

}  // namespace

Command add_list(CLI::App& app) {
  auto* sub = app.add_subcommand("list", "List kernels (and their declared contracts) or input families");
  auto json = std::make_shared<bool>(false);
  auto fams = std::make_shared<bool>(false);
  auto mutants = std::make_shared<bool>(false);
  auto sparse = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->add_flag("--families", *fams, "List the input families of the run suite instead");
  sub->add_flag("--mutants", *mutants, "Include the deliberately broken test-only kernels");
  sub->add_flag("--sparse", *sparse, "Include the sparse kernels (sparsemax, entmax, top-k, threshold; docs/sparse.md)");
  auto plugins = std::make_shared<PluginArgs>();
  add_plugin_options(*sub, *plugins);
  return [=] {
    if (*fams) {
      if (*json) {
        nlohmann::ordered_json a = nlohmann::ordered_json::array();
        for (const Family& f : families())
          a.push_back({{"name", f.name}, {"description", f.description}, {"fixed_cols", f.fixed_cols}});
        fmt::print("{}\n", a.dump(2));
      } else {
        for (const Family& f : families()) fmt::print("{:<22} {}\n", f.name, f.description);
      }
      return exit_ok;
    }
    const KernelSet kernel_set(*plugins);
    std::vector<const Kernel*> ks = kernel_set.all();
    if (*sparse)
      for (const Kernel& k : sparse_kernels()) ks.push_back(&k);
    if (*mutants)
      for (const Kernel& k : mutant_kernels()) ks.push_back(&k);
    if (*json) {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (const Kernel* k : ks) a.push_back(kernel_json(*k));
      fmt::print("{}\n", a.dump(2));
    } else {
      print_table(ks);
    }
    return exit_ok;
  };
}

}  // namespace softcheck::cli
