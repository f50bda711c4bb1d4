#include "tapestry/runtime/view.h"

#include <gtest/gtest.h>

#include "tapestry/runtime/buffer.h"

namespace tapestry::runtime {
namespace {

TEST(View, SubViewsKeepTensorCoordinates) {
  Buffer x(DType::kFloat32, Range({-40, 20}, {60, 32}));
  View v = x.view(Range({-2, 20}, {3, 24}));
  EXPECT_EQ(v.box(), Range({-2, 20}, {3, 24}));
  EXPECT_EQ(v.strides(), (Point{12, 1}));
  TypedView<float> t = v.typed<float>();
  t[Point{-1, 21}] = 1.5f;
  EXPECT_EQ((x.values<float>()[39 * 12 + 1]), 1.5f);
  EXPECT_EQ(x.at<float>(Point{-1, 21}), 1.5f);

  View inner = v.sub(Range({-1, 21}, {0, 22}));
  EXPECT_EQ((inner.typed<float>()[Point{-1, 21}]), 1.5f);
  EXPECT_EQ(inner.typed<float>().origin(), t.pointer(Point{-1, 21}));
}

TEST(View, SubViewOutsideIsAnError) {
  Buffer x(DType::kInt32, Range::of_shape({4, 4}));
  View v = x.view(Range({1, 1}, {3, 3}));
  EXPECT_THROW((void)v.sub(Range({0, 1}, {2, 2})), Error);
  EXPECT_THROW((void)v.sub(Range({1}, {2})), Error);
  EXPECT_NO_THROW((void)v.sub(Range({3, 3}, {3, 3})));  // an empty corner box
}

TEST(View, TypedDtypeMismatchNamesBoth) {
  Buffer x(DType::kInt64, Range::of_shape({2}));
  try {
    (void)x.view().typed<float>();
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "view of zr[0:2] holds int64, not float32");
  }
}

TEST(View, ConstViewsConvert) {
  Buffer x = Buffer::from_values<double>(Range::of_shape({2}), {1, 2});
  ConstView c = x.view();
  TypedView<const double> t = c.typed<double>();
  EXPECT_EQ((t[Point{1}]), 2.0);
  TypedView<const double> from_mutable = x.view().typed<double>();
  EXPECT_EQ((from_mutable[Point{0}]), 1.0);
}

TEST(View, ElementOffset) {
  EXPECT_EQ(element_offset(Range({-2, 5}, {2, 9}), Point{4, 1}, Point{0, 7}), 2 * 4 + 2);
}

}  // namespace
}  // namespace tapestry::runtime
