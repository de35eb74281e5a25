#include "npy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <regex>
#include <stdexcept>

#include "softcheck/storage.hpp"

#if SOFTCHECK_HAVE_XTENSOR
#include <xtensor/xadapt.hpp>
#include <xtensor/xnpy.hpp>
#endif

namespace softcheck::cli {

bool npy_reader_available() { return SOFTCHECK_HAVE_XTENSOR != 0; }

std::string npy_reader_unavailable_reason() {
  return npy_reader_available() ? ""
                                : "this softcheck was built without xtensor, which reads .npy files (install "
                                  "libxtensor-dev and reconfigure; cmake said why)";
}

std::string npy_descr_of(Format f) {
  switch (f) {
    case Format::f64: return "<f8";
    case Format::f32: return "<f4";
    case Format::f16: return "<f2";
    case Format::bf16: return "<u2";
    case Format::e4m3:
    case Format::e4m3_div256: throw_not_a_storage_format(f);
  }
  return "?";
}

namespace {

std::string numpy_name(const std::string& descr) {
  if (descr.size() < 3) return descr;
  const std::string kind = descr[1] == 'f' ? "float" : descr[1] == 'u' ? "uint" : descr[1] == 'i' ? "int" : "";
  if (kind.empty()) return "'" + descr + "'";
  return fmt::format("{}{} ('{}')", kind, 8 * std::atoi(descr.c_str() + 2), descr);
}

bool holds(const std::string& descr, Format f) {
  if (f == Format::bf16) return descr == "<u2" || descr == "<i2";
  return descr == npy_descr_of(f);
}

}  // namespace

NpyArray read_npy(const std::filesystem::path& path, Format f) {
  const std::string where = path.string();
  if (!npy_reader_available()) throw std::invalid_argument(npy_reader_unavailable_reason());
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::invalid_argument(where + ": " + (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file"));
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw std::invalid_argument(where + ": " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(where + ": cannot be read");
  // The preamble: magic, version, header length (little-endian; 2 bytes in
  // version 1, 4 in versions 2 and 3). Read here, byte by byte: xtensor
  // 0.24's read_header_1_0 sign-extends the length bytes (a header length
  // with a byte >= 0x80 comes out wrong) and its loader never checks that the
  // data were all there.
  unsigned char pre[12] = {};
  in.read(reinterpret_cast<char*>(pre), 8);
  if (!in || std::memcmp(pre, "\x93NUMPY", 6) != 0) throw std::invalid_argument(where + ": not a .npy file");
  const int major = pre[6];
  if (major < 1 || major > 3)
    throw std::invalid_argument(fmt::format("{}: .npy format version {}.{} (1, 2 and 3 are read)", where, major, pre[7]));
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  in.read(reinterpret_cast<char*>(pre + 8), static_cast<std::streamsize>(len_bytes));
  if (!in) throw std::invalid_argument(where + ": truncated .npy header");
  std::uintmax_t header_len = 0;
  for (std::size_t i = 0; i < len_bytes; ++i) header_len |= static_cast<std::uintmax_t>(pre[8 + i]) << (8 * i);
  const std::uintmax_t data_at = 8 + len_bytes + header_len;
  if (header_len == 0 || data_at > size) throw std::invalid_argument(where + ": truncated .npy header");
  std::string header(static_cast<std::size_t>(header_len), '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  if (!in) throw std::invalid_argument(where + ": truncated .npy header");
  NpyArray a;
#if SOFTCHECK_HAVE_XTENSOR
  // xtensor's parser indexes the parts it splits without checking that they
  // are there (an empty shape text is read at [-1]): only a header of NumPy's
  // own layout (the keys in NumPy's order, a plain typestring, a tuple of
  // non-negative integers) is handed to it.
  std::string compact;
  for (char c : header)
    if (c != ' ') compact += c;
  static const std::regex numpy_layout(
      R"(\{'descr':'[<>|=][a-zA-Z][0-9]+','fortran_order':(True|False),'shape':\(([0-9]+,)*[0-9]*\),?\}\n)");
  if (!std::regex_match(compact, numpy_layout))
    throw std::invalid_argument(fmt::format("{}: not a .npy header NumPy writes (a plain dtype, fortran_order, and the "
                                            "shape as a tuple of integers, in that order): {}",
                                            where, header.substr(0, std::min<std::size_t>(header.find_last_not_of(" \n") + 1, 120))));
  bool fortran_order = false;
  try {
    xt::detail::parse_header(header, a.descr, &fortran_order, a.shape);
  } catch (const std::exception& e) {
    throw std::invalid_argument(fmt::format("{}: malformed .npy header ({})", where, e.what()));
  }
  if (a.descr.size() >= 2 && a.descr[0] == '>')
    throw std::invalid_argument(fmt::format("{}: big-endian data ({}): save it little-endian (numpy: a.astype('<{}'))",
                                            where, numpy_name(a.descr), a.descr.substr(1)));
  if (!holds(a.descr, f))
    throw std::invalid_argument(
        fmt::format("{} holds {}; --dtype {} needs {}", where, numpy_name(a.descr), name(f),
                    f == Format::bf16 ? "bf16 bit patterns as uint16 ('<u2') or int16 ('<i2')"
                                      : numpy_name(npy_descr_of(f))));
  if (a.shape.empty() || a.shape.size() > 2)
    throw std::invalid_argument(
        fmt::format("{}: {} dimensions; one row (n) or rows x n are read", where, a.shape.size()));
  std::size_t count = 1;
  for (std::size_t d : a.shape) {
    if (d == 0) throw std::invalid_argument(where + ": an empty array");
    if (count > std::numeric_limits<std::size_t>::max() / d) throw std::invalid_argument(where + ": shape overflows");
    count *= d;
  }
  const std::size_t word = element_size(f);
  if (count > (size - data_at) / word || count * word != size - data_at)
    throw std::invalid_argument(fmt::format("{}: the header says {} values ({} bytes) but the file holds {} bytes of "
                                            "data",
                                            where, count, count > std::numeric_limits<std::size_t>::max() / word
                                                              ? std::string("too many")
                                                              : std::to_string(count * word),
                                            size - data_at));
  std::vector<unsigned char> bytes(count * word);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!in) throw std::invalid_argument(where + ": truncated data");
  // The file's layout (C or Fortran order) by xtensor's adaptor; values
  // taken row-major.
  const xt::layout_type layout = fortran_order ? xt::layout_type::column_major : xt::layout_type::row_major;
  const std::size_t rows = a.shape.size() == 2 ? a.shape[0] : 1, cols = a.shape.back();
  a.values.reserve(count);
  const auto take = [&](auto* typed, auto decode) {
    const auto view = xt::adapt<xt::layout_type::dynamic>(typed, count, xt::no_ownership(), a.shape, layout);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) a.values.push_back(decode(a.shape.size() == 2 ? view(r, c) : view(c)));
  };
  if (f == Format::f64) {
    std::vector<double> v(count);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    take(v.data(), [](double d) { return d; });
  } else if (f == Format::f32) {
    std::vector<float> v(count);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    take(v.data(), [](float d) { return static_cast<double>(d); });
  } else {
    std::vector<std::uint16_t> v(count);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    take(v.data(), [f](std::uint16_t b) { return decode16(b, f); });
  }
#else
  (void)f;  // unreachable: npy_reader_available() is false
#endif
  return a;
}

}  // namespace softcheck::cli
