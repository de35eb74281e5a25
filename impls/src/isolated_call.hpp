// One call of a kernel in a forked child process (`--isolate`): the child
// reads x from its copy of the parent's memory and writes y into memory shared
// with the parent, so a crash in the kernel ends only the child.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace softcheck::plugin_detail {

// The kernel call: x in, y out; returns the run function's result.
using RawCall = std::function<int(const void* x, void* y)>;

// Runs `call` in a child process. y holds y_bytes bytes (its contents go in
// and come back); when x == y the call runs in place in the shared copy.
// Returns the call's result. Throws KernelFailure "<who>: crashed with signal
// N (SIGxxx)" or "<who>: the isolated process exited with status N before run
// returned"; std::system_error when the process or the memory cannot be made.
// A child still running after `timeout_s` seconds (0: no limit) is killed:
// KernelFailure "<who>: timed out after N s".
int call_isolated(const std::string& who, const RawCall& call, const void* x, void* y, std::size_t y_bytes,
                  double timeout_s);

// Seconds as the shortest text that reads back as the same double, whatever
// the C locale (a plugin may have set one): messages and --call-timeout in
// repro lines.
std::string seconds_text(double s);

}  // namespace softcheck::plugin_detail
