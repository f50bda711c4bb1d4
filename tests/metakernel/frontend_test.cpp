// The .tap front end: graphs from text, names, diagnostics next to the bad line, validation of
// every example.
#include <gmock/gmock.h>

#include <filesystem>

#include "tapestry/ir/dialect.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/printer.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "test_util.h"

namespace tapestry::metakernel {
namespace {

using namespace testing;  // NOLINT
using ::testing::HasSubstr;

BuildResult build(const std::string& text, ApplyOptions options = {}) {
  return build_tap(std::make_shared<const SourceFile>("t.tap", text), signatures(), options);
}

ir::Graph build_ok(const std::string& text) {
  BuildResult r = build(text);
  EXPECT_TRUE(r.ok()) << format_diagnostics(r.diagnostics);
  if (!r.ok()) throw Error("build failed");
  return std::move(*r.graph);
}

std::string build_errors(const std::string& text) {
  BuildResult r = build(text);
  EXPECT_FALSE(r.ok());
  return format_diagnostics(r.diagnostics);
}

std::vector<std::string> op_labels(const ir::Graph& g) {
  std::vector<std::string> out;
  for (ir::OperationId op : g.operations()) out.push_back(g.operation(op).label());
  return out;
}

std::optional<ir::OperationId> find_op(const ir::Graph& g, std::string_view label) {
  for (ir::OperationId op : g.operations()) {
    if (g.operation(op).label() == label) return op;
  }
  return std::nullopt;
}

std::optional<ir::TensorId> find_tensor(const ir::Graph& g, std::string_view label) {
  for (ir::TensorId t : g.tensors()) {
    if (g.tensor(t).label() == label) return t;
  }
  return std::nullopt;
}

const char* kLinearRelu = R"(X: f32[-40:60, 20:32]
W: f32[32, 12]
b: f32[32]
Y = relu(linear(X, W, b))
output Y
)";

TEST(Frontend, RunningExampleBuildsTheDesignGraph) {
  ir::Graph g = build_ok(kLinearRelu);
  EXPECT_EQ(op_labels(g), (std::vector<std::string>{"Y/linear", "Y"}));
  const ir::OperationView linear = g.operation(*find_op(g, "Y/linear"));
  EXPECT_EQ(linear.kernel(), "linear");
  EXPECT_EQ(linear.index_names(), (std::vector<std::string>{"batch", "out", "in"}));
  EXPECT_EQ(linear.reduction(2), ir::Monoid::kSum);
  EXPECT_FALSE(linear.reduction(0));
  ASSERT_TRUE(linear.has_ipf_index());
  EXPECT_EQ(*linear.ipf_index(), zr("zr[0:100, 0:32, 0:12]"));
  EXPECT_EQ(linear.inputs().list("x")[0].range, zr("zr[-40:60, 20:32]"));
  EXPECT_EQ(linear.inputs().list("x")[0].tensor, *find_tensor(g, "X"));
  EXPECT_EQ(linear.ipf_signature()->inputs.list("x")[0],
            ipf({{1, 0, 0}, {0, 0, 1}}, {-40, 20}, {1, 1}));
  // Tensors: the inputs keep their names; each result is labelled like its operation.
  const ir::TensorId z = *find_tensor(g, "Y/linear");
  EXPECT_EQ(g.tensor(z).range(), zr("zr[0:100, 0:32]"));
  EXPECT_EQ(g.tensor(z).dtype(), ir::DType::kFloat32);
  EXPECT_TRUE(is_graph_output(g, *find_tensor(g, "Y")));
  EXPECT_FALSE(is_graph_output(g, z));
  // One whole-index application per operation.
  ASSERT_EQ(g.applications().size(), 2u);
  EXPECT_EQ(*g.application(g.applications()[0]).ipf_index(), zr("zr[0:100, 0:32, 0:12]"));
  const ir::ValidationReport report = validate_built_graph(g);
  EXPECT_TRUE(report.is_valid()) << ir::format_issues_text(report.issues);
}

TEST(Frontend, OperationOnlyGraphsHaveNoApplications) {
  BuildResult r = build(kLinearRelu, ApplyOptions{.add_application = false});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.graph->applications().empty());
  const ir::ValidationReport report = ir::validate(*r.graph, ir::Dialect::operation());
  EXPECT_TRUE(report.is_valid()) << ir::format_issues_text(report.issues);
}

TEST(Frontend, NestedCallsAreNumberedPerStatement) {
  ir::Graph g = build_ok(R"(A: f32[4]
B: f32[4]
Z = add(relu(A), relu(neg(B)))
Q = relu(Z)
output Q
)");
  EXPECT_EQ(op_labels(g), (std::vector<std::string>{"Z/relu", "Z/neg", "Z/relu.2", "Z", "Q"}));
}

TEST(Frontend, SugarOperationsAreNamedLikeNestedCalls) {
  ir::Graph g = build_ok(R"(I: f32[1, 3, 8, 8]
K: f32[4, 3, 3, 3]
C = conv2d(I, K, stride=2, padding=1)
)");
  EXPECT_EQ(op_labels(g), (std::vector<std::string>{"C/pad", "C"}));
  EXPECT_EQ(g.tensor(*find_tensor(g, "C/pad")).range(), zr("zr[0:1, 0:3, -1:9, -1:9]"));
  const ir::OperationView conv = g.operation(*find_op(g, "C"));
  EXPECT_EQ(conv.params(), (nlohmann::json{{"stride", 2}}));
  EXPECT_EQ(g.tensor(*find_tensor(g, "C")).range(), zr("zr[0:1, 0:4, 0:4, 0:4]"));
}

TEST(Frontend, KeywordParamsOfEveryLiteralKind) {
  ir::Graph g = build_ok(R"(X: f32[2, 3, 4]
A = sum(X, dim=-2)
B = reshape(X, shape=[6, 4])
C = reduce(X, op=max)
D = reduce(X, op="min")
E = pad(X, padding=1, value=-0.5)
)");
  EXPECT_EQ(g.operation(*find_op(g, "A")).params(), (nlohmann::json{{"dim", 1}}));
  EXPECT_EQ(g.operation(*find_op(g, "B")).params(), (nlohmann::json{{"shape", {6, 4}}}));
  EXPECT_EQ(g.operation(*find_op(g, "C")).params(), (nlohmann::json{{"op", "max"}}));
  EXPECT_EQ(g.operation(*find_op(g, "D")).params(), (nlohmann::json{{"op", "min"}}));
  EXPECT_EQ(g.operation(*find_op(g, "E")).params(),
            (nlohmann::json{{"padding", 1}, {"value", -0.5}}));
}

// Invalid inputs, each with the expected diagnostic (file:line:col, message, caret).
struct InvalidCase {
  const char* name;
  const char* text;
  const char* expected;
};

class FrontendInvalid : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(FrontendInvalid, ReportsTheLocatedDiagnostic) {
  EXPECT_EQ(build_errors(GetParam().text), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FrontendInvalid,
    ::testing::Values(
        InvalidCase{"shape_mismatch",
                    "X: f32[4, 12]\nW: f32[32, 16]\nb: f32[32]\nH = relu(linear(X, W, b))\n",
                    "t.tap:4:10: error: linear: X has 12 columns but W has 16 (its in dimension)\n"
                    "  H = relu(linear(X, W, b))\n"
                    "           ^"},
        InvalidCase{"unknown_variable", "X: f32[4]\nY = relu(Q)\n",
                    "t.tap:2:10: error: unknown variable 'Q'\n  Y = relu(Q)\n           ^"},
        // A statement cannot use the variable it defines: an error at the use, and the
        // statements depending on it fail silently (not a graph holding only X).
        InvalidCase{"self_reference", "X: f32[4]\nA = add(X, A)\nB = neg(A)\noutput B\n",
                    "t.tap:2:12: error: unknown variable 'A'\n  A = add(X, A)\n             ^"},
        InvalidCase{"self_reference_nested", "X: f32[4]\nA = relu(add(X, relu(A)))\n",
                    "t.tap:2:22: error: unknown variable 'A'\n"
                    "  A = relu(add(X, relu(A)))\n                       ^"},
        InvalidCase{
            "unknown_kernel", "X: f32[4]\nY = rleu(X)\n",
            "t.tap:2:5: error: unknown kernel 'rleu' (did you mean relu?)\n  Y = rleu(X)\n      ^"},
        InvalidCase{"redefinition", "X: f32[4]\nX = relu(X)\n",
                    "t.tap:2:1: error: X is already defined (line 1)\n  X = relu(X)\n  ^"},
        InvalidCase{
            "alias_assignment", "X: f32[4]\nY = X\n",
            "t.tap:2:5: error: Y = X assigns no operation: use X directly\n  Y = X\n      ^"},
        InvalidCase{"unknown_output", "X: f32[4]\noutput Z\n",
                    "t.tap:2:8: error: output Z: no such variable\n  output Z\n         ^"},
        // S.<port> names another output of the operation assigned to S, and nothing else.
        InvalidCase{"unknown_port",
                    "P: f32[4]\nG: f32[4]\nV: f32[4]\nS = sgd_momentum(P, G, V, lr=0.1, "
                    "momentum=0.9)\noutput S.velocity\n",
                    "t.tap:5:8: error: output S.velocity: no such variable\n  output "
                    "S.velocity\n         ^"},
        InvalidCase{"port_of_an_input", "X: f32[4]\nY = relu(X.result)\n",
                    "t.tap:2:10: error: unknown variable 'X.result'\n  Y = relu(X.result)\n"
                    "           ^"},
        InvalidCase{"bad_param", "X: f32[4, 4]\nY = sum(X, dim=5)\n",
                    "t.tap:2:5: error: sum: parameter dim=5 is out of range for X of rank 2 "
                    "(valid: -2 to 1)\n"
                    "  Y = sum(X, dim=5)\n      ^"},
        InvalidCase{"param_twice", "X: f32[4, 4]\nY = sum(X, dim=0, dim=1)\n",
                    "t.tap:2:19: error: parameter dim is given twice\n  Y = sum(X, dim=0, dim=1)\n "
                    "                   ^"},
        InvalidCase{
            "syntax", "X: f32[4\n",
            "t.tap:1:9: error: expected ']' after the dimensions, found the end of the line\n"
            "  X: f32[4\n          ^"},
        InvalidCase{"bad_dtype", "X: f33[4]\n",
                    "t.tap:1:4: error: unknown dtype 'f33' (dtypes: f32 f64 i32 i64 bf16 f16)\n  "
                    "X: f33[4]\n     ^"},
        // A loom-only dtype declares a tensor for operation statements; no kernel takes it.
        InvalidCase{"loom_only_dtype", "X: int8[4]\nY = relu(X)\n",
                    "t.tap:2:5: error: tensor X has dtype int8, which no kernel takes (f32 f64 "
                    "i32 i64 bf16 f16)\n  Y = relu(X)\n      ^"},
        InvalidCase{"empty_dtype", "X: \"\"[4]\n",
                    "t.tap:1:4: error: a dtype cannot be empty\n  X: \"\"[4]\n     ^"}),
    [](const ::testing::TestParamInfo<InvalidCase>& info) { return std::string(info.param.name); });

// `S = adam(…)` is S's first output, S.result; its other outputs are the variables S.m_next
// and S.v_next, to read and to output (a training step outputs the new moments).
TEST(Frontend, OtherOutputsOfAnAssignedOperationAreVariables) {
  const ir::Graph g = build_ok(
      "P: f32[3, 4]\nG: f32[3, 4]\nM: f32[3, 4]\nV: f32[3, 4]\nT: i64[]\n"
      "S = adam(P, G, M, V, T, lr=0.1)\nN = neg(S.m_next)\noutput S, S.v_next, N\n");
  const auto n = find_op(g, "N");
  const auto m_next = find_tensor(g, "S.m_next");
  ASSERT_TRUE(n && m_next);
  EXPECT_EQ(g.operation(*n).inputs().list("x")[0].tensor, *m_next);
  EXPECT_THAT(print_tap(g, signatures()), HasSubstr("output S.result, S.v_next, N\n"));
}

// Every .tap dtype, by its short and its loom name, declares the same tensor; the graph stores
// the dtype itself (written as its loom name).
TEST(Frontend, ShortAndLongDTypeNamesDeclareTheSameTensor) {
  for (ir::DType d : ir::all_dtypes()) {
    if (!ir::is_tap_dtype(d)) continue;
    for (std::string_view spelling : {ir::dtype_short_name(d), ir::dtype_name(d)}) {
      SCOPED_TRACE(std::string(spelling));
      const ir::Graph g = build_ok(fmt::format("X: {}[-1:3, 2]\nY = neg(X)\noutput Y\n", spelling));
      EXPECT_EQ(g.tensor(*find_tensor(g, "X")).dtype(), d);
      EXPECT_EQ(g.tensor(*find_tensor(g, "Y")).dtype(), d);
    }
  }
}

TEST(Frontend, OneDiagnosticPerFailingStatementAndNoCascade) {
  const std::string errors = build_errors(R"(X: f32[4, 12]
W: f32[32, 16]
b: f32[32]
H = relu(linear(X, W, b))
Y = relu(H)
Z = exp(Q)
output Y
)");
  EXPECT_THAT(errors, HasSubstr("t.tap:4:10: error: linear"));
  EXPECT_THAT(errors, HasSubstr("t.tap:6:9: error: unknown variable 'Q'"));
  EXPECT_THAT(errors, ::testing::Not(HasSubstr("t.tap:5")));  // H failed already: no second error
  EXPECT_THAT(errors, ::testing::Not(HasSubstr("t.tap:7")));
}

TEST(Frontend, SyntaxErrorsAreCollectedLineByLine) {
  BuildResult r = build("X: f32[4]\nY = relu(X,)\nZ = = 3\nW: f32[2, x]\n");
  ASSERT_EQ(r.diagnostics.size(), 3u) << format_diagnostics(r.diagnostics);
  EXPECT_EQ(r.diagnostics[0].where.pos.line, 2);
  EXPECT_EQ(r.diagnostics[1].where.pos, (SourcePos{3, 5}));
  EXPECT_EQ(r.diagnostics[2].where.pos, (SourcePos{4, 11}));
}

std::filesystem::path examples_dir() {
  return TAPESTRY_EXAMPLES_DIR;
}

TEST(Examples, EveryExampleBuildsAndValidates) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(examples_dir())) {
    if (entry.path().extension() != ".tap") continue;
    ++count;
    BuildResult r = build_tap_file(entry.path(), signatures());
    ASSERT_TRUE(r.ok()) << entry.path() << "\n" << format_diagnostics(r.diagnostics);
    const ir::ValidationReport report = validate_built_graph(*r.graph);
    EXPECT_TRUE(report.is_valid()) << entry.path() << "\n" << ir::format_issues_text(report.issues);
  }
  EXPECT_GE(count, 4);
}

TEST(Examples, MlpIsTheDesignExample) {
  BuildResult r = build_tap_file(examples_dir() / "mlp.tap", signatures());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(op_labels(*r.graph), (std::vector<std::string>{"H/linear", "H", "Y"}));
  EXPECT_EQ(r.graph->tensor(*find_tensor(*r.graph, "Y")).range(), zr("zr[0:4096, 0:1024]"));
}

TEST(Examples, ConvnetPadsBeforeEachConvolution) {
  BuildResult r = build_tap_file(examples_dir() / "convnet.tap", signatures());
  ASSERT_TRUE(r.ok()) << format_diagnostics(r.diagnostics);
  EXPECT_EQ(op_labels(*r.graph),
            (std::vector<std::string>{"C1/pad", "C1/conv2d", "C1", "C2/pad", "C2/conv2d", "C2",
                                      "Logits/reshape", "Logits"}));
  EXPECT_EQ(r.graph->tensor(*find_tensor(*r.graph, "C2")).range(), zr("zr[0:8, 0:32, 0:16, 0:16]"));
}

TEST(Examples, TransformerBlockShapes) {
  BuildResult r = build_tap_file(examples_dir() / "transformer_block.tap", signatures());
  ASSERT_TRUE(r.ok()) << format_diagnostics(r.diagnostics);
  const ir::Graph& g = *r.graph;
  EXPECT_EQ(g.tensor(*find_tensor(g, "Q")).range(), zr("zr[0:4, 0:8, 0:128, 0:64]"));
  EXPECT_EQ(g.tensor(*find_tensor(g, "Scores")).range(), zr("zr[0:4, 0:8, 0:128, 0:128]"));
  EXPECT_EQ(g.tensor(*find_tensor(g, "Y")).range(), zr("zr[0:512, 0:512]"));
  EXPECT_EQ(g.operation(*find_op(g, "P")).kernel(), "softmax");
}

}  // namespace
}  // namespace tapestry::metakernel
