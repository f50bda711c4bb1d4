// Buffer: a dense tensor that owns its elements, addressed in the tensor's own coordinates.
//
// A Buffer has an executable dtype (element.h) and a Range: the box of coordinates it holds,
// which may start anywhere (`[-40, 20]`). Elements are stored row-major (C order, last dimension
// fastest), so the strides of a buffer of shape (d0, …, dn) are (d1·…·dn, …, dn, 1) elements.
// Storage is 64-byte aligned, zero-filled at construction, and copied deeply with the Buffer.
// Buffers of 4 MiB or more are 2 MiB aligned and advised to use transparent huge pages (Linux
// madvise): first-touch page faults otherwise dominate a pass over a fresh 256 MiB tensor. Their
// storage, whole 2 MiB pages of an anonymous mapping, is returned on destruction to a
// process-wide cache, where blocks that touch merge. The next large buffer takes the first pages
// of the smallest cached block that holds it (the rest stays cached); one that no block holds
// gets a new mapping whose first pages are cached blocks moved there by mremap (the pages change
// address, not content). So a repeated run, or a later intermediate of any size, reuses memory
// that is already mapped instead of paying the kernel to map and zero it again (bias_add over a
// fresh 16 MiB output: 37 ms of page faults against 2–3 ms with the pages mapped, on this VM; the
// verifier's float64 oracle, whose sizes seldom repeat, spent 29–53% of its samples zeroing fresh
// pages when only a block of the same size was reused). The cache never makes the process map
// more than its live buffers needed at once, and it holds at most kBufferCacheBytes. Fresh pages
// are zero already: the zero-filling constructor writes only reused storage.
//
//   Buffer x = Buffer::from_values<float>(Range({-1, 0}, {1, 3}), {1, 2, 3, 4, 5, 6});
//   x.at<float>(Point{0, 2}) == 6.0f;            // row 0 is the second row of the storage
//   x.view(Range({0, 1}, {1, 3}))                // the 1×2 box holding 5, 6
//   x.relocated(Point{0, 0}).range() == Range::of_shape({2, 3})   // same values, new start
//
// A buffer may also *borrow* caller-owned storage (`Buffer::borrow`): the Python package binds a
// NumPy array to a graph input this way, so a run reads the caller's memory without a copy. A
// borrowing buffer never frees its storage; copying it gives an owning buffer, moving it (or
// `relocated`) keeps borrowing. The executors never write their inputs.
//
// Concurrency: a const Buffer may be read from any number of threads; writes through views of
// disjoint boxes may run concurrently (the block executor relies on this).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>

#include "tapestry/runtime/element.h"
#include "tapestry/runtime/view.h"

namespace tapestry::runtime {

/// Row-major strides (in elements) of a dense box of shape `shape`.
Point dense_strides(const Point& shape);

/// The most storage the process keeps cached for reuse by later large buffers (see above).
inline constexpr std::size_t kBufferCacheBytes = std::size_t{1} << 30;

struct BufferCacheStats {
  std::size_t cached_bytes = 0;  // held for reuse now
  std::size_t hits = 0;          // large buffers that reused cached storage
  std::size_t misses = 0;        // large buffers no cached block held (they took cached
                                 // pages, moved, as far as the cache had them, then fresh ones)
};
/// The cache's counters (all threads).
BufferCacheStats buffer_cache_stats();
/// Frees every cached block (the memory goes back to the system).
void release_buffer_cache();

class Buffer {
 public:
  /// A 0-dimensional float32 buffer holding one zero (so containers can default-construct).
  Buffer();
  /// A zero-filled buffer. Error when `dtype` is not executable or the byte size overflows.
  Buffer(DType dtype, Range range);
  /// Tag for the constructor that skips the zero fill.
  struct Uninitialized {};
  /// A buffer whose elements are left unset (for executors that write every cell before any
  /// read: filling 64 MB costs as much as a small kernel). Errors as above.
  Buffer(DType dtype, Range range, Uninitialized /*tag*/);

  /// A buffer holding `values` in row-major order; Error unless their count is range.size().
  /// A buffer over caller-owned storage, neither copied nor freed: `data` holds range.size()
  /// elements of `dtype` in row-major order, aligned to the element size, and must outlive this
  /// buffer, whatever it is moved into, and every view of it. Errors as the constructor.
  static Buffer borrow(DType dtype, Range range, std::byte* data);

  template <StorageElement T>
  static Buffer from_values(Range range, std::span<const T> values);
  template <StorageElement T>
  static Buffer from_values(Range range, std::initializer_list<T> values) {
    return from_values<T>(std::move(range), std::span<const T>(values.begin(), values.size()));
  }

  Buffer(const Buffer& other);
  Buffer& operator=(const Buffer& other);
  Buffer(Buffer&& other) noexcept = default;
  Buffer& operator=(Buffer&& other) noexcept = default;
  ~Buffer() = default;

  [[nodiscard]] DType dtype() const { return dtype_; }
  [[nodiscard]] const Range& range() const { return range_; }
  [[nodiscard]] std::size_t rank() const { return range_.rank(); }
  [[nodiscard]] const Point& strides() const { return strides_; }
  /// Number of elements.
  [[nodiscard]] std::int64_t size() const { return size_; }
  [[nodiscard]] std::size_t size_bytes() const;
  /// True when the storage belongs to the caller (`borrow`).
  [[nodiscard]] bool is_borrowed() const { return data_.get_deleter().alignment == 0; }

  /// Raw storage, row-major (null when the buffer is empty).
  [[nodiscard]] std::byte* bytes() { return data_.get(); }
  [[nodiscard]] const std::byte* bytes() const { return data_.get(); }

  /// The elements in row-major order; Error when T is not the buffer's dtype.
  template <StorageElement T>
  [[nodiscard]] std::span<T> values();
  template <StorageElement T>
  [[nodiscard]] std::span<const T> values() const;
  /// The element at tensor point `p` (asserted inside the range); Error on a dtype mismatch.
  template <StorageElement T>
  [[nodiscard]] T at(const Point& p) const {
    return view().typed<T>()[p];
  }

  /// A view of the whole buffer.
  [[nodiscard]] View view();
  [[nodiscard]] ConstView view() const;
  /// A view of `box`, which must lie inside the range (Error otherwise).
  [[nodiscard]] View view(const Range& box);
  [[nodiscard]] ConstView view(const Range& box) const;

  /// The same elements addressed from a new start (the shape is unchanged).
  [[nodiscard]] Buffer relocated(const Point& start) const&;
  [[nodiscard]] Buffer relocated(const Point& start) &&;

  /// `float32 zr[-1:1, 0:3]`.
  [[nodiscard]] std::string describe() const;

 private:
  struct AlignedFree {
    AlignedFree() : alignment(64) {}
    AlignedFree(std::size_t a, std::size_t b) : alignment(a), bytes(b) {}
    std::size_t alignment;  // what the storage was allocated with; 0: borrowed, never freed
    std::size_t bytes = 0;  // its size (large blocks: whole 2 MiB pages, returned to the cache)
    void operator()(std::byte* p) const;
  };
  struct Borrowed {};
  Buffer(DType dtype, Range range, std::byte* data, Borrowed /*tag*/);
  /// Allocates size_bytes() of storage; returns how many of its first bytes may hold old data
  /// (the rest are zeros of a fresh mapping).
  std::size_t allocate();

  DType dtype_ = DType::kFloat32;
  Range range_;
  Point strides_;
  std::int64_t size_ = 0;
  std::unique_ptr<std::byte[], AlignedFree> data_;
};

/// Copies the elements of `from` into `to`; the boxes must have the same shape and the views the
/// same dtype (Error otherwise). Coordinates may differ (a copy between tensors).
void copy_elements(const ConstView& from, const View& to);

/// Copies the elements of `from` into `to`, converting between float dtypes: the boxes must have
/// the same shape and both dtypes be float (Error otherwise). Widening is exact; narrowing rounds
/// to nearest, ties to even (float64 to a 16-bit type too, directly: half_float.h). Same dtypes
/// copy. The `cast` kernel is this, on the boxes of a call.
void convert_elements(const ConstView& from, const View& to);

/// Sets every element of `to` to `value` (converted to the view's dtype).
void fill(const View& to, double value);

}  // namespace tapestry::runtime
