#include "plugin_kernels.hpp"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <iterator>
#include <utility>

#include "softcheck/child_process.hpp"
#include "softcheck/kernel_failure.hpp"
#include "softcheck/plugin.hpp"
#include "softcheck/properties.hpp"
#include "softcheck/storage.hpp"

namespace softcheck::fuzz {

namespace {

// The plugins this process loaded, never removed: the loader never unloads a
// library, and the pool and reports point to these kernels.
struct LoadedPlugin {
  std::string path;  // absolute
  std::vector<Kernel> kernels;
};

std::deque<LoadedPlugin>& loaded_plugins() {
  static std::deque<LoadedPlugin> plugins;
  return plugins;
}

// ------------------------------------------------------------ the report

// The report's first line, formed when the kernel is loaded so that a crash
// handler can print it without allocating.
std::string failure_header(const Kernel& k, const std::string& path) {
  return "==softcheck-fuzz== PLUGIN KERNEL FAILED: " + k.name + " of " + path + "\n";
}

// A property whose check runs the kernel on the row alone before anything
// else, whatever the row holds, so that its repro line replays a failure of
// the kernel on that row; "" when no property takes the row (the suite's
// scopes: a temperature the format holds; lse and entropy have no property
// for rows with +inf or NaN).
std::string_view replay_property(const Kernel& k, Op op, std::span<const double> row, double temperature) {
  if (!temperature_fits_format(temperature, k.format) || spec(op).several_inputs() || is_sparse(op)) return {};
  if (!spec(op).scalar_output()) return "batch_independence";
  bool masked_only = true, plus_inf_or_nan = false;
  for (double v : row) {
    masked_only = masked_only && v == -INFINITY;
    plus_inf_or_nan = plus_inf_or_nan || std::isnan(v) || v == INFINITY;
  }
  if (masked_only) return "scalar_fully_masked";
  return plus_inf_or_nan ? std::string_view() : std::string_view("scalar_permutation");
}

// The options that load k's plugin in a repro line; with --isolate when the
// kernel crashed in process (the replay then reports the crash as the
// kernel's failure instead of ending softcheck).
std::string replay_load_options(const Kernel& k, bool crashed) {
  const bool isolated = k.load_options.find("--isolate") != std::string::npos;
  return k.load_options + (crashed && !isolated ? " --isolate" : "");
}

// Everything after the header line.
std::string failure_body(const Kernel& k, Op op, std::string_view failure, std::span<const double> x,
                         std::int64_t rows, std::int64_t cols, double temperature, bool crashed) {
  const std::string* path = fuzz_plugin_path(k);
  std::string s = "  kernel:      " + k.name + " (" + std::string(name(k.format)) + ", masked-row policy " +
                  std::string(name(k.masked_policy)) + ")\n";
  s += "  plugin:      " + (path != nullptr ? *path : std::string("?")) + "\n";
  s += "  op:          " + std::string(name(op)) + "\n";
  s += "  failure:     " + std::string(failure) + "\n";
  s += "  call:        " + std::to_string(rows) + " x " + std::to_string(cols) + ", temperature " +
       props::format_value(temperature) + "\n";
  const std::string options = replay_load_options(k, crashed);
  if (x.size() != static_cast<std::size_t>(rows * cols)) return s;  // an op without the logits first
  // Every row of the call: which one the kernel failed on is not known.
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::span<const double> row = x.subspan(static_cast<std::size_t>(r * cols), static_cast<std::size_t>(cols));
    s += "  row " + std::to_string(r) + " (n=" + std::to_string(cols) + "): " + props::format_row(row) + "\n";
    const std::string_view property = replay_property(k, op, row, temperature);
    if (property.empty())
      s += "  repro: none (no property takes this row; replay the input with the fuzz target)\n";
    else
      s += "  repro: " + props::repro_command(k.name, op, property, {{row.begin(), row.end()}, temperature}, options) +
           "\n";
  }
  return s;
}

// ------------------------------------------------- the call in flight

// The plugin call running now (none between calls): what the crash and exit
// handlers report. One at a time: the fuzz targets are single-threaded.
struct CallInFlight {
  const Kernel* kernel;
  const std::string* header;
  const OpCall* call;
};
std::atomic<const CallInFlight*> in_flight{nullptr};

// The logits of the call (its first input), as doubles.
std::vector<double> call_logits(const CallInFlight& f) {
  const OpCall& c = *f.call;
  if (c.in.empty() || spec(c.op).in[0].input != InputKind::logits) return {};
  const Format format = f.kernel->format;
  const auto* base = static_cast<const unsigned char*>(c.in[0]);
  std::vector<double> x(static_cast<std::size_t>(c.rows * c.cols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = load_element(base + i * element_size(format), format);
  return x;
}

void write_stderr(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
    if (n <= 0) return;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

// The rest of the report of the call in flight.
void write_in_flight_body(const CallInFlight& f, std::string_view failure, bool crashed) {
  const OpCall& c = *f.call;
  write_stderr(failure_body(*f.kernel, c.op, failure, call_logits(f), c.rows, c.cols, c.temperature, crashed));
}

constexpr int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction previous_actions[std::size(crash_signals)];

// What was there before on_crash_signal: libFuzzer's and the sanitizers'
// handlers (they save the input and print the stack), or the default action.
void pass_on(int sig, siginfo_t* info, void* context) {
  for (std::size_t i = 0; i < std::size(crash_signals); ++i) {
    if (crash_signals[i] != sig) continue;
    const struct sigaction& p = previous_actions[i];
    if ((p.sa_flags & SA_SIGINFO) != 0 && p.sa_sigaction != nullptr) return p.sa_sigaction(sig, info, context);
    if ((p.sa_flags & SA_SIGINFO) == 0 && p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN) return p.sa_handler(sig);
  }
  // The default action; an ignored crash signal would return into the fault.
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// A crash signal during a plugin call: the report, then the handlers that
// were there before. The header needs no allocation; the rest does, which a
// signal handler should avoid: the process is ending anyway (libFuzzer's and
// ASan's handlers allocate too), and SA_NODEFER lets a fault in here go on to
// the previous handlers, which then save the input as always.
void on_crash_signal(int sig, siginfo_t* info, void* context) {
  if (const CallInFlight* f = in_flight.exchange(nullptr)) {
    write_stderr(*f->header);
    write_in_flight_body(*f, "crashed with signal " + std::to_string(sig) + " (" + signal_name(sig) +
                                 ") in this process, during this call",
                         true);
  }
  pass_on(sig, info, context);
}

// exit() inside a plugin call: the report. Registered after libFuzzer's exit
// handler, so it runs before it ("fuzz target exited", which saves the input)
// and before the replay driver's, which fails the replay.
void on_exit_during_call() {
  if (const CallInFlight* f = in_flight.exchange(nullptr)) {
    write_stderr(*f->header);
    write_in_flight_body(*f, "called exit() during this call", true);
  }
}

// Installed at the first in-process plugin call, not at load time: by then
// libFuzzer has installed its handlers (after LLVMFuzzerInitialize), and
// these go in front of them.
void install_crash_handlers() {
  static const bool installed = [] {
    for (std::size_t i = 0; i < std::size(crash_signals); ++i) {
      struct sigaction a {};
      a.sa_sigaction = on_crash_signal;
      sigemptyset(&a.sa_mask);
      a.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;  // ONSTACK: ASan's alternate stack for stack overflows
      ::sigaction(crash_signals[i], &a, &previous_actions[i]);
    }
    std::atexit(on_exit_during_call);
    return true;
  }();
  (void)installed;
}

[[noreturn]] void report_failure_and_abort(const Kernel& k, const std::string& header, const OpCall& c,
                                           std::string_view failure) {
  const CallInFlight f{&k, &header, &c};
  write_stderr(header);
  write_in_flight_body(f, failure, false);
  std::abort();
}

// k's compute, marking the call in flight, reporting a KernelFailure (a
// non-zero return, an isolated crash, changed process state) and aborting
// (the fuzzer saves the input), wherever the call came from: the target's
// batch or the property suite confirming a row.
ComputeFn in_flight_marked(ComputeFn inner, const Kernel* self, std::string header, bool isolate) {
  return [inner = std::move(inner), self, header = std::move(header), isolate](const OpCall& c) {
    // The ABI promises a plugin kernel a finite temperature > 0
    // (docs/plugin-abi.md), the decoder gives any: no call outside it. No
    // check takes such a temperature (temperature_fits_format): the rows
    // would only be run, for the sanitizers.
    if (!std::isfinite(c.temperature) || !(c.temperature > 0)) return;
    if (!isolate) install_crash_handlers();
    const CallInFlight record{self, &header, &c};
    in_flight.store(&record);
    try {
      inner(c);
    } catch (const KernelFailure& e) {
      in_flight.store(nullptr);
      report_failure_and_abort(*self, header, c, e.what());
    } catch (...) {
      in_flight.store(nullptr);
      throw;
    }
    in_flight.store(nullptr);
  };
}

}  // namespace

std::vector<std::string_view> split_nonempty(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const std::size_t at = s.find(sep);
    const std::string_view item = s.substr(0, at);
    if (!item.empty()) out.push_back(item);
    if (at == std::string_view::npos) break;
    s.remove_prefix(at + 1);
  }
  return out;
}

std::vector<std::string> split_plugin_paths(std::string_view value) {
  const std::vector<std::string_view> items = split_nonempty(value, ':');
  return {items.begin(), items.end()};
}

std::vector<FuzzPlugin> load_fuzz_plugins(const std::vector<std::string>& paths, bool isolate) {
  std::vector<Plugin> plugins = load_plugins(paths, {.isolate = isolate});
  std::vector<FuzzPlugin> out;
  for (Plugin& p : plugins) {
    LoadedPlugin& kept = loaded_plugins().emplace_back();
    kept.path = std::filesystem::absolute(p.path).lexically_normal().string();
    kept.kernels = std::move(p.kernels);  // not resized again: the wrappers point to their kernel
    FuzzPlugin& listed = out.emplace_back();
    listed.path = kept.path;
    for (Kernel& k : kept.kernels) {
      k.compute = in_flight_marked(std::move(k.compute), &k, failure_header(k, kept.path), isolate);
      listed.kernels.push_back(&k);
    }
  }
  return out;
}

const std::string* fuzz_plugin_path(const Kernel& k) {
  for (const LoadedPlugin& p : loaded_plugins())
    for (const Kernel& mine : p.kernels)
      if (&mine == &k) return &p.path;
  return nullptr;
}

std::string plugin_failure_text(const Kernel& k, Op op, std::string_view failure, std::span<const double> x,
                                std::int64_t rows, std::int64_t cols, double temperature, bool crashed) {
  const std::string* path = fuzz_plugin_path(k);
  return failure_header(k, path != nullptr ? *path : std::string("?")) +
         failure_body(k, op, failure, x, rows, cols, temperature, crashed);
}

}  // namespace softcheck::fuzz
