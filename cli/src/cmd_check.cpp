// softcheck check / repro: the property suite (properties/) from the command
// line, so a plugin kernel gets the same guarantees checked as a built-in one.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.hpp"
#include "kernel_selection.hpp"
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
  bool kill_table = false;
  unsigned jobs = 0;
};

struct ReproArgs {
  std::string impl, op = "softmax", property, temperature = "1", row;
  PluginArgs plugins;
};


// ---- parallel check: one process per worker --------------------------------
// RapidCheck's implicit parameters are process-global (properties.hpp: "run
// checks one at a time, or in separate processes"), so `check --jobs N` forks
// N workers, each checking every N-th kernel, and gathers their verdicts over
// pipes in kernel order: the output is the same for any N. Doubles travel as
// their bit patterns (exact, NaN and inf included).
using Json = nlohmann::json;

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }
double from_bits(const Json& j) { return std::bit_cast<double>(j.get<std::uint64_t>()); }

Json case_result_json(const props::CaseResult& r) {
  return Json{{"status", static_cast<int>(r.status)}, {"measured", bits(r.measured)}, {"allowed", bits(r.allowed)},
              {"unit", r.unit}, {"message", r.message}};
}
props::CaseResult case_result_from(const Json& j) {
  props::CaseResult r;
  r.status = static_cast<props::CaseStatus>(j.at("status").get<int>());
  r.measured = from_bits(j.at("measured"));
  r.allowed = from_bits(j.at("allowed"));
  r.unit = j.at("unit").get<std::string>();
  r.message = j.at("message").get<std::string>();
  return r;
}

Json verdict_json(const props::PropertyVerdict& v) {
  Json j{{"kernel", v.kernel},
         {"op", static_cast<int>(v.op)},
         {"property", v.property},
         {"verdict", static_cast<int>(v.verdict)},
         {"claimed", v.claimed},
         {"reason", v.reason},
         {"tests_passed", v.tests_passed},
         {"discarded", v.discarded},
         {"closest_ratio", bits(v.closest_ratio)},
         {"closest", case_result_json(v.closest)},
         {"seed", v.seed},
         {"rc_seed", v.rc_seed},
         {"failure", case_result_json(v.failure)},
         {"shrink_steps", v.shrink_steps},
         {"shrink_truncated", v.shrink_truncated},
         {"repro", v.repro}};
  if (v.counterexample) {
    Json row = Json::array();
    for (double x : v.counterexample->row) row.push_back(bits(x));
    j["counterexample"] = Json{{"row", row}, {"temperature", bits(v.counterexample->temperature)}};
  }
  return j;
}

props::PropertyVerdict verdict_from(const Json& j) {
  props::PropertyVerdict v;
  v.kernel = j.at("kernel").get<std::string>();
  v.op = static_cast<Op>(j.at("op").get<int>());
  v.property = j.at("property").get<std::string>();
  v.verdict = static_cast<props::Verdict>(j.at("verdict").get<int>());
  v.claimed = j.at("claimed").get<bool>();
  v.reason = j.at("reason").get<std::string>();
  v.tests_passed = j.at("tests_passed").get<int>();
  v.discarded = j.at("discarded").get<int>();
  v.closest_ratio = from_bits(j.at("closest_ratio"));
  v.closest = case_result_from(j.at("closest"));
  v.seed = j.at("seed").get<std::uint64_t>();
  v.rc_seed = j.at("rc_seed").get<std::uint64_t>();
  v.failure = case_result_from(j.at("failure"));
  v.shrink_steps = j.at("shrink_steps").get<int>();
  v.shrink_truncated = j.at("shrink_truncated").get<bool>();
  v.repro = j.at("repro").get<std::string>();
  if (j.contains("counterexample")) {
    props::Case c;
    for (const Json& x : j["counterexample"].at("row")) c.row.push_back(from_bits(x));
    c.temperature = from_bits(j["counterexample"].at("temperature"));
    v.counterexample = c;
  }
  return v;
}

void write_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// Verdicts of every kernel, in kernel order, checked by `jobs` processes.
std::vector<std::vector<props::PropertyVerdict>> check_in_workers(const std::vector<const Kernel*>& kernels,
                                                                  const props::CheckOptions& opt, unsigned jobs) {
  std::vector<std::vector<props::PropertyVerdict>> out(kernels.size());
  std::vector<std::pair<pid_t, int>> workers;  // pid, read end
  std::cout.flush();
  std::cerr.flush();
  for (unsigned w = 0; w < jobs; ++w) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error(std::string("check: pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("check: fork: ") + std::strerror(errno));
    if (pid == 0) {  // worker: every jobs-th kernel from w
      ::close(fds[0]);
      Json doc = Json::array();
      try {
        for (std::size_t i = w; i < kernels.size(); i += jobs) {
          Json vs = Json::array();
          for (const props::PropertyVerdict& v : props::check_kernel(*kernels[i], opt)) vs.push_back(verdict_json(v));
          doc.push_back(Json{{"index", i}, {"verdicts", vs}});
        }
      } catch (const std::exception& e) {
        doc = Json{{"error", e.what()}};
      }
      write_all(fds[1], doc.dump());
      ::close(fds[1]);
      ::_exit(0);
    }
    ::close(fds[1]);
    workers.emplace_back(pid, fds[0]);
  }
  std::string failure;
  for (const auto& [pid, fd] : workers) {
    const std::string text = read_all(fd);
    ::close(fd);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty()) {
      failure = "a check worker died";
      continue;
    }
    const Json doc = Json::parse(text);
    if (doc.is_object()) {
      failure = doc.at("error").get<std::string>();
      continue;
    }
    for (const Json& k : doc) {
      auto& vs = out.at(k.at("index").get<std::size_t>());
      for (const Json& v : k.at("verdicts")) vs.push_back(verdict_from(v));
    }
  }
  if (!failure.empty()) throw std::runtime_error("check: " + failure);
  return out;
}

}  // namespace

Command add_check(CLI::App& app) {
  auto* sub = app.add_subcommand("check", "Check kernels against every property they claim (RapidCheck, with shrinking)");
  auto a = std::make_shared<CheckArgs>();
  sub->add_option("--impl", a->impls, "Kernel to check (repeatable; default: every built-in and plugin kernel)");
  sub->add_flag("--peers", a->peers, "With no --impl: also check the peer libraries' kernels");
  add_plugin_options(*sub, a->plugins);
  sub->add_option("--property", a->properties, "Only this property (repeatable; default: all)");
  sub->add_option("--tests", a->tests, "Test cases per property and op")->check(CLI::Range(1, 1000000))->capture_default_str();
  sub->add_option("--seed", a->seed, "Seed; the same seed checks the same cases")->capture_default_str();
  sub->add_flag("--kill-table", a->kill_table, "Also print the kernel x property table");
  sub->add_option("--jobs", a->jobs,
                  "Worker processes (default: all cores); the output is identical for any value");
  return [a] {
    const KernelSet kernel_set(a->plugins);
    // Sparse kernels (docs/sparse.md) when named: their properties are the sparse_* ones.
    const std::vector<const Kernel*> kernels = kernel_set.select(a->impls, a->peers, !a->impls.empty());
    for (const std::string& p : a->properties)
      if (!props::find_property(p)) throw std::invalid_argument("unknown property '" + p + "'");
    props::CheckOptions opt;
    opt.tests = a->tests;
    opt.seed = a->seed;
    opt.properties = a->properties;
    std::vector<const Kernel*> available;
    for (const Kernel* k : kernels)
      if (k->available) available.push_back(k);
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const unsigned jobs = static_cast<unsigned>(
        std::min<std::size_t>(a->jobs ? a->jobs : hw, std::max<std::size_t>(1, available.size())));
    std::vector<std::vector<props::PropertyVerdict>> per_kernel;
    if (jobs <= 1) {
      for (const Kernel* k : available) per_kernel.push_back(props::check_kernel(*k, opt));
    } else {
      per_kernel = check_in_workers(available, opt, jobs);
    }
    std::vector<props::PropertyVerdict> all;
    std::size_t next = 0;
    for (const Kernel* k : kernels) {
      if (!k->available) {
        fmt::print("{}: unavailable ({}): not checked\n", k->name, k->unavailable_reason);
        continue;
      }
      all.insert(all.end(), per_kernel[next].begin(), per_kernel[next].end());
      ++next;
    }
    props::print_verdicts(std::cout, all);
    if (a->kill_table) props::print_kill_table(std::cout, all);
    return props::all_held(all) ? exit_ok : exit_violation;
  };
}

Command add_repro(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "repro",
      "Replay one case printed by `check` or `run`: exit 0 the property holds, 1 it fails,\n"
      "3 the property is not claimed or does not apply to the case, 2 usage error.\n"
      "Write rows as --row=V1,V2,... (hex floats are exact; inf, -inf allowed).");
  auto a = std::make_shared<ReproArgs>();
  sub->add_option("--impl", a->impl, "Kernel")->required();
  add_plugin_options(*sub, a->plugins);
  std::vector<std::string> op_names;
  for (Op op : all_ops) op_names.emplace_back(name(op));
  sub->add_option("--op", a->op, "softmax, log_softmax or a sparse op (docs/sparse.md)")
      ->check(CLI::IsMember(op_names))->capture_default_str();
  sub->add_option("--property", a->property, "Property name (see docs/properties.md)")->required();
  sub->add_option("--temperature", a->temperature, "Temperature (decimal or hex float)")->capture_default_str();
  sub->add_option("--row", a->row, "The row, comma-separated")->required();
  return [a] {
    const KernelSet kernel_set(a->plugins);
    const Kernel* k = kernel_set.find(a->impl);
    if (!k) k = find_sparse_kernel(a->impl);
    if (!k) throw std::invalid_argument("unknown kernel '" + a->impl + "' (see `softcheck list`)");
    if (!k->available) throw std::invalid_argument(k->name + " is unavailable: " + k->unavailable_reason);
    if (!props::find_property(a->property)) throw std::invalid_argument("unknown property '" + a->property + "'");
    const auto row = props::parse_row(a->row);
    if (!row.has_value()) throw std::invalid_argument("--row: " + row.error());
    const auto t = props::parse_value(a->temperature);
    if (!t.has_value()) throw std::invalid_argument("--temperature: " + t.error());
    const props::Case c{*row, *t};
    const Op op = *parse_op(a->op);
    const auto r = props::replay(*k, op, a->property, c);
    if (!r.has_value()) throw std::invalid_argument(r.error());
    props::print_replay(std::cout, *k, op, a->property, c, *r);
    if (!r->claim.claimed || r->result.status == props::CaseStatus::not_applicable) return 3;
    return r->result.status == props::CaseStatus::pass ? exit_ok : exit_violation;
  };
}

}  // namespace softcheck::cli
