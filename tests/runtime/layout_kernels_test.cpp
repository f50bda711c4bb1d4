// Reference layout kernels: transpose, permute, reshape (copies through the IPFs) and pad.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernel_graphs.h"
#include "run_helpers.h"

namespace tapestry::runtime {
namespace {

using namespace testing;  // NOLINT: test helpers
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Buffer iota_f32(const Point& shape) {
  Buffer b(DType::kFloat32, Range::of_shape(shape));
  float v = 0;
  for (float& e : b.values<float>()) e = v++;
  return b;
}

TEST(Transpose, SwapsTheLastTwoDims) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range({-1, 5}, {1, 8}));  // [2, 3]
  Built t = add_permute(b, "transpose", x, {1, 0});
  BufferMap out = run_naive(b.graph, {{"X", iota_f32(Point{2, 3})}});
  EXPECT_EQ(out.at(t.result).range(), Range::of_shape({3, 2}));
  EXPECT_THAT(values_of<float>(out, t.result), ElementsAre(0, 3, 1, 4, 2, 5));
}

TEST(Permute, ThreeDims) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({2, 3, 4}));
  Built p = add_permute(b, "permute", x, {2, 0, 1});  // result [4, 2, 3]
  BufferMap out = run_naive(b.graph, {{"X", iota_f32(Point{2, 3, 4})}});
  const Buffer& r = out.at(p.result);
  EXPECT_EQ(r.range(), Range::of_shape({4, 2, 3}));
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j)
      for (std::int64_t k = 0; k < 4; ++k)
        EXPECT_EQ(r.at<float>(Point{k, i, j}), static_cast<float>(i * 12 + j * 4 + k));
}

TEST(Reshape, SplitAndMerge) {
  GraphBuilder b;
  // split [12] at (-6) -> [3, 4]: index [3, 4], x reads 4·d0 + d1.
  TensorId x = b.tensor("X", "float32", Range({-6}, {6}));
  Built split = add_reshape(b, x, Point{3, 4}, Point{3, 4}, {{4, 1}}, {{1, 0}, {0, 1}});
  // merge [2, 3, 2] -> [6, 2]: index [2, 3, 2], result row 3·d0 + d1.
  TensorId y = b.tensor("Y", "float32", Range::of_shape({2, 3, 2}));
  Built merge = add_reshape(b, y, Point{6, 2}, Point{2, 3, 2}, {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}},
                            {{3, 1, 0}, {0, 0, 1}});
  BufferMap out = run_naive(b.graph, {{"X", iota_f32(Point{12})}, {"Y", iota_f32(Point{2, 3, 2})}});
  EXPECT_EQ(values_of<float>(out, split.result), values_of<float>(out, x));
  EXPECT_EQ(values_of<float>(out, merge.result), values_of<float>(out, y));
}

TEST(Pad, ExtendsIntoNegativeCoordinates) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range({0, 0, 0}, {1, 2, 2}));
  Built pad = add_pad(b, x, 1, -1.0);
  BufferMap out = run_naive(b.graph, {{"X", iota_f32(Point{1, 2, 2})}});
  const Buffer& r = out.at(pad.result);
  EXPECT_EQ(r.range(), Range({0, -1, -1}, {1, 3, 3}));
  EXPECT_THAT(values_of<float>(out, pad.result), ElementsAre(-1, -1, -1, -1,  //
                                                             -1, 0, 1, -1,    //
                                                             -1, 2, 3, -1,    //
                                                             -1, -1, -1, -1));
}

TEST(Pad, IntegerValues) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "int64", Range({3, -7}, {4, -6}));
  Built pad = add_pad(b, x, 1, 9.0);
  BufferMap out =
      run_naive(b.graph, {{"X", Buffer::from_values<std::int64_t>(Range::of_shape({1, 1}), {5})}});
  EXPECT_EQ(out.at(pad.result).range(), Range({2, -8}, {5, -5}));
  EXPECT_THAT(values_of<std::int64_t>(out, pad.result), ElementsAre(9, 9, 9, 9, 5, 9, 9, 9, 9));

  GraphBuilder bad;
  TensorId y = bad.tensor("X", "int32", Range::of_shape({1, 1}));
  add_pad(bad, y, 1, 0.5);
  EXPECT_THAT(error_of([&] {
                (void)run_naive(bad.graph, {{"X", Buffer(DType::kInt32, Range::of_shape({1, 1}))}});
              }),
              HasSubstr("(kernel pad): param 'value' 0.5 is not a whole number an int32 can hold"));
}

}  // namespace
}  // namespace tapestry::runtime
