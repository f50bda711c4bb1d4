// AffineMap: the acceptance vectors A1–A5, composition, permutation checks, printing, and
// overflow with large coefficients.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "tapestry/zspace/affine_map.h"
#include "tapestry/zspace/json.h"
#include "zspace/zspace_testing.h"

namespace tapestry::zspace {
namespace {

using ::testing::ElementsAre;
using testing::Fails;
using testing::FailsWith;
using testing::map;
using testing::Rows;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

using Perm = std::vector<std::size_t>;

// The map of the acceptance vectors: A = [[1,0],[0,2],[1,2]], b = (4,5,6).
AffineMap vector_map() {
  return map({{1, 0}, {0, 2}, {1, 2}}, {4, 5, 6});
}

TEST(AffineMap, Accessors) {
  AffineMap m = vector_map();
  EXPECT_EQ(m.in_rank(), 2u);
  EXPECT_EQ(m.out_rank(), 3u);
  EXPECT_EQ(m.at(2, 1), 2);
  EXPECT_EQ(m.offset(), (Point{4, 5, 6}));
  EXPECT_THAT(m.row(1), ElementsAre(0, 2));
  EXPECT_EQ(m.rows(), (Rows{{1, 0}, {0, 2}, {1, 2}}));
  EXPECT_FALSE(m.is_zero_column(0));
  EXPECT_TRUE(map({{1, 0}, {2, 0}}, {0, 0}).is_zero_column(1));
}

TEST(AffineMap, RowMajorConstructorMatchesFromRows) {
  std::vector<std::int64_t> entries{1, 0, 0, 2, 1, 2};
  EXPECT_EQ(AffineMap(2, entries, Point{4, 5, 6}), vector_map());
}

// A1
TEST(AffineMap, ApplyAndJson) {
  EXPECT_EQ(vector_map().apply(Point{1, 1}), (Point{5, 7, 9}));
  EXPECT_EQ(to_json(vector_map()),
            nlohmann::json::parse(R"({"projection":[[1,0],[0,2],[1,2]],"offset":[4,5,6]})"));
}

// A2
TEST(AffineMap, PermuteInputsReordersColumns) {
  EXPECT_EQ(vector_map().permute_inputs(Perm{1, 0}), map({{0, 1}, {2, 0}, {2, 1}}, {4, 5, 6}));
}

// A3
TEST(AffineMap, PermuteOutputsReordersRowsAndOffset) {
  EXPECT_EQ(vector_map().permute_outputs(Perm{1, 0, 2}), map({{0, 2}, {1, 0}, {1, 2}}, {5, 4, 6}));
}

// A4
TEST(AffineMap, TranslateAddsToTheOffset) {
  EXPECT_EQ(vector_map().translate(Point{1, 2, 3}), map({{1, 0}, {0, 2}, {1, 2}}, {5, 7, 9}));
}

// A5
TEST(AffineMap, ApplyWithWrongRankNamesBothCounts) {
  EXPECT_THAT(
      [] {
        (void)vector_map().apply(Point{1, 1, 1});
      },
      FailsWith({"3 inputs given, 2 expected"}));
}

TEST(AffineMap, PermutationsAreChecked) {
  EXPECT_THAT([] { (void)vector_map().permute_inputs(Perm{0, 0}); }, FailsWith({"permutation"}));
  EXPECT_THAT([] { (void)vector_map().permute_outputs(Perm{1, 0}); }, Fails());
  EXPECT_THAT([] { (void)vector_map().permute_outputs(Perm{2, 2, 0}); }, Fails());
  EXPECT_THAT([] { (void)vector_map().translate(Point{1, 2}); }, Fails());
}

TEST(AffineMap, NamedConstructors) {
  EXPECT_EQ(AffineMap::identity(2), map({{1, 0}, {0, 1}}, {0, 0}));
  EXPECT_EQ(AffineMap::zero(1, 3), map({{0, 0, 0}}, {0}));
  EXPECT_EQ(AffineMap::identity(3).apply(Point{7, -8, 9}), (Point{7, -8, 9}));
  EXPECT_EQ(AffineMap(), AffineMap::identity(0));
  EXPECT_EQ(AffineMap().apply(Point()), Point());
}

TEST(AffineMap, MapsWithoutRowsKeepTheirInputRank) {
  AffineMap to_scalar = map({}, Point(), 3);
  EXPECT_EQ(to_scalar.in_rank(), 3u);
  EXPECT_EQ(to_scalar.out_rank(), 0u);
  EXPECT_EQ(to_scalar.apply(Point{1, 2, 3}), Point());
  EXPECT_EQ(AffineMap::zero(0, 3), to_scalar);
  EXPECT_NE(to_scalar, AffineMap());
}

TEST(AffineMap, RaggedRowsAndOffsetRankAreErrors) {
  EXPECT_THAT([] { (void)map({{1, 0}, {1}}, {0, 0}); }, Fails());
  EXPECT_THAT([] { (void)map({{1, 0}, {0, 1}}, {0}); }, Fails());
  std::vector<std::int64_t> five{1, 2, 3, 4, 5};
  EXPECT_THAT([&] { AffineMap(2, five, Point{0, 0, 0}); }, Fails());
}

// f = [[1, 1]] + (0), g = [[2],[3]] + (1, 0): f ∘ g = [[5]] + (1), so 2 ↦ 11 (header example).
TEST(AffineMap, ComposeIsFAfterG) {
  AffineMap f = map({{1, 1}}, {0});
  AffineMap g = map({{2}, {3}}, {1, 0});
  EXPECT_EQ(f.compose(g), map({{5}}, {1}));
  EXPECT_EQ(f.compose(g).apply(Point{2}), (Point{11}));
  EXPECT_EQ(g.compose(f), map({{2, 2}, {3, 3}}, {1, 0}));
  EXPECT_EQ(vector_map().compose(AffineMap::identity(2)), vector_map());
  EXPECT_EQ(AffineMap::identity(3).compose(vector_map()), vector_map());
  EXPECT_THAT([&] { (void)f.compose(f); }, Fails());
}

TEST(AffineMap, ToString) {
  EXPECT_EQ(map({{1, 0}, {0, 2}}, {4, 5}).to_string(), "[[1, 0], [0, 2]] + (4, 5)");
}

TEST(AffineMap, LargeCoefficientsOverflowToAnError) {
  AffineMap big = map({{kMax / 2 + 1}}, {0});
  EXPECT_EQ(big.apply(Point{1}), (Point{kMax / 2 + 1}));
  EXPECT_THAT([&] { (void)big.apply(Point{2}); }, FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)map({{kMax, kMax}}, {0}).apply(Point{1, 1}); }, FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)map({{1}}, {kMax}).apply(Point{1}); }, FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)map({{-1}}, {0}).apply(Point{kMin}); }, FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)map({{1}}, {kMax}).translate(Point{1}); }, FailsWith({"overflow"}));
  AffineMap f = map({{1LL << 40}}, {0});
  EXPECT_THAT([&] { (void)f.compose(f); }, FailsWith({"overflow"}));
}

TEST(AffineMap, StackPutsOutputsOnTop) {
  AffineMap top = map({{1, 0}}, {3});
  AffineMap below = map({{0, 2}}, {4});
  EXPECT_EQ(top.stack(below), map({{1, 0}, {0, 2}}, {3, 4}));
  EXPECT_EQ(top.stack(below).apply(Point{5, 6}), (Point{8, 16}));
  EXPECT_THAT([&] { (void)top.stack(map({{1}}, {0})); }, FailsWith({"stack", "input ranks"}));
}

}  // namespace
}  // namespace tapestry::zspace
