// InlineVector and the promise built on it: zspace values of rank <= 6 never touch the heap.
//
// This file is its own test binary (zspace_alloc_test) because it replaces the global
// operator new with one that counts calls; `AllocationCounter` reads the count around a block.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <optional>
#include <utility>
#include <vector>

#include "tapestry/zspace/affine_map.h"
#include "tapestry/zspace/index_projection.h"
#include "tapestry/zspace/inline_vector.h"
#include "tapestry/zspace/point.h"
#include "tapestry/zspace/range.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// GCC pairs the inlined operator new with free() and warns; the pair is malloc/free, which is
// right.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  return operator new(size);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace tapestry::zspace {
namespace {

// Counts the operator-new calls made between construction and `count()`.
class AllocationCounter {
 public:
  AllocationCounter() : start_(g_allocations.load()) {}
  [[nodiscard]] long count() const { return g_allocations.load() - start_; }

 private:
  long start_;
};

using Vec = InlineVector<std::int64_t, 4>;

TEST(InlineVector, StaysInlineUpToN) {
  AllocationCounter counter;
  Vec empty;
  Vec four{1, 2, 3, 4};
  Vec filled(3, 7);
  Vec copy = four;
  Vec moved = std::move(copy);
  EXPECT_EQ(counter.count(), 0);
  EXPECT_FALSE(four.is_spilled());
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(filled[2], 7);
  EXPECT_EQ(moved, four);
  EXPECT_EQ(Vec(2).size(), 2u);
  EXPECT_EQ(Vec(2)[1], 0);
}

TEST(InlineVector, SpillsPastNAndCopiesDeeply) {
  Vec five{1, 2, 3, 4, 5};
  EXPECT_TRUE(five.is_spilled());
  Vec copy = five;
  EXPECT_TRUE(copy.is_spilled());
  EXPECT_NE(copy.data(), five.data());
  copy[0] = 9;
  EXPECT_EQ(five[0], 1);
  Vec moved = std::move(copy);
  EXPECT_EQ(moved[0], 9);
  EXPECT_EQ(moved.size(), 5u);
  moved = Vec{1, 2};  // back to inline
  EXPECT_FALSE(moved.is_spilled());
  EXPECT_EQ(moved, (Vec{1, 2}));
  Vec six{1, 2, 3, 4, 5, 6};
  six = five;  // spilled to spilled, smaller
  EXPECT_EQ(six, five);
  five = five;  // self-assignment
  EXPECT_EQ(five.size(), 5u);
}

TEST(InlineVector, SpanAndIteration) {
  Vec v{3, 1, 2};
  std::int64_t sum = 0;
  for (std::int64_t x : v) sum += x;
  EXPECT_EQ(sum, 6);
  EXPECT_EQ(v.span().size(), 3u);
  EXPECT_NE(v, (Vec{3, 1}));
}

TEST(NoHeap, PointsOfRankUpToSix) {
  AllocationCounter counter;
  for (std::size_t rank = 0; rank <= kInlineRank; ++rank) {
    Point p = Point::filled(rank, 3);
    Point q = p + Point::ones(rank);
    Point r = (q - p).scale(q).min(p).max(-p);
    Point copy = r;
    Point moved = std::move(copy);
    (void)moved.product();
    (void)(p <=> q);
  }
  Point p{1, 2, 3, 4, 5, 6};
  std::size_t perm[] = {5, 4, 3, 2, 1, 0};
  Point reversed = p.permute(perm);
  Point joined = Point{1, 2, 3}.concat(Point{4, 5, 6});
  Point sliced = joined.slice(1, 4).with(0, 9);
  EXPECT_EQ(counter.count(), 0);
  EXPECT_EQ(reversed[0], 6);
  EXPECT_EQ(sliced[0], 9);
}

TEST(NoHeap, RangeOperationsOfRankSix) {
  Point lo = Point::filled(6, -2), hi = Point::filled(6, 2);
  AllocationCounter counter;
  Range r(lo, hi);
  Range s = r.translate(Point::ones(6));
  std::optional<Range> both = r.intersect(s);
  bool inside = r.contains(*both) || r.contains(Point::zeros(6)) || r.overlaps(s);
  std::int64_t visited = 0;
  for (const Point& p : r.points()) visited += p[5] == 0 ? 1 : 0;
  Point last = r.inclusive_end();
  std::int64_t size = r.size();
  Range cell = Range::of_start_shape(Point::zeros(6), Point::ones(6)).with_dim(0, 0, 2);
  EXPECT_EQ(counter.count(), 0);
  EXPECT_TRUE(inside);
  EXPECT_EQ(visited, size / 4);
  EXPECT_EQ(last, Point::filled(6, 1));
  EXPECT_EQ(cell.size(), 2);
}

TEST(NoHeap, ProjectionsOfRankSix) {
  std::vector<std::int64_t> entries(36);
  for (std::size_t k = 0; k < 36; ++k) entries[k] = static_cast<std::int64_t>(k % 7) - 3;
  AffineMap m(6, entries, Point::filled(6, 1));
  IndexProjection f(m, Point::filled(6, 3));
  Range index = Range::of_shape(Point{2, 3, 4, 2, 3, 4});
  AllocationCounter counter;
  Range box = f.apply(index);
  Range cell = f.apply(Point::ones(6));
  Point image = m.apply(Point::ones(6));
  AffineMap moved = m.translate(Point::ones(6));
  AffineMap twice = m.compose(m);
  IndexProjection g = f.compose(m).translate(Point::ones(6));
  IndexProjection copy = g;
  EXPECT_EQ(counter.count(), 0);
  EXPECT_TRUE(box.contains(cell));
  EXPECT_EQ(image.rank(), 6u);
  EXPECT_EQ(twice.in_rank(), 6u);
  EXPECT_EQ(copy, g);
  EXPECT_EQ(moved.offset(), Point::filled(6, 2));
}

TEST(NoHeap, RankSevenSpills) {
  AllocationCounter counter;
  Point p = Point::zeros(7);
  EXPECT_GE(counter.count(), 1);
  EXPECT_EQ(p.rank(), 7u);
}

}  // namespace
}  // namespace tapestry::zspace
