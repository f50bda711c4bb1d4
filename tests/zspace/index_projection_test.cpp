// IndexProjection: the acceptance vectors I1–I7, the worked operations (a linear layer in
// Tapestry's X·Wᵀ + b layout and in the Java original's x·W + b layout, broadcast add, the
// application-dialect sharding example), composition, and overflow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "tapestry/zspace/index_projection.h"
#include "zspace/zspace_testing.h"

namespace tapestry::zspace {
namespace {

using testing::Fails;
using testing::FailsWith;
using testing::ipf;
using testing::map;
using testing::zr;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// A table row: an index box and the tensor box an IPF selects for it.
struct BoxCase {
  const char* index;
  const char* expected;
};

void expect_boxes(const IndexProjection& f, std::initializer_list<BoxCase> cases) {
  for (const BoxCase& c : cases)
    EXPECT_EQ(f.apply(zr(c.index)), zr(c.expected)) << f << " on " << c.index;
}

// I1–I3: A = [[1,0],[0,1],[1,1]], b = (10,20,30), s = (4,4,1).
TEST(IndexProjection, PointRangeAndEmptyRange) {
  IndexProjection f = ipf({{1, 0}, {0, 1}, {1, 1}}, {10, 20, 30}, {4, 4, 1});
  EXPECT_EQ(f.apply(Point{5, 6}), zr("[15:19, 26:30, 41:42]"));
  expect_boxes(f, {{"[5:7, 6:8]", "[15:20, 26:31, 41:44]"},
                   {"[5:5, 6:6]", "[15:15, 26:26, 41:41]"},
                   {"[5:6, 6:7]", "[15:19, 26:30, 41:42]"}});
  EXPECT_EQ(f.index_rank(), 2u);
  EXPECT_EQ(f.tensor_rank(), 3u);
}

// The empty-range rule uses the low corner even when only one dimension is empty.
TEST(IndexProjection, EmptyRangeMapsToTheEmptyBoxAtTheLowCorner) {
  IndexProjection f = ipf({{1, 0}, {0, 1}, {1, 1}}, {10, 20, 30}, {4, 4, 1});
  expect_boxes(f, {{"[5:9, 6:6]", "[15:15, 26:26, 41:41]"}});
  EXPECT_TRUE(f.apply(zr("[5:9, 6:6]")).is_empty());
}

// I4
TEST(IndexProjection, StridedPoint) {
  EXPECT_EQ(ipf({{1, 0}, {0, 2}}, {-1, 0}, {1, 2}).apply(Point{4, 3}), zr("[3:4, 6:8]"));
}

// I5 (fix: Java maps the corner points only and gives zr[0:1]).
TEST(IndexProjection, MixedSignRowUsesIntervalArithmetic) {
  IndexProjection diff = ipf({{1, -1}}, {0}, {1});
  expect_boxes(diff, {{"[0:3, 0:3]", "[-2:3]"}, {"[0:1, 0:3]", "[-2:1]"}, {"[2:3, 0:1]", "[2:3]"}});
  IndexProjection flip = ipf({{-2}}, {10}, {3});
  expect_boxes(flip, {{"[0:4]", "[4:13]"}});
}

// I6: stride 2, window 3 — neighbouring windows overlap by one cell.
TEST(IndexProjection, OverlappingWindows) {
  IndexProjection conv = ipf({{2}}, {0}, {3});
  expect_boxes(conv,
               {{"[0:4]", "[0:9]"}, {"[0:1]", "[0:3]"}, {"[1:2]", "[2:5]"}, {"[2:4]", "[4:9]"}});
}

// I7
TEST(IndexProjection, DefaultShapeIsAllOnes) {
  IndexProjection f(map({{1, 0}, {0, 1}, {1, 1}}, {0, 0, 0}));
  EXPECT_EQ(f.shape(), Point::ones(3));
  EXPECT_EQ(IndexProjection::identity(2), IndexProjection(AffineMap::identity(2)));
  EXPECT_EQ(IndexProjection::identity(2).shape(), (Point{1, 1}));
  EXPECT_EQ(IndexProjection().apply(Range()), Range());
}

TEST(IndexProjection, ShapeIsChecked) {
  EXPECT_THAT([] { (void)ipf({{1, 0}}, {0}, {1, 1}); }, Fails());
  EXPECT_THAT([] { (void)ipf({{1, 0}}, {0}, {-1}); }, FailsWith({"-1"}));
  EXPECT_NO_THROW((void)ipf({{1, 0}}, {0}, {0}));
  EXPECT_THAT([] { (void)IndexProjection::identity(2).apply(Point{1}); }, Fails());
  EXPECT_THAT([] { (void)IndexProjection::identity(2).apply(zr("[0:1]")); }, Fails());
}

// The Linear layer of the vectors: index [batch, out] = zr[0:100, 0:32], in = 12; x starts at
// (-40, 20). Both layouts select the same x, b and y boxes; only W's projection differs.
struct LinearCase {
  const char* index;
  const char* x;
  const char* w_tapestry;  // W laid out [out, in]: Y = X·Wᵀ + b (Tapestry, PyTorch)
  const char* w_java;      // W laid out [in, out]: y = x·W + b (the Java original)
  const char* b;
  const char* y;
};

// L1, L2
TEST(IndexProjection, LinearLayerInBothLayouts) {
  IndexProjection x = ipf({{1, 0}, {0, 0}}, {-40, 20}, {1, 12});
  IndexProjection w_tapestry = ipf({{0, 1}, {0, 0}}, {0, 0}, {1, 12});
  IndexProjection w_java = ipf({{0, 0}, {0, 1}}, {0, 0}, {12, 1});
  IndexProjection b = ipf({{0, 1}}, {0}, {1});
  IndexProjection y = IndexProjection::identity(2);
  const LinearCase cases[] = {
      {"[0:100, 0:32]", "[-40:60, 20:32]", "[0:32, 0:12]", "[0:12, 0:32]", "[0:32]",
       "[0:100, 0:32]"},
      {"[50:100, 16:32]", "[10:60, 20:32]", "[16:32, 0:12]", "[0:12, 16:32]", "[16:32]",
       "[50:100, 16:32]"},
  };
  for (const LinearCase& c : cases) {
    Range index = zr(c.index);
    EXPECT_EQ(x.apply(index), zr(c.x)) << c.index;
    EXPECT_EQ(w_tapestry.apply(index), zr(c.w_tapestry)) << c.index;
    EXPECT_EQ(w_java.apply(index), zr(c.w_java)) << c.index;
    EXPECT_EQ(b.apply(index), zr(c.b)) << c.index;
    EXPECT_EQ(y.apply(index), zr(c.y)) << c.index;
  }
  // The two layouts are the same projection with the tensor dims swapped.
  std::vector<std::size_t> swap{1, 0};
  EXPECT_EQ(w_java.apply(zr(cases[1].index)).permute(swap), w_tapestry.apply(zr(cases[1].index)));
  // W does not move along batch, b does not move along batch: they are read whole by both
  // batch shards.
  EXPECT_TRUE(w_tapestry.ignores_index_dim(0));
  EXPECT_TRUE(b.ignores_index_dim(0));
  EXPECT_FALSE(x.ignores_index_dim(0));
  EXPECT_TRUE(x.ignores_index_dim(1));
}

// Broadcast add: A (10,10,10) + B (1,10); B's IPF ignores the first two index dims.
TEST(IndexProjection, BroadcastAdd) {
  IndexProjection b = ipf({{0, 0, 0}, {0, 0, 1}}, {0, 0}, {1, 1});
  expect_boxes(b, {{"[0:10, 0:10, 0:10]", "[0:1, 0:10]"}, {"[0:10, 0:10, 5:10]", "[0:1, 5:10]"}});
  expect_boxes(IndexProjection::identity(3), {{"[0:10, 0:10, 5:10]", "[0:10, 0:10, 5:10]"}});
}

// The application-dialect example: t1 lives at zr[200:210, 50:55].
TEST(IndexProjection, ShardingSelectsTheTensorsOwnCoordinates) {
  IndexProjection t1 = ipf({{1, 0}, {0, 1}}, {200, 50}, {1, 1});
  expect_boxes(t1, {{"[0:5, 0:5]", "[200:205, 50:55]"},
                    {"[5:10, 0:5]", "[205:210, 50:55]"},
                    {"[0:10, 0:5]", "[200:210, 50:55]"}});
  EXPECT_EQ(IndexProjection::identity(2).translate(Point{200, 50}), t1);
}

// A 2-d convolution's input window: index [oh, ow], stride 2, window 3x3, padding 1 (offset -1).
TEST(IndexProjection, ConvolutionInputWindows) {
  IndexProjection input = ipf({{2, 0}, {0, 2}}, {-1, -1}, {3, 3});
  expect_boxes(input, {{"[0:1, 0:1]", "[-1:2, -1:2]"},
                       {"[0:4, 0:4]", "[-1:8, -1:8]"},
                       {"[0:2, 0:4]", "[-1:4, -1:8]"},
                       {"[2:4, 0:4]", "[3:8, -1:8]"}});
  // The two row halves overlap on the halo row 3.
  std::optional<Range> halo =
      input.apply(zr("[0:2, 0:4]")).intersect(input.apply(zr("[2:4, 0:4]")));
  ASSERT_TRUE(halo.has_value());
  EXPECT_EQ(*halo, zr("[3:4, -1:8]"));
}

TEST(IndexProjection, TranslateComposePermute) {
  IndexProjection f = ipf({{1, 0}, {0, 2}}, {4, 5}, {1, 2});
  EXPECT_EQ(f.translate(Point{1, -1}), ipf({{1, 0}, {0, 2}}, {5, 4}, {1, 2}));
  // Re-index over j = (block, k') with i = (block·4 + k', ...): here i0 = 4·j0 + j1, i1 = j2.
  AffineMap inner = map({{4, 1, 0}, {0, 0, 1}}, {0, 0});
  IndexProjection g = f.compose(inner);
  EXPECT_EQ(g.index_rank(), 3u);
  EXPECT_EQ(g.apply(Point{2, 1, 3}), f.apply(Point{9, 3}));
  std::vector<std::size_t> swap{1, 0};
  EXPECT_EQ(f.permute_inputs(swap), ipf({{0, 1}, {2, 0}}, {4, 5}, {1, 2}));
  EXPECT_THAT([&] { (void)f.compose(AffineMap::identity(3)); }, Fails());
}

TEST(IndexProjection, ToString) {
  EXPECT_EQ(ipf({{1, 0}, {0, 2}}, {4, 5}, {1, 1}).to_string(),
            "ipf([[1, 0], [0, 2]] + (4, 5), shape (1, 1))");
}

TEST(IndexProjection, OverflowIsAnError) {
  IndexProjection big = ipf({{kMax / 2 + 1}}, {0}, {1});
  EXPECT_THAT([&] { (void)big.apply(Point{2}); }, FailsWith({"overflow"}));
  EXPECT_THAT([&] { (void)big.apply(zr("[0:3]")); }, FailsWith({"overflow"}));
  // The box end A·i + b + s leaves int64 although its start does not.
  IndexProjection wide = ipf({{1}}, {kMax - 1}, {2});
  EXPECT_THAT([&] { (void)wide.apply(Point{0}); }, FailsWith({"overflow"}));
  EXPECT_THAT([&] { (void)wide.apply(zr("[0:1]")); }, FailsWith({"overflow"}));
  EXPECT_EQ(ipf({{1}}, {kMax - 2}, {2}).apply(Point{0}), Range(Point{kMax - 2}, Point{kMax}));
  EXPECT_THAT([] { (void)IndexProjection::identity(1).translate(Point{kMax}).apply(Point{0}); },
              FailsWith({"overflow"}));
  // A negative coefficient times the index range's far corner.
  IndexProjection flip = ipf({{-(kMax / 2 + 1)}}, {0}, {1});
  EXPECT_EQ(flip.apply(zr("[0:3]")).start(), Point{std::numeric_limits<std::int64_t>::min()});
  EXPECT_THAT([&] { (void)flip.apply(zr("[0:4]")); }, FailsWith({"overflow"}));
}

TEST(IndexProjection, StackAddsABlockRowForPartialResults) {
  // A partial output of a split reduction: index [block, batch, out, in'], the result IPF of
  // linear composed under the block map, with a block row on top.
  IndexProjection block(map({{1, 0, 0, 0}}, {0}), Point{1});
  IndexProjection result(map({{0, 1, 0, 0}, {0, 0, 1, 0}}, {0, 0}), Point{1, 1});
  IndexProjection partial = block.stack(result);
  EXPECT_EQ(partial.shape(), (Point{1, 1, 1}));
  EXPECT_EQ(partial.apply(zr("[1:2, 0:4, 8:16, 0:6]")), zr("[1:2, 0:4, 8:16]"));
}

}  // namespace
}  // namespace tapestry::zspace
