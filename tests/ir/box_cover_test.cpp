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

}  // namespace
}  // namespace tapestry::ir
