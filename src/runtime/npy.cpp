// NumPy .npy reading and writing.
//
// Format (numpy/lib/format.py): the magic "\x93NUMPY", a major and minor version byte, the
// header length (uint16 little-endian in 1.0, uint32 in 2.0 and 3.0), then the header: a Python
// dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces
// and a final newline so the data starts on a 64-byte boundary; then the data, C order.
#include "tapestry/runtime/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "npy_header.h"
#include "tapestry/support/diagnostic.h"
#include "tapestry/support/file.h"
#include "tapestry/zspace/checked.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

static_assert(std::endian::native == std::endian::little, ".npy I/O assumes a little-endian host");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

// numpy's type string of an executable dtype, from the dtype table: little-endian '<', the kind
// ('f' float, 'i' signed integer) and the size in bytes: "<f4", "<f8", "<i4", "<i8", "<f2"
// (float16). NumPy has no bfloat16: a bf16 tensor is exchanged as its bit patterns, "<u2"
// (npy.h).
std::string descr_of(DType dtype) {
  if (dtype == DType::kBFloat16) return "<u2";
  return fmt::format("<{}{}", ir::is_float(dtype) ? 'f' : 'i', ir::dtype_size_bytes(dtype));
}

// The executable dtype `descr` names; '=' (native order) is '<' on this little-endian host.
DType dtype_of_descr(const std::string& descr) {
  std::string supported;
  for (DType d : ir::all_dtypes()) {
    if (!is_executable(d)) continue;
    const std::string little = descr_of(d);
    const bool native = !descr.empty() && descr[0] == '=' &&
                        std::string_view(descr).substr(1) == std::string_view(little).substr(1);
    if (descr == little || native) return d;
    supported += fmt::format("{}'{}'", supported.empty() ? "" : " ", little);
  }
  const char* why = !descr.empty() && descr[0] == '>' ? " (big-endian)" : "";
  throw Error(fmt::format("unsupported dtype '{}'{}; supported: {}", descr, why, supported));
}

std::uint32_t read_le(std::string_view bytes, std::size_t at, std::size_t width) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < width; ++i) {
    value |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return value;
}

// Where the header lies, from the fixed prefix (magic, version, header length) and the file's
// size. `head` holds the file's first bytes (at least 12 when the file has them).
struct Prefix {
  std::size_t header_at = 0;
  std::size_t header_len = 0;
};

Prefix read_prefix(std::string_view head, std::uint64_t file_size) {
  if (file_size < 10 || head.size() < 10 || head.substr(0, 6) != kMagic) {
    throw Error("not a .npy file (bad magic string)");
  }
  const int major = static_cast<unsigned char>(head[6]);
  if (major < 1 || major > 3) throw Error(fmt::format("unsupported .npy version {}.x", major));
  const std::size_t width = major == 1 ? 2 : 4;
  if (file_size < 8 + width || head.size() < 8 + width) throw Error("truncated header");
  const std::size_t header_len = read_le(head, 8, width);
  if (header_len > file_size - 8 - width) {
    throw Error(fmt::format("truncated header: it announces {} bytes, the file holds {}",
                            header_len, file_size - 8 - width));
  }
  return {8 + width, header_len};
}

// What the header describes, checked against the file before anything is allocated: the
// shape's byte count (overflow-checked) must equal the bytes after the header.
struct Layout {
  DType dtype = DType::kFloat32;
  Point shape;
  std::size_t data_at = 0;
  std::size_t data_bytes = 0;
};

// The byte count of `shape`, overflow-checked (a header may claim any shape).
std::int64_t data_bytes_of(const Point& shape, DType dtype) {
  auto bytes = static_cast<std::int64_t>(ir::dtype_size_bytes(dtype));
  for (std::int64_t d : shape) {
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      throw Error(fmt::format("shape {} of {} has more bytes than a 64-bit size holds", shape,
                              ir::dtype_name(dtype)));
    }
  }
  return bytes;
}

Layout read_layout(std::string_view header_text, const Prefix& prefix, std::uint64_t file_size) {
  const detail::NpyHeader header = detail::parse_npy_header(header_text);
  if (header.fortran_order) throw Error("fortran_order True is not supported (write C order)");
  Layout layout{.dtype = dtype_of_descr(header.descr),
                .shape = Point(std::span<const std::int64_t>(header.shape)),
                .data_at = prefix.header_at + prefix.header_len};
  const auto needed = static_cast<std::uint64_t>(data_bytes_of(layout.shape, layout.dtype));
  const std::uint64_t held = file_size - layout.data_at;
  if (held < needed) {
    throw Error(fmt::format("truncated data: {} bytes for shape {} of {} ({} needed)", held,
                            layout.shape, ir::dtype_name(layout.dtype), needed));
  }
  if (held > needed) throw Error(fmt::format("{} trailing bytes after the data", held - needed));
  layout.data_bytes = static_cast<std::size_t>(needed);
  return layout;
}

void check_shape(const Layout& layout, const Point* expected_shape) {
  if (expected_shape != nullptr && layout.shape != *expected_shape) {
    throw Error(
        fmt::format("shape {} does not match the expected {}", layout.shape, *expected_shape));
  }
}

Buffer parse_npy_or_throw(std::string_view bytes, const Point* expected_shape) {
  const Prefix prefix = read_prefix(bytes.substr(0, 12), bytes.size());
  const Layout layout =
      read_layout(bytes.substr(prefix.header_at, prefix.header_len), prefix, bytes.size());
  check_shape(layout, expected_shape);
  Buffer buffer(layout.dtype, Range::of_shape(layout.shape), Buffer::Uninitialized{});
  if (layout.data_bytes > 0) {
    std::memcpy(buffer.bytes(), bytes.data() + layout.data_at, layout.data_bytes);
  }
  return buffer;
}

// An open file descriptor, closed on scope exit.
struct FileDescriptor {
  explicit FileDescriptor(int descriptor) : fd(descriptor) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
  int fd = -1;
};

// Reads exactly `size` bytes at `offset` into `out`.
void read_exactly(int fd, std::byte* out, std::size_t size, std::size_t offset) {
  while (size > 0) {
    const ::ssize_t n = ::pread(fd, out, size, static_cast<::off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(fmt::format("read error: {}", std::strerror(errno)));
    if (n == 0) throw Error("the file shrank while it was read");
    out += n;
    offset += static_cast<std::size_t>(n);
    size -= static_cast<std::size_t>(n);
  }
}

std::string read_string(int fd, std::size_t size, std::size_t offset) {
  std::string text(size, '\0');
  read_exactly(fd, reinterpret_cast<std::byte*>(text.data()), size, offset);
  return text;
}

// Reads `box` of the array: C order makes it runs of contiguous bytes, each the box's extent in
// its first dim not wholly covered times the full extents after it; one pread per run.
Buffer read_box(int fd, const Layout& layout, const Range& box) {
  const Range whole = Range::of_shape(layout.shape);
  if (!whole.contains(box)) {
    throw Error(fmt::format("the box {} lies outside the array's {}", box, whole));
  }
  Buffer buffer(layout.dtype, box, Buffer::Uninitialized{});
  if (box.is_empty()) return buffer;
  const std::size_t rank = box.rank();
  std::size_t first = rank;  // runs cover dims [first, rank)
  while (first > 0 && (first == rank || box.extent(first) == whole.extent(first))) --first;
  if (rank == 0) first = 0;
  const Point strides = dense_strides(layout.shape);
  const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(layout.dtype));
  const std::int64_t run = rank == 0 ? element : box.extent(first) * strides[first] * element;
  std::vector<std::int64_t> p(box.start().begin(), box.start().end());
  std::byte* out = buffer.bytes();
  while (true) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += p[d] * strides[d];
    read_exactly(fd, out, static_cast<std::size_t>(run),
                 layout.data_at + static_cast<std::size_t>(offset * element));
    out += run;
    std::size_t d = first;  // the next run: advance the dims before `first`, row-major
    while (true) {
      if (d == 0) return buffer;
      --d;
      if (++p[d] < box.end()[d]) break;
      p[d] = box.start()[d];
    }
  }
}

// Reads a regular file's header first, then, once the sizes agree, the data straight into the
// buffer: nothing larger than the file is ever allocated, and a device or FIFO (/dev/zero, a
// pipe) is refused at once instead of being read forever.
Buffer read_npy_file(const std::filesystem::path& path, const Point* expected_shape,
                     const Range* box = nullptr) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore the flag.
  const FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) {
    throw support::DiagnosticError(
        support::Diagnostic::in_file(path.string(), "cannot open for reading"));
  }
  try {
    struct ::stat info {};
    if (::fstat(file.fd, &info) != 0) throw Error(fmt::format("stat: {}", std::strerror(errno)));
    if (!S_ISREG(info.st_mode)) throw Error("not a regular file");
    const auto size = static_cast<std::uint64_t>(info.st_size);
    const Prefix prefix =
        read_prefix(read_string(file.fd, std::min<std::uint64_t>(size, 12), 0), size);
    const Layout layout =
        read_layout(read_string(file.fd, prefix.header_len, prefix.header_at), prefix, size);
    check_shape(layout, expected_shape);
    if (box != nullptr) return read_box(file.fd, layout, *box);
    Buffer buffer(layout.dtype, Range::of_shape(layout.shape), Buffer::Uninitialized{});
    read_exactly(file.fd, buffer.bytes(), layout.data_bytes, layout.data_at);
    return buffer;
  } catch (const Error& e) {
    throw support::DiagnosticError(support::Diagnostic::in_file(path.string(), e.what()));
  }
}

}  // namespace

Buffer read_npy_box(const std::filesystem::path& path, const Point& expected_shape,
                    const Range& box) {
  return read_npy_file(path, &expected_shape, &box);
}

Buffer parse_npy(std::string_view bytes, std::string_view source_name) {
  try {
    return parse_npy_or_throw(bytes, nullptr);
  } catch (const Error& e) {
    throw support::DiagnosticError(
        support::Diagnostic::in_file(std::string(source_name), e.what()));
  }
}

Buffer read_npy(const std::filesystem::path& path) {
  return read_npy_file(path, nullptr);
}

Buffer read_npy(const std::filesystem::path& path, const Point& expected_shape) {
  return read_npy_file(path, &expected_shape);
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
