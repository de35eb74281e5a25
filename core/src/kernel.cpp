#include <algorithm>
#include <stdexcept>
#include <string>

#include "softcheck/kernel.hpp"

namespace softcheck {

const OpDecl* Kernel::find(Op op) const {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const OpDecl& d) { return d.op == op; });
  return it == ops.end() ? nullptr : &*it;
}

void Kernel::run(Op op, const void* x, void* out, std::int64_t rows, std::int64_t cols, double temperature) const {
  void* const outs[] = {out};
  run(op, x, outs, rows, cols, temperature);
}

void Kernel::run(Op op, const void* x, std::span<void* const> outs, std::int64_t rows, std::int64_t cols,
                 double temperature) const {
  if (spec(op).in.size() != 1 || outs.size() != spec(op).out.size())
    throw std::invalid_argument(std::string(softcheck::name(op)) + " takes " + std::to_string(spec(op).in.size()) +
                                " input(s) and " + std::to_string(spec(op).out.size()) + " output(s)");
  const void* const in[] = {x};
  compute({op, in, outs, rows, cols, temperature});
}

void Kernel::call(const OpCall& c) const {
  if (c.in.size() != spec(c.op).in.size() || c.out.size() != spec(c.op).out.size())
    throw std::invalid_argument(std::string(softcheck::name(c.op)) + " takes " + std::to_string(spec(c.op).in.size()) +
                                " input(s) and " + std::to_string(spec(c.op).out.size()) + " output(s)");
  if (has_head_dim(c.op) != (c.head_dim > 0) || c.head_dim < 0)
    throw std::invalid_argument(std::string(softcheck::name(c.op)) +
                                (has_head_dim(c.op) ? " needs a head dimension >= 1" : " takes no head dimension"));
  compute(c);
}

std::string not_run_in_fp_env(const Kernel& k, FpEnv e) {
  if (e == FpEnv::standard || k.requires_default_fp_env.empty()) return {};
  return "not run in the " + std::string(name(e)) + " environment: it requires the default one (" +
         k.requires_default_fp_env + ")";
}

std::string quantised_refusal(const Kernel& k, std::string_view command) {
  if (k.mx_inputs)
    return "'" + k.name + "' reads its rows as " + mx_format_name(*k.mx_inputs) +
           " blocks (docs/low-precision.md): " + std::string(command) + " gives it rows of " +
           std::string(name(k.format)) + " values; `softcheck run` gives it MX rows";
  if (!k.quantised_outputs) return {};
  const std::string to(name(k.output_format()));
  return "'" + k.name + "' quantises its outputs to " + to + " (docs/low-precision.md): " + std::string(command) +
         " measures in the storage format; `softcheck run` and `softcheck check` judge them in " + to + " ULPs";
}

Kernel in_fp_env(const Kernel& k, FpEnv e) {
  Kernel in_e = k;
  if (e == FpEnv::standard) return in_e;
  in_e.load_options = (k.load_options.empty() ? "" : k.load_options + " ") + "--fp-env " + std::string(name(e));
  if (const std::string why = not_run_in_fp_env(k, e); !why.empty() && k.available) {
    in_e.available = false;
    in_e.unavailable_reason = why;
    return in_e;
  }
  in_e.compute = [inner = k.compute, e](const OpCall& c) {
    const FpEnvScope env(e);
    inner(c);
  };
  return in_e;
}

}  // namespace softcheck

