// The row-parallel kernels' threads (shifted_simd_mt_f32, online_simd_mt_f32):
// OpenMP's, as oneDNN's are. libgomp's threads spin for a while after a
// parallel region before they sleep, so a batch that follows finds them
// awake; on the 2-vCPU VMs of docs/measurements.md ("The _mt kernels'
// threads: OpenMP against a hand-written pool") a thread woken from sleep
// arrives too late to share a batch, and a hand-written pool that slept
// after 50 µs ran the batched shapes at 0.56-0.96x oneDNN where OpenMP
// runs them at 1.23-2.0x. Sharing oneDNN's runtime also means the two never
// compete for the cores with two sets of threads.
#pragma once

#include <functional>

namespace softcheck::kernels {

// Calls body(b) once for every b in [0, blocks), on the calling thread and on
// OpenMP's threads (up to `blocks` threads in all), and returns when every
// call has returned. Which thread runs which block is not fixed, so body(b)
// must not depend on it. Each block runs in the caller's floating-point
// environment (rounding mode, FTZ / DAZ: `run --fp-env`, docs/fp-env.md).
//  - One batch at a time: a caller that finds another thread's batch running
//    runs all its blocks itself (two OpenMP teams would oversubscribe the
//    cores).
//  - fork(): libgomp's threads do not exist in a child, and a parallel
//    region there after the parent used them never returns; a forked child
//    of a process that ran a batch runs its blocks on the calling thread.
//  - Built without OpenMP (a compiler without its runtime, e.g. clang
//    without libomp for the fuzzers): every block on the calling thread.
//  - body must not throw (the kernels' row bodies do not).
void run_blocks(unsigned blocks, const std::function<void(unsigned)>& body);

// How many threads run_blocks can use here: this machine's cores with
// OpenMP, 1 without.
unsigned block_threads_available();

}  // namespace softcheck::kernels
