// Private helpers of the sparse kernels (sparsemax.cpp, entmax15.cpp,
// entmax_bisect.cpp, topk_softmax.cpp, threshold_softmax.cpp; docs/sparse.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <span>
#include <vector>

#include "kernel_util.hpp"

namespace softcheck::kernels {

// The finite entries of v, sorted descending (the sort-based algorithms of
// Martins & Astudillo 2016 and Peters et al. 2019 work on this order).
template <class T>
std::vector<T> sorted_finite_desc(std::span<const T> v) {
  std::vector<T> s;
  s.reserve(v.size());
  for (T e : v)
    if (std::isfinite(e)) s.push_back(e);
  std::sort(s.begin(), s.end(), std::greater<T>());
  return s;
}

// The masked-row policy of every sparse kernel: an all -inf row gives zeros
// (like FlashAttention / PyTorch's _safe_softmax; the exact result is undefined).
// Returns true when the row was fully masked (and has been zeroed).
template <class T>
bool zero_if_fully_masked(std::span<T> v, T max) {
  if (max != minus_inf<T>) return false;
  std::fill(v.begin(), v.end(), T(0));
  return true;
}

}  // namespace softcheck::kernels
