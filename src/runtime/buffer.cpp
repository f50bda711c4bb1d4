// Buffer: aligned dense storage plus the coordinate bookkeeping of its range.
#include "tapestry/runtime/buffer.h"

#include <sys/mman.h>

#include <cstring>
#include <deque>
#include <mutex>
#include <new>

#include <fmt/format.h>

#include "tapestry/zspace/checked.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

constexpr std::align_val_t kAlignment{64};
constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
constexpr std::size_t kHugeBufferBytes = std::size_t{4} << 20;

std::size_t element_size(DType dtype) {
  return ir::dtype_size_bytes(dtype);
}

// Large blocks freed by buffers, oldest first, for reuse by the next buffer of the same size.
class BlockCache {
 public:
  std::byte* take(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
      if (it->bytes != bytes) continue;
      std::byte* p = it->data;
      cached_bytes_ -= bytes;
      blocks_.erase(std::next(it).base());
      ++hits_;
      return p;
    }
    ++misses_;
    return nullptr;
  }

  void give(std::byte* p, std::size_t bytes) {
    std::vector<Block> dropped;
    {
      std::lock_guard lock(mutex_);
      if (bytes > kBufferCacheBytes) {
        dropped.push_back({p, bytes});
      } else {
        while (cached_bytes_ + bytes > kBufferCacheBytes) {
          dropped.push_back(blocks_.front());
          cached_bytes_ -= blocks_.front().bytes;
          blocks_.pop_front();
        }
        blocks_.push_back({p, bytes});
        cached_bytes_ += bytes;
      }
    }
    for (const Block& b : dropped) ::operator delete[](b.data, kHugePageAlignment);
  }

  void release() {
    std::deque<Block> all;
    {
      std::lock_guard lock(mutex_);
      all.swap(blocks_);
      cached_bytes_ = 0;
    }
    for (const Block& b : all) ::operator delete[](b.data, kHugePageAlignment);
  }

  BufferCacheStats stats() {
    std::lock_guard lock(mutex_);
    return {.cached_bytes = cached_bytes_, .hits = hits_, .misses = misses_};
  }

  static constexpr std::align_val_t kHugePageAlignment{kHugePageBytes};

 private:
  struct Block {
    std::byte* data;
    std::size_t bytes;
  };
  std::mutex mutex_;
  std::deque<Block> blocks_;
  std::size_t cached_bytes_ = 0;
  std::size_t hits_ = 0;
  std::size_t misses_ = 0;
};

// Leaked on purpose: buffers held by statics may be destroyed after any static cache would be.
BlockCache& block_cache() {
  static auto* cache = new BlockCache;
  return *cache;
}

}  // namespace

BufferCacheStats buffer_cache_stats() {
  return block_cache().stats();
}

void release_buffer_cache() {
  block_cache().release();
}

Point dense_strides(const Point& shape) {
  std::vector<std::int64_t> strides(shape.rank(), 1);
  for (std::size_t k = shape.rank(); k-- > 1;) {
    strides[k - 1] = zspace::checked_mul(strides[k], shape[k]);
  }
  return Point(std::span<const std::int64_t>(strides));
}

void Buffer::AlignedFree::operator()(std::byte* p) const {
  if (alignment == 0) return;  // borrowed: the caller's storage
  if (alignment == kHugePageBytes) {
    block_cache().give(p, bytes);
  } else {
    ::operator delete[](p, std::align_val_t{alignment});
  }
}

Buffer::Buffer() : Buffer(DType::kFloat32, Range()) {}

Buffer::Buffer(DType dtype, Range range) : dtype_(dtype), range_(std::move(range)) {
  require_executable(dtype, "buffer");
  strides_ = dense_strides(range_.shape());
  size_ = range_.size();
  allocate();
  if (data_) std::memset(data_.get(), 0, size_bytes());
}

Buffer::Buffer(DType dtype, Range range, Uninitialized /*tag*/)
    : dtype_(dtype), range_(std::move(range)) {
  require_executable(dtype, "buffer");
  strides_ = dense_strides(range_.shape());
  size_ = range_.size();
  allocate();
}

Buffer Buffer::borrow(DType dtype, Range range, std::byte* data) {
  return {dtype, std::move(range), data, Borrowed{}};
}

Buffer::Buffer(DType dtype, Range range, std::byte* data, Borrowed /*tag*/)
    : dtype_(dtype), range_(std::move(range)) {
  require_executable(dtype, "buffer");
  strides_ = dense_strides(range_.shape());
  size_ = range_.size();
  // Checked as allocate() checks it: the byte count of a huge range must not wrap.
  const std::int64_t bytes =
      zspace::checked_mul(size_, static_cast<std::int64_t>(element_size(dtype_)));
  data_ = std::unique_ptr<std::byte[], AlignedFree>(
      bytes == 0 ? nullptr : data, AlignedFree{0, static_cast<std::size_t>(bytes)});
}

void Buffer::allocate() {
  // Checked: the byte count of a huge range must not wrap.
  const std::int64_t bytes =
      zspace::checked_mul(size_, static_cast<std::int64_t>(element_size(dtype_)));
  if (bytes == 0) {
    data_.reset();
    return;
  }
  const auto size = static_cast<std::size_t>(bytes);
  if (size < kHugeBufferBytes) {
    data_ = std::unique_ptr<std::byte[], AlignedFree>(
        static_cast<std::byte*>(::operator new[](size, kAlignment)),
        AlignedFree{static_cast<std::size_t>(kAlignment), size});
    return;
  }
  // Whole huge pages, from the cache when a block of that size is there.
  const std::size_t whole = (size + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  std::byte* p = block_cache().take(whole);
  if (p == nullptr) {
    p = static_cast<std::byte*>(::operator new[](whole, BlockCache::kHugePageAlignment));
    // Best effort: a kernel without transparent huge pages just ignores the advice.
    (void)::madvise(p, whole, MADV_HUGEPAGE);
  }
  data_ = std::unique_ptr<std::byte[], AlignedFree>(p, AlignedFree{kHugePageBytes, whole});
}

template <Element T>
Buffer Buffer::from_values(Range range, std::span<const T> values) {
  Buffer buffer(dtype_of<T>, std::move(range));
  if (static_cast<std::int64_t>(values.size()) != buffer.size()) {
    throw Error(fmt::format("{} values given for a buffer of {} ({} elements)", values.size(),
                            buffer.range(), buffer.size()));
  }
  if (!values.empty()) std::memcpy(buffer.bytes(), values.data(), buffer.size_bytes());
  return buffer;
}

template Buffer Buffer::from_values<float>(Range, std::span<const float>);
template Buffer Buffer::from_values<double>(Range, std::span<const double>);
template Buffer Buffer::from_values<std::int32_t>(Range, std::span<const std::int32_t>);
template Buffer Buffer::from_values<std::int64_t>(Range, std::span<const std::int64_t>);

Buffer::Buffer(const Buffer& other)
    : dtype_(other.dtype_), range_(other.range_), strides_(other.strides_), size_(other.size_) {
  allocate();
  if (data_) std::memcpy(data_.get(), other.data_.get(), size_bytes());
}

Buffer& Buffer::operator=(const Buffer& other) {
  if (this != &other) *this = Buffer(other);
  return *this;
}

std::size_t Buffer::size_bytes() const {
  return static_cast<std::size_t>(size_) * element_size(dtype_);
}

template <Element T>
std::span<T> Buffer::values() {
  if (dtype_ != dtype_of<T>) (void)view().typed<T>();  // throws the dtype-mismatch Error
  return {reinterpret_cast<T*>(data_.get()), static_cast<std::size_t>(size_)};
}

template <Element T>
std::span<const T> Buffer::values() const {
  if (dtype_ != dtype_of<T>) (void)view().typed<T>();
  return {reinterpret_cast<const T*>(data_.get()), static_cast<std::size_t>(size_)};
}

template std::span<float> Buffer::values<float>();
template std::span<double> Buffer::values<double>();
template std::span<std::int32_t> Buffer::values<std::int32_t>();
template std::span<std::int64_t> Buffer::values<std::int64_t>();
template std::span<const float> Buffer::values<float>() const;
template std::span<const double> Buffer::values<double>() const;
template std::span<const std::int32_t> Buffer::values<std::int32_t>() const;
template std::span<const std::int64_t> Buffer::values<std::int64_t>() const;

View Buffer::view() {
  return View(dtype_, data_.get(), range_, strides_);
}
ConstView Buffer::view() const {
  return ConstView(dtype_, data_.get(), range_, strides_);
}
View Buffer::view(const Range& box) {
  return view().sub(box);
}
ConstView Buffer::view(const Range& box) const {
  return view().sub(box);
}

Buffer Buffer::relocated(const Point& start) const& {
  return Buffer(*this).relocated(start);
}

Buffer Buffer::relocated(const Point& start) && {
  zspace::check_same_rank("relocated start", start.rank(), rank());
  range_ = Range::of_start_shape(start, range_.shape());
  return std::move(*this);
}

std::string Buffer::describe() const {
  return fmt::format("{} {}", ir::dtype_name(dtype_), range_);
}

namespace {

// Calls fn(from_element, to_element) for every pair of corresponding elements, row-major.
template <typename T, typename Fn>
void for_each_pair(const TypedView<const T>& from, const TypedView<T>& to, Fn&& fn) {
  const Point delta = to.box().start() - from.box().start();
  for (const Point& p : from.box().points()) fn(from[p], to[p + delta]);
}

}  // namespace

void copy_elements(const ConstView& from, const View& to) {
  if (from.dtype() != to.dtype() || from.box().shape() != to.box().shape()) {
    throw Error(fmt::format("cannot copy {} {} into {} {}", ir::dtype_name(from.dtype()),
                            from.box(), ir::dtype_name(to.dtype()), to.box()));
  }
  visit_dtype(from.dtype(), [&]<typename T>() {
    for_each_pair<T>(from.typed<T>(), to.typed<T>(), [](const T& a, T& b) { b = a; });
  });
}

void fill(const View& to, double value) {
  visit_dtype(to.dtype(), [&]<typename T>() {
    const TypedView<T> typed = to.typed<T>();
    const T converted = static_cast<T>(value);
    for (const Point& p : to.box().points()) typed[p] = converted;
  });
}

}  // namespace tapestry::runtime
