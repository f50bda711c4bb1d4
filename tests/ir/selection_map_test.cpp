// SelectionMap (packed named lists of selections) and NamedLists.
#include "tapestry/ir/selection_map.h"

#include <gtest/gtest.h>

#include "ir_testing.h"
#include "tapestry/ir/named_lists.h"
#include "tapestry/ir/names.h"

namespace tapestry::ir {
namespace {

using testing::zr;

TEST(SelectionMapTest, KeepsEntriesSortedByNameThenPosition) {
  SelectionMap m;
  m.append("tensors", {TensorId(NodeId(1)), zr("zr[0:2, 0:3]")});
  m.append("mask", {TensorId(NodeId(2)), zr("zr[0:1]")});
  m.append("tensors", {TensorId(NodeId(3)), zr("zr[5:6, 1:2, 0:9]")});
  std::vector<std::tuple<std::string, std::uint32_t, std::uint32_t>> seen;
  for (const auto& e : m.entries()) seen.emplace_back(e.name, e.position, e.value.tensor.index());
  EXPECT_EQ(seen, (std::vector<std::tuple<std::string, std::uint32_t, std::uint32_t>>{
                      {"mask", 0, 2}, {"tensors", 0, 1}, {"tensors", 1, 3}}));
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.names(), (std::vector<std::string_view>{"mask", "tensors"}));
}

TEST(SelectionMapTest, ListsReturnValuesInOrder) {
  SelectionMap m;
  m.append("b", {TensorId(NodeId(1)), zr("zr[0:2]")});
  m.append("a", {TensorId(NodeId(2)), zr("zr[0:3]")});
  m.append("b", {TensorId(NodeId(3)), zr("zr[1:2, 3:4]")});
  auto list = m.list("b");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].range, zr("zr[0:2]"));
  EXPECT_EQ(list[1].range, zr("zr[1:2, 3:4]"));
  std::vector<zspace::Range> ranges;
  for (const TensorSelection& s : list) ranges.push_back(s.range);
  EXPECT_EQ(ranges.size(), 2u);
  EXPECT_TRUE(m.list("zzz").empty());
  EXPECT_TRUE(m.has("a"));
  EXPECT_FALSE(m.has("c"));
}

TEST(SelectionMapTest, ZeroDimensionalSelections) {
  SelectionMap m;
  m.append("s", {TensorId(NodeId(0)), zspace::Range()});
  EXPECT_EQ(m.list("s")[0].range, zspace::Range());
}

TEST(SelectionMapTest, EqualityAndRawAccess) {
  SelectionMap a, b;
  a.append("x", {TensorId(NodeId(4)), zr("zr[1:2, 3:4]")});
  b.append("x", {TensorId(NodeId(4)), zr("zr[1:2, 3:4]")});
  EXPECT_EQ(a, b);
  b.append("x", {TensorId(NodeId(4)), zr("zr[1:2, 3:4]")});
  EXPECT_NE(a, b);
  a.for_each_raw([](const SelectionMap::RawEntry& e) {
    EXPECT_EQ(interned_name(e.name_id), "x");
    EXPECT_EQ(e.tensor.index(), 4u);
    EXPECT_EQ(std::vector<std::int64_t>(e.start.begin(), e.start.end()),
              (std::vector<std::int64_t>{1, 3}));
    EXPECT_EQ(std::vector<std::int64_t>(e.end.begin(), e.end.end()),
              (std::vector<std::int64_t>{2, 4}));
    return true;
  });
}

TEST(SelectionMapTest, RewritesTensorIds) {
  SelectionMap m;
  m.append("x", {TensorId(NodeId(1)), zr("zr[0:1]")});
  m.for_each_tensor([](const std::string& name, std::uint32_t pos, TensorId& t) {
    EXPECT_EQ(name, "x");
    EXPECT_EQ(pos, 0u);
    t = TensorId(NodeId(7));
  });
  EXPECT_EQ(m.list("x")[0].tensor.index(), 7u);
}

TEST(NamesTest, InterningIsStable) {
  std::uint32_t a = intern_name("some_port");
  EXPECT_EQ(intern_name("some_port"), a);
  EXPECT_NE(intern_name("other_port"), a);
  EXPECT_EQ(interned_name(a), "some_port");
}

TEST(NamedListsTest, AppendsInNameOrder) {
  NamedLists<int> m;
  m.append("b", 1);
  m.append("a", 2);
  m.append("b", 3);
  EXPECT_EQ(m.list("b").size(), 2u);
  EXPECT_EQ(m.list("b")[1], 3);
  EXPECT_EQ(m.entries()[0].name, "a");
  EXPECT_EQ(m.names(), (std::vector<std::string_view>{"a", "b"}));
}

}  // namespace
}  // namespace tapestry::ir
