// Exact sparse and sharpened softmax (docs/sparse.md): sparsemax, entmax15,
// entmax with any alpha > 1 by certified bisection, top-k softmax and
// threshold softmax, in MPFR from the exact binary values of the inputs.
// Definitions: REFERENCE.md, "Entmax family" (Peters, Niculae & Martins 2019;
// sparsemax: Martins & Astudillo 2016). Every function works on z = x / T.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "softcheck/oracle.hpp"

namespace softcheck::oracle {

struct SparseRow {
  RowStatus status = RowStatus::ok;  // as exact_row: NaN/+inf -> undefined, all -inf -> all_masked
  std::vector<Real> p;               // probabilities; exactly 0 off the support, -inf entries 0
  std::vector<bool> support;         // p_i > 0
  std::size_t support_size = 0;
  // entmax family: p_i = [(alpha - 1) z_i - tau]_+^(1/(alpha - 1)). tau_lo <=
  // tau <= tau_hi is a certified bracket (all three equal to the rounded tau
  // for the sort-based sparsemax and entmax15). NaN for top-k and threshold.
  Real tau, tau_lo, tau_hi;
  // entmax by bisection: entries whose support membership the bracket leaves
  // open ((alpha - 1) z_i within [tau_lo, tau_hi]); decided by the midpoint.
  std::size_t undecided = 0;
};

// Every function: x non-empty, temperature finite and > 0, bits in [1, 2^24],
// else std::invalid_argument; status != ok leaves the vectors empty.
// Sort-based, exact support (decided in exact rational arithmetic), p_i
// correctly rounded to `bits` (sparsemax) or within a few units of 2^-bits
// (entmax15).
SparseRow exact_sparsemax(std::span<const double> x, double temperature = 1.0,
                          unsigned bits = default_bits);
SparseRow exact_entmax15(std::span<const double> x, double temperature = 1.0,
                         unsigned bits = default_bits);
// alpha finite and > 1 (else std::invalid_argument). Bisection on tau with
// every evaluation of sum_i p_i(tau) bounded by directed rounding, so the
// returned bracket provably contains tau; its width is about 2^-(bits + 16)
// relative. Cost: about (bits + 16) * 2n MPFR pow calls.
SparseRow exact_entmax_bisect(std::span<const double> x, double alpha, double temperature = 1.0,
                              unsigned bits = default_bits);
// alpha = 2: exact_sparsemax; alpha = 1.5: exact_entmax15; else bisection.
SparseRow exact_entmax(std::span<const double> x, double alpha, double temperature = 1.0,
                       unsigned bits = default_bits);
// Softmax over the k largest entries, the others exactly 0. Tie rule: every
// entry equal to the k-th largest value is kept (the support may exceed k;
// permutation-equivariant and deterministic). -inf entries are never kept;
// fewer than k finite entries: all finite ones kept. k >= 1.
SparseRow exact_topk_softmax(std::span<const double> x, std::size_t k, double temperature = 1.0,
                             unsigned bits = default_bits);
// Entries whose softmax probability is below `threshold` are set to 0 and the
// rest renormalised (softmax over the kept entries). threshold in [0, 1]; an
// entry exactly at the threshold is kept; if no entry reaches it (possible only
// when threshold > 1/n) the row's maxima are kept. The comparison is made on
// the softmax at bits + 64 bits.
SparseRow exact_threshold_softmax(std::span<const double> x, double threshold,
                                  double temperature = 1.0, unsigned bits = default_bits);

// The exact result of the sparse op `op` (is_sparse(op)) with a kernel's
// parameters: sparsemax, entmax15, entmax (params.alpha), topk_softmax
// (params.k), threshold_softmax (params.threshold). softmax and log_softmax
// throw std::invalid_argument (use exact_row), as do bad parameters.
SparseRow exact_sparse(Op op, const OpParams& params, std::span<const double> x,
                       double temperature = 1.0, unsigned bits = default_bits);

// Whether exact_sparse evaluates this op by certified bisection (entmax with
// alpha other than 1.5 and 2): about 2n(bits + 16) MPFR pow calls per row,
// so the suite and the properties keep its rows to bisection_max_cols.
constexpr bool needs_bisection(Op op, const OpParams& params) {
  const double alpha = entmax_alpha(op, params);
  return alpha != 0 && alpha != 1.5 && alpha != 2;
}
inline constexpr std::size_t bisection_max_cols = 256;

}  // namespace softcheck::oracle
