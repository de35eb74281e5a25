// fuzz_differential: structure-aware inputs (fuzz/lib/fuzz_case.hpp) for a
// kernel with a declared contract, checked against the MPFR oracle within that
// contract, and, when the input picks one, a second kernel of the same format
// and op on the same rows, within its own contract (fuzz/lib/differential.hpp).
#include <cstddef>
#include <cstdint>

#include "differential.hpp"
#include "invariants.hpp"
#include "pool.hpp"

// Rows up to 256 long, one per batch (rows are independent: fuzz_nan_inf
// checks batches; here each row costs the reference and maybe the oracle).
constexpr softcheck::fuzz::Limits limits{1, 256};

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  softcheck::fuzz::init_target(limits);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace softcheck::fuzz;
  FuzzCase c;
  if (!decode_input({data, size}, OpChoice::contract_only, c)) return 0;
  const std::vector<double> y = run_batch(*c.kernel, c.op, c);
  const std::vector<double> y_partner = c.partner ? run_batch(*c.partner, c.op, c) : std::vector<double>{};
  if (auto v = check_differential(c, y, y_partner)) report_and_abort(*v);
  return 0;
}
