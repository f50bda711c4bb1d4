// Point: construction, element-wise arithmetic, dominance order (vectors P1–P3), permutation,
// printing, and the overflow and rank errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <compare>
#include <cstdint>
#include <limits>
#include <vector>

#include "tapestry/zspace/point.h"
#include "zspace/zspace_testing.h"

namespace tapestry::zspace {
namespace {

using testing::Fails;
using testing::FailsWith;
using testing::zp;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

TEST(Point, ZeroDimensionalPointPrintsEmptyParens) {
  EXPECT_EQ(Point().rank(), 0u);
  EXPECT_EQ(Point().to_string(), "()");
  EXPECT_EQ(Point(), Point{});
}

TEST(Point, ConstructionAndAccess) {
  Point p{2, -3, 4};
  EXPECT_EQ(p.rank(), 3u);
  EXPECT_EQ(p[0], 2);
  EXPECT_EQ(p[1], -3);
  EXPECT_EQ(p[2], 4);
  EXPECT_EQ(p.to_string(), "(2, -3, 4)");
  std::vector<std::int64_t> coords(p.begin(), p.end());
  EXPECT_EQ(coords, (std::vector<std::int64_t>{2, -3, 4}));
  std::vector<std::int64_t> raw{7, 8};
  EXPECT_EQ(Point(std::span<const std::int64_t>(raw)), (Point{7, 8}));
}

TEST(Point, NamedConstructors) {
  EXPECT_EQ(Point::filled(3, 7), (Point{7, 7, 7}));
  EXPECT_EQ(Point::zeros(2), (Point{0, 0}));
  EXPECT_EQ(Point::ones(4), (Point{1, 1, 1, 1}));
  EXPECT_EQ(Point::zeros(0), Point());
}

TEST(Point, ElementWiseArithmetic) {
  EXPECT_EQ((Point{1, 2} + Point{10, 20}), (Point{11, 22}));
  EXPECT_EQ((Point{1, 2} - Point{10, 20}), (Point{-9, -18}));
  EXPECT_EQ(-(Point{1, -2}), (Point{-1, 2}));
  EXPECT_EQ((Point{2, -3}.scale(Point{4, 5})), (Point{8, -15}));
  EXPECT_EQ((Point{1, 5}.min(Point{3, 2})), (Point{1, 2}));
  EXPECT_EQ((Point{1, 5}.max(Point{3, 2})), (Point{3, 5}));
  EXPECT_EQ((Point{2, 3, 4}.product()), 24);
  EXPECT_EQ(Point().product(), 1);
  EXPECT_EQ((Point{2, -3, 4}.sum()), 3);
  EXPECT_EQ(Point().sum(), 0);
}

TEST(Point, WithConcatSlice) {
  EXPECT_EQ((Point{1, 2, 3}.with(1, 9)), (Point{1, 9, 3}));
  EXPECT_EQ((Point{1, 2}.concat(Point{3})), (Point{1, 2, 3}));
  EXPECT_EQ((Point{1, 2}.concat(Point())), (Point{1, 2}));
  EXPECT_EQ((Point{1, 2, 3, 4}.slice(1, 3)), (Point{2, 3}));
  EXPECT_EQ((Point{1, 2}.slice(1, 1)), Point());
}

TEST(Point, PermuteTakesCoordinatePermI) {
  EXPECT_EQ((Point{5, 6, 7}.permute(std::vector<std::size_t>{1, 2, 0})), (Point{6, 7, 5}));
  EXPECT_EQ(Point().permute(std::vector<std::size_t>{}), Point());
}

TEST(Point, PermuteRejectsNonPermutations) {
  Point p{5, 6, 7};
  EXPECT_THAT(
      [&] {
        (void)p.permute(std::vector<std::size_t>{1, 1, 1});
      },
      FailsWith({"permutation"}));
  EXPECT_THAT([&] { (void)p.permute(std::vector<std::size_t>{0, 1}); }, Fails());
  EXPECT_THAT([&] { (void)p.permute(std::vector<std::size_t>{0, 1, 3}); }, Fails());
  EXPECT_THAT([&] { check_permutation(std::vector<std::size_t>{2, 0, 2}, 3); }, Fails());
  EXPECT_NO_THROW(check_permutation(std::vector<std::size_t>{2, 0, 1}, 3));
  EXPECT_NO_THROW(check_permutation(std::vector<std::size_t>{}, 0));
}

TEST(Point, RankMismatchIsAnErrorNamingBothRanks) {
  EXPECT_THAT([] { (void)(Point{1, 2, 3} + Point{1, 2}); }, FailsWith({"3", "2"}));
  EXPECT_THAT([] { (void)(Point{1, 2} - Point{1}); }, Fails());
  EXPECT_THAT([] { (void)(Point{1, 2}.scale(Point{1})); }, Fails());
  EXPECT_THAT([] { (void)(Point{1}.min(Point{1, 2})); }, Fails());
  EXPECT_THAT([] { check_same_rank("operand", 3, 2); }, FailsWith({"operand", "3", "2"}));
  EXPECT_NO_THROW(check_same_rank("operand", 2, 2));
}

// P1–P3: dominance is a partial order.
TEST(Point, DominanceOrderVectors) {
  Point a{0, 0}, b{0, 1}, c{1, 0};
  // P1
  EXPECT_TRUE(a < b);
  EXPECT_TRUE(a <= b);
  EXPECT_FALSE(a > b);
  EXPECT_TRUE(b > a);
  EXPECT_EQ(a <=> b, std::partial_ordering::less);
  // P2
  EXPECT_FALSE(b < c);
  EXPECT_FALSE(b <= c);
  EXPECT_FALSE(b > c);
  EXPECT_FALSE(b >= c);
  EXPECT_EQ(b <=> c, std::partial_ordering::unordered);
  // P3
  EXPECT_EQ(a, (Point{0, 0}));
  EXPECT_EQ(a <=> Point({0, 0}), std::partial_ordering::equivalent);
  EXPECT_TRUE(a <= Point({0, 0}));
  EXPECT_FALSE(a < Point({0, 0}));
}

TEST(Point, DifferentRanksAreUnordered) {
  EXPECT_EQ((Point{0} <=> Point{0, 0}), std::partial_ordering::unordered);
  EXPECT_NE((Point{0}), (Point{0, 0}));
}

TEST(Point, LexLessIsAStrictWeakOrder) {
  EXPECT_TRUE(lex_less(Point{0, 1}, Point{1, 0}));
  EXPECT_FALSE(lex_less(Point{1, 0}, Point{0, 1}));
  EXPECT_FALSE(lex_less(Point{1, 0}, Point{1, 0}));
  EXPECT_TRUE(lex_less(Point{5}, Point{0, 0}));  // shorter rank first
  EXPECT_TRUE(lex_less(Point{-1, 9}, Point{0, -9}));
}

TEST(Point, ParsesWhatItPrints) {
  for (const Point& p : {Point(), Point{0}, Point{-1, 2}, Point{kMin, kMax, 0}}) {
    EXPECT_EQ(zp(p.to_string()), p) << p;
  }
}

TEST(Point, ArithmeticOverflowIsAnError) {
  EXPECT_THAT([] { (void)(Point{kMax} + Point{1}); }, FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)(Point{0, kMin} - Point{0, 1}); }, FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)(-Point{kMin}); }, FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)(Point{kMax / 2 + 1}.scale(Point{2})); }, FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)(Point{1 << 30, 1 << 30, 1 << 30}.product()); }, FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)(Point{kMax, 1}.sum()); }, FailsWith({"overflow"}));
  EXPECT_EQ((Point{kMax, kMin}.sum()), -1);
  EXPECT_EQ((Point{kMin}.scale(Point{1})), (Point{kMin}));
}

}  // namespace
}  // namespace tapestry::zspace
