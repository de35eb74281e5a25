// softcheck check / repro: the property suite (properties/) from the command
// line, so a plugin kernel gets the same guarantees checked as a built-in one.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "commands.hpp"
#include "fp_env_option.hpp"
#include "kernel_selection.hpp"
#include "parallel_check.hpp"
#include "shard_option.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::cli {

namespace {

struct CheckArgs {
  std::vector<std::string> impls;
  PluginArgs plugins;
  std::vector<std::string> properties;
  int tests = 100;
  std::uint64_t seed = 0;
  bool peers = false;
  bool gradients = false;
  bool attention = false;
  bool kill_table = false;
  unsigned jobs = 0;
  std::optional<std::string> shard;
  std::string fp_env = "default";
};

struct ReproArgs {
  std::string impl, op{name(Op::softmax)}, property, temperature = "1", row, upstream;
  std::optional<std::int64_t> target;
  // attention (docs/attention.md): the head dimension, q, K and V; the row is the bias
  std::int64_t head_dim = 0;
  std::string query, keys, values, window;
  PluginArgs plugins;
  std::string fp_env = "default";
};


}  // namespace

Command add_check(CLI::App& app) {
  auto* sub = app.add_subcommand("check", "Check kernels against every property they claim (RapidCheck, with shrinking)");
  auto a = std::make_shared<CheckArgs>();
  sub->add_option("--impl", a->impls, "Kernel to check (repeatable; default: every built-in and plugin kernel)");
  sub->add_flag("--peers", a->peers, "With no --impl: also check the peer libraries' kernels");
  sub->add_flag("--gradients", a->gradients,
                "With no --impl: also check the gradient kernels (cross_entropy, softmax / log-softmax backward; "
                "docs/gradients.md) against the gradient properties; --impl may name one either way");
  sub->add_flag("--attention", a->attention,
                "With no --impl: also check the attention kernels (docs/attention.md) against the attention "
                "properties; --impl may name one either way");
  add_plugin_options(*sub, a->plugins);
  sub->add_option("--property", a->properties, "Only this property (repeatable; default: all)");
  sub->add_option("--tests", a->tests, "Test cases per property and op")->check(CLI::Range(1, 1000000))->capture_default_str();
  sub->add_option("--seed", a->seed, "Seed; the same seed checks the same cases")->capture_default_str();
  sub->add_flag("--kill-table", a->kill_table, "Also print the kernel x property table");
  sub->add_option("--jobs", a->jobs,
                  "Worker processes (default: all cores); the output is identical for any value");
  add_shard_option(*sub, a->shard);
  add_fp_env_option(*sub, a->fp_env);
  return [a] {
    const FpEnv env = fp_env_of(a->fp_env);
    const Shard shard = this_shard(a->shard, false);
    const KernelSet kernel_set(a->plugins);
    // Sparse kernels (docs/sparse.md) when named: their properties are the
    // sparse_* ones. Quantised outputs claim the properties stated in their
    // result format's ULPs (docs/low-precision.md).
    const std::vector<const Kernel*> selected = kernel_set.select(a->impls, a->peers, !a->impls.empty(), a->gradients,
                                                                  a->attention, /*with_quantised=*/true);
    // Outside the default environment each kernel's calls run in it, and a
    // kernel that requires the default one is reported unavailable.
    std::deque<Kernel> in_env;
    std::vector<const Kernel*> kernels;
    for (const Kernel* k : kernels_of_shard(selected, shard))
      kernels.push_back(env == FpEnv::standard ? k : &in_env.emplace_back(in_fp_env(*k, env)));
    if (env != FpEnv::standard) fmt::print("kernels' calls in the {} environment (docs/fp-env.md)\n", name(env));
    if (!shard.whole()) {
      std::string names;
      for (const Kernel* k : kernels) names += (names.empty() ? "" : ", ") + k->name;
      fmt::print("shard {}/{}: {} of the {} kernels{}{}\n", shard.index, shard.count, kernels.size(), selected.size(),
                 kernels.empty() ? " (nothing to check in this shard)" : ": ", names);
    }
    for (const std::string& p : a->properties)
      if (!props::find_property(p)) throw std::invalid_argument("unknown property '" + p + "'");
    props::CheckOptions opt;
    opt.tests = a->tests;
    opt.seed = a->seed;
    opt.properties = a->properties;
    const unsigned jobs = a->jobs ? a->jobs : std::max(1u, std::thread::hardware_concurrency());
    const std::vector<std::vector<props::PropertyVerdict>> per_kernel = check_kernels(kernels, opt, jobs);
    std::vector<props::PropertyVerdict> all;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const Kernel& k = *kernels[i];
      if (!k.available) fmt::print("{}: unavailable ({}): not checked\n", k.name, k.unavailable_reason);
      all.insert(all.end(), per_kernel[i].begin(), per_kernel[i].end());
    }
    props::print_verdicts(std::cout, all);
    props::print_coverage(std::cout, all);
    if (a->kill_table) props::print_kill_table(std::cout, all);
    return props::all_held(all) ? exit_ok : exit_violation;
  };
}

Command add_repro(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "repro",
      "Replay one case printed by `check` or `run`: exit 0 the property holds, 1 it fails,\n"
      "3 the property is not claimed or does not apply to the case, 2 usage error.\n"
      "Write rows as --row=V1,V2,... (hex floats are exact; inf, -inf allowed); attention takes\n"
      "--head-dim=D --query=... --keys=... --values=... [--window=P,L,R] besides, the row being the score bias.");
  auto a = std::make_shared<ReproArgs>();
  sub->add_option("--impl", a->impl, "Kernel")->required();
  add_plugin_options(*sub, a->plugins);
  std::vector<std::string> op_names;
  for (const OpSpec& o : op_table) op_names.emplace_back(o.name);
  sub->add_option("--op", a->op, "The op (docs/ops.md): " + softcheck::op_names())
      ->check(CLI::IsMember(op_names))->capture_default_str();
  sub->add_option("--property", a->property, "Property name (see docs/properties.md)")->required();
  sub->add_option("--temperature", a->temperature, "Temperature (decimal or hex float)")->capture_default_str();
  sub->add_option("--row", a->row, "The row, comma-separated")->required();
  sub->add_option("--target", a->target,
                  "cross_entropy: the row's class target, in [0, n) or " + std::to_string(ignore_index) + " (ignored)");
  sub->add_option("--upstream", a->upstream,
                  "softmax_backward, log_softmax_backward: the upstream gradient g, comma-separated, one per row entry");
  sub->add_option("--head-dim", a->head_dim, "attention: the head dimension d (the row is the score bias)");
  sub->add_option("--query", a->query, "attention: q, d values, comma-separated");
  sub->add_option("--keys", a->keys, "attention: K, n x d values, key-major, comma-separated");
  sub->add_option("--values", a->values, "attention: V, n x d values, key-major, comma-separated");
  sub->add_option("--window", a->window,
                  "attention: the query's window position,left,right (keys position-left .. position+right "
                  "visible, -1 unbounded; causal: P,-1,0)");
  add_fp_env_option(*sub, a->fp_env);
  return [a] {
    const FpEnv env = fp_env_of(a->fp_env);
    const KernelSet kernel_set(a->plugins);
    const Kernel* found = kernel_set.find(a->impl);
    if (!found) found = find_sparse_kernel(a->impl);
    if (!found) throw std::invalid_argument("unknown kernel '" + a->impl + "' (see `softcheck list`)");
    const Kernel in_env = in_fp_env(*found, env);
    const Kernel* k = &in_env;
    if (!k->available) throw std::invalid_argument(k->name + " is unavailable: " + k->unavailable_reason);
    if (!props::find_property(a->property)) throw std::invalid_argument("unknown property '" + a->property + "'");
    const auto row = props::parse_row(a->row);
    if (!row.has_value()) throw std::invalid_argument("--row: " + row.error());
    const auto t = props::parse_value(a->temperature);
    if (!t.has_value()) throw std::invalid_argument("--temperature: " + t.error());
    props::Case c{*row, *t, a->target, {}};
    if (!a->upstream.empty()) {
      const auto g = props::parse_row(a->upstream);
      if (!g.has_value()) throw std::invalid_argument("--upstream: " + g.error());
      c.upstream = *g;
    }
    c.head_dim = a->head_dim;
    for (const auto& [option, text, into] : {std::tuple{"--query", &a->query, &c.query},
                                             std::tuple{"--keys", &a->keys, &c.keys},
                                             std::tuple{"--values", &a->values, &c.values}}) {
      if (text->empty()) continue;
      const auto v = props::parse_row(*text);
      if (!v.has_value()) throw std::invalid_argument(std::string(option) + ": " + v.error());
      *into = *v;
    }
    if (!a->window.empty()) {
      const auto w = props::parse_window(a->window);
      if (!w.has_value()) throw std::invalid_argument("--window: " + w.error());
      c.window = *w;
    }
    const Op op = *parse_op(a->op);
    const auto r = props::replay(*k, op, a->property, c);
    if (!r.has_value()) throw std::invalid_argument(r.error());
    props::print_replay(std::cout, *k, op, a->property, c, *r);
    if (!r->claim.claimed || r->result.status == props::CaseStatus::not_applicable) return 3;
    return r->result.status == props::CaseStatus::pass ? exit_ok : exit_violation;
  };
}

}  // namespace softcheck::cli
