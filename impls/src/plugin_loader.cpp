// Loading plugins (softcheck/plugin.hpp, docs/plugin-abi.md): open the
// library, find the entry point, do the version handshake, validate every
// descriptor (all problems are collected, then reported together), and wrap
// the descriptors into Kernel objects.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <type_traits>

#include "isolated_call.hpp"
#include "process_state.hpp"
#include "softcheck/kernel_failure.hpp"
#include "softcheck/peers.hpp"
#include "softcheck/plugin.hpp"
#include "softcheck/softcheck_plugin.h"
#include "softcheck/storage.hpp"

namespace softcheck {

namespace {

// ------------------------------------------------------------ the library

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw PluginError("plugin '" + path + "': " + what);
}

void* open_library(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) fail(path, "no such file");
  if (!std::filesystem::is_regular_file(st)) fail(path, "not a regular file");
  // A name without '/' would be searched in the library path, not in the
  // current directory: always hand dlopen a path.
  const std::string arg = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = ::dlopen(arg.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) fail(path, std::string("not a loadable shared library (") + ::dlerror() + ")");
  return handle;
}

softcheck_plugin_kernels_fn find_entry_point(void* handle, const std::string& path) {
  ::dlerror();
  void* symbol = ::dlsym(handle, SOFTCHECK_PLUGIN_ENTRY_POINT);
  if (!symbol)
    fail(path, "does not export " SOFTCHECK_PLUGIN_ENTRY_POINT " (not a softcheck plugin? see docs/plugin-abi.md)");
  softcheck_plugin_kernels_fn entry;
  static_assert(sizeof entry == sizeof symbol);
  std::memcpy(&entry, &symbol, sizeof entry);  // object to function pointer, as POSIX allows
  return entry;
}

// The version-2 entry point, or nullptr when the plugin exports none.
softcheck_plugin_kernels_v2_fn find_entry_point_v2(void* handle) {
  ::dlerror();
  void* symbol = ::dlsym(handle, SOFTCHECK_PLUGIN_ENTRY_POINT_V2);
  if (!symbol) return nullptr;
  softcheck_plugin_kernels_v2_fn entry;
  static_assert(sizeof entry == sizeof symbol);
  std::memcpy(&entry, &symbol, sizeof entry);
  return entry;
}

// The descriptors, copied: a plugin built with the header before opt_outs has
// smaller ones (struct_size SOFTCHECK_KERNEL_V2_SIZE_WITHOUT_OPT_OUTS), so the
// array's stride is its first descriptor's struct_size when that is the older
// size; the fields it lacks are left zero (no opt-outs). Each descriptor's own
// struct_size is checked in decode.
std::vector<softcheck_kernel_v2> call_entry_point_v2(softcheck_plugin_kernels_v2_fn entry, const std::string& path) {
  const softcheck_kernel_v2* array = nullptr;
  int count = -1;
  const int rc = entry(SOFTCHECK_PLUGIN_ABI_VERSION_2, &array, &count);
  if (rc > 0)
    fail(path, SOFTCHECK_PLUGIN_ENTRY_POINT_V2 " speaks ABI version " + std::to_string(rc) +
                   ", softcheck version 2 there (rebuild it against this softcheck_plugin.h)");
  if (rc < 0) fail(path, SOFTCHECK_PLUGIN_ENTRY_POINT_V2 " failed with code " + std::to_string(rc));
  if (!array || count < 0) fail(path, SOFTCHECK_PLUGIN_ENTRY_POINT_V2 " returned no descriptor array");
  if (count == 0) fail(path, "declares no kernels");
  const std::size_t stride = array[0].struct_size == SOFTCHECK_KERNEL_V2_SIZE_WITHOUT_OPT_OUTS
                                 ? SOFTCHECK_KERNEL_V2_SIZE_WITHOUT_OPT_OUTS
                                 : sizeof(softcheck_kernel_v2);
  std::vector<softcheck_kernel_v2> out(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < out.size(); ++i)
    std::memcpy(static_cast<void*>(&out[i]), reinterpret_cast<const char*>(array) + i * stride, stride);
  return out;
}

std::span<const softcheck_kernel> call_entry_point(softcheck_plugin_kernels_fn entry, const std::string& path) {
  const softcheck_kernel* array = nullptr;
  int count = -1;
  const int rc = entry(SOFTCHECK_PLUGIN_ABI_VERSION, &array, &count);
  if (rc > 0)
    fail(path, "ABI version mismatch: softcheck speaks version " + std::to_string(SOFTCHECK_PLUGIN_ABI_VERSION) +
                   ", the plugin version " + std::to_string(rc) + " (rebuild it against this softcheck_plugin.h)");
  if (rc < 0) fail(path, SOFTCHECK_PLUGIN_ENTRY_POINT " failed with code " + std::to_string(rc));
  if (!array || count < 0) fail(path, SOFTCHECK_PLUGIN_ENTRY_POINT " returned no descriptor array");
  if (count == 0) fail(path, "declares no kernels");
  return {array, static_cast<std::size_t>(count)};
}

// ------------------------------------------------- descriptor validation

// A descriptor in softcheck's vocabulary. `op` is empty for an op this
// softcheck version cannot run (op_label names it).
struct Decoded {
  std::size_t index = 0;
  std::string name, description, op_label;
  std::optional<Op> op;
  Format format = Format::f32;
  MaskedRowPolicy policy = MaskedRowPolicy::nan;
  Contract contract;
  std::vector<OptOut> opt_outs;            // version 2 with the opt-out fields
  softcheck_run_fn run = nullptr;          // version 1
  softcheck_compute_fn compute = nullptr;  // version 2
  void* ctx = nullptr;
  bool serial = false;
};

// Problems found in one plugin, each "descriptor [i] 'name': what".
class Problems {
 public:
  void add(const char* name, std::size_t index, const std::string& what) {
    std::string where = "descriptor [" + std::to_string(index) + "]";
    if (name) where += " '" + std::string(name) + "'";
    list_.push_back(where + ": " + what);
  }
  bool empty() const { return list_.empty(); }
  [[noreturn]] void raise(const std::string& path) const {
    if (list_.size() == 1) fail(path, list_.front());
    std::string text = std::to_string(list_.size()) + " problems:";
    for (const std::string& p : list_) text += "\n  " + p;
    fail(path, text);
  }

 private:
  std::vector<std::string> list_;
};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string bad_enum(const char* field, std::int32_t value, int last) {
  return std::string("bad ") + field + " value " + std::to_string(value) + " (expected 1.." + std::to_string(last) + ")";
}

bool valid_name(const std::string& n) {
  return !n.empty() && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

// The op in softcheck's vocabulary (the op table's plugin codes); the sparse
// ops are valid in the ABI but not run from plugins yet (the caller lists
// such kernels as unavailable). Version 1 knows codes 1..4, version 2 1..6.
template <class Descriptor>
bool decode_op(const Descriptor& d, int last_code, Decoded& out, std::string& problem) {
  const std::optional<Op> op = d.op <= last_code ? op_of_plugin_code(d.op) : std::nullopt;
  if (!op) {
    problem = bad_enum("op", d.op, last_code);
    return false;
  }
  if (*op == Op::entmax && (!std::isfinite(d.entmax_alpha) || d.entmax_alpha <= 1)) {
    problem = "entmax_alpha must be finite and > 1 (got " + number(d.entmax_alpha) + ")";
    return false;
  }
  out.op_label = std::string(name(*op));
  if (spec(*op).param == OpParam::alpha) out.op_label += "(alpha=" + number(d.entmax_alpha) + ")";
  if (!is_sparse(*op)) out.op = *op;
  return true;
}

std::optional<Format> decode_format(std::int32_t f) {
  switch (f) {
    case SOFTCHECK_FORMAT_F64: return Format::f64;
    case SOFTCHECK_FORMAT_F32: return Format::f32;
    case SOFTCHECK_FORMAT_F16: return Format::f16;
    case SOFTCHECK_FORMAT_BF16: return Format::bf16;
    default: return std::nullopt;
  }
}

std::optional<MaskedRowPolicy> decode_policy(std::int32_t p) {
  switch (p) {
    case SOFTCHECK_MASKED_NAN: return MaskedRowPolicy::nan;
    case SOFTCHECK_MASKED_ZEROS: return MaskedRowPolicy::zeros;
    case SOFTCHECK_MASKED_UNIFORM: return MaskedRowPolicy::uniform;
    default: return std::nullopt;
  }
}

// Empty when valid, else the first problem.
std::string check_contract(const softcheck_contract& c) {
  if (c.declared != 0 && c.declared != 1)
    return "contract.declared is " + std::to_string(c.declared) + " (expected 0 or 1)";
  const std::pair<const char*, double> coefficients[] = {{"a", c.a}, {"b", c.b}, {"c", c.c}, {"d", c.d}, {"t", c.t}};
  for (const auto& [label, v] : coefficients)
    if (!std::isfinite(v) || v < 0)
      return std::string("contract coefficient ") + label + " is " + number(v) + " (must be finite and >= 0)";
  return {};
}

Contract decode_contract(const softcheck_contract& c) {
  Contract k;
  k.declared = c.declared == 1;
  k.a = c.a;
  k.b = c.b;
  k.c = c.c;
  k.d = c.d;
  k.t = c.t;
  k.why = c.why ? c.why : "";
  return k;
}

// A v2 descriptor's opt-outs into `out`, or what is wrong with them: a known
// floor check (kernel.hpp floor_checks) at most once, with a reason.
std::string decode_opt_outs(const softcheck_opt_out* list, std::int32_t count, std::vector<OptOut>& out) {
  if (count < 0 || count > 64) return "opt_out_count is " + std::to_string(count) + " (must be 0 to 64)";
  if (count > 0 && list == nullptr) return "opt_outs is NULL with opt_out_count " + std::to_string(count);
  for (std::int32_t i = 0; i < count; ++i) {
    const std::string at = "opt_outs[" + std::to_string(i) + "]";
    if (list[i].check == nullptr) return at + ".check is NULL";
    const std::string check = list[i].check;
    if (std::find(std::begin(floor_checks), std::end(floor_checks), check) == std::end(floor_checks)) {
      std::string known;
      for (std::string_view c : floor_checks) known += (known.empty() ? "" : ", ") + std::string(c);
      return at + ".check '" + check + "' is not a floor check (" + known + ")";
    }
    if (list[i].reason == nullptr || list[i].reason[0] == '\0')
      return at + " (" + check + "): the reason is empty (the report must say why)";
    if (std::any_of(out.begin(), out.end(), [&](const OptOut& o) { return o.check == check; }))
      return at + ": '" + check + "' opted out twice";
    out.push_back({check, list[i].reason});
  }
  return {};
}

// One descriptor on its own; problems go to `problems`.
// One descriptor, version 1 (softcheck_kernel: run) or 2 (softcheck_kernel_v2: compute).
template <class Descriptor>
std::optional<Decoded> decode(const Descriptor& d, std::size_t index, Problems& problems) {
  constexpr bool v2 = std::is_same_v<Descriptor, softcheck_kernel_v2>;
  bool ok = true;
  auto problem = [&](const std::string& what) {
    problems.add(d.name, index, what);
    ok = false;
  };
  if constexpr (v2) {
    // The header before opt_outs existed: the same fields up to flags.
    if (d.struct_size != sizeof(softcheck_kernel_v2) && d.struct_size != SOFTCHECK_KERNEL_V2_SIZE_WITHOUT_OPT_OUTS) {
      problem("struct_size is " + std::to_string(d.struct_size) + ", expected sizeof(softcheck_kernel_v2) = " +
              std::to_string(sizeof(softcheck_kernel_v2)) + " (or " +
              std::to_string(SOFTCHECK_KERNEL_V2_SIZE_WITHOUT_OPT_OUTS) + ", a header without opt_outs)");
      return std::nullopt;  // the other fields may lie elsewhere
    }
  }
  Decoded out;
  out.index = index;
  if (!d.name) {
    problem("name is NULL");
  } else {
    out.name = d.name;
    if (!valid_name(out.name)) problem("name must be non-empty and use only letters, digits, '_', '-' and '.'");
  }
  out.description = d.description ? d.description : "";
  std::string op_problem;
  if (!decode_op(d, v2 ? SOFTCHECK_OP_ENTROPY : SOFTCHECK_OP_ENTMAX, out, op_problem)) problem(op_problem);
  const std::optional<Format> format = decode_format(d.format);
  if (!format) problem(bad_enum("format", d.format, SOFTCHECK_FORMAT_BF16));
  const std::optional<MaskedRowPolicy> policy = decode_policy(d.masked_policy);
  if (!policy) problem(bad_enum("masked_policy", d.masked_policy, SOFTCHECK_MASKED_UNIFORM));
  if (const std::string c = check_contract(d.contract); !c.empty()) problem(c);
  if constexpr (v2) {
    if (!d.compute) problem("compute is NULL");
  } else {
    if (!d.run) problem("run is NULL");
  }
  if ((d.flags & ~SOFTCHECK_KERNEL_NOT_THREAD_SAFE) != 0) problem("unknown flags " + std::to_string(d.flags));
  if constexpr (v2) {
    if (d.struct_size == sizeof(softcheck_kernel_v2)) {
      if (const std::string o = decode_opt_outs(d.opt_outs, d.opt_out_count, out.opt_outs); !o.empty()) problem(o);
    }
  }
  if (!ok) return std::nullopt;
  out.format = *format;
  out.policy = *policy;
  out.contract = decode_contract(d.contract);
  if constexpr (v2)
    out.compute = d.compute;
  else
    out.run = d.run;
  out.ctx = d.ctx;
  out.serial = (d.flags & SOFTCHECK_KERNEL_NOT_THREAD_SAFE) != 0;
  return out;
}

// Who already uses `name`, or empty.
std::string owner_of(const std::string& name, const std::vector<const Kernel*>& taken) {
  auto in = [&](const std::vector<Kernel>& ks) {
    return std::any_of(ks.begin(), ks.end(), [&](const Kernel& k) { return k.name == name; });
  };
  if (in(builtin_kernels())) return "a built-in kernel";
  if (in(peer_kernels())) return "a peer kernel";
  if (in(mutant_kernels())) return "a test-only kernel";
  for (const Kernel* k : taken)
    if (k->name == name) return "a kernel of " + k->algorithm;
  return {};
}

// Checks across descriptors: names against the registry and `taken`, same
// name and op twice, one kernel's descriptors disagreeing on format or policy.
void check_together(const std::vector<Decoded>& ds, const std::vector<const Kernel*>& taken, Problems& problems) {
  const auto at = [](std::size_t index) { return "descriptor [" + std::to_string(index) + "]"; };
  for (auto d = ds.begin(); d != ds.end(); ++d) {
    const auto add = [&](const std::string& what) { problems.add(d->name.c_str(), d->index, what); };
    const auto same_name = [&](const Decoded& e) { return e.name == d->name; };
    const auto first = std::find_if(ds.begin(), d, same_name);
    if (first == d) {  // the first descriptor of this kernel
      if (const std::string owner = owner_of(d->name, taken); !owner.empty())
        add("name already used by " + owner + " (prefix your kernels' names, e.g. 'acme_')");
      continue;
    }
    const auto twin =
        std::find_if(first, d, [&](const Decoded& e) { return same_name(e) && e.op_label == d->op_label; });
    if (twin != d)
      add("duplicate of " + at(twin->index) + " (same name and op)");
    else if (first->format != d->format || first->policy != d->policy)
      add("format or masked_policy differs from " + at(first->index) +
          " (descriptors sharing a name are one kernel)");
  }
}

// ------------------------------------------------------------ the Kernel

// One op of a plugin kernel, ready to call.
struct PluginCall {
  Op op;
  softcheck_run_fn run;          // version 1
  softcheck_compute_fn compute;  // version 2
  void* ctx;
  std::shared_ptr<std::mutex> serial;  // set for SOFTCHECK_KERNEL_NOT_THREAD_SAFE
};

// In-process calls cannot be abandoned, so a call past its time limit ends
// softcheck: one thread, started with the first timed call, looks at the
// calls in flight every 100 ms and, when one is past its deadline, names the
// kernel and exits with the harness-error status. The supervising parent
// (cli/src/supervisor.hpp) turns that into "no verdict".
class CallWatchdog {
 public:
  static CallWatchdog& instance() {
    static CallWatchdog* w = new CallWatchdog;  // never destroyed: its thread runs until exit
    return *w;
  }
  // One call in flight while it lives; a limit of 0 watches nothing.
  class Watch {
   public:
    Watch(const std::string& who, double timeout_s)
        : id_(timeout_s > 0 ? std::optional(instance().begin(who, timeout_s)) : std::nullopt) {}
    ~Watch() {
      if (id_) instance().end(*id_);
    }
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    std::optional<std::uint64_t> id_;
  };

 private:
  std::uint64_t begin(const std::string& who, double timeout_s) {
    std::lock_guard lock(mutex_);
    if (!started_) {
      std::thread([this] { watch(); }).detach();
      started_ = true;
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(timeout_s));
    calls_.emplace(next_, Call{deadline, who, timeout_s});
    return next_++;
  }
  void end(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    calls_.erase(id);
  }

  struct Call {
    std::chrono::steady_clock::time_point deadline;
    std::string who;
    double timeout_s;
  };
  void watch() {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::lock_guard lock(mutex_);
      const auto now = std::chrono::steady_clock::now();
      for (const auto& [id, c] : calls_)
        if (now > c.deadline) {
          const std::string text = "softcheck: error: " + c.who + " is still running after " + number(c.timeout_s) +
                                   " s (--call-timeout) and cannot be stopped in-process: no verdict "
                                   "(rerun with --isolate to report it as a failed kernel and go on)\n";
          (void)!::write(STDERR_FILENO, text.data(), text.size());
          ::_exit(2);
        }
    }
  }
  std::mutex mutex_;
  bool started_ = false;
  std::uint64_t next_ = 0;
  std::map<std::uint64_t, Call> calls_;
};

// The kernel call in this process, timed by the watchdog, with the process
// state (plugin_detail::ProcessState) taken before and restored after: a
// kernel that changed it fails.
int call_in_process(const plugin_detail::RawCall& raw, const std::string& who, const void* x, void* y,
                    double timeout_s) {
  plugin_detail::ProcessState state;
  int rc = 0;
  try {
    const CallWatchdog::Watch watch(who, timeout_s);
    rc = raw(x, y);
  } catch (...) {
    (void)state.restore();
    throw;
  }
  if (const std::string changed = state.restore(); !changed.empty())
    throw KernelFailure(who + ": left process-wide state changed: " + changed + " (restored)");
  return rc;
}

void call_plugin(const PluginCall& c, const std::string& kernel, Format f, const PluginOptions& options,
                 const void* x, void* y, std::int64_t rows, std::int64_t cols, double temperature) {
  std::unique_lock<std::mutex> lock;
  if (c.serial) lock = std::unique_lock(*c.serial);
  const std::string who = "plugin kernel '" + kernel + "' (" + std::string(name(c.op)) + ")";
  // Every op so far has one input and one output: the call's x and y.
  const plugin_detail::RawCall raw = [&](const void* xi, void* yi) {
    if (!c.compute) return c.run(xi, yi, rows, cols, temperature, c.ctx);
    const void* const in[] = {xi};
    void* const out[] = {yi};
    const softcheck_call call{spec(c.op).plugin_code, 1, 1, in, out, rows, cols, temperature};
    return c.compute(&call, c.ctx);
  };
  const std::size_t bytes = static_cast<std::size_t>(rows * output_cols(c.op, cols)) * element_size(f);
  const int rc = options.isolate ? plugin_detail::call_isolated(who, raw, x, y, bytes, options.call_timeout_s)
                                 : call_in_process(raw, who, x, y, options.call_timeout_s);
  if (rc != 0) throw KernelFailure(who + ": run returned " + std::to_string(rc));
}

// Ops this softcheck cannot run, e.g. "sparsemax, entmax(alpha=1.5)".
std::string unsupported_ops(const std::vector<const Decoded*>& group) {
  std::string s;
  for (const Decoded* d : group)
    if (!d->op) s += (s.empty() ? "" : ", ") + d->op_label;
  return s;
}

Kernel make_plugin_kernel(const std::vector<const Decoded*>& group, const std::string& label,
                          const PluginOptions& options) {
  const Decoded& first = *group.front();
  Kernel k;
  k.name = first.name;
  k.algorithm = label;
  k.format = first.format;
  k.masked_policy = first.policy;
  for (const Decoded* d : group)
    if (k.description.empty()) k.description = d->description;
  std::vector<PluginCall> calls;
  for (const Decoded* d : group) {
    if (!d->op) continue;
    k.ops.push_back({*d->op, d->contract, {}, {}, d->opt_outs});
    calls.push_back({*d->op, d->run, d->compute, d->ctx, d->serial ? std::make_shared<std::mutex>() : nullptr});
  }
  const std::string unsupported = unsupported_ops(group);
  if (k.ops.empty()) {
    k.available = false;
    k.unavailable_reason = "op " + unsupported + " not supported by this softcheck version";
  } else if (!unsupported.empty()) {
    k.description += " (also declares " + unsupported + ": not supported by this softcheck version)";
  }
  k.compute = single_operand([calls, kname = k.name, f = k.format, options](Op op, const void* x, void* y, std::int64_t rows,
                                                        std::int64_t cols, double temperature) {
    const auto c = std::find_if(calls.begin(), calls.end(), [&](const PluginCall& pc) { return pc.op == op; });
    if (c == calls.end()) throw std::invalid_argument(kname + " does not provide " + std::string(name(op)));
    call_plugin(*c, kname, f, options, x, y, rows, cols, temperature);
  });
  return k;
}

// `text` as one shell word: as is when it holds only safe characters, else
// in single quotes (a quote inside as '\'').
std::string shell_word(const std::string& text) {
  const bool safe = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_./-+=:,@%").find(c) != std::string_view::npos;
  });
  if (safe) return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Descriptors grouped by name, in order of first appearance, into Kernels.
std::vector<Kernel> make_kernels(const std::vector<Decoded>& ds, const std::string& label,
                                 const PluginOptions& options) {
  std::vector<std::string> names;
  for (const Decoded& d : ds)
    if (std::find(names.begin(), names.end(), d.name) == names.end()) names.push_back(d.name);
  std::vector<Kernel> out;
  for (const std::string& n : names) {
    std::vector<const Decoded*> group;
    for (const Decoded& d : ds)
      if (d.name == n) group.push_back(&d);
    out.push_back(make_plugin_kernel(group, label, options));
  }
  return out;
}

}  // namespace

Plugin load_plugin(const std::string& path, const PluginOptions& options, const std::vector<const Kernel*>& taken) {
  if (!(options.call_timeout_s >= 0) || !std::isfinite(options.call_timeout_s))
    throw PluginError("call time limit must be finite and >= 0 (0: no limit)");
  // A library's constructors and entry point run here: what they change in
  // the process (a -ffast-math build's crtfastmath turns FTZ/DAZ on, a
  // setlocale, a chdir) is put back before softcheck computes anything.
  plugin_detail::ProcessState state;
  void* handle = open_library(path);  // never closed: descriptors and ctx live as long as the process
  Problems problems;
  std::vector<Decoded> decoded;
  const auto decode_all = [&](const auto& raw) {
    for (std::size_t i = 0; i < raw.size(); ++i)
      if (auto d = decode(raw[i], i, problems)) decoded.push_back(std::move(*d));
  };
  if (const softcheck_plugin_kernels_v2_fn v2 = find_entry_point_v2(handle))
    decode_all(call_entry_point_v2(v2, path));
  else
    decode_all(call_entry_point(find_entry_point(handle, path), path));
  if (const std::string changed = state.restore(); !changed.empty())
    std::fprintf(stderr, "softcheck: warning: plugin '%s' changed process-wide state while loading: %s "
                         "(restored: its kernels run in softcheck's environment)\n",
                 path.c_str(), changed.c_str());
  check_together(decoded, taken, problems);
  if (!problems.empty()) problems.raise(path);
  const std::string label = "plugin:" + std::filesystem::path(path).filename().string();
  std::vector<Kernel> kernels = make_kernels(decoded, label, options);
  // Repro lines replay a plugin kernel with the options that loaded it.
  const std::string loaded = "--plugin " + shell_word(std::filesystem::absolute(path).lexically_normal().string()) +
                             (options.isolate ? " --isolate" : "") +
                             (options.call_timeout_s != PluginOptions{}.call_timeout_s
                                  ? " --call-timeout " + plugin_detail::seconds_text(options.call_timeout_s)
                                  : std::string());
  for (Kernel& k : kernels) k.load_options = loaded;
  return {path, std::move(kernels)};
}

std::vector<Plugin> load_plugins(const std::vector<std::string>& paths, const PluginOptions& options) {
  std::vector<Plugin> plugins;
  plugins.reserve(paths.size());
  for (const std::string& p : paths) {
    std::vector<const Kernel*> taken;
    for (const Plugin& earlier : plugins)
      for (const Kernel& k : earlier.kernels) taken.push_back(&k);
    plugins.push_back(load_plugin(p, options, taken));
  }
  return plugins;
}

}  // namespace softcheck
