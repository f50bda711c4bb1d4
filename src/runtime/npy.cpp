// NumPy .npy reading and writing.
//
// Format (numpy/lib/format.py): the magic "\x93NUMPY", a major and minor version byte, the
// header length (uint16 little-endian in 1.0, uint32 in 2.0 and 3.0), then the header: a Python
// dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces
// and a final newline so the data starts on a 64-byte boundary; then the data, C order.
#include "tapestry/runtime/npy.h"

#include <unistd.h>
#include <bit>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "npy_header.h"
#include "tapestry/support/file.h"
#include "tapestry/zspace/checked.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

static_assert(std::endian::native == std::endian::little, ".npy I/O assumes a little-endian host");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct Descr {
  std::string_view text;
  DType dtype;
};
constexpr Descr kDescrs[] = {{"<f4", DType::kFloat32}, {"<f8", DType::kFloat64},
                             {"<i4", DType::kInt32},   {"<i8", DType::kInt64},
                             {"=f4", DType::kFloat32}, {"=f8", DType::kFloat64},
                             {"=i4", DType::kInt32},   {"=i8", DType::kInt64}};

DType dtype_of_descr(const std::string& descr) {
  for (const Descr& d : kDescrs) {
    if (d.text == descr) return d.dtype;
  }
  const char* why = !descr.empty() && descr[0] == '>' ? " (big-endian)" : "";
  throw Error(
      fmt::format("unsupported dtype '{}'{}; supported: '<f4' '<f8' '<i4' '<i8'", descr, why));
}

std::string_view descr_of(DType dtype) {
  for (const Descr& d : kDescrs) {
    if (d.dtype == dtype) return d.text;
  }
  return "";
}

std::uint32_t read_le(std::string_view bytes, std::size_t at, std::size_t width) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < width; ++i) {
    value |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return value;
}

// Splits the file into header text and data; checks magic and version.
std::pair<std::string_view, std::string_view> split_file(std::string_view bytes) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic) {
    throw Error("not a .npy file (bad magic string)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3) throw Error(fmt::format("unsupported .npy version {}.x", major));
  const std::size_t width = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + width) throw Error("truncated header");
  const std::size_t header_len = read_le(bytes, 8, width);
  const std::size_t data_at = 8 + width + header_len;
  if (bytes.size() < data_at) throw Error("truncated header");
  return {bytes.substr(8 + width, header_len), bytes.substr(data_at)};
}

Buffer parse_npy_or_throw(std::string_view bytes) {
  const auto [header_text, data] = split_file(bytes);
  const detail::NpyHeader header = detail::parse_npy_header(header_text);
  if (header.fortran_order) throw Error("fortran_order True is not supported (write C order)");
  const DType dtype = dtype_of_descr(header.descr);
  Buffer buffer(dtype, Range::of_shape(Point(std::span<const std::int64_t>(header.shape))));
  if (data.size() < buffer.size_bytes()) {
    throw Error(fmt::format("truncated data: {} bytes for shape {} of {} ({} needed)", data.size(),
                            buffer.range().shape(), ir::dtype_name(dtype), buffer.size_bytes()));
  }
  if (data.size() > buffer.size_bytes()) {
    throw Error(fmt::format("{} trailing bytes after the data", data.size() - buffer.size_bytes()));
  }
  if (buffer.size_bytes() > 0) std::memcpy(buffer.bytes(), data.data(), buffer.size_bytes());
  return buffer;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open for reading", path.string()));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("{}: read error", path.string()));
  return std::move(bytes).str();
}

}  // namespace

Buffer parse_npy(std::string_view bytes, std::string_view source_name) {
  try {
    return parse_npy_or_throw(bytes);
  } catch (const Error& e) {
    throw e.with_context(std::string(source_name));
  }
}

Buffer read_npy(const std::filesystem::path& path) {
  return parse_npy(read_file(path), path.string());
}

Buffer read_npy(const std::filesystem::path& path, const Point& expected_shape) {
  Buffer buffer = read_npy(path);
  if (buffer.range().shape() != expected_shape) {
    throw Error(fmt::format("{}: shape {} does not match the expected {}", path.string(),
                            buffer.range().shape(), expected_shape));
  }
  return buffer;
}

std::string format_npy(const Buffer& buffer) {
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                  descr_of(buffer.dtype()), detail::python_tuple(buffer.range().shape()));
  // Version 1.0 has a 2-byte length; larger headers need 2.0 (4 bytes).
  const bool v2 = header.size() + 64 + 10 > 0xffff;
  const std::size_t prefix = v2 ? 12 : 10;
  const std::size_t padded = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(padded - prefix - header.size() - 1, ' ');
  header.push_back('\n');
  std::string out(kMagic);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back(0);
  const std::size_t len = header.size();
  for (std::size_t i = 0; i < (v2 ? 4u : 2u); ++i) out.push_back(static_cast<char>(len >> (8 * i)));
  out += header;
  out.append(reinterpret_cast<const char*>(buffer.bytes()), buffer.size_bytes());
  return out;
}

void write_npy(const std::filesystem::path& path, const Buffer& buffer) {
  write_file_atomically(path, format_npy(buffer));
}

}  // namespace tapestry::runtime
