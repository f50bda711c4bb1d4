// grad (metakernel/autodiff.h): the graph it builds, its names, and every request it refuses.
// The values are checked against finite differences in tests/runtime/autodiff_fd_test.cpp and
// against PyTorch in tests/python/test_autodiff.py.
#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/autodiff.h"
#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/printer.h"
#include "tapestry/metakernel/tap_frontend.h"

namespace tapestry::metakernel {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> operation_names(const ir::Graph& g) {
  std::vector<std::string> names;
  for (ir::OperationId op : g.operations()) {
    names.push_back(g.display_name(op) + "=" + g.operation(op).kernel());
  }
  return names;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The worked example of autodiff.h: L = sum(relu(linear(X, W, b))), grad(L, W, b).
TEST(Autodiff, TheHeadersWorkedExample) {
  Graph g;
  const Tensor x = g.input("X", DType::kFloat32, {64, 16});
  const Tensor w = g.input("W", DType::kFloat32, {32, 16});
  const Tensor b = g.input("b", DType::kFloat32, {32});
  const Tensor h = g.assign("H", g.call("relu", {g.call("linear", {x, w, b})}));
  const Tensor l = g.assign("L", g.call("sum", {g.call("sum", {h})}));
  const std::vector<Tensor> d = g.grad(l, std::vector<Tensor>{w, b});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].name(), "dW");
  EXPECT_EQ(d[1].name(), "db");
  EXPECT_EQ(d[0].type().to_string(), "f32[32, 16]");
  EXPECT_EQ(d[1].type().to_string(), "f32[32]");
  EXPECT_THAT(operation_names(g.ir()),
              ::testing::ElementsAre("H/linear=linear", "H=relu", "L/sum=sum", "L=sum",
                                     "dW/ones_like=ones_like", "dW/broadcast=broadcast",
                                     "dW/broadcast.2=broadcast", "dW/relu_grad=relu_grad",
                                     "dW=linear_grad_w", "db=sum_to"));
  g.output(l);
  for (const Tensor& t : d) g.output(t);
  const ir::Graph graph = g.take();
  EXPECT_TRUE(validate_built_graph(graph).is_valid());
}

// A tensor read twice gets one `add` of its two cotangents; a wrt tensor the loss does not read
// gets zeros and a warning.
TEST(Autodiff, SumsCotangentsAndReportsUnusedInputs) {
  Graph g;
  const Tensor x = g.input("X", DType::kFloat64, {3});
  const Tensor unused = g.input("U", DType::kFloat64, {2});
  const Tensor l = g.assign("L", g.call("sum", {g.call("mul", {x, x})}));
  std::vector<ir::Issue> issues;
  GradOptions options;
  options.issues = &issues;
  const std::vector<Tensor> d = g.grad(l, std::vector<Tensor>{x, unused}, options);
  EXPECT_EQ(d[0].name(), "dX");
  EXPECT_EQ(d[1].name(), "dU");
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].type, "grad-unused-input");
  EXPECT_EQ(issues[0].summary, "L does not depend on U");
  const ir::Graph& ir = g.ir();
  EXPECT_EQ(ir.operation(*ir.producers(d[0].id()).begin()).kernel(), "add");
  EXPECT_EQ(ir.operation(*ir.producers(d[1].id()).begin()).kernel(), "zeros_like");
}

TEST(Autodiff, RefusesWhatItCannotDifferentiate) {
  Graph g;
  const Tensor x = g.input("X", DType::kFloat32, {4, 5});
  const Tensor i = g.input("I", DType::kInt32, {4});
  const Tensor s = g.input("S", DType::kFloat32, {4});
  const Tensor y = g.assign("Y", g.call("max", {x}, {{"dim", 1}}));
  // softmax_grad has no VJP (a second derivative).
  const Tensor v = g.assign("V", g.call("softmax_grad", {g.call("softmax", {x}), x}));
  const Tensor l = g.assign("L", g.call("sum", {g.call("sum", {v})}));
  EXPECT_EQ(
      error_of([&] { g.grad(l, std::vector<Tensor>{x}); }),
      "grad: operation V (kernel softmax_grad) has no VJP, and the loss L depends on it through "
      "the tensors asked for (docs/training.md lists the kernels with one)");
  EXPECT_EQ(error_of([&] {
              g.grad(l, std::vector<Tensor>{x, s, x});
            }),
            "grad: X is asked for twice");
  EXPECT_THAT(error_of([&] { g.grad(y, std::vector<Tensor>{x}); }),
              HasSubstr("grad: the loss Y is f32[4], not a scalar"));
  EXPECT_EQ(error_of([&] { g.grad(l, std::vector<Tensor>{i}); }),
            "grad: I is i32[4]; only float tensors have gradients");
  GradOptions bad_seed;
  bad_seed.seed = x;
  EXPECT_EQ(error_of([&] { g.grad(y, std::vector<Tensor>{x}, bad_seed); }),
            "grad: the seed X is f32[4, 5] but the loss Y is f32[4]");
}

// A seed cotangent for a non-scalar output: grad(Y, X, seed=S) = VJP of S.
TEST(Autodiff, ASeedDifferentiatesANonScalarOutput) {
  Graph g;
  const Tensor x = g.input("X", DType::kFloat32, {4, 5});
  const Tensor s = g.input("S", DType::kFloat32, {4, 5});
  const Tensor y = g.assign("Y", g.call("tanh", {x}));
  GradOptions options;
  options.seed = s;
  const std::vector<Tensor> d = g.grad(y, std::vector<Tensor>{x}, options);
  EXPECT_EQ(g.ir().operation(*g.ir().producers(d[0].id()).begin()).kernel(), "tanh_grad");
}

// .tap: `dW, db = grad(L, W, b)`, and the statement's mistakes at their place.
TEST(Autodiff, TapGradStatement) {
  const char* text = R"(X: f32[8, 4]
W: f32[3, 4]
b: f32[3]
Y = linear(X, W, b)
L = sum(sum(Y))
dW, db = grad(L, W, b)
output L, dW, db
)";
  BuildResult built =
      build_tap(std::make_shared<const SourceFile>("g.tap", text), builtin_signatures());
  ASSERT_TRUE(built.ok()) << format_diagnostics(built.diagnostics);
  EXPECT_TRUE(built.warnings.empty());
  const std::string printed = print_tap(*built.graph, builtin_signatures());
  EXPECT_THAT(printed, HasSubstr("dW = linear_grad_w(X, dW/broadcast.2)"));
  EXPECT_THAT(printed, HasSubstr("db = sum_to(dW/broadcast.2, shape=[3])"));

  auto diagnostics = [](const std::string& source) {
    BuildResult r =
        build_tap(std::make_shared<const SourceFile>("g.tap", source), builtin_signatures());
    return format_diagnostics(r.diagnostics);
  };
  const std::string head = "X: f32[8, 4]\nW: f32[3, 4]\nL = sum(sum(X))\n";
  EXPECT_THAT(diagnostics(head + "dW, dX = grad(L, W)\n"),
              HasSubstr("g.tap:4:1: error: grad of 1 tensors assigns 2 variables"));
  EXPECT_THAT(diagnostics(head + "A, B = sum(X)\n"),
              HasSubstr("g.tap:4:4: error: only grad(...) assigns several variables"));
  EXPECT_THAT(diagnostics(head + "A = relu(grad(L, W))\n"),
              HasSubstr("g.tap:4:10: error: grad(...) is a statement of its own"));
  BuildResult unused =
      build_tap(std::make_shared<const SourceFile>("g.tap", head + "dW = grad(L, W)\n"),
                builtin_signatures());
  ASSERT_TRUE(unused.ok());
  ASSERT_EQ(unused.warnings.size(), 1u);
  EXPECT_EQ(support::format_diagnostic(unused.warnings[0]),
            "g.tap:4:6: warning: L does not depend on W: its gradient dW is zeros "
            "(zeros_like(W))\n  dW = grad(L, W)\n       ^");
}

// grad on an ir::Graph replays it (names kept) and marks loss and gradients as outputs.
// conv2d's padding= is a pad operation: dX is the interior (unpad) of the padded input's
// gradient, the transposed convolution; dW reads the padded input. The pool's gradient comes
// first.
TEST(Autodiff, ConvolutionWithPaddingAndPoolingGradients) {
  const char* text = R"(X: f32[2, 3, 8, 8]
W: f32[4, 3, 3, 3]
Y = conv2d(X, W, stride=2, padding=1)
P = max_pool2d(Y, kernel=2, stride=2)
L = sum(sum(sum(sum(P))))
dX, dW = grad(L, X, W)
output L, dX, dW
)";
  BuildResult built =
      build_tap(std::make_shared<const SourceFile>("g.tap", text), builtin_signatures());
  ASSERT_TRUE(built.ok()) << format_diagnostics(built.diagnostics);
  const std::string printed = print_tap(*built.graph, builtin_signatures());
  EXPECT_THAT(printed, HasSubstr("Y/pad = pad(X, padding=1)\nY = conv2d(Y/pad, W, stride=2)\n"));
  EXPECT_THAT(printed, HasSubstr("dX/max_pool2d_grad = max_pool2d_grad(Y, dX/broadcast.4, "
                                 "kernel=2, stride=2)\n"));
  EXPECT_THAT(printed, HasSubstr("dW = conv2d_grad_weight(Y/pad, dX/max_pool2d_grad, kh=3, kw=3, "
                                 "stride=2)\n"));
  EXPECT_THAT(printed, HasSubstr("dX = unpad(conv2d_grad_input(Y/pad, W, dX/max_pool2d_grad, "
                                 "stride=2), padding=1)\n"));
}

TEST(Autodiff, GradOfAnIrGraph) {
  const char* text =
      "X: f32[8, 4]\nW: f32[3, 4]\nY = relu(linear_nobias(X, W))\n"
      "L = sum(sum(Y))\noutput Y\n";
  BuildResult built =
      build_tap(std::make_shared<const SourceFile>("g.tap", text), builtin_signatures());
  ASSERT_TRUE(built.ok());
  const GradResult r = grad(*built.graph, GradRequest{"L", {"W"}, std::nullopt, {"gW"}});
  std::vector<std::string> outputs;
  for (ir::TensorId t : r.graph.tensors()) {
    if (is_graph_output(r.graph, t)) outputs.push_back(r.graph.display_name(t));
  }
  EXPECT_THAT(outputs, ::testing::UnorderedElementsAre("Y", "L", "gW"));
  EXPECT_TRUE(validate_built_graph(r.graph).is_valid());
  EXPECT_EQ(error_of([&] {
              grad(*built.graph, GradRequest{"Q", {"W"}, std::nullopt, {}});
            }),
            "grad: no tensor is named Q");
}

// A VJP that calls an unknown kernel is reported at its place once the directory is loaded.
TEST(Autodiff, AVjpCallingAnUnknownKernelIsALoadError) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("tapestry_vjp_unknown_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.yaml") << R"yaml(kernel: twice
types: {T: float}
inputs:
  x: {shape: "[$d...]", dtype: T}
outputs:
  result: {shape: "[$d...]", dtype: T}
index: "[$d...]"
ipfs: {x: "[$d...]", result: "[$d...]"}
vjp:
  x: "mul_scalr(d_result, factor=2.0)"
)yaml";
  SignatureRegistry r = SignatureRegistry::with_builtins();
  const std::string message = error_of([&] { r.load_directory(dir); });
  EXPECT_THAT(message, HasSubstr("k.yaml:10:7: error: vjp: unknown kernel 'mul_scalr' (did you "
                                 "mean mul_scalar?)"));
  std::filesystem::remove_all(dir);
}

TEST(Autodiff, TheBuiltInsWithAndWithoutAVjp) {
  const VjpCoverage c = vjp_coverage(builtin_signatures());
  for (const char* k : {"add", "linear", "matmul", "relu", "gelu", "sum", "mean", "max", "softmax",
                        "slice", "permute", "reshape", "reduce", "pad", "unpad", "variance",
                        "conv2d", "max_pool2d", "avg_pool2d"}) {
    EXPECT_THAT(c.with_vjp, ::testing::Contains(k));
  }
  // The optimizer updates and the gradient kernels themselves (second derivatives).
  for (const char* k : {"sgd", "adam", "sum_to", "relu_grad", "conv2d_grad_input",
                        "conv2d_grad_weight", "max_pool2d_grad", "reduce_grad", "softmax_grad"}) {
    EXPECT_THAT(c.without_vjp, ::testing::Contains(k));
  }
}

}  // namespace
}  // namespace tapestry::metakernel
