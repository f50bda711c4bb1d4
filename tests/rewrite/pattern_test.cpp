// The rewrite driver (pattern.h): it re-matches an operation a pattern did not match once a
// rewrite changes what is next to it, it leaves no removed node in the graph, it times every
// pattern, and with verify_each it names the rewrite that broke the graph.
#include "tapestry/rewrite/pattern.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "rewrite/rewrite_testing.h"
#include "tapestry/rewrite/kernel_agreement.h"

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
  [[nodiscard]] bool may_act_across(const ir::Graph& /*graph*/, ir::OperationId /*producer*/,
                                    ir::TensorId /*t*/,
                                    ir::OperationId /*consumer*/) const override {
    return true;
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
  [[nodiscard]] bool may_act_across(const ir::Graph& /*graph*/, ir::OperationId /*producer*/,
                                    ir::TensorId /*t*/,
                                    ir::OperationId /*consumer*/) const override {
    return false;
  }
};

// Turns every `relu` into a `matmul` with the relu's selections: a rewrite with a bug (the
// kernel derives other projections than the operation has).
class BreakRelu final : public OperationPattern {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-break"; }
  [[nodiscard]] MatchResult match(const RewriteState& state, ir::OperationId op) const override {
    return state.graph.operation(op).kernel() == "relu" ? MatchResult::success()
                                                        : MatchResult::skip("not a relu");
  }
  std::string apply(RewriteState& state, ir::OperationId op) const override {
    replace_kernel(state, op, "matmul");
    return "relu -> matmul";
  }
  [[nodiscard]] bool may_act_across(const ir::Graph& /*graph*/, ir::OperationId /*producer*/,
                                    ir::TensorId /*t*/,
                                    ir::OperationId /*consumer*/) const override {
    return false;
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
    // The copy at the end leaves the removed exp and relu out: tensors first, then each
    // operation's fragment where the operation was — the abs (A's) before the neg (B's), though
    // the neg was made first.
    const ir::Graph& g = state.graph;
    ASSERT_EQ(g.size(), 5u);
    ASSERT_EQ(g.operations().size(), 2u);
    EXPECT_EQ(g.operation(g.operations()[0]).kernel(), "abs");
    EXPECT_EQ(g.operation(g.operations()[1]).kernel(), "neg");
    for (std::uint32_t i = 0; i < 3; ++i) EXPECT_TRUE(g.as_tensor(ir::NodeId(i))) << i;
  }
}

// With verify_each the driver validates after every rewrite and names the one that broke the
// graph; without it, the same run finishes (lower would find the fault only at the end).
TEST(RewriteDriver, VerifyEachNamesTheRewriteThatBrokeTheGraph) {
  const ReluToNeg negate;
  const BreakRelu breaks;
  const OperationPattern* const patterns[] = {&negate, &breaks};
  const ir::Dialect dialect =
      with_kernel_agreement(ir::Dialect::operation(), metakernel::builtin_signatures());
  const std::string program = "X: f32[4]\nA = exp(X)\nB = relu(A)\noutput B\n";
  DriverOptions options;
  options.disabled = {"test-negate"};
  {
    RewriteState state{copy_graph(testing::build(program)).graph, {}};
    EXPECT_EQ(run_patterns(state, patterns, options).size(), 1u);  // unseen until the end
  }
  options.verify_each = &dialect;
  RewriteState state{copy_graph(testing::build(program)).graph, {}};
  try {
    (void)run_patterns(state, patterns, options);
    FAIL() << "no error";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith("test-break on B left the graph invalid:\n"));
  }
  // A correct rewrite passes the same check.
  options.disabled = {"test-break"};
  RewriteState fine{copy_graph(testing::build(program)).graph, {}};
  EXPECT_EQ(run_patterns(fine, patterns, options).size(), 1u);
}

// Every pattern's time and rewrite count, in pattern order.
TEST(RewriteDriver, TimesEachPatternAndCountsItsRewrites) {
  const MarkExpBeforeNeg mark;
  const ReluToNeg negate;
  const OperationPattern* const patterns[] = {&mark, &negate};
  RewriteState state{
      copy_graph(testing::build("X: f32[4]\nA = exp(X)\nB = relu(A)\nC = relu(B)\noutput C\n"))
          .graph,
      {}};
  std::vector<PassTime> times;
  DriverOptions options;
  options.times = &times;
  (void)run_patterns(state, patterns, options);
  ASSERT_EQ(times.size(), 2u);
  EXPECT_EQ(times[0].pass, "test-mark");
  EXPECT_EQ(times[0].work, 1);  // A, once test-negate made its reader a neg
  EXPECT_EQ(times[1].pass, "test-negate");
  EXPECT_EQ(times[1].work, 2);
  for (const PassTime& t : times) EXPECT_GE(t.seconds, 0.0);
}

}  // namespace
}  // namespace tapestry::rewrite
