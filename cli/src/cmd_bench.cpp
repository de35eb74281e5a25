// softcheck bench: runs softcheck_bench (Google Benchmark, built beside this
// binary), writes DIR/bench.json and merges the throughput into DIR/report.json
// (and its .md/.html renderings) when a report is there.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/report.hpp"

extern char** environ;

namespace softcheck::cli {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

struct BenchArgs {
  std::vector<std::string> impls;
  std::string out = "reports/out";
  double min_time = 0.1;
  bool quiet = false;
};

fs::path bench_binary() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot locate the softcheck binary: " + ec.message());
  const fs::path bin = self.parent_path() / "softcheck_bench";
  if (!fs::exists(bin))
    throw std::runtime_error(bin.string() + " not found: it is built only when CMake finds Google Benchmark "
                                            "(Debian: libbenchmark-dev)");
  return bin;
}

// --benchmark_filter for the named kernels (and the copy reference), or all.
std::string filter_for(const std::vector<std::string>& impls) {
  if (impls.empty()) return ".";
  std::string alternatives = "copy";
  for (const std::string& n : impls) {
    const Kernel* k = find_kernel(n);
    if (!k) k = find_sparse_kernel(n);
    if (!k) throw std::invalid_argument("unknown kernel '" + n + "' (see `softcheck list --sparse`)");
    if (k->test_only) throw std::invalid_argument("'" + n + "' is a test-only kernel; bench runs built-in kernels");
    if (!k->available) throw std::invalid_argument("'" + n + "' is unavailable: " + k->unavailable_reason);
    alternatives += "|" + n;
  }
  return "^(" + alternatives + ")/";
}

// Runs the benchmark binary to completion; its console table goes to our stdout.
void run_binary(const fs::path& bin, const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  std::string program = bin.string();
  argv.push_back(program.data());
  std::vector<std::string> copies = args;
  for (std::string& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + program + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waitpid: " + std::string(std::strerror(errno)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(program + " failed (" +
                             (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                                : "signal " + std::to_string(WTERMSIG(status))) +
                             ")");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string p; std::getline(in, p, sep);) parts.push_back(p);
  return parts;
}

// KERNEL/OP/FORMAT/ROWSxCOLS (softmax_bench.cpp names them so).
BenchResult kernel_result(const std::vector<std::string>& parts, const Json& run) {
  const std::vector<std::string> shape = split(parts[3], 'x');
  if (shape.size() != 2) throw std::runtime_error("unexpected benchmark name " + run.at("name").get<std::string>());
  BenchResult b;
  b.kernel = parts[0];
  b.op = parts[1];
  b.format = parts[2];
  b.rows = std::stoll(shape[0]);
  b.cols = std::stoll(shape[1]);
  b.items_per_second = run.value("items_per_second", 0.0);
  b.bytes_per_second = run.value("bytes_per_second", 0.0);
  return b;
}

// Google Benchmark's JSON output to the report's performance model.
Performance parse_benchmark_json(const std::string& text, double min_time) {
  const Json doc = Json::parse(text);
  const Json& ctx = doc.at("context");
  Performance p;
  p.present = true;
  p.host = ctx.value("host_name", "");
  p.cpus = ctx.value("num_cpus", std::uint64_t{0});
  p.mhz_per_cpu = ctx.value("mhz_per_cpu", 0.0);
  p.library_build_type = ctx.value("library_build_type", "");
  p.min_time = min_time;
  std::map<std::int64_t, double> copy;  // bytes -> bytes/s
  for (const Json& run : doc.at("benchmarks")) {
    const std::string name = run.at("name").get<std::string>();
    if (run.value("error_occurred", false))
      throw std::runtime_error("benchmark " + name + " failed: " + run.value("error_message", ""));
    std::vector<std::string> parts = split(name, '/');
    if (!parts.empty() && parts.back() == "real_time") parts.pop_back();  // Google Benchmark's suffix
    if (parts.size() == 2 && parts[0] == "copy")
      copy[std::stoll(parts[1])] = run.value("bytes_per_second", 0.0);
    else if (parts.size() == 4)
      p.results.push_back(kernel_result(parts, run));
    else
      throw std::runtime_error("unexpected benchmark name " + name);
  }
  for (BenchResult& b : p.results) b.copy_bytes_per_second = copy.count(b.input_bytes()) ? copy[b.input_bytes()] : 0;
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Performance run_benchmarks(const BenchArgs& a, const fs::path& raw) {
  const fs::path bin = bench_binary();
  run_binary(bin,
             {"--benchmark_out=" + raw.string(), "--benchmark_out_format=json",
              fmt::format("--benchmark_min_time={}", a.min_time), "--benchmark_filter=" + filter_for(a.impls)},
             a.quiet);
  return parse_benchmark_json(slurp(raw), a.min_time);
}

void print_results(const Performance& p) {
  fmt::print("\n{:<22} {:<11} {:<5} {:>13} {:>9} {:>9} {:>8}\n", "kernel", "op", "fmt", "rows x cols", "GB/s",
             "copy GB/s", "of copy");
  for (const BenchResult& b : p.results)
    fmt::print("{:<22} {:<11} {:<5} {:>13} {:>9.2f} {:>9.2f} {:>7.0f}%\n", b.kernel, b.op, b.format,
               fmt::format("{}x{}", b.rows, b.cols), b.bytes_per_second / 1e9, b.copy_bytes_per_second / 1e9,
               100 * b.copy_fraction());
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto* sub = app.add_subcommand("bench", "Benchmark kernels (Google Benchmark) and merge throughput into the report");
  auto a = std::make_shared<BenchArgs>();
  sub->add_option("--impl", a->impls, "Kernel to benchmark (repeatable; default: every available built-in, sparse and peer kernel)");
  sub->add_option("--out", a->out, "Directory for bench.json; a report.json there gets the results merged in")
      ->capture_default_str();
  sub->add_option("--min-time", a->min_time, "Minimum seconds per benchmark")
      ->check(CLI::Range(0.001, 60.0))
      ->capture_default_str();
  sub->add_flag("--quiet", a->quiet, "No benchmark console output and no table");
  sub->footer("Exit status: 0 benchmarks ran and files were written, 2 error (nothing written). Timings are never "
              "asserted.");
  return [a] {
    filter_for(a->impls);  // validate names before anything runs
    const fs::path out = a->out;
    ensure_writable_dir(out);
    const fs::path report_path = out / "report.json";
    const bool merge = fs::exists(report_path);
    // report.json is read and rewritten on purpose (the merge); nothing else
    // written may be the benchmark binary or another of the outputs.
    std::vector<fs::path> outputs{out / "bench.json"};
    if (merge) outputs.insert(outputs.end(), {report_path, out / "report.md", out / "report.html"});
    check_outputs_against_inputs({bench_binary()}, outputs);
    Report report;
    if (merge) report = read_report(report_path);  // a malformed report fails before the long run
    const fs::path raw = out / fmt::format(".benchmark-raw.json.tmp.{}", ::getpid());
    const TemporaryInFlight raw_in_flight(raw);  // an interrupted bench leaves no raw file
    Performance perf;
    try {
      perf = run_benchmarks(*a, raw);
    } catch (...) {
      std::error_code ignored;
      fs::remove(raw, ignored);
      throw;
    }
    fs::remove(raw);
    std::vector<std::pair<fs::path, std::string>> files{{out / "bench.json", performance_to_json(perf)}};
    if (merge) {
      report.performance = perf;
      for (auto& f : report_files(report, out)) files.push_back(std::move(f));
    }
    write_files_atomically(files);
    if (!a->quiet) {
      print_results(perf);
      fmt::print("\nwrote {}{}\n", (out / "bench.json").string(),
                 merge ? " and merged the results into report.json, report.md and report.html" : "");
    }
    return exit_ok;
  };
}

}  // namespace softcheck::cli
