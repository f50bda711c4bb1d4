#include "tapestry/runtime/input_generation.h"

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "graph_builder.h"
#include "tapestry/runtime/compare.h"

namespace tapestry::runtime {
namespace {

using testing::GraphBuilder;

TEST(SplitMix64, MatchesTheReferenceSequence) {
  // First outputs of splitmix64 seeded with 0 (Vigna's reference implementation).
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(rng.next(), 0x06c45d188009454full);
}

TEST(GenerateBuffer, DeterministicPerSeedAndName) {
  const Range r({-40, 20}, {-30, 27});
  Buffer a = generate_buffer(DType::kFloat32, r, 7, "X");
  Buffer b = generate_buffer(DType::kFloat32, r, 7, "X");
  EXPECT_TRUE(compare_buffers(a, b).bitwise_equal);
  EXPECT_FALSE(compare_buffers(a, generate_buffer(DType::kFloat32, r, 8, "X")).bitwise_equal);
  EXPECT_FALSE(compare_buffers(a, generate_buffer(DType::kFloat32, r, 7, "W")).bitwise_equal);
  EXPECT_NE(stream_seed(1, "X"), stream_seed(1, "Y"));
}

TEST(GenerateBuffer, SmallExactFloats) {
  Buffer f = generate_buffer(DType::kFloat32, Range::of_shape({1000}), 3, "f");
  Buffer d = generate_buffer(DType::kFloat64, Range::of_shape({1000}), 3, "f");
  for (std::size_t i = 0; i < 1000; ++i) {
    const float v = f.values<float>()[i];
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
    EXPECT_EQ(std::ldexp(v, 20), std::trunc(std::ldexp(v, 20))) << "on the 2^-20 grid";
    EXPECT_EQ(static_cast<double>(v), d.values<double>()[i]) << "same stream, exact in f32";
  }
}

TEST(GenerateBuffer, SmallInts) {
  Buffer i = generate_buffer(DType::kInt32, Range::of_shape({2000}), 3, "i");
  std::set<std::int32_t> seen;
  for (std::int32_t v : i.values<std::int32_t>()) {
    EXPECT_GE(v, -8);
    EXPECT_LE(v, 8);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 17u);
}

TEST(GenerateInputs, IndependentOfGraphOrder) {
  auto build = [](bool reversed) {
    GraphBuilder b;
    const Range r = Range::of_shape({3, 4});
    auto x = reversed ? b.tensor("Y", "float32", r) : b.tensor("X", "float32", r);
    auto y = reversed ? b.tensor("X", "float32", r) : b.tensor("Y", "float32", r);
    auto z = b.tensor("Z", "float32", r);
    const auto id = testing::ipf({{1, 0}, {0, 1}}, {0, 0});
    b.op("add", r, {{"x", x, id}, {"y", y, id}}, {{"result", z, id}});
    return std::move(b.graph);
  };
  ir::Graph g1 = build(false), g2 = build(true);
  BufferMap in1 = generate_inputs(g1, {.seed = 11});
  BufferMap in2 = generate_inputs(g2, {.seed = 11});
  ASSERT_EQ(in1.size(), 2u);
  for (const char* name : {"X", "Y"}) {
    EXPECT_TRUE(
        compare_buffers(in1.at(find_tensor(g1, name)), in2.at(find_tensor(g2, name))).bitwise_equal)
        << name;
  }
}

}  // namespace
}  // namespace tapestry::runtime

namespace tapestry::runtime {
namespace {

TEST(SplitMix64, SkipJumpsAhead) {
  SplitMix64 walked(42);
  for (int i = 0; i < 1000; ++i) (void)walked.next();
  SplitMix64 jumped(42);
  jumped.skip(1000);
  EXPECT_EQ(jumped.next(), walked.next());
}

// Every box of a tensor, generated alone, is bitwise the same cells of the whole tensor: what an
// MPI rank generates is what the single process does.
TEST(GenerateBox, EqualsTheWholeTensorsCells) {
  const Range tensor({-4, 20, 0}, {6, 27, 5});
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32}) {
    for (bool exact : {false, true}) {
      const Buffer whole = generate_buffer(dtype, tensor, 7, "X", exact);
      for (const Range& box :
           {tensor, Range({-4, 20, 0}, {-2, 27, 5}), Range({0, 22, 1}, {3, 25, 4}),
            Range({5, 26, 4}, {6, 27, 5}), Range({1, 21, 2}, {1, 21, 2})}) {
        const Buffer part = generate_box(dtype, tensor, box, 7, "X", exact);
        ASSERT_EQ(part.range(), box);
        for (const Point& p : box.points()) {
          visit_dtype(dtype, [&]<typename T>() {
            const T a = part.at<T>(p), b = whole.at<T>(p);
            ASSERT_EQ(std::memcmp(&a, &b, sizeof(T)), 0)
                << box.to_string() << " at " << p.to_string();
          });
        }
      }
    }
  }
  EXPECT_THROW((void)generate_box(DType::kFloat32, tensor, Range({-5, 20, 0}, {0, 21, 1}), 7, "X"),
               Error);
}

}  // namespace
}  // namespace tapestry::runtime
