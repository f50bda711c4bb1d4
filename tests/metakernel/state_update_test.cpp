// State updates (ir/state_update.h): the .tap `update` statement, the builder's Graph::update,
// the loom JSON "updates" object, `print`, `grad` replays — and every update they refuse.
#include <gmock/gmock.h>

#include "tapestry/ir/graph_compare.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/ir/state_update.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/autodiff.h"
#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/printer.h"
#include "tapestry/metakernel/tap_frontend.h"

namespace tapestry::metakernel {
namespace {

using ::testing::HasSubstr;

constexpr const char* kStep = R"(X: f32[8, 4]
T: f32[8, 1]
W: f32[1, 4]
b: f32[1]
L = mse(linear(X, W, b), T)
dW, db = grad(L, W, b)
Wn = sgd(W, dW, lr=0.1)
bn = sgd(b, db, lr=0.1)
output L
update W <- Wn, b <- bn
)";

BuildResult build(const std::string& text) {
  return build_tap(std::make_shared<const SourceFile>("step.tap", text), builtin_signatures());
}

std::vector<std::string> update_names(const ir::Graph& g) {
  std::vector<std::string> out;
  for (const ir::StateUpdate& u : g.updates()) {
    out.push_back(g.display_name(u.state) + "<-" + g.display_name(u.next));
  }
  return out;
}

std::string first_error(const BuildResult& r) {
  return r.diagnostics.empty() ? "(no error)" : support::format_diagnostic(r.diagnostics.front());
}

TEST(StateUpdate, TapStatementDeclaresUpdatesAndOutputs) {
  const BuildResult r = build(kStep);
  ASSERT_TRUE(r.ok()) << first_error(r);
  const ir::Graph& g = *r.graph;
  EXPECT_THAT(update_names(g), ::testing::ElementsAre("W<-Wn", "b<-bn"));
  std::vector<std::string> outputs;
  for (ir::TensorId t : graph_outputs(g)) outputs.push_back(g.display_name(t));
  // The next values become outputs beside the declared loss.
  EXPECT_THAT(outputs, ::testing::UnorderedElementsAre("L", "Wn", "bn"));
}

TEST(StateUpdate, WithoutDeclaredOutputsTheImplicitOnesStay) {
  const BuildResult r =
      build("W: f32[4]\nG: f32[4]\nWn = sgd(W, G, lr=0.5)\nL = sum(mul(Wn, Wn))\nupdate W <- Wn\n");
  ASSERT_TRUE(r.ok()) << first_error(r);
  std::vector<std::string> outputs;
  for (ir::TensorId t : graph_outputs(*r.graph)) outputs.push_back(r.graph->display_name(t));
  EXPECT_THAT(outputs, ::testing::UnorderedElementsAre("L", "Wn"));
}

TEST(StateUpdate, PrintAndJsonRoundTrip) {
  const BuildResult r = build(kStep);
  ASSERT_TRUE(r.ok()) << first_error(r);
  const std::string text = print_tap(*r.graph, builtin_signatures());
  EXPECT_THAT(text, HasSubstr("\nupdate W <- Wn, b <- bn\n"));
  const BuildResult again = build(text);
  ASSERT_TRUE(again.ok()) << first_error(again);
  EXPECT_TRUE(ir::compare_operation_graphs(*r.graph, *again.graph).is_empty());

  const std::string json = ir::write_graph_json(*r.graph);
  EXPECT_THAT(json, HasSubstr("\"updates\""));
  const ir::ReadResult read = ir::read_graph_json(json, "step.json");
  ASSERT_TRUE(read.has_graph());
  EXPECT_FALSE(ir::has_errors(read.issues)) << ir::format_issues_text(read.issues);
  EXPECT_THAT(update_names(*read.graph), ::testing::ElementsAre("W<-Wn", "b<-bn"));
  EXPECT_TRUE(ir::compare_operation_graphs(*r.graph, *read.graph).is_empty());
}

TEST(StateUpdate, UpdatesChangeTheComparison) {
  const BuildResult a = build(kStep);
  const BuildResult b = build(
      std::string(kStep).replace(std::string(kStep).find("update"),
                                 std::string("update W <- Wn, b <- bn").size(), "update W <- Wn"));
  ASSERT_TRUE(a.ok() && b.ok()) << first_error(b);
  EXPECT_FALSE(ir::compare_operation_graphs(*a.graph, *b.graph).is_empty());
}

TEST(StateUpdate, GradKeepsTheUpdates) {
  const BuildResult r = build(kStep);
  ASSERT_TRUE(r.ok()) << first_error(r);
  const GradResult g = grad(*r.graph, {.loss = "L", .wrt = {"X"}, .seed = {}, .names = {"dX"}});
  EXPECT_THAT(update_names(g.graph), ::testing::ElementsAre("W<-Wn", "b<-bn"));
}

TEST(StateUpdate, TapErrorsAreLocated) {
  EXPECT_THAT(first_error(build("W: f32[4]\nupdate W <- Q\n")),
              HasSubstr("step.tap:2:13: error: update Q: no such tensor"));
  EXPECT_THAT(first_error(build("W: f32[4]\nV = relu(W)\nU = relu(V)\nupdate V <- U\n")),
              HasSubstr("step.tap:4:8: error: update V <- U: V is computed by operation V (only a "
                        "graph input can be state)"));
  EXPECT_THAT(first_error(build("W: f32[4]\nb: f32[3]\nupdate W <- b\n")),
              HasSubstr("update W <- b: W is float32[4] but b is float32[3]"));
  EXPECT_THAT(first_error(build("W: i32[4]\nb: f32[4]\nupdate W <- b\n")),
              HasSubstr("update W <- b: W is int32[4] but b is float32[4]"));
  EXPECT_THAT(first_error(build("W: f32[4]\nA = relu(W)\nB = neg(W)\nupdate W <- A, W <- B\n")),
              HasSubstr("update W <- B: W is already updated by A"));
  EXPECT_THAT(first_error(build("W: f32[4]\nA = relu(W)\nupdate W A\n")),
              HasSubstr("expected ':' (a declaration) or '='"));
  EXPECT_THAT(first_error(build("W: f32[4]\nA = relu(W)\nupdate W <- \n")),
              HasSubstr("(the tensor that updates it)"));
}

TEST(StateUpdate, UpdateIsStillAVariableName) {
  const BuildResult r = build("update: f32[4]\nY = relu(update)\noutput Y\n");
  EXPECT_TRUE(r.ok()) << first_error(r);
}

TEST(StateUpdate, BuilderChecksAndAcceptsAnotherOutputPort) {
  Graph g;
  const Tensor w = g.input("W", DType::kFloat32, {4});
  const Tensor m = g.input("M", DType::kFloat32, {4});
  const Tensor v = g.input("V", DType::kFloat32, {4});
  const Tensor gr = g.input("G", DType::kFloat32, {4});
  const Tensor step = g.input("step", DType::kInt64, {});
  const Tensor s = g.assign("S", g.call("adam", {w, gr, m, v, step}));
  g.update(w, s);
  g.update(m, *g.find("S.m_next"));
  g.update(v, *g.find("S.v_next"));
  EXPECT_THROW(g.update(w, s), Error);  // twice
  EXPECT_THROW(g.update(s, w), Error);  // not an input
  const ir::Graph graph = g.take();
  EXPECT_THAT(update_names(graph),
              ::testing::ElementsAre("W<-S.result", "M<-S.m_next", "V<-S.v_next"));
  // .tap names another output port by its label.
  const BuildResult r = build(
      "W: f32[4]\nM: f32[4]\nV: f32[4]\nG: f32[4]\nstep: i64[]\nS = adam(W, G, M, V, step)\n"
      "update W <- S, M <- S.m_next, V <- S.v_next\n");
  ASSERT_TRUE(r.ok()) << first_error(r);
  EXPECT_THAT(update_names(*r.graph),
              ::testing::ElementsAre("W<-S.result", "M<-S.m_next", "V<-S.v_next"));
}

std::string json_errors(const std::string& updates) {
  const BuildResult r = build(kStep);
  std::string json = ir::write_graph_json(*r.graph);
  const std::size_t at = json.find("\"updates\"");
  json = json.substr(0, at) + "\"updates\": " + updates + "}";
  const ir::ReadResult read = ir::read_graph_json(json, "step.json");
  return ir::format_issues_text(read.issues);
}

TEST(StateUpdate, JsonErrorsNameThePointer) {
  EXPECT_THAT(json_errors(R"({"W": "Nope"})"),
              ::testing::AllOf(HasSubstr("no tensor is named Nope"), HasSubstr("$.updates.W")));
  EXPECT_THAT(json_errors(R"({"Wn": "W"})"), HasSubstr("Wn is computed by operation Wn"));
  EXPECT_THAT(json_errors(R"({"W": "bn"})"),
              ::testing::AllOf(HasSubstr("W is float32[1, 4] but bn is float32[1]"),
                               HasSubstr("$.updates.W")));
  EXPECT_THAT(json_errors(R"({"W": 3})"), HasSubstr("must be a string"));
  EXPECT_THAT(json_errors(R"(["W"])"), HasSubstr("The updates are not an object"));
  EXPECT_THAT(json_errors(R"({"W": "Wn"})"), HasSubstr("no issues"));
}

}  // namespace
}  // namespace tapestry::metakernel
