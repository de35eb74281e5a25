// A persistent pool of worker threads for the row-parallel kernels
// (shifted_simd_mt_f32, online_simd_mt_f32): starting std::threads on every
// call cost tens of microseconds per thread, more than a 4096 x 128 batch's
// share of work.
#pragma once

#include <functional>

namespace softcheck::kernels {

// Calls body(b) once for every b in [0, blocks), on the calling thread and on
// the pool's threads (hardware_concurrency() - 1 of them, started at first
// use), and returns when every call has returned. Which thread runs which
// block is not fixed, so body(b) must not depend on it.
//  - One batch at a time: a caller that finds the pool busy (another thread's
//    batch) runs all its blocks itself; so does a caller on a machine with one
//    core.
//  - fork(): a child process does not inherit the parent's threads; the first
//    call in a child starts a pool of its own and never uses the parent's.
//    As with any threaded library, fork only while no other thread is inside
//    a kernel call (`check --jobs` forks before it runs any kernel).
//  - body must not throw (the kernels' row bodies do not).
void run_blocks(unsigned blocks, const std::function<void(unsigned)>& body);

}  // namespace softcheck::kernels
