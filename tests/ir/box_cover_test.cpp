// Exact cover by signed corner counting, checked against a brute-force oracle.
#include "tapestry/ir/box_cover.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "ir_testing.h"

namespace tapestry::ir {
namespace {

using testing::zr;

TEST(BoxCoverTest, Examples) {
  EXPECT_EQ(find_cover_defect(zr("zr[0:10]"), std::vector{zr("zr[0:5]"), zr("zr[5:10]")}),
            std::nullopt);
  auto overlap = find_cover_defect(zr("zr[0:10]"), std::vector{zr("zr[0:6]"), zr("zr[5:10]")});
  ASSERT_TRUE(overlap);
  EXPECT_EQ(overlap->point, zspace::Point{5});
  EXPECT_EQ(overlap->count, 2);
  auto gap = find_cover_defect(zr("zr[0:10]"), std::vector{zr("zr[0:4]"), zr("zr[5:10]")});
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->point, zspace::Point{4});
  EXPECT_EQ(gap->count, 0);
  EXPECT_EQ(
      find_cover_defect(zr("zr[0:4, 0:4]"),
                        std::vector{zr("zr[0:2, 0:4]"), zr("zr[2:4, 0:2]"), zr("zr[2:4, 2:4]")}),
      std::nullopt);
  auto outside = find_cover_defect(zr("zr[0:4]"), std::vector{zr("zr[0:4]"), zr("zr[6:7]")});
  ASSERT_TRUE(outside);
  EXPECT_FALSE(outside->inside);
  EXPECT_EQ(outside->count, 1);
}

TEST(BoxCoverTest, EmptyPartsAndRankZero) {
  EXPECT_EQ(find_cover_defect(zr("zr[0:3]"), std::vector{zr("zr[0:3]"), zr("zr[1:1]")}),
            std::nullopt);
  EXPECT_EQ(find_cover_defect(zspace::Range(), std::vector{zspace::Range()}), std::nullopt);
  EXPECT_EQ(find_cover_defect(zspace::Range(), std::vector<zspace::Range>{})->count, 0);
  EXPECT_EQ(
      find_cover_defect(zspace::Range(), std::vector{zspace::Range(), zspace::Range()})->count, 2);
}

zspace::RangeList packed(std::size_t rank, const std::vector<zspace::Range>& parts) {
  zspace::RangeList list(rank);
  for (const auto& p : parts) list.push_back(p);
  return list;
}

// The grid fast path accepts the grids sharding makes, in any order, with empty parts mixed in.
TEST(BoxCoverTest, GridFastPathAcceptsGrids) {
  const zspace::Range whole = zr("zr[0:10, 3:9]");
  std::vector<zspace::Range> grid = whole.split_grid(std::vector<std::int64_t>{3, 4});
  EXPECT_TRUE(is_exact_grid(whole, packed(2, grid)));
  std::reverse(grid.begin(), grid.end());
  grid.push_back(zr("zr[20:20, 0:1]"));  // empty, even outside: covers nothing
  EXPECT_TRUE(is_exact_grid(whole, packed(2, grid)));
  EXPECT_EQ(find_cover_defect(whole, grid), std::nullopt);
  const zspace::Range cube = zr("zr[0:4, 0:5, 0:6]");
  EXPECT_TRUE(is_exact_grid(cube, packed(3, cube.split_grid(std::vector<std::int64_t>{4, 1, 3}))));
  EXPECT_TRUE(is_exact_grid(whole, packed(2, {whole})));
}

// Parts the fast path must not call an exact grid; the corner method then finds the witness.
TEST(BoxCoverTest, GridFastPathRejectsNonGrids) {
  const zspace::Range whole = zr("zr[0:6, 0:6]");
  const std::vector<zspace::Range> grid = whole.split_grid(std::vector<std::int64_t>{3, 3});
  struct Case {
    const char* what;
    std::vector<zspace::Range> parts;
    std::optional<std::int64_t> count;  // the witness's coverage count; nullopt: exact
  };
  auto with = [&](std::size_t i, zspace::Range replacement) {
    auto parts = grid;
    parts[i] = std::move(replacement);
    return parts;
  };
  auto without = [&](std::size_t i) {
    auto parts = grid;
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(i));
    return parts;
  };
  auto plus = [&](zspace::Range extra) {
    auto parts = grid;
    parts.push_back(std::move(extra));
    return parts;
  };
  const std::vector<Case> cases = {
      {"overlap: a cell grown into its neighbour", with(4, zr("zr[2:4, 2:5]")), 2},
      {"overlap: an axis cell grown", with(1, zr("zr[0:2, 2:5]")), 2},
      {"gap: an inner cell missing", without(4), 0},
      {"gap: the corner cell missing", without(0), 0},
      {"gap: a cell shrunk", with(8, zr("zr[4:6, 4:5]")), 0},
      {"duplicated cell, another missing", with(8, grid[4]), 2},
      {"duplicated cell", plus(grid[4]), 2},
      {"a part outside", plus(zr("zr[6:8, 0:2]")), 1},
      {"an axis part outside", with(2, zr("zr[0:2, 4:7]")), 1},
      {"a cell shifted off the cuts", with(4, zr("zr[3:5, 2:4]")), 0},
      {"a cell grown back from its first cut", with(4, zr("zr[1:4, 2:4]")), 2},
      {"a cell grown back in the second dimension", with(4, zr("zr[2:4, 1:4]")), 2},
      {"a part spanning two cells, one missing", with(4, zr("zr[2:4, 2:6]")), 2},
      {"exact, but no grid", {zr("zr[0:3, 0:6]"), zr("zr[3:6, 0:2]"), zr("zr[3:6, 2:6]")}, {}},
      {"exact, but a grid in one row only",
       {zr("zr[0:3, 0:3]"), zr("zr[0:3, 3:6]"), zr("zr[3:6, 0:6]")},
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_FALSE(is_exact_grid(whole, packed(2, c.parts)));
    std::optional<CoverDefect> defect = find_cover_defect(whole, c.parts);
    ASSERT_EQ(defect.has_value(), c.count.has_value());
    if (defect) {
      EXPECT_EQ(defect->count, *c.count);
    }
  }
  EXPECT_FALSE(is_exact_grid(zr("zr[0:0, 0:4]"), packed(2, {})));  // an empty whole
}

// Coverage counts of every point of a bounding box, by enumeration.
std::map<std::vector<std::int64_t>, int> counts(const std::vector<zspace::Range>& parts) {
  std::map<std::vector<std::int64_t>, int> c;
  for (const auto& p : parts) {
    for (const zspace::Point& q : p.points()) ++c[std::vector<std::int64_t>(q.begin(), q.end())];
  }
  return c;
}

zspace::Range random_box(std::size_t rank, std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> s, e;
  for (std::size_t d = 0; d < rank; ++d) {
    std::int64_t a = *rc::gen::inRange(lo, hi);
    std::int64_t b = *rc::gen::inRange(lo, hi);
    s.push_back(std::min(a, b));
    e.push_back(std::max(a, b) + *rc::gen::inRange<std::int64_t>(0, 2));
  }
  return zspace::Range(zspace::Point(std::span<const std::int64_t>(s)),
                       zspace::Point(std::span<const std::int64_t>(e)));
}

// The witness is right, and "no defect" means exact, against enumeration.
RC_GTEST_PROP(BoxCoverProperty, AgreesWithEnumeration, ()) {
  std::size_t rank = *rc::gen::inRange<std::size_t>(1, 4);
  zspace::Range whole = random_box(rank, 0, 5);
  std::vector<zspace::Range> parts;
  bool grid = *rc::gen::arbitrary<bool>();
  if (grid && !whole.is_empty()) {
    std::vector<std::int64_t> split;
    for (std::size_t d = 0; d < rank; ++d)
      split.push_back(*rc::gen::inRange<std::int64_t>(1, whole.extent(d) + 1));
    parts = whole.split_grid(split);
    if (*rc::gen::arbitrary<bool>() && !parts.empty()) parts.pop_back();  // a gap
    if (*rc::gen::arbitrary<bool>() && !parts.empty())
      parts.push_back(parts.front());  // an overlap
  } else {
    int n = *rc::gen::inRange(0, 5);
    for (int i = 0; i < n; ++i) parts.push_back(random_box(rank, 0, 5));
  }
  auto covered = counts(parts);
  bool exact = true;
  for (const zspace::Point& p : whole.points()) {
    exact = exact && covered[std::vector<std::int64_t>(p.begin(), p.end())] == 1;
  }
  for (const auto& [point, count] : covered) {
    zspace::Point p{std::span<const std::int64_t>(point)};
    exact = exact && (whole.contains(p) || count == 0);
  }
  std::optional<CoverDefect> defect = find_cover_defect(whole, parts);
  RC_ASSERT(defect.has_value() == !exact);
  if (defect) {
    int c = covered[std::vector<std::int64_t>(defect->point.begin(), defect->point.end())];
    RC_ASSERT(c == defect->count);
    RC_ASSERT(whole.contains(defect->point) == defect->inside);
    bool wrong = defect->inside ? c != 1 : c != 0;
    RC_ASSERT(wrong);
  }
}

// The grid fast path never calls an inexact cover exact, and accepts every unmutated grid
// whatever the order of its cells.
RC_GTEST_PROP(BoxCoverProperty, GridFastPathIsSound, ()) {
  const std::size_t rank = *rc::gen::inRange<std::size_t>(1, 4);
  std::vector<std::int64_t> start, end, split;
  for (std::size_t d = 0; d < rank; ++d) {
    start.push_back(*rc::gen::inRange<std::int64_t>(-3, 3));
    end.push_back(start.back() + *rc::gen::inRange<std::int64_t>(1, 7));
    split.push_back(*rc::gen::inRange<std::int64_t>(1, end.back() - start.back() + 1));
  }
  const zspace::Range whole{zspace::Point(std::span<const std::int64_t>(start)),
                            zspace::Point(std::span<const std::int64_t>(end))};
  std::vector<zspace::Range> parts = whole.split_grid(split);
  const int mutations = *rc::gen::inRange(0, 3);
  for (int m = 0; m < mutations; ++m) {
    const std::size_t i = *rc::gen::inRange<std::size_t>(0, parts.size());
    switch (*rc::gen::inRange(0, 4)) {
      case 0:
        parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      case 1:
        parts.push_back(parts[i]);
        break;
      default:
        parts[i] = random_box(rank, -4, 10);
        break;
    }
    if (parts.empty()) break;
  }
  const std::size_t rotate = *rc::gen::inRange<std::size_t>(0, parts.size() + 1);
  std::rotate(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(rotate), parts.end());
  auto covered = counts(parts);
  bool exact = true;
  for (const zspace::Point& p : whole.points()) {
    exact = exact && covered[std::vector<std::int64_t>(p.begin(), p.end())] == 1;
  }
  for (const auto& [point, count] : covered) {
    exact = exact &&
            (whole.contains(zspace::Point(std::span<const std::int64_t>(point))) || count == 0);
  }
  const bool grid = is_exact_grid(whole, packed(rank, parts));
  if (grid) RC_ASSERT(exact);
  if (mutations == 0) RC_ASSERT(grid);
  RC_ASSERT(find_cover_defect(whole, parts).has_value() == !exact);
}

}  // namespace
}  // namespace tapestry::ir
