#include "parallel_check.hpp"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "softcheck/child_process.hpp"

namespace softcheck::cli {

namespace {

// Verdicts travel from a worker as JSON; doubles as their bit patterns
// (exact, NaN and inf included).
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
  if (v.coverage) j["coverage"] = Json{{"cases", v.coverage->cases}, {"counts", v.coverage->counts}};
  if (v.counterexample) {
    Json row = Json::array();
    for (double x : v.counterexample->row) row.push_back(bits(x));
    j["counterexample"] = Json{{"row", row}, {"temperature", bits(v.counterexample->temperature)}};
    if (v.counterexample->target) j["counterexample"]["target"] = *v.counterexample->target;
    if (!v.counterexample->upstream.empty()) {
      Json g = Json::array();
      for (double x : v.counterexample->upstream) g.push_back(bits(x));
      j["counterexample"]["upstream"] = g;
    }
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
  if (j.contains("coverage")) {
    props::Coverage c;
    c.cases = j["coverage"].at("cases").get<int>();
    c.counts = j["coverage"].at("counts").get<decltype(c.counts)>();
    v.coverage = c;
  }
  if (j.contains("counterexample")) {
    props::Case c;
    for (const Json& x : j["counterexample"].at("row")) c.row.push_back(from_bits(x));
    c.temperature = from_bits(j["counterexample"].at("temperature"));
    if (j["counterexample"].contains("target")) c.target = j["counterexample"]["target"].get<std::int64_t>();
    if (j["counterexample"].contains("upstream"))
      for (const Json& x : j["counterexample"]["upstream"]) c.upstream.push_back(from_bits(x));
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
  // The next kernel to check, shared by the workers: each takes one when it
  // is free. (Every jobs-th kernel fixed per worker left one of two workers
  // idle for a third of the quick suite's checks.) Which worker checks a
  // kernel does not change its verdicts; they are put back in kernel order.
  static_assert(std::atomic<std::size_t>::is_always_lock_free);
  void* shared = ::mmap(nullptr, sizeof(std::atomic<std::size_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                        -1, 0);
  if (shared == MAP_FAILED) throw std::runtime_error(std::string("property checks: mmap: ") + std::strerror(errno));
  const std::unique_ptr<void, void (*)(void*)> unmap(shared, [](void* p) { ::munmap(p, sizeof(std::atomic<std::size_t>)); });
  auto* next = new (shared) std::atomic<std::size_t>(0);
  std::cout.flush();
  std::cerr.flush();
  for (unsigned w = 0; w < jobs; ++w) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error(std::string("property checks: pipe: ") + std::strerror(errno));
    const pid_t pid = fork_child();
    if (pid < 0) throw std::runtime_error(std::string("property checks: fork: ") + std::strerror(errno));
    if (pid == 0) {  // worker: the next kernel nobody has taken, until none is left
      ::close(fds[0]);
      Json doc = Json::array();
      try {
        for (std::size_t i; (i = next->fetch_add(1)) < kernels.size();) {
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
      failure = "a worker process died";
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
  if (!failure.empty()) throw std::runtime_error("property checks: " + failure);
  return out;
}

}  // namespace

std::vector<std::vector<props::PropertyVerdict>> check_kernels(const std::vector<const Kernel*>& kernels,
                                                               const props::CheckOptions& opt, unsigned jobs) {
  std::vector<const Kernel*> available;
  for (const Kernel* k : kernels)
    if (k->available) available.push_back(k);
  std::vector<std::vector<props::PropertyVerdict>> checked;
  if (jobs > 1 && available.size() > 1) {
    checked = check_in_workers(available, opt, static_cast<unsigned>(std::min<std::size_t>(jobs, available.size())));
  } else {
    for (const Kernel* k : available) checked.push_back(props::check_kernel(*k, opt));
  }
  std::vector<std::vector<props::PropertyVerdict>> out(kernels.size());
  for (std::size_t i = 0, next = 0; i < kernels.size(); ++i)
    if (kernels[i]->available) out[i] = std::move(checked[next++]);
  return out;
}

}  // namespace softcheck::cli
