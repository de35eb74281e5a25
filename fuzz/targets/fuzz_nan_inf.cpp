// fuzz_nan_inf: structure-aware inputs (fuzz/lib/fuzz_case.hpp) run through a
// kernel of the registry; aborts on a confirmed violation of the kernel's
// declared invariants (fuzz/lib/invariants.hpp): NaN/inf for finite input,
// outputs out of range, the sum bound, the masked-row policy.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "invariants.hpp"
#include "pool.hpp"

// Short rows mostly, up to 256 (the limits of the issue); two rows per batch
// (enough for batch independence; each row costs a kernel call).
constexpr softcheck::fuzz::Limits limits{2, 256};

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  softcheck::fuzz::init_target(limits, softcheck::fuzz::OpChoice::any);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace softcheck::fuzz;
  // Kept across inputs (decode and run_batch overwrite them): once grown they
  // allocate nothing, and under ASan each allocation costs more than a short row.
  static FuzzCase c;
  static BatchScratch scratch;
  static std::vector<double> y;
  if (!decode_input({data, size}, OpChoice::any, c)) return 0;
  run_batch(*c.kernel, c.op, c, scratch, y);
  if (auto v = check_invariants(c, *c.kernel, c.op, y)) report_and_abort(*v);
  return 0;
}
