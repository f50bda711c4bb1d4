// BoxIndex (src/runtime/box_index.h) against the obvious all-pairs answers.
#include "tapestry/zspace/box_index.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <vector>

namespace tapestry::zspace {
namespace {

std::vector<std::uint32_t> brute_overlapping(const std::vector<Range>& boxes, const Range& q) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < boxes.size(); ++i) {
    if (boxes[i].overlaps(q)) out.push_back(i);
  }
  return out;
}

bool brute_any_overlap(const std::vector<Range>& boxes) {
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      if (boxes[i].overlaps(boxes[j])) return true;
    }
  }
  return false;
}

// A random box of rank `rank` inside [-8, 24) per dim, possibly empty.
rc::Gen<Range> box_of_rank(std::size_t rank) {
  return rc::gen::exec([rank] {
    std::vector<std::int64_t> start, end;
    for (std::size_t d = 0; d < rank; ++d) {
      const auto a = *rc::gen::inRange<std::int64_t>(-8, 24);
      const auto len = *rc::gen::inRange<std::int64_t>(0, 9);
      start.push_back(a);
      end.push_back(a + len);
    }
    return Range(Point(std::span<const std::int64_t>(start)),
                 Point(std::span<const std::int64_t>(end)));
  });
}

TEST(BoxIndex, DocumentedExample) {
  const std::vector<Range> writes = {Range({0, 0}, {2, 4}), Range({2, 0}, {4, 4})};
  const BoxIndex index(writes);
  EXPECT_EQ(index.overlapping(Range({1, 0}, {3, 1})), (std::vector<std::uint32_t>{0, 1}));
  EXPECT_TRUE(index.overlapping(Range({4, 0}, {5, 4})).empty());
  EXPECT_FALSE(index.first_overlap().has_value());
}

TEST(BoxIndex, ReportsAnOverlappingPairAndIgnoresEmptyBoxes) {
  const std::vector<Range> boxes = {Range({0}, {4}), Range({9}, {9}), Range({3}, {6})};
  const BoxIndex index(boxes);
  ASSERT_TRUE(index.first_overlap().has_value());
  EXPECT_EQ(*index.first_overlap(), (std::pair<std::uint32_t, std::uint32_t>{0, 2}));
  EXPECT_EQ(index.overlapping(Range({0}, {100})), (std::vector<std::uint32_t>{0, 2}));
}

TEST(BoxIndex, ScalarsAndNoBoxes) {
  const std::vector<Range> none;
  EXPECT_TRUE(BoxIndex(none).overlapping(Range({0}, {5})).empty());
  const std::vector<Range> scalars = {Range(Point{}, Point{})};
  const BoxIndex index(scalars);
  EXPECT_EQ(index.overlapping(Range(Point{}, Point{})), (std::vector<std::uint32_t>{0}));
}

TEST(BoxIndex, GridOfManyShardsPutsFewBoxesInEachBucket) {
  std::vector<Range> boxes;  // a 300 × 300 grid of 8 × 8 blocks
  for (std::int64_t r = 0; r < 300; ++r) {
    for (std::int64_t c = 0; c < 300; ++c) {
      boxes.emplace_back(Point{r * 8, c * 8}, Point{r * 8 + 8, c * 8 + 8});
    }
  }
  const BoxIndex index(boxes);
  EXPECT_FALSE(index.first_overlap().has_value());
  EXPECT_EQ(index.overlapping(Range({12, 12}, {13, 17})), (std::vector<std::uint32_t>{301, 302}));
}

RC_GTEST_PROP(BoxIndex, AgreesWithAllPairs, ()) {
  const auto rank = *rc::gen::inRange<std::size_t>(1, 4);
  const auto boxes = *rc::gen::container<std::vector<Range>>(box_of_rank(rank));
  const auto queries = *rc::gen::container<std::vector<Range>>(box_of_rank(rank));
  const BoxIndex index(boxes);
  for (const Range& q : queries) RC_ASSERT(index.overlapping(q) == brute_overlapping(boxes, q));
  RC_ASSERT(index.first_overlap().has_value() == brute_any_overlap(boxes));
  if (auto pair = index.first_overlap()) {
    RC_ASSERT(pair->first < pair->second);
    RC_ASSERT(boxes[pair->first].overlaps(boxes[pair->second]));
  }
}

}  // namespace
}  // namespace tapestry::zspace
