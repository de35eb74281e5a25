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

}  // namespace softcheck
