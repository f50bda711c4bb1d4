// Range: the acceptance vectors R1–R20 (table-driven where natural), their error messages, and
// overflow near the int64 limits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "tapestry/zspace/checked.h"
#include "tapestry/zspace/json.h"
#include "tapestry/zspace/range.h"
#include "zspace/zspace_testing.h"

namespace tapestry::zspace {
namespace {

using ::testing::ElementsAre;
using testing::Fails;
using testing::FailsWith;
using testing::points_of;
using testing::zr;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

using Perm = std::vector<std::size_t>;
using Sizes = std::vector<std::int64_t>;

// R1
TEST(Range, PrintsJsonShapeSize) {
  Range r(Point{2, 3}, Point{4, 5});
  EXPECT_EQ(r.to_string(), "zr[2:4, 3:5]");
  EXPECT_EQ(to_json(r), nlohmann::json::parse(R"({"start":[2,3],"end":[4,5]})"));
  EXPECT_EQ(r.shape(), (Point{2, 2}));
  EXPECT_EQ(r.size(), 4);
  EXPECT_EQ(r.rank(), 2u);
  EXPECT_EQ(r.extent(0), 2);
  EXPECT_FALSE(r.is_empty());
  EXPECT_EQ(zr("[2:4, 3:5]"), r);
}

// R2
TEST(Range, ZeroDimensionalRangeHasOnePoint) {
  Range r = zr("[]");
  EXPECT_EQ(r, Range());
  EXPECT_EQ(r.to_string(), "zr[]");
  EXPECT_EQ(r.size(), 1);
  EXPECT_FALSE(r.is_empty());
  EXPECT_TRUE(r.contains(r));
  EXPECT_TRUE(r.contains(Point()));
  EXPECT_THAT(points_of(r), ElementsAre(Point()));
  EXPECT_EQ(r.inclusive_end(), Point());
}

// R3
TEST(Range, StartAfterEndNamesBothPoints) {
  EXPECT_THAT([] { Range(Point{1, 1}, Point{0, 1}); }, FailsWith({"(1, 1)", "(0, 1)"}));
}

// R4
TEST(Range, RankMismatchNamesBothRanks) {
  EXPECT_THAT([] { Range(Point{1, 2, 3}, Point{4, 5}); }, FailsWith({"rank", "3", "2"}));
}

// R5
TEST(Range, NamedConstructors) {
  EXPECT_EQ(Range::of_shape(Point{2, 3}), zr("[0:2, 0:3]"));
  EXPECT_EQ(Range::of_start_shape(Point{10, 10}, Point{2, 3}), zr("[10:12, 10:13]"));
  EXPECT_EQ(Range::of_shape(Point()), Range());
  EXPECT_THAT([] { (void)Range::of_shape(Point{2, -1}); }, Fails());
}

// R6
TEST(Range, IteratesRowMajorLastDimensionFastest) {
  EXPECT_THAT(points_of(zr("[2:4, 3:5]")),
              ElementsAre(Point{2, 3}, Point{2, 4}, Point{3, 3}, Point{3, 4}));
  EXPECT_THAT(points_of(Range::of_shape(Point{0, 0})), ElementsAre());
  EXPECT_THAT(points_of(zr("[0:3, 5:5]")), ElementsAre());
  EXPECT_THAT(points_of(zr("[-1:1]")), ElementsAre(Point{-1}, Point{0}));
  EXPECT_EQ(points_of(zr("[0:2, 0:3, 0:4]")).size(), 24u);
}

TEST(Range, IteratorIsAForwardIterator) {
  Range r = zr("[0:2, 0:2]");
  PointRangeView points = r.points();
  PointIterator it = points.begin();
  PointIterator copy = it++;
  EXPECT_EQ(*copy, (Point{0, 0}));
  EXPECT_EQ(*it, (Point{0, 1}));
  EXPECT_EQ(it->rank(), 2u);
  EXPECT_NE(it, points.begin());
  EXPECT_EQ(std::distance(points.begin(), points.end()), 4);
}

// R7
TEST(Range, InclusiveEnd) {
  EXPECT_EQ(zr("[2:4, 3:5]").inclusive_end(), (Point{3, 4}));
  EXPECT_THAT([] { (void)zr("[2:2, 3:3]").inclusive_end(); }, FailsWith({"empty"}));
}

struct ContainsRangeCase {
  const char* inner;
  bool expected;
};

// R8, R9
TEST(Range, ContainsRange) {
  Range r = zr("[0:2, 0:3]");
  const ContainsRangeCase cases[] = {
      {"[0:2, 0:3]", true},    {"[2:2, 3:3]", true},   {"[1:2, 2:3]", true},
      {"[-1:-1, 0:0]", false}, {"[0:1, -1:1]", false}, {"[0:3, 0:1]", false},
  };
  for (const auto& c : cases) EXPECT_EQ(r.contains(zr(c.inner)), c.expected) << c.inner;
}

// R10 (fix: Java says (2, 1) is inside — the end face is exclusive).
TEST(Range, ContainsPointEndFaceIsExclusive) {
  Range r = zr("[0:2, 0:3]");
  EXPECT_TRUE(r.contains(Point{1, 1}));
  EXPECT_FALSE(r.contains(Point{-2, 1}));
  EXPECT_FALSE(r.contains(Point{2, 3}));
  EXPECT_FALSE(r.contains(Point{2, 1}));
  EXPECT_TRUE(r.contains(Point{0, 0}));
  EXPECT_TRUE(r.contains(Point{1, 2}));
  EXPECT_FALSE(zr("[0:0, 0:3]").contains(Point{0, 0}));
}

struct IntersectCase {
  const char* a;
  const char* b;
  std::optional<const char*> expected;
};

// R11–R13
TEST(Range, Intersect) {
  const IntersectCase cases[] = {
      {"[0:2, 0:3]", "[-2:2, 1:5]", "[0:2, 1:3]"},
      {"[0:2, 0:3]", "[-5:-1, -5:-1]", std::nullopt},
      {"[0:2]", "[2:4]", "[2:2]"},
      {"[0:10, 0:10]", "[3:4, 5:6]", "[3:4, 5:6]"},
      {"[]", "[]", "[]"},
  };
  for (const auto& c : cases) {
    std::optional<Range> got = zr(c.a).intersect(zr(c.b));
    std::optional<Range> back = zr(c.b).intersect(zr(c.a));
    EXPECT_EQ(got, back) << c.a << " ∩ " << c.b << " is not symmetric";
    if (c.expected) {
      ASSERT_TRUE(got.has_value()) << c.a << " ∩ " << c.b;
      EXPECT_EQ(*got, zr(*c.expected)) << c.a << " ∩ " << c.b;
    } else {
      EXPECT_FALSE(got.has_value()) << c.a << " ∩ " << c.b << " = " << *got;
    }
  }
}

TEST(Range, OverlapsNeedsASharedPoint) {
  EXPECT_TRUE(zr("[0:2, 0:3]").overlaps(zr("[-2:2, 1:5]")));
  EXPECT_FALSE(zr("[0:2]").overlaps(zr("[2:4]")));
  EXPECT_FALSE(zr("[0:2, 0:3]").overlaps(zr("[-5:-1, -5:-1]")));
  EXPECT_TRUE(Range().overlaps(Range()));
}

TEST(Range, SetOperationsRejectRankMismatch) {
  EXPECT_THAT([] { (void)zr("[0:2]").intersect(zr("[0:2, 0:2]")); }, Fails());
  EXPECT_THAT([] { (void)zr("[0:2]").contains(zr("[0:2, 0:2]")); }, Fails());
  EXPECT_THAT([] { (void)zr("[0:2]").contains(Point{0, 0}); }, Fails());
}

// R14
TEST(Range, Bounding) {
  std::vector<Range> two{zr("[1:4, 2:10, 3:6]"), zr("[2:5, 0:6, 4:7]")};
  EXPECT_EQ(Range::bounding(two), zr("[1:5, 0:10, 3:7]"));
  std::vector<Range> one{zr("[1:4]")};
  EXPECT_EQ(Range::bounding(one), zr("[1:4]"));
  EXPECT_THAT([] { (void)Range::bounding({}); }, FailsWith({"empty"}));
  std::vector<Range> mixed{zr("[1:4]"), zr("[1:4, 0:1]")};
  EXPECT_THAT([&] { (void)Range::bounding(mixed); }, Fails());
}

// R15, R16 (fix: Java throws on the uneven last chunk).
TEST(Range, SplitByChunk) {
  EXPECT_THAT(zr("[0:2, 0:3]").split_by_chunk(1, 2),
              ElementsAre(zr("[0:2, 0:2]"), zr("[0:2, 2:3]")));
  EXPECT_THAT(zr("[0:10]").split_by_chunk(0, 4),
              ElementsAre(zr("[0:4]"), zr("[4:8]"), zr("[8:10]")));
  EXPECT_THAT(zr("[-3:3]").split_by_chunk(0, 3), ElementsAre(zr("[-3:0]"), zr("[0:3]")));
  EXPECT_THAT(zr("[0:10]").split_by_chunk(0, 100), ElementsAre(zr("[0:10]")));
  EXPECT_THAT(zr("[0:2, 3:3]").split_by_chunk(1, 2), ElementsAre(zr("[0:2, 3:3]")));
}

// R17
TEST(Range, SplitBySizesMustSumToTheExtent) {
  EXPECT_THAT(zr("[0:2, 5:9]").split_by_sizes(1, Sizes{1, 3}),
              ElementsAre(zr("[0:2, 5:6]"), zr("[0:2, 6:9]")));
  EXPECT_THAT(zr("[0:4]").split_by_sizes(0, Sizes{0, 4}), ElementsAre(zr("[0:0]"), zr("[0:4]")));
  EXPECT_THAT(
      [] {
        (void)zr("[0:2, 0:3]").split_by_sizes(0, Sizes{1, 3});
      },
      FailsWith({"sizes sum to 4, not 2"}));
  EXPECT_THAT([] { (void)zr("[0:4]").split_by_sizes(0, Sizes{5, -1}); }, FailsWith({"-1"}));
  EXPECT_THAT([] { (void)zr("[0:2, 0:3]").split_by_chunk(0, -2); }, FailsWith({"chunk", "-2"}));
  EXPECT_THAT([] { (void)zr("[0:2, 0:3]").split_by_chunk(0, 0); }, Fails());
}

TEST(Range, SplitEvenPutsLargerPiecesFirst) {
  EXPECT_THAT(zr("[0:10]").split_even(0, 4),
              ElementsAre(zr("[0:3]"), zr("[3:6]"), zr("[6:8]"), zr("[8:10]")));
  EXPECT_THAT(zr("[0:2, 0:3]").split_even(1, 3),
              ElementsAre(zr("[0:2, 0:1]"), zr("[0:2, 1:2]"), zr("[0:2, 2:3]")));
  EXPECT_THAT(zr("[5:6]").split_even(0, 1), ElementsAre(zr("[5:6]")));
  EXPECT_THAT(zr("[5:5]").split_even(0, 1), ElementsAre(zr("[5:5]")));
  EXPECT_THAT([] { (void)zr("[0:3]").split_even(0, 4); }, Fails());
  EXPECT_THAT([] { (void)zr("[0:3]").split_even(0, 0); }, Fails());
  EXPECT_THAT([] { (void)zr("[0:0]").split_even(0, 2); }, Fails());
}

TEST(Range, SplitGridIsRowMajor) {
  EXPECT_THAT(zr("[0:4, 0:3]").split_grid(Sizes{2, 2}),
              ElementsAre(zr("[0:2, 0:2]"), zr("[0:2, 2:3]"), zr("[2:4, 0:2]"), zr("[2:4, 2:3]")));
  EXPECT_THAT(zr("[0:4, 0:3]").split_grid(Sizes{1, 1}), ElementsAre(zr("[0:4, 0:3]")));
  EXPECT_THAT([] { (void)zr("[0:4, 0:3]").split_grid(Sizes{2}); }, Fails());
}

TEST(Range, DimensionArgumentsAreChecked) {
  EXPECT_THAT([] { (void)zr("[0:4, 0:3]").split_by_chunk(2, 1); }, Fails());
  EXPECT_THAT([] { (void)zr("[0:4, 0:3]").split_even(5, 1); }, Fails());
  EXPECT_THAT([] { (void)zr("[0:4, 0:3]").split_by_sizes(2, Sizes{4}); }, Fails());
  EXPECT_THAT([] { (void)zr("[0:4, 0:3]").with_dim(2, 0, 1); }, Fails());
}

// R18 (fix: Java accepts (1, 1, 1)).
TEST(Range, PermuteChecksThePermutation) {
  EXPECT_EQ(zr("[5:8, 6:9, 7:10]").permute(Perm{1, 2, 0}), zr("[6:9, 7:10, 5:8]"));
  EXPECT_EQ(zr("[5:8, 6:9, 7:10]").permute(Perm{0, 1, 2}), zr("[5:8, 6:9, 7:10]"));
  EXPECT_THAT(
      [] {
        (void)zr("[5:8, 6:9, 7:10]").permute(Perm{1, 1, 1});
      },
      FailsWith({"(1, 1, 1)", "not a permutation"}));
  EXPECT_THAT([] { (void)zr("[5:8, 6:9, 7:10]").permute(Perm{0, 1}); }, Fails());
  EXPECT_THAT([] { (void)zr("[5:8, 6:9, 7:10]").permute(Perm{0, 1, 3}); }, Fails());
}

// R19
TEST(Range, CartesianProduct) {
  EXPECT_EQ(zr("[2:5]").product(zr("[10:20, 4:8]")), zr("[2:5, 10:20, 4:8]"));
  EXPECT_EQ(Range().product(zr("[1:2]")), zr("[1:2]"));
  EXPECT_EQ(zr("[1:2]").product(Range()), zr("[1:2]"));
}

// R20 — dimension resolution itself is tested in checked_test; here its use on a range.
TEST(Range, DimensionResolution) {
  Range r = zr("[0:4, 0:3]");
  EXPECT_EQ(r.extent(resolve_dim(-1, r.rank())), 3);
  EXPECT_THAT([&] { (void)resolve_dim(2, r.rank()); },
              FailsWith({"dimension 2", "out of range", "rank 2"}));
}

TEST(Range, TranslateWithDimSlice) {
  EXPECT_EQ(zr("[0:2, 0:3]").translate(Point{10, -1}), zr("[10:12, -1:2]"));
  EXPECT_EQ(zr("[0:2, 0:3]").with_dim(1, 5, 7), zr("[0:2, 5:7]"));
  EXPECT_THAT([] { (void)zr("[0:2, 0:3]").with_dim(1, 7, 5); }, Fails());
  EXPECT_EQ(zr("[0:2, 0:3, 4:5]").slice(1, 3), zr("[0:3, 4:5]"));
  EXPECT_EQ(zr("[0:2, 0:3]").slice(0, 0), Range());
  EXPECT_THAT([] { (void)zr("[0:2]").translate(Point{1, 1}); }, Fails());
}

TEST(Range, EmptyRanges) {
  EXPECT_TRUE(zr("[0:0]").is_empty());
  EXPECT_TRUE(zr("[0:3, 2:2]").is_empty());
  EXPECT_EQ(zr("[0:3, 2:2]").size(), 0);
  EXPECT_NE(zr("[0:0]"), zr("[1:1]"));  // empty ranges keep their corners
}

TEST(Range, OverflowIsAnErrorNotAWrap) {
  Range huge(Point{kMin}, Point{kMax});  // a valid box whose extent does not fit in int64
  EXPECT_THAT([&] { (void)huge.size(); }, FailsWith({"overflow"}));
  EXPECT_THAT([&] { (void)huge.shape(); }, FailsWith({"overflow"}));
  Range cube = Range::of_shape(Point{1LL << 21, 1LL << 21, 1LL << 21});  // 2^63 points
  EXPECT_THAT([&] { (void)cube.size(); }, FailsWith({"overflow"}));
  EXPECT_EQ(Range::of_shape(Point{1LL << 20, 1LL << 20, 1LL << 20}).size(), 1LL << 60);
  EXPECT_THAT([] { (void)Range::of_start_shape(Point{kMax}, Point{1}); }, FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)zr("[0:9223372036854775807]").translate(Point{1}); },
              FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)zr("[-9223372036854775808:0]").translate(Point{-1}); },
              FailsWith({"overflow"}));
  EXPECT_EQ(zr("[-1:9223372036854775806]").translate(Point{1}), zr("[0:9223372036854775807]"));
}

// DISABLED: Range::extent (range.h) subtracts without a check, so for this valid range it is
// signed-overflow UB (UBSan aborts) instead of an Error; split_* call extent(). Enable when
// extent() uses checked_sub.
TEST(Range, ExtentOfAHugeRangeIsAnError) {
  Range huge(Point{kMin}, Point{kMax});
  EXPECT_THAT([&] { (void)huge.extent(0); }, FailsWith({"overflow"}));
  EXPECT_THAT([&] { (void)huge.split_by_chunk(0, 1LL << 62); }, FailsWith({"overflow"}));
  EXPECT_THAT([&] { (void)huge.split_even(0, 2); }, FailsWith({"overflow"}));
}

TEST(Range, WorksUpToTheInt64Limits) {
  Range top(Point{kMax - 2}, Point{kMax});
  EXPECT_THAT(points_of(top), ElementsAre(Point{kMax - 2}, Point{kMax - 1}));
  EXPECT_EQ(top.inclusive_end(), Point{kMax - 1});
  EXPECT_TRUE(top.contains(Point{kMax - 1}));
  EXPECT_FALSE(top.contains(Point{kMax}));
  Range bottom(Point{kMin}, Point{kMin + 2});
  EXPECT_THAT(points_of(bottom), ElementsAre(Point{kMin}, Point{kMin + 1}));
  EXPECT_THAT(top.split_by_chunk(0, kMax), ElementsAre(top));
  EXPECT_THAT(top.split_by_chunk(0, 1), ElementsAre(Range(Point{kMax - 2}, Point{kMax - 1}),
                                                    Range(Point{kMax - 1}, Point{kMax})));
  EXPECT_EQ(top.intersect(bottom), std::nullopt);
  std::vector<Range> both{top, bottom};
  EXPECT_EQ(Range::bounding(both), Range(Point{kMin}, Point{kMax}));
}

}  // namespace
}  // namespace tapestry::zspace
