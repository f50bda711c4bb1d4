#include "tapestry/runtime/buffer.h"

#include <vector>

#include <gtest/gtest.h>

#include "tapestry/zspace/format.h"

namespace tapestry::runtime {
namespace {

TEST(Buffer, AddressedInItsOwnCoordinates) {
  Buffer x = Buffer::from_values<float>(Range({-1, 0}, {1, 3}), {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(x.dtype(), DType::kFloat32);
  EXPECT_EQ(x.size(), 6);
  EXPECT_EQ(x.size_bytes(), 24u);
  EXPECT_EQ(x.strides(), (Point{3, 1}));
  EXPECT_EQ(x.at<float>(Point{-1, 0}), 1.0f);
  EXPECT_EQ(x.at<float>(Point{0, 2}), 6.0f);
  EXPECT_EQ(x.describe(), "float32 zr[-1:1, 0:3]");
}

TEST(Buffer, ZeroFilledAndAligned) {
  Buffer x(DType::kInt64, Range({-40, 20}, {-37, 25}));
  for (std::int64_t v : x.values<std::int64_t>()) EXPECT_EQ(v, 0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(x.bytes()) % 64, 0u);
}

TEST(Buffer, ZeroDimensionalHoldsOneElement) {
  Buffer s = Buffer::from_values<double>(Range(), {2.5});
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s.at<double>(Point{}), 2.5);
  Buffer d;
  EXPECT_EQ(d.size(), 1);
}

TEST(Buffer, EmptyRangeHasNoStorage) {
  Buffer e(DType::kFloat64, Range({0, 3}, {4, 3}));
  EXPECT_EQ(e.size(), 0);
  EXPECT_EQ(e.bytes(), nullptr);
  Buffer copy = e;
  EXPECT_EQ(copy.range(), e.range());
}

TEST(Buffer, CopiesDeeply) {
  Buffer a = Buffer::from_values<std::int32_t>(Range::of_shape({3}), {1, 2, 3});
  Buffer b = a;
  b.values<std::int32_t>()[0] = 9;
  EXPECT_EQ(a.at<std::int32_t>(Point{0}), 1);
  EXPECT_EQ(b.at<std::int32_t>(Point{0}), 9);
  a = b;
  EXPECT_EQ(a.at<std::int32_t>(Point{0}), 9);
}

TEST(Buffer, RelocatedKeepsValues) {
  Buffer a = Buffer::from_values<float>(Range::of_shape({2, 2}), {1, 2, 3, 4});
  Buffer b = a.relocated(Point{-5, 7});
  EXPECT_EQ(b.range(), Range({-5, 7}, {-3, 9}));
  EXPECT_EQ(b.at<float>(Point{-4, 8}), 4.0f);
  EXPECT_THROW((void)a.relocated(Point{1}), Error);
}

TEST(Buffer, Errors) {
  EXPECT_THROW(Buffer(DType::kBFloat16, Range::of_shape({2})), Error);
  EXPECT_THROW(Buffer::from_values<float>(Range::of_shape({2}), {1.0f}), Error);
  Buffer a(DType::kFloat32, Range::of_shape({2}));
  EXPECT_THROW((void)a.values<double>(), Error);
  EXPECT_THROW((void)a.view(Range({0}, {3})), Error);
  // A byte count beyond int64 is an error, not a wrap.
  EXPECT_THROW(Buffer(DType::kFloat64, Range::of_shape({1ll << 40, 1ll << 40})), Error);
}

TEST(Buffer, BorrowsCallerStorageWithoutCopyingOrFreeing) {
  std::vector<float> storage = {1, 2, 3, 4, 5, 6};
  Buffer b = Buffer::borrow(DType::kFloat32, Range({-1, 0}, {1, 3}),
                            reinterpret_cast<std::byte*>(storage.data()));
  EXPECT_TRUE(b.is_borrowed());
  EXPECT_EQ(b.bytes(), reinterpret_cast<std::byte*>(storage.data()));
  EXPECT_EQ(b.at<float>(Point{0, 2}), 6.0f);
  storage[5] = 7;  // the buffer reads the caller's memory, not a snapshot
  EXPECT_EQ(b.at<float>(Point{0, 2}), 7.0f);
  // Moving and relocating keep borrowing; a copy owns its elements.
  Buffer moved = std::move(b).relocated(Point{0, 0});
  EXPECT_TRUE(moved.is_borrowed());
  EXPECT_EQ(moved.bytes(), reinterpret_cast<std::byte*>(storage.data()));
  Buffer copy = moved;
  EXPECT_FALSE(copy.is_borrowed());
  EXPECT_NE(copy.bytes(), moved.bytes());
  EXPECT_EQ(copy.at<float>(Point{1, 2}), 7.0f);
  EXPECT_FALSE(Buffer(DType::kFloat32, Range::of_shape({2})).is_borrowed());
  // Destroying `moved` must not free the vector's storage (ASan would report a bad free).
}

TEST(Buffer, BorrowChecksItsDtypeAndSize) {
  std::vector<double> storage(4);
  auto* data = reinterpret_cast<std::byte*>(storage.data());
  EXPECT_THROW((void)Buffer::borrow(DType::kBFloat16, Range::of_shape({4}), data), Error);
  EXPECT_THROW((void)Buffer::borrow(DType::kFloat64, Range::of_shape({1ll << 40, 1ll << 40}), data),
               Error);
  const Buffer empty = Buffer::borrow(DType::kFloat64, Range({0, 3}, {4, 3}), data);
  EXPECT_EQ(empty.bytes(), nullptr);
}

TEST(Buffer, CopyElementsBetweenCoordinateSystems) {
  Buffer from = Buffer::from_values<float>(Range({10, 10}, {12, 12}), {1, 2, 3, 4});
  Buffer to(DType::kFloat32, Range({-1, -1}, {2, 2}));
  copy_elements(from.view(), to.view(Range({0, 0}, {2, 2})));
  EXPECT_EQ(to.at<float>(Point{0, 0}), 1.0f);
  EXPECT_EQ(to.at<float>(Point{1, 1}), 4.0f);
  EXPECT_EQ(to.at<float>(Point{-1, -1}), 0.0f);
  EXPECT_THROW(copy_elements(from.view(), to.view()), Error);  // shape differs
  fill(to.view(Range({-1, -1}, {0, 2})), 7);
  EXPECT_EQ(to.at<float>(Point{-1, 1}), 7.0f);
}

TEST(Buffer, DenseStrides) {
  EXPECT_EQ(dense_strides(Point{2, 3, 4}), (Point{12, 4, 1}));
  EXPECT_EQ(dense_strides(Point{}), Point{});
  EXPECT_EQ(dense_strides(Point{5, 0, 2}), (Point{0, 2, 1}));
}

}  // namespace
}  // namespace tapestry::runtime

namespace tapestry::runtime {
namespace {

// Buffers of 4 MiB and more take the huge-page path (2 MiB alignment + madvise): same contract.
TEST(Buffer, LargeBuffersAreAlignedZeroedCopiedAndRelocated) {
  Buffer big(DType::kFloat32, Range({-3, 0}, {1021, 1024}));  // 4 MiB
  ASSERT_EQ(big.size_bytes(), std::size_t{4} << 20);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big.bytes()) % (std::uintptr_t{2} << 20), 0u);
  for (float v : big.values<float>()) ASSERT_EQ(v, 0.0F);
  big.values<float>().back() = 7.0F;
  const Buffer copy = big;
  EXPECT_EQ(copy.at<float>(Point{1020, 1023}), 7.0F);
  const Buffer moved = std::move(big).relocated(Point{0, 0});
  EXPECT_EQ(moved.at<float>(Point{1023, 1023}), 7.0F);
  const Buffer raw(DType::kFloat64, Range::of_shape({1024, 1024}), Buffer::Uninitialized{});
  EXPECT_EQ(raw.size_bytes(), std::size_t{8} << 20);
}

// A large buffer's storage goes back to the cache and the next buffer of the same rounded size
// takes it; the zero-filling constructor still hands out zeros, whatever the block held.
TEST(Buffer, LargeStorageIsReusedAndStillZeroFilled) {
  release_buffer_cache();
  const std::byte* first = nullptr;
  {
    Buffer a(DType::kFloat32, Range::of_shape({1024, 1536}));  // 6 MiB: three huge pages
    first = a.bytes();
    for (float& v : a.values<float>()) v = 3.0F;
  }
  EXPECT_EQ(buffer_cache_stats().cached_bytes, std::size_t{6} << 20);
  const std::size_t hits = buffer_cache_stats().hits;
  Buffer b(DType::kFloat32, Range::of_shape({1536, 1000}));  // 5.9 MiB: also three pages
  EXPECT_EQ(b.bytes(), first);
  EXPECT_EQ(buffer_cache_stats().hits, hits + 1);
  EXPECT_EQ(buffer_cache_stats().cached_bytes, 0u);
  for (float v : b.values<float>()) ASSERT_EQ(v, 0.0F);
  // A different rounded size does not take it.
  Buffer c(DType::kFloat32, Range::of_shape({1024, 2048}));  // 8 MiB
  EXPECT_NE(c.bytes(), first);
  release_buffer_cache();
  EXPECT_EQ(buffer_cache_stats().cached_bytes, 0u);
}

// The cache holds at most kBufferCacheBytes: the oldest blocks are freed first.
TEST(Buffer, CacheIsBounded) {
  release_buffer_cache();
  {
    std::vector<Buffer> many;
    const std::int64_t rows = static_cast<std::int64_t>(kBufferCacheBytes / (64 << 20)) + 2;
    for (std::int64_t i = 0; i < rows; ++i) {
      many.emplace_back(DType::kFloat32, Range::of_shape({16, 1 << 20}), Buffer::Uninitialized{});
    }
  }
  EXPECT_LE(buffer_cache_stats().cached_bytes, kBufferCacheBytes);
  EXPECT_GE(buffer_cache_stats().cached_bytes, kBufferCacheBytes - (std::size_t{64} << 20));
  release_buffer_cache();
}

}  // namespace
}  // namespace tapestry::runtime
