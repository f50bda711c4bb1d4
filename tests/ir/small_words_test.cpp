// SmallWords: inline up to kInline words, on the heap beyond; copies and moves keep the words.
#include "tapestry/ir/small_words.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace tapestry::ir {
namespace {

std::vector<std::int64_t> words_of(const SmallWords& w) {
  return {w.data(), w.data() + w.size()};
}

// n words 1, 2, …, n (inserted at the end, one at a time).
SmallWords counting(std::size_t n) {
  SmallWords w;
  for (std::size_t i = 0; i < n; ++i) {
    w.insert_zeros(w.size(), 1);
    w[i] = static_cast<std::int64_t>(i + 1);
  }
  return w;
}

TEST(SmallWordsTest, InsertsZerosAnywhere) {
  SmallWords w = counting(4);
  const std::int64_t* inline_data = w.data();
  w.insert_zeros(1, 2);  // 6 words: still inline
  EXPECT_EQ(words_of(w), (std::vector<std::int64_t>{1, 0, 0, 2, 3, 4}));
  EXPECT_EQ(w.data(), inline_data);
  w.insert_zeros(0, 1);  // 7: on the heap
  EXPECT_EQ(words_of(w), (std::vector<std::int64_t>{0, 1, 0, 0, 2, 3, 4}));
  EXPECT_NE(w.data(), inline_data);
  w.insert_zeros(7, 3);
  EXPECT_EQ(words_of(w), (std::vector<std::int64_t>{0, 1, 0, 0, 2, 3, 4, 0, 0, 0}));
  w.clear();
  EXPECT_TRUE(w.empty());
  w.insert_zeros(0, 2);
  EXPECT_EQ(words_of(w), (std::vector<std::int64_t>{0, 0}));
}

TEST(SmallWordsTest, CopiesAndMovesKeepTheWords) {
  for (std::size_t n : {0u, 3u, 6u, 7u, 40u}) {
    SCOPED_TRACE(n);
    const SmallWords original = counting(n);
    SmallWords copy = original;
    EXPECT_EQ(copy, original);
    if (n > 0) {
      copy[0] = -1;  // a copy owns its words
      EXPECT_EQ(original[0], 1);
      EXPECT_FALSE(copy == original);
    }
    SmallWords moved = std::move(copy);
    EXPECT_EQ(moved.size(), n);
    EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
    SmallWords assigned = counting(9);
    assigned = original;
    EXPECT_EQ(assigned, original);
    assigned = counting(2);
    EXPECT_EQ(words_of(assigned), (std::vector<std::int64_t>{1, 2}));
    assigned = std::move(moved);
    EXPECT_EQ(assigned.size(), n);
    const SmallWords& self = assigned;
    assigned = self;
    EXPECT_EQ(assigned.size(), n);
  }
}

TEST(SmallWordsTest, EqualityComparesWordsNotCapacity) {
  SmallWords grown = counting(8);
  SmallWords small = counting(2);
  EXPECT_FALSE(grown == small);
  grown.clear();
  grown.insert_zeros(0, 2);
  grown[0] = 1;
  grown[1] = 2;
  EXPECT_EQ(grown, small);  // one on the heap, one inline
}

}  // namespace
}  // namespace tapestry::ir
