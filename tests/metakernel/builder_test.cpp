// The C++ builder: the same graphs as .tap, typed errors, naming.
#include <gmock/gmock.h>

#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/builder_ops.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "test_util.h"

namespace tapestry::metakernel {
namespace {

using namespace testing;  // NOLINT
using ::testing::HasSubstr;

std::string tap_json(const std::string& text) {
  BuildResult r = build_tap(std::make_shared<const SourceFile>("t.tap", text), signatures());
  if (!r.ok()) throw Error(format_diagnostics(r.diagnostics));
  return ir::write_graph_json(*r.graph);
}

TEST(Builder, MlpEqualsTheTapGraph) {
  Graph g(signatures());
  Tensor x = g.input("X", DType::kFloat32, {4096, 1024});
  Tensor w1 = g.input("W1", DType::kFloat32, {4096, 1024});
  Tensor b1 = g.input("b1", DType::kFloat32, {4096});
  Tensor w2 = g.input("W2", DType::kFloat32, {1024, 4096});
  Tensor b2 = g.input("b2", DType::kFloat32, {1024});
  Tensor h = g.assign("H", relu(linear(x, w1, b1)));
  Tensor y = g.assign("Y", linear(h, w2, b2));
  g.output(y);
  EXPECT_EQ(ir::write_graph_json(g.take()), tap_json(R"(X:  f32[4096, 1024]
W1: f32[4096, 1024]
b1: f32[4096]
W2: f32[1024, 4096]
b2: f32[1024]
H = relu(linear(X, W1, b1))
Y = linear(H, W2, b2)
output Y
)"));
}

TEST(Builder, ConvWithSugarEqualsTheTapGraph) {
  Graph g(signatures());
  Tensor img = g.input("I", DType::kFloat32, {1, 3, 8, 8});
  Tensor k = g.input("K", DType::kFloat32, {4, 3, 3, 3});
  g.output(g.assign("C", relu(conv2d(img, k, {.stride = 2, .padding = 1}))));
  EXPECT_EQ(ir::write_graph_json(g.take()), tap_json(R"(I: f32[1, 3, 8, 8]
K: f32[4, 3, 3, 3]
C = relu(conv2d(I, K, stride=2, padding=1))
output C
)"));
}

TEST(Builder, EveryWrapperCallsItsKernel) {
  Graph g(signatures());
  Tensor a = g.input("A", DType::kFloat32, {2, 3, 4});
  Tensor m = g.input("M", DType::kFloat32, {2, 4, 3});
  Tensor v = g.input("v", DType::kFloat32, {4});
  std::vector<std::pair<Tensor, std::string>> calls = {
      {matmul(a, m), "matmul"},
      {bias_add(a, v), "bias_add"},
      {gelu(a), "gelu"},
      {exp(a), "exp"},
      {neg(a), "neg"},
      {tanh(a), "tanh"},
      {sigmoid(a), "sigmoid"},
      {add(a, v), "add"},
      {sub(a, v), "sub"},
      {mul(a, v), "mul"},
      {div(a, v), "div"},
      {max(a, v), "maximum"},
      {sum(a, 1), "sum"},
      {max(a, 0), "max"},
      {reduce(a, Monoid::kProd), "reduce"},
      {softmax(a), "softmax"},
      {transpose(a), "transpose"},
      {permute(a, {2, 0, 1}), "permute"},
      {reshape(a, {6, 4}), "reshape"},
      {pad(a, 1), "pad"},
  };
  for (const auto& [t, kernel] : calls) {
    const auto producers = g.ir().producers(t.id());
    ASSERT_EQ(producers.size(), 1u) << kernel;
    EXPECT_EQ(g.ir().operation(producers[0]).kernel(), kernel);
  }
  EXPECT_EQ(sum(a, 1).type().to_string(), "f32[2, 4]");
  EXPECT_EQ(reduce(a, Monoid::kProd).name(), "reduce.2");  // unassigned: named after the kernel
}

TEST(Builder, ErrorsNameTheTensors) {
  Graph g(signatures());
  Tensor x = g.input("X", DType::kFloat32, {4, 12});
  Tensor w = g.input("W", DType::kFloat32, {32, 16});
  Tensor b = g.input("b", DType::kFloat32, {32});
  try {
    (void)linear(x, w, b);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "linear: X has 12 columns but W has 16 (its in dimension)");
  }
  EXPECT_THROW(g.input("X", DType::kFloat32, {1}), Error);
  EXPECT_THROW(g.input("", DType::kFloat32, {1}), Error);
  EXPECT_THROW(g.input("N", DType::kFloat32, {-1}), Error);
  EXPECT_THAT([&] { g.input("B", DType::kBool, {2}); },
              ::testing::ThrowsMessage<Error>(
                  ::testing::StrEq("input B: dtype bool is not one kernels take "
                                   "(f32 f64 i32 i64 bf16 f16)")));
  EXPECT_FALSE(g.find("B").has_value());  // nothing was added
  Graph other(signatures());
  Tensor y = other.input("Y", DType::kFloat32, {4, 12});
  EXPECT_THROW((void)add(x, y), Error);
  EXPECT_THROW((void)relu(Tensor()), Error);
  EXPECT_THROW(g.call("nonsense", {x}), Error);
}

TEST(Builder, AssignNamesOnlyTheStatementsOperations) {
  Graph g(signatures());
  Tensor x = g.input("X", DType::kFloat32, {4});
  Tensor stray = relu(x);                 // never assigned: keeps "relu"
  Tensor y = g.assign("Y", exp(neg(x)));  // Y/neg, Y
  EXPECT_EQ(stray.name(), "relu");
  EXPECT_EQ(y.name(), "Y");
  EXPECT_TRUE(g.find("Y/neg").has_value());
  EXPECT_THAT([&] { g.assign("Z", y); },
              ::testing::ThrowsMessage<Error>(HasSubstr("not the result")));
  EXPECT_THAT([&] { g.assign("X", relu(x)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("X is already defined")));
  Tensor r = g.assign("R", add(stray, x));  // the stray relu feeds R: R/relu
  EXPECT_EQ(r.name(), "R");
  EXPECT_TRUE(g.find("R/relu").has_value());
  EXPECT_FALSE(g.find("relu").has_value());
}

TEST(Builder, InputsMayStartAnywhere) {
  Graph g(signatures());
  Tensor x = g.input("X", TensorType{DType::kFloat32, zr("zr[-40:60, 20:32]")});
  Tensor w = g.input("W", DType::kFloat32, {32, 12});
  Tensor b = g.input("b", DType::kFloat32, {32});
  Tensor y = g.assign("Y", relu(linear(x, w, b)));
  EXPECT_EQ(y.type().to_string(), "f32[100, 32]");
  EXPECT_EQ(x.type().to_string(), "f32[-40:60, 20:32]");
}

}  // namespace
}  // namespace tapestry::metakernel
