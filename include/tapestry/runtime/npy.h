// Reading and writing tensors as NumPy `.npy` files, the field's interchange format.
//
// Supported: format versions 1.0, 2.0 and 3.0; dtypes '<f4' '<f8' '<i4' '<i8' '<f2' (float32,
// float64, int32, int64, float16, little-endian; '=' native order is accepted too); C order.
// NumPy has no bfloat16: a bfloat16 buffer is written, and read, as its 16-bit patterns, '<u2'
// (in NumPy: `bits.astype(np.uint32) << 16` viewed as float32 is its value). A file has
// no coordinates, so a buffer read from one starts at the origin; bind_buffer (tensor_map.h)
// relocates it onto a tensor that starts elsewhere.
//
//   write_npy("y.npy", buffer);          // atomic: a temporary file, then rename
//   Buffer y = read_npy("y.npy");        // range [0, shape)
//   Buffer x = read_npy("x.npy", Point{4, 8});   // also checks the shape
//   Buffer r = read_npy_box("x.npy", Point{4, 8}, Range({2, 0}, {4, 8}));  // rows 2–3 only
//
// Every problem is an Error naming the file: not a regular file (a device, a FIFO), bad magic
// string, unsupported version, malformed header, unsupported dtype ("'>f4' (big-endian)",
// "'|i1'"), fortran_order True, a shape whose byte count overflows, truncated data, trailing
// bytes, shape mismatch.
//
// Sizes are checked before anything is allocated: the header is read first, its shape's byte
// count (overflow-checked) must equal the bytes the file holds after it, and must match
// `expected_shape` when given; only then is the buffer allocated and the data read into it. So
// reading a file never allocates more than the file's size, whatever its header claims.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "tapestry/runtime/buffer.h"

namespace tapestry::runtime {

/// Reads a `.npy` file; see the file comment for what is accepted.
Buffer read_npy(const std::filesystem::path& path);
/// Reads and checks that the array has shape `expected_shape`.
Buffer read_npy(const std::filesystem::path& path, const Point& expected_shape);
/// Reads only `box` (in the array's coordinates, from the origin) of a file of shape
/// `expected_shape`: the header is checked as read_npy does, then the box's rows are read where
/// they lie (C order: one read per contiguous run). The buffer's range is `box`.
Buffer read_npy_box(const std::filesystem::path& path, const Point& expected_shape,
                    const Range& box);
/// Parses the bytes of a `.npy` file; `source_name` names it in errors.
Buffer parse_npy(std::string_view bytes, std::string_view source_name);

/// The bytes of a `.npy` file (version 1.0, or 2.0 when the header needs it) holding `buffer`.
std::string format_npy(const Buffer& buffer);
/// Writes `buffer` to `path` atomically; Error naming the file when it cannot be written.
void write_npy(const std::filesystem::path& path, const Buffer& buffer);

}  // namespace tapestry::runtime
