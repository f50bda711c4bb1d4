// The rewrite driver (pattern.h): it re-matches an operation a pattern did not match once a
// rewrite changes what is next to it, and it leaves no removed node in the graph.
#include "tapestry/rewrite/pattern.h"

#include <gtest/gtest.h>

#include "rewrite/rewrite_testing.h"

namespace tapestry::rewrite {
namespace {

// Replaces `op` by a copy running `kernel` (same selections and tags), as a rewrite must: the old
// operation is removed, the new one added.
void replace_kernel(RewriteState& state, ir::OperationId op, const std::string& kernel) {
  ir::Graph& g = state.graph;
  const ir::OperationView view = g.operation(op);
  ir::OperationBody body = view.body();
  body.kernel = kernel;
  const std::string label = view.label();
  const zspace::Range index = *view.ipf_index();
  const ir::IpfSignature signature = *view.ipf_signature();
  const ir::NodeId removed[] = {op};
  g.remove(removed);
  const ir::OperationId added = g.add_operation(std::move(body), {.label = label});
  g.set_ipf_index(added, index);
  g.set_ipf_signature(added, signature);
}

std::string kernel_of_single_reader(const ir::Graph& g, ir::OperationId op) {
  const ir::TensorId out = (*g.operation(op).outputs().entries().begin()).value.tensor;
  const auto readers = g.consumers(out);
  return readers.size() == 1 ? g.operation(readers[0]).kernel() : "";
}

// Matches an `exp` whose output is read by a `neg` only — a match that depends on a neighbour —
// and turns it into `abs`.
class MarkExpBeforeNeg final : public OperationPattern {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-mark"; }
  [[nodiscard]] MatchResult match(const RewriteState& state, ir::OperationId op) const override {
    if (state.graph.operation(op).kernel() != "exp") return MatchResult::skip("not an exp");
    if (kernel_of_single_reader(state.graph, op) != "neg") {
      return MatchResult::refuse("its reader is not a neg");
    }
    return MatchResult::success();
  }
  std::string apply(RewriteState& state, ir::OperationId op) const override {
    replace_kernel(state, op, "abs");
    return "exp -> abs";
  }
};

// Turns every `relu` into `neg`.
class ReluToNeg final : public OperationPattern {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-negate"; }
  [[nodiscard]] MatchResult match(const RewriteState& state, ir::OperationId op) const override {
    return state.graph.operation(op).kernel() == "relu" ? MatchResult::success()
                                                        : MatchResult::skip("not a relu");
  }
  std::string apply(RewriteState& state, ir::OperationId op) const override {
    replace_kernel(state, op, "neg");
    return "relu -> neg";
  }
};

std::vector<std::string> log_lines(const std::vector<RewriteEvent>& log) {
  std::vector<std::string> lines;
  for (const RewriteEvent& e : log) lines.push_back(e.to_string());
  return lines;
}

// test-mark refuses A (its reader is a relu) before test-negate turns the relu into a neg; the
// driver must then ask test-mark about A again, though A itself did not change.
TEST(RewriteDriver, RematchesAnOperationWhoseReaderWasReplaced) {
  const MarkExpBeforeNeg mark;
  const ReluToNeg negate;
  const OperationPattern* const patterns[] = {&mark, &negate};
  for (bool reuse : {true, false}) {
    SCOPED_TRACE(reuse ? "reusing matches" : "re-matching everything");
    // Built graphs carry Applications; the driver works on operations (lower copies them away).
    RewriteState state{
        copy_graph(testing::build("X: f32[4]\nA = exp(X)\nB = relu(A)\noutput B\n")).graph, {}};
    DriverOptions options;
    options.reuse_matches = reuse;
    const std::vector<RewriteEvent> log = run_patterns(state, patterns, options);
    EXPECT_EQ(log_lines(log),
              (std::vector<std::string>{"refused  test-mark on A: its reader is not a neg",
                                        "applied  test-negate on B: relu -> neg",
                                        "applied  test-mark on A: exp -> abs"}));
    // The copy at the end leaves the removed exp and relu out: tensors first, then the neg, then
    // what the last rewrite added.
    const ir::Graph& g = state.graph;
    ASSERT_EQ(g.size(), 5u);
    ASSERT_EQ(g.operations().size(), 2u);
    EXPECT_EQ(g.operation(g.operations()[0]).kernel(), "neg");
    EXPECT_EQ(g.operation(g.operations()[1]).kernel(), "abs");
    for (std::uint32_t i = 0; i < 3; ++i) EXPECT_TRUE(g.as_tensor(ir::NodeId(i))) << i;
  }
}

}  // namespace
}  // namespace tapestry::rewrite
