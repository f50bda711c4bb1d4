// RangeList: packed boxes read back as the Ranges they were, and the Range invariants enforced
// on the way in.
#include "tapestry/zspace/range_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "zspace/zspace_testing.h"

namespace tapestry::zspace {
namespace {

using ::testing::ElementsAre;
using testing::FailsWith;
using testing::zp;
using testing::zr;

TEST(RangeListTest, BoxesReadBackAsPushed) {
  RangeList boxes(2);
  EXPECT_TRUE(boxes.empty());
  boxes.push_back(zr("[0:2, 0:3]"));
  boxes.push_back(zp("(2, 0)").coords(), zp("(4, 3)").coords());
  boxes.push_back(zr("[5:5, 1:9]"));
  ASSERT_EQ(boxes.size(), 3u);
  EXPECT_EQ(boxes.rank(), 2u);
  EXPECT_THAT(boxes.start(1), ElementsAre(2, 0));
  EXPECT_THAT(boxes.end(1), ElementsAre(4, 3));
  EXPECT_EQ(boxes.range(0), zr("[0:2, 0:3]"));
  EXPECT_EQ(boxes.range(2), zr("[5:5, 1:9]"));
  EXPECT_FALSE(boxes.is_empty(1));
  EXPECT_TRUE(boxes.is_empty(2));
  EXPECT_TRUE(boxes.contains(1, zp("(3, 2)")));
  EXPECT_FALSE(boxes.contains(1, zp("(4, 2)")));  // the end face is exclusive
  EXPECT_FALSE(boxes.contains(0, zp("(3, 2)")));
  boxes.clear(1);
  EXPECT_TRUE(boxes.empty());
  EXPECT_EQ(boxes.rank(), 1u);
}

TEST(RangeListTest, RankZeroBoxesAreCounted) {
  RangeList points(0);
  points.push_back(Range());
  points.push_back(Range());
  EXPECT_EQ(points.size(), 2u);
  EXPECT_EQ(points.range(1), Range());
  EXPECT_TRUE(points.contains(0, Point()));
}

TEST(RangeListTest, RejectsWhatARangeRejects) {
  RangeList boxes(2);
  EXPECT_THAT([&] { boxes.push_back(zr("[0:2]")); }, FailsWith({"rank mismatch"}));
  const std::vector<std::int64_t> start{0, 5}, end{2, 3}, short_end{2};
  EXPECT_THAT([&] { boxes.push_back(start, end); }, FailsWith({"(0, 5)", "(2, 3)", "dimension 1"}));
  EXPECT_THAT([&] { boxes.push_back(start, short_end); }, FailsWith({"rank mismatch"}));
  EXPECT_TRUE(boxes.empty());  // nothing half-appended
  boxes.push_back(zr("[0:2, 0:3]"));
  EXPECT_THAT([&] { (void)boxes.contains(0, zp("(1)")); }, FailsWith({"rank mismatch"}));
}

}  // namespace
}  // namespace tapestry::zspace
