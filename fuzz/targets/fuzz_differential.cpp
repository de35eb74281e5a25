// fuzz_differential: structure-aware inputs (fuzz/lib/fuzz_case.hpp) for a
// kernel with a declared contract, checked against the MPFR oracle within that
// contract, and, when the input picks one, a second kernel of the same format
// and op on the same rows, within its own contract (fuzz/lib/differential.hpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "differential.hpp"
#include "invariants.hpp"
#include "pool.hpp"

// Rows up to 256 long, one per batch (rows are independent: fuzz_nan_inf
// checks batches; here each row costs the reference and maybe the oracle).
constexpr softcheck::fuzz::Limits limits{1, 256};

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  softcheck::fuzz::init_target(limits, softcheck::fuzz::OpChoice::contract_only);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace softcheck::fuzz;
  // Kept across inputs (decode and run_batch overwrite them): once grown they
  // allocate nothing, and under ASan each allocation costs more than a short row.
  static FuzzCase c;
  static BatchScratch scratch;
  static std::vector<double> y, y_partner;
  if (!decode_input({data, size}, OpChoice::contract_only, c)) return 0;
  run_batch(*c.kernel, c.op, c, scratch, y);
  if (c.partner != nullptr) run_batch(*c.partner, c.op, c, scratch, y_partner);
  else y_partner.clear();
  if (auto v = check_differential(c, y, y_partner)) report_and_abort(*v);
  return 0;
}
