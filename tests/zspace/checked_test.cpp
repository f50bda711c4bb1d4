// Overflow-checked int64 arithmetic and dimension resolution (vector R20).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "tapestry/zspace/checked.h"
#include "zspace/zspace_testing.h"

namespace tapestry::zspace {
namespace {

using testing::Fails;
using testing::FailsWith;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

TEST(Checked, ExactResultsPassThrough) {
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
  EXPECT_EQ(checked_add(kMin, kMax), -1);
  EXPECT_EQ(checked_sub(kMin + 1, 1), kMin);
  EXPECT_EQ(checked_sub(-1, kMax), kMin);
  EXPECT_EQ(checked_mul(1LL << 20, 1LL << 20), 1LL << 40);
  EXPECT_EQ(checked_mul(kMin, 1), kMin);
  EXPECT_EQ(checked_mul(-(1LL << 31), 1LL << 32), kMin);
  EXPECT_EQ(checked_mul(kMax, 0), 0);
}

TEST(Checked, OverflowNamesTheOperationAndOperands) {
  EXPECT_THAT([] { (void)checked_add(kMax, 1); },
              FailsWith({"int64 overflow: 9223372036854775807 + 1"}));
  EXPECT_THAT([] { (void)checked_sub(kMin, 1); },
              FailsWith({"overflow", "-9223372036854775808", "-", "1"}));
  EXPECT_THAT([] { (void)checked_mul(kMin, -1); }, FailsWith({"overflow", "*"}));
  EXPECT_THAT([] { (void)checked_mul(1LL << 32, 1LL << 31); }, FailsWith({"overflow"}));
  EXPECT_THAT([] { (void)checked_add(kMin, -1); }, Fails());
  EXPECT_THAT([] { (void)checked_sub(kMax, -1); }, Fails());
}

struct DimCase {
  std::int64_t dim;
  std::size_t rank;
  std::size_t expected;
};

// R20
TEST(ResolveDim, NegativeDimsCountFromTheEnd) {
  const DimCase cases[] = {{-1, 2, 1}, {-2, 2, 0}, {0, 2, 0}, {1, 2, 1}, {-6, 6, 0}, {5, 6, 5}};
  for (const DimCase& c : cases) {
    EXPECT_EQ(resolve_dim(c.dim, c.rank), c.expected) << c.dim << " of rank " << c.rank;
  }
}

TEST(ResolveDim, OutOfRangeNamesDimAndRank) {
  EXPECT_THAT([] { (void)resolve_dim(2, 2); }, FailsWith({"dimension 2", "rank 2"}));
  EXPECT_THAT([] { (void)resolve_dim(-3, 2); }, FailsWith({"dimension -3", "rank 2"}));
  EXPECT_THAT([] { (void)resolve_dim(0, 0); }, Fails());
  EXPECT_THAT([] { (void)resolve_dim(kMin, 3); }, Fails());
  EXPECT_THAT([] { (void)resolve_dim(kMax, 3); }, Fails());
}

}  // namespace
}  // namespace tapestry::zspace
