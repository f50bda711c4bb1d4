// Buffer: aligned dense storage plus the coordinate bookkeeping of its range.
#include "tapestry/runtime/buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <numeric>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tapestry/support/sanitizers.h"
#include "tapestry/zspace/checked.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

constexpr std::align_val_t kAlignment{64};
constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
// Buffers from this size on take whole huge pages from the block cache below. Under
// AddressSanitizer every buffer comes from operator new instead, so ASan's redzones and
// quarantine guard the large ones too (a cached page would hide a use after free).
#if defined(TAPESTRY_UNDER_ASAN)
constexpr std::size_t kHugeBufferBytes = ~std::size_t{0};
#else
constexpr std::size_t kHugeBufferBytes = std::size_t{4} << 20;
#endif

std::size_t element_size(DType dtype) {
  return ir::dtype_size_bytes(dtype);
}

// Storage of large buffers: 2 MiB-aligned anonymous mappings of whole 2 MiB pages. The kernel
// zero-fills a page at its first touch, so a fresh block needs no memset.
std::byte* map_block(std::size_t bytes) {
  const std::size_t span = bytes + kHugePageBytes;  // room to align the start
  void* m = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const auto raw = reinterpret_cast<std::uintptr_t>(m);
  const std::uintptr_t start = (raw + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const std::size_t head = start - raw;
  if (head != 0) (void)::munmap(m, head);
  if (span - head - bytes != 0) {
    (void)::munmap(reinterpret_cast<void*>(start + bytes), span - head - bytes);
  }
  auto* p = reinterpret_cast<std::byte*>(start);
  // Best effort: a kernel without transparent huge pages just ignores the advice.
  (void)::madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

// Large blocks freed by buffers, by address, for reuse by later buffers. A request takes the
// smallest block that holds it and leaves the rest of that block cached (blocks are whole pages
// of their own mappings, so any page-aligned piece can be handed out or unmapped on its own);
// blocks that touch are merged. A request that no block holds takes a new mapping and moves
// cached pages into it (as many as it needs and the cache has), so the process never maps more
// than its buffers have needed at once: cached + live ≤ the peak of live. Mapped pages are
// reused instead of faulted and zeroed by the kernel again.
class BlockCache {
 public:
  struct Taken {
    std::byte* data;
    std::size_t dirty;  // its first `dirty` bytes may hold old data; the rest are zero
  };

  Taken take(std::size_t bytes) {
    std::vector<Block> pieces;  // on a miss: cached pages to move into the new block
    {
      std::lock_guard lock(mutex_);
      auto best = blocks_.end();
      for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
        if (it->second >= bytes && (best == blocks_.end() || it->second < best->second)) best = it;
      }
      if (best != blocks_.end()) {
        std::byte* p = best->first;
        const std::size_t have = best->second;
        blocks_.erase(best);
        if (have > bytes) blocks_.emplace(p + bytes, have - bytes);
        cached_bytes_ -= bytes;
        ++hits_;
        return {p, bytes};
      }
      ++misses_;
      shed(bytes, pieces);
    }
    return {gather(pieces, bytes),
            std::accumulate(pieces.begin(), pieces.end(), std::size_t{0},
                            [](std::size_t n, const Block& b) { return n + b.bytes; })};
  }

  void give(std::byte* p, const std::size_t given) {
    std::vector<Block> dropped;
    {
      std::lock_guard lock(mutex_);
      std::size_t bytes = given;  // with the block it merges with after it
      auto next = blocks_.find(p + bytes);
      if (next != blocks_.end()) {
        bytes += next->second;
        blocks_.erase(next);
      }
      auto it = blocks_.lower_bound(p);
      if (it != blocks_.begin() && std::prev(it)->first + std::prev(it)->second == p) {
        std::prev(it)->second += bytes;
      } else {
        blocks_.emplace(p, bytes);
      }
      cached_bytes_ += given;
      if (cached_bytes_ > kBufferCacheBytes) shed(cached_bytes_ - kBufferCacheBytes, dropped);
    }
    unmap(dropped);
  }

  void release() {
    std::vector<Block> all;
    {
      std::lock_guard lock(mutex_);
      shed(cached_bytes_, all);
    }
    unmap(all);
  }

  BufferCacheStats stats() {
    std::lock_guard lock(mutex_);
    return {.cached_bytes = cached_bytes_, .hits = hits_, .misses = misses_};
  }

 private:
  struct Block {
    std::byte* data;
    std::size_t bytes;
  };

  // Takes min(amount rounded up to whole pages, cached) bytes out of the cache into `out` (to
  // unmap or move outside the lock): the smallest blocks first, the last one cut from its end.
  void shed(std::size_t amount, std::vector<Block>& out) {
    std::vector<std::pair<std::size_t, std::byte*>> by_size;
    by_size.reserve(blocks_.size());
    for (const auto& [p, b] : blocks_) by_size.emplace_back(b, p);
    std::sort(by_size.begin(), by_size.end());
    std::size_t shed_bytes = 0;
    for (const auto& [b, p] : by_size) {
      if (shed_bytes >= amount) break;
      const std::size_t need = amount - shed_bytes;
      const std::size_t whole = (need + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
      if (b <= whole) {
        out.push_back({p, b});
        blocks_.erase(p);
        shed_bytes += b;
      } else {
        out.push_back({p + (b - whole), whole});
        blocks_[p] = b - whole;
        shed_bytes += whole;
      }
    }
    cached_bytes_ -= shed_bytes;
  }

  // A new block of `bytes` whose first pages are `pieces` (together at most `bytes`), moved there
  // by mremap: the pages change address, not content, so neither the kernel nor we zero them.
  static std::byte* gather(const std::vector<Block>& pieces, std::size_t bytes) {
    std::byte* p = map_block(bytes);
    std::size_t at = 0;
    for (const Block& b : pieces) {
      std::byte* to = p + at;
      if (::mremap(b.data, b.bytes, b.bytes, MREMAP_MAYMOVE | MREMAP_FIXED, to) == MAP_FAILED) {
        // Should not happen (page-aligned ranges of our own mappings); fresh pages instead.
        (void)::munmap(b.data, b.bytes);
        if (::mmap(to, b.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                   0) == MAP_FAILED) {
          throw std::bad_alloc();
        }
        (void)::madvise(to, b.bytes, MADV_HUGEPAGE);
      }
      at += b.bytes;
    }
    return p;
  }

  static void unmap(const std::vector<Block>& blocks) {
    for (const Block& b : blocks) (void)::munmap(b.data, b.bytes);
  }

  std::mutex mutex_;
  std::map<std::byte*, std::size_t> blocks_;  // start → bytes; no two touch
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
  const std::size_t dirty = allocate();
  if (data_) std::memset(data_.get(), 0, std::min(dirty, size_bytes()));
}

Buffer::Buffer(DType dtype, Range range, Uninitialized /*tag*/)
    : dtype_(dtype), range_(std::move(range)) {
  require_executable(dtype, "buffer");
  strides_ = dense_strides(range_.shape());
  size_ = range_.size();
  (void)allocate();
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

std::size_t Buffer::allocate() {
  // Checked: the byte count of a huge range must not wrap.
  const std::int64_t bytes =
      zspace::checked_mul(size_, static_cast<std::int64_t>(element_size(dtype_)));
  if (bytes == 0) {
    data_.reset();
    return 0;
  }
  const auto size = static_cast<std::size_t>(bytes);
  if (size < kHugeBufferBytes) {
    data_ = std::unique_ptr<std::byte[], AlignedFree>(
        static_cast<std::byte*>(::operator new[](size, kAlignment)),
        AlignedFree{static_cast<std::size_t>(kAlignment), size});
    return size;
  }
  // Whole huge pages, from the cache when it holds a block that large.
  const std::size_t whole = (size + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const BlockCache::Taken taken = block_cache().take(whole);
  data_ = std::unique_ptr<std::byte[], AlignedFree>(taken.data, AlignedFree{kHugePageBytes, whole});
  return taken.dirty;
}

template <StorageElement T>
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
template Buffer Buffer::from_values<BFloat16>(Range, std::span<const BFloat16>);
template Buffer Buffer::from_values<Float16>(Range, std::span<const Float16>);

Buffer::Buffer(const Buffer& other)
    : dtype_(other.dtype_), range_(other.range_), strides_(other.strides_), size_(other.size_) {
  (void)allocate();
  if (data_) std::memcpy(data_.get(), other.data_.get(), size_bytes());
}

Buffer& Buffer::operator=(const Buffer& other) {
  if (this != &other) *this = Buffer(other);
  return *this;
}

std::size_t Buffer::size_bytes() const {
  return static_cast<std::size_t>(size_) * element_size(dtype_);
}

template <StorageElement T>
std::span<T> Buffer::values() {
  if (dtype_ != dtype_of<T>) (void)view().typed<T>();  // throws the dtype-mismatch Error
  return {reinterpret_cast<T*>(data_.get()), static_cast<std::size_t>(size_)};
}

template <StorageElement T>
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
template std::span<BFloat16> Buffer::values<BFloat16>();
template std::span<Float16> Buffer::values<Float16>();
template std::span<const BFloat16> Buffer::values<BFloat16>() const;
template std::span<const Float16> Buffer::values<Float16>() const;

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

// Calls row(from_row, to_row, n) for every row (run along the last dim) of the two boxes.
template <typename From, typename To, typename Row>
void for_each_row(const TypedView<const From>& from, const TypedView<To>& to, Row&& row) {
  const std::size_t rank = from.rank();
  if (from.box().is_empty()) return;
  if (rank == 0) {
    row(from.origin(), to.origin(), std::int64_t{1}, std::int64_t{1}, std::int64_t{1});
    return;
  }
  const Point shape = from.box().shape();
  const std::int64_t n = shape[rank - 1];
  std::vector<std::int64_t> at(rank, 0);
  while (true) {
    std::int64_t f = 0;
    std::int64_t t = 0;
    for (std::size_t d = 0; d + 1 < rank; ++d) {
      f += at[d] * from.stride(d);
      t += at[d] * to.stride(d);
    }
    row(from.origin() + f, to.origin() + t, n, from.stride(rank - 1), to.stride(rank - 1));
    // The next row: count up the outer dims like an odometer; done when dim 0 wraps.
    std::size_t d = rank - 1;
    while (true) {
      if (d == 0) return;
      --d;
      if (++at[d] < shape[d]) break;
      at[d] = 0;
    }
  }
}

// One float element converted: a 16-bit source widens exactly, a 16-bit target rounds once —
// from float64 directly (storage_cast), from float32 (or a 16-bit value, exact in it) by the
// float32 routine, the widening wrapper's hot path.
template <typename To, typename From>
To convert_one(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (is_half_float_v<To> && std::is_same_v<From, double>) {
    return storage_cast<To>(value);
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return to_bfloat16(static_cast<float>(value));
  } else if constexpr (std::is_same_v<To, Float16>) {
    return to_float16(static_cast<float>(value));
  } else if constexpr (is_half_float_v<From>) {
    return static_cast<To>(static_cast<float>(value));
  } else {
    return static_cast<To>(value);
  }
}

}  // namespace

// A row at a time (for_each_row): one memcpy per row where both run along contiguous memory —
// the oracle assembles a chain's blocks into whole tensors this way, megabytes a call.
void copy_elements(const ConstView& from, const View& to) {
  if (from.dtype() != to.dtype() || from.box().shape() != to.box().shape()) {
    throw Error(fmt::format("cannot copy {} {} into {} {}", ir::dtype_name(from.dtype()),
                            from.box(), ir::dtype_name(to.dtype()), to.box()));
  }
  visit_storage_dtype(from.dtype(), [&]<typename T>() {
    for_each_row(from.typed<T>(), to.typed<T>(),
                 [](const T* f, T* t, std::int64_t n, std::int64_t fs, std::int64_t ts) {
                   if (fs == 1 && ts == 1) {
                     std::memcpy(t, f, static_cast<std::size_t>(n) * sizeof(T));
                   } else {
                     for (std::int64_t i = 0; i < n; ++i) t[i * ts] = f[i * fs];
                   }
                 });
  });
}

void convert_elements(const ConstView& from, const View& to) {
  if (!ir::is_float(from.dtype()) || !ir::is_float(to.dtype()) ||
      from.box().shape() != to.box().shape()) {
    throw Error(fmt::format("cannot convert {} {} into {} {}", ir::dtype_name(from.dtype()),
                            from.box(), ir::dtype_name(to.dtype()), to.box()));
  }
  visit_storage_dtype(from.dtype(), [&]<typename From>() {
    if constexpr (is_float_element_v<From>) {
      visit_storage_dtype(to.dtype(), [&]<typename To>() {
        if constexpr (is_float_element_v<To>) {
          for_each_row(from.typed<From>(), to.typed<To>(),
                       [](const From* f, To* t, std::int64_t n, std::int64_t fs, std::int64_t ts) {
                         if (fs == 1 && ts == 1) {
                           for (std::int64_t i = 0; i < n; ++i) t[i] = convert_one<To>(f[i]);
                         } else {
                           for (std::int64_t i = 0; i < n; ++i) {
                             t[i * ts] = convert_one<To>(f[i * fs]);
                           }
                         }
                       });
        }
      });
    }
  });
}

void fill(const View& to, double value) {
  visit_storage_dtype(to.dtype(), [&]<typename T>() {
    const TypedView<T> typed = to.typed<T>();
    const T converted = storage_cast<T>(value);
    for (const Point& p : to.box().points()) typed[p] = converted;
  });
}

}  // namespace tapestry::runtime
