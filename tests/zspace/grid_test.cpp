// Grid: the header's worked example, uneven and zero-size dimensions, rank 0, the errors and
// overflow, and every small box against an independent oracle (piece k of n cut into p is
// ⌊(n + p - 1 - k) / p⌋ long, cells are row-major, and they partition the box).
#include "tapestry/zspace/grid.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "zspace/zspace_testing.h"

namespace tapestry::zspace {
namespace {

using ::testing::ElementsAre;
using testing::Fails;
using testing::FailsWith;
using testing::zr;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
using Counts = std::vector<std::int64_t>;

TEST(Grid, WorkedExampleOfTheHeader) {
  const Grid g(zr("[0:10, 0:3]"), Counts{4, 2});
  EXPECT_EQ(g.rank(), 2u);
  EXPECT_EQ(g.count(0), 4);
  EXPECT_EQ(g.count(1), 2);
  EXPECT_THAT(g.cuts(0), ElementsAre(0, 3, 6, 8, 10));
  EXPECT_THAT(g.cuts(1), ElementsAre(0, 2, 3));
  EXPECT_EQ(g.size(), 8u);
  EXPECT_EQ(g.coordinate(5), (Point{2, 1}));
  EXPECT_EQ(g.cell(5), zr("[6:8, 2:3]"));
  EXPECT_EQ(g.cell_at(Counts{3, 0}), zr("[8:10, 0:2]"));
  EXPECT_THAT(g.cells(), ElementsAre(zr("[0:3, 0:2]"), zr("[0:3, 2:3]"), zr("[3:6, 0:2]"),
                                     zr("[3:6, 2:3]"), zr("[6:8, 0:2]"), zr("[6:8, 2:3]"),
                                     zr("[8:10, 0:2]"), zr("[8:10, 2:3]")));
}

TEST(Grid, CutsStartAtTheBoxAndPutLongerPiecesFirst) {
  EXPECT_THAT(Grid(zr("[5:12]"), Counts{3}).cuts(0), ElementsAre(5, 8, 10, 12));  // 3 2 2
  EXPECT_THAT(Grid(zr("[-4:3]"), Counts{7}).cuts(0), ElementsAre(-4, -3, -2, -1, 0, 1, 2, 3));
  EXPECT_THAT(Grid(zr("[0:8]"), Counts{4}).cuts(0), ElementsAre(0, 2, 4, 6, 8));  // even
  EXPECT_THAT(Grid(zr("[0:8]"), Counts{1}).cuts(0), ElementsAre(0, 8));
  EXPECT_THAT(Grid(zr("[0:11]"), Counts{4}).cuts(0), ElementsAre(0, 3, 6, 9, 11));  // 3 3 3 2
}

TEST(Grid, AZeroSizeDimensionIsOneEmptyPiece) {
  const Grid g(zr("[0:4, 2:2]"), Counts{2, 1});
  EXPECT_EQ(g.size(), 2u);
  EXPECT_THAT(g.cuts(1), ElementsAre(2, 2));
  EXPECT_THAT(g.cells(), ElementsAre(zr("[0:2, 2:2]"), zr("[2:4, 2:2]")));
  EXPECT_THAT(
      [] {
        (void)Grid(zr("[0:4, 2:2]"), Counts{2, 2});
      },
      FailsWith({"cannot cut extent 0 of dimension 1 into 2 pieces"}));
}

TEST(Grid, RankZeroHasOneCell) {
  const Grid g(Range{}, Counts{});
  EXPECT_EQ(g.rank(), 0u);
  EXPECT_EQ(g.size(), 1u);
  EXPECT_THAT(g.cells(), ElementsAre(Range{}));
  EXPECT_EQ(Grid().size(), 1u);
  EXPECT_EQ(Grid().cell(0), Range{});
}

TEST(Grid, AssignIsConstructionReusingStorage) {
  Grid g(zr("[0:10]"), Counts{4});
  g.assign(zr("[0:4, 0:3]"), Counts{2, 2});
  EXPECT_EQ(g.rank(), 2u);
  EXPECT_EQ(g.cells(), Grid(zr("[0:4, 0:3]"), Counts{2, 2}).cells());
  EXPECT_THAT([&] { g.assign(zr("[0:3]"), Counts{4}); }, Fails());
  EXPECT_EQ(g.size(), 4u);  // a refused assign leaves the grid as it was
  g.assign(Range{}, Counts{});
  EXPECT_THAT(g.cells(), ElementsAre(Range{}));
}

TEST(Grid, CountsAreChecked) {
  EXPECT_THAT([] { (void)Grid(zr("[0:4, 0:3]"), Counts{2}); },
              FailsWith({"1 counts for a box of rank 2"}));
  EXPECT_THAT([] { (void)Grid(zr("[0:3]"), Counts{4}); },
              FailsWith({"cannot cut extent 3 of dimension 0 into 4 pieces"}));
  EXPECT_THAT([] { (void)Grid(zr("[0:3]"), Counts{0}); }, Fails());
  EXPECT_THAT([] { (void)Grid(zr("[0:3]"), Counts{-1}); }, Fails());
}

TEST(Grid, OverflowIsAnError) {
  // The extent of zr[INT64_MIN:INT64_MAX] is not an int64.
  EXPECT_THAT([] { (void)Grid(Range(Point{kMin}, Point{kMax}), Counts{2}); },
              FailsWith({"overflow"}));
  // 2^32 · 2^32 cells.
  const std::int64_t big = std::int64_t{1} << 32;
  EXPECT_THAT(
      [&] {
        (void)Grid(Range(Point{0, 0}, Point{big, big}), Counts{big, big});
      },
      FailsWith({"overflow"}));
  // Cut points up to the int64 limits do not overflow: the last one is the box's end.
  const Grid top(Range(Point{kMax - 7}, Point{kMax}), Counts{3});
  EXPECT_THAT(top.cuts(0), ElementsAre(kMax - 7, kMax - 4, kMax - 2, kMax));
  const Grid whole(Range(Point{0}, Point{kMax}), Counts{2});  // kMax is odd
  EXPECT_THAT(whole.cuts(0), ElementsAre(0, kMax / 2 + 1, kMax));
  const Grid bottom(Range(Point{kMin}, Point{kMin + 5}), Counts{2});
  EXPECT_THAT(bottom.cuts(0), ElementsAre(kMin, kMin + 3, kMin + 5));
}

// Every box of rank <= 2 with extents 0..5 (starting at -1), every valid count: the oracle.
TEST(Grid, AgreesWithAnIndependentOracle) {
  int checked = 0;
  for (std::int64_t n0 = 0; n0 <= 5; ++n0) {
    for (std::int64_t n1 = 0; n1 <= 5; ++n1) {
      const Range box(Point{-1, 2}, Point{-1 + n0, 2 + n1});
      for (std::int64_t p0 = 1; p0 <= std::max<std::int64_t>(n0, 1); ++p0) {
        for (std::int64_t p1 = 1; p1 <= std::max<std::int64_t>(n1, 1); ++p1) {
          const Grid g(box, Counts{p0, p1});
          ASSERT_EQ(g.size(), static_cast<std::size_t>(p0 * p1));
          // Piece lengths: ⌊(n + p - 1 - k) / p⌋, laid end to end from the box's start.
          std::vector<Range> expected;
          for (std::int64_t a = 0, lo0 = -1; a < p0; ++a) {
            const std::int64_t len0 = (n0 + p0 - 1 - a) / p0;
            for (std::int64_t b = 0, lo1 = 2; b < p1; ++b) {
              const std::int64_t len1 = (n1 + p1 - 1 - b) / p1;
              expected.emplace_back(Point{lo0, lo1}, Point{lo0 + len0, lo1 + len1});
              lo1 += len1;
            }
            lo0 += len0;
          }
          ASSERT_EQ(g.cells(), expected) << box.to_string() << " into " << p0 << "x" << p1;
          std::int64_t points = 0;
          for (std::size_t i = 0; i < g.size(); ++i) {
            ASSERT_EQ(g.cell_at(g.coordinate(i).coords()), g.cell(i));
            ASSERT_TRUE(box.contains(g.cell(i)));
            points += g.cell(i).size();
          }
          ASSERT_EQ(points, box.size());  // with containment and the oracle: a partition
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 200);
}

}  // namespace
}  // namespace tapestry::zspace
