#include "tapestry/runtime/naive_executor.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernel_graphs.h"
#include "run_helpers.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/input_generation.h"

namespace tapestry::runtime {
namespace {

using namespace testing;  // NOLINT: test helpers
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Y = relu(linear(X, W, b)), with X starting at negative coordinates.
struct Mlp {
  GraphBuilder b;
  TensorId x, w, bias;
  Built lin, relu;
  Mlp() {
    x = b.tensor("X", "float32", Range({-40, 20}, {-35, 26}));
    w = b.tensor("W", "float32", Range::of_shape({3, 6}));
    bias = b.tensor("b", "float32", Range::of_shape({3}));
    lin = add_linear(b, x, w, bias);
    relu = add_unary(b, "relu", lin.result);
  }
};

TEST(NaiveExecutor, RunsInTopologicalOrder) {
  Mlp m;
  NaiveExecutor naive(m.b.graph);
  ASSERT_EQ(naive.order().size(), 2u);
  EXPECT_EQ(naive.order()[0], m.lin.op);
  BufferMap in = generate_inputs(m.b.graph, {.seed = 3});
  BufferMap out = naive.run(in);
  EXPECT_EQ(out.size(), 5u) << "every tensor, inputs included";
  const std::vector<float> z = values_of<float>(out, m.lin.result);
  const std::vector<float> y = values_of<float>(out, m.relu.result);
  for (std::size_t i = 0; i < z.size(); ++i) EXPECT_EQ(y[i], z[i] > 0 ? z[i] : 0.0f);
  EXPECT_TRUE(compare_buffers(out.at(m.x), in.at(m.x)).bitwise_equal);
  EXPECT_EQ(graph_outputs(m.b.graph), std::vector<TensorId>{m.relu.result});
  EXPECT_EQ(graph_inputs(m.b.graph), (std::vector<TensorId>{m.x, m.w, m.bias}));
}

TEST(NaiveExecutor, DeterministicAcrossRuns) {
  Mlp m;
  NaiveExecutor naive(m.b.graph);
  BufferMap in = generate_inputs(m.b.graph, {.seed = 9});
  EXPECT_TRUE(compare_tensors(m.b.graph, naive.run(in), naive.run(in)).all_bitwise_equal());
}

TEST(NaiveExecutor, BindsNpyStyleBuffersByName) {
  Mlp m;
  // Buffers at the origin (as read from .npy) are relocated onto X's range.
  BufferMap out =
      run_naive(m.b.graph, {{"X", Buffer(DType::kFloat32, Range::of_shape({5, 6}))},
                            {"W", Buffer(DType::kFloat32, Range::of_shape({3, 6}))},
                            {"b", Buffer::from_values<float>(Range::of_shape({3}), {1, -1, 2})}});
  EXPECT_EQ(out.at(m.x).range(), Range({-40, 20}, {-35, 26}));
  EXPECT_THAT(values_of<float>(out, m.relu.result).front(), 1.0f);
}

TEST(NaiveExecutor, InputErrorsNameTheTensor) {
  Mlp m;
  const Buffer w(DType::kFloat32, Range::of_shape({3, 6}));
  const Buffer bias(DType::kFloat32, Range::of_shape({3}));
  EXPECT_EQ(error_of([&] {
              (void)run_naive(m.b.graph, {{"W", w}, {"b", bias}});
            }),
            "input tensor 'X' has no buffer");
  EXPECT_EQ(error_of([&] {
              (void)run_naive(
                  m.b.graph,
                  {{"X", Buffer(DType::kFloat64, Range::of_shape({5, 6}))}, {"W", w}, {"b", bias}});
            }),
            "tensor 'X' is float32 zr[-40:-35, 20:26] (shape (5, 6)), but its buffer is float64 "
            "zr[0:5, 0:6] (shape (5, 6))");
  EXPECT_EQ(error_of([&] {
              (void)run_naive(m.b.graph,
                              {{"X", Buffer(DType::kFloat32, Range::of_shape({5, 6}))},
                               {"W", w},
                               {"b", bias},
                               {"R3", Buffer(DType::kFloat32, Range::of_shape({5, 3}))}});
            }),
            "tensor 'R3' is computed by operation 'linear_1'; it cannot be an input");
  EXPECT_EQ(error_of([&] {
              (void)run_naive(m.b.graph, {{"nope", w}});
            }),
            "no tensor is labelled or keyed 'nope'");
}

TEST(NaiveExecutor, UnknownKernelNamesTheOperation) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({2}));
  add_unary(b, "fft", x);
  // The known kernels are listed in name order (the training kernels sit among them).
  EXPECT_THAT(error_of([&] { NaiveExecutor naive(b.graph); }),
              AllOf(HasSubstr("operation 'fft_1': no kernel named 'fft' (known: adam, add, "),
                    HasSubstr(", conv2d, "), HasSubstr(", relu, ")));
}

TEST(NaiveExecutor, JavaKernelNamesResolve) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "int32", Range::of_shape({2}));
  Built op = add_unary(b, "op:neg", x);
  BufferMap out =
      run_naive(b.graph, {{"X", Buffer::from_values<std::int32_t>(Range::of_shape({2}), {1, -2})}});
  EXPECT_THAT(values_of<std::int32_t>(out, op.result), ElementsAre(-1, 2));
}

TEST(NaiveExecutor, LoomOnlyDtypesAreAnError) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "int8", Range::of_shape({2}));
  add_unary(b, "relu", x);
  EXPECT_EQ(error_of([&] { (void)NaiveExecutor(b.graph).run({}); }),
            "tensor 'X': dtype int8 cannot be executed (the runtime runs float32, float64, "
            "int32, int64, bfloat16, float16)");
}

// Every dtype the table does not mark executable, and a spelling it lacks, is an Error naming
// the tensor (never an assertion or a crash).
TEST(NaiveExecutor, NonExecutableAndUnknownDtypesAreAnError) {
  for (ir::DType d : ir::all_dtypes()) {
    if (ir::is_executable(d)) continue;
    GraphBuilder b;
    add_unary(b, "relu", b.tensor("X", ir::dtype_name(d), Range::of_shape({2})));
    EXPECT_EQ(error_of([&] { (void)NaiveExecutor(b.graph).run({}); }),
              fmt::format("tensor 'X': dtype {} cannot be executed (the runtime runs float32, "
                          "float64, int32, int64, bfloat16, float16)",
                          d));
  }
  GraphBuilder b;
  add_unary(b, "relu", b.tensor("X", "f32", Range::of_shape({2})));
  EXPECT_EQ(error_of([&] { (void)NaiveExecutor(b.graph).run({}); }),
            "tensor 'X': unknown dtype 'f32'");
}

TEST(NaiveExecutor, SelectionThatDisagreesWithItsIpf) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({4}));
  TensorId y = b.tensor("Y", "float32", Range::of_shape({4}));
  ir::OperationBody body{.kernel = "relu"};
  body.inputs.append("x", {x, Range({0}, {3})});  // IPF(index) is zr[0:4]
  body.outputs.append("result", {y, Range::of_shape({4})});
  OperationId op = b.graph.add_operation(std::move(body), {.label = "bad"});
  b.graph.set_ipf_index(op, Range::of_shape({4}));
  ir::IpfSignature sig;
  sig.inputs.append("x", IndexProjection::identity(1));
  sig.outputs.append("result", IndexProjection::identity(1));
  b.graph.set_ipf_signature(op, sig);
  EXPECT_EQ(error_of([&] {
              (void)run_naive(b.graph, {{"X", Buffer(DType::kFloat32, Range::of_shape({4}))}});
            }),
            "operation 'bad': selection x[0] is zr[0:3], but its IPF gives zr[0:4] for index "
            "zr[0:4]");
}

TEST(NaiveExecutor, MissingTagsAndPortsAreErrors) {
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({4}));
  TensorId y = b.tensor("Y", "float32", Range::of_shape({4}));
  ir::OperationBody body{.kernel = "relu"};
  body.inputs.append("input", {x, Range::of_shape({4})});
  body.outputs.append("result", {y, Range::of_shape({4})});
  OperationId op = b.graph.add_operation(std::move(body), {.label = "r"});
  EXPECT_THAT(error_of([&] { NaiveExecutor naive(b.graph); }),
              HasSubstr("operation 'r' has no IPFIndex tag"));
  b.graph.set_ipf_index(op, Range::of_shape({4}));
  ir::IpfSignature sig;
  sig.inputs.append("input", IndexProjection::identity(1));
  sig.outputs.append("result", IndexProjection::identity(1));
  b.graph.set_ipf_signature(op, sig);
  EXPECT_EQ(error_of([&] {
              (void)run_naive(b.graph, {{"X", Buffer(DType::kFloat32, Range::of_shape({4}))}});
            }),
            "operation 'r' (kernel relu): expects input x[0], but the operation has 0 input(s) "
            "named 'x'");
}

TEST(NaiveExecutor, PoisonsWhatNoKernelWrites) {
  // An output list the kernel does not know about is never written: it stays NaN.
  GraphBuilder b;
  TensorId x = b.tensor("X", "float32", Range::of_shape({2}));
  TensorId y = b.tensor("Y", "float32", Range::of_shape({2}));
  TensorId extra = b.tensor("E", "float32", Range::of_shape({2}));
  const IndexProjection id = IndexProjection::identity(1);
  b.op("relu", Range::of_shape({2}), {{"x", x, id}}, {{"result", y, id}, {"spare", extra, id}});
  BufferMap out = run_naive(b.graph, {{"X", Buffer(DType::kFloat32, Range::of_shape({2}))}});
  EXPECT_TRUE(std::isnan(values_of<float>(out, extra)[0]));
}

}  // namespace
}  // namespace tapestry::runtime
