// NumPy .npy files for `softcheck compare`: the header's dictionary is read
// by xtensor's npy parser (libxtensor-dev, xt::detail::parse_header; the same
// code as xt::load_npy), the data laid out by xt::adapt in the file's order
// (C or Fortran). Built only with xtensor (SOFTCHECK_NPY); without it
// npy_reader_available() is false and read_npy throws saying so.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "softcheck/format.hpp"

namespace softcheck::cli {

struct NpyArray {
  std::vector<std::size_t> shape;  // one or two dimensions
  std::string descr;               // the file's dtype, e.g. "<f4"
  std::vector<double> values;      // row-major, exact (every value of f is a double)
};

// Whether this softcheck was built with xtensor; when not, why.
bool npy_reader_available();
std::string npy_reader_unavailable_reason();

// The numpy dtype that holds values of f: f64 '<f8' (float64), f32 '<f4',
// f16 '<f2'; bf16 has no numpy type: '<u2' (or '<i2') bit patterns, e.g.
// torch's t.view(torch.int16).numpy().
std::string npy_descr_of(Format f);

// Reads a .npy file (format versions 1, 2 and 3) of one or two dimensions
// whose dtype holds f. Throws std::invalid_argument naming the file: not a
// regular file, not .npy, a dtype of another format (naming both), big-endian
// data, more than two dimensions or none, an empty array, a size that does not
// match the header (truncated or trailing bytes).
NpyArray read_npy(const std::filesystem::path& path, Format f);

}  // namespace softcheck::cli
