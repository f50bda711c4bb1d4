// workflow/run.h: the verify-mode rule, and the steps of a run end to end — the run verified
// against the naive run, and the faults a verification must catch (a changed cell, a missing
// output, an exact verification that does not apply).
#include "tapestry/workflow/run.h"

#include <gtest/gtest.h>

#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/support/error.h"
#include "workflow_testing.h"

namespace tapestry::workflow {
namespace {

using workflow_testing::example;
using workflow_testing::example_plan;

TEST(VerifyMode, BitwiseOnlyForReferenceKernelsWithoutAReductionSplit) {
  const ir::Graph graph = example("linear_relu.tap");
  const rewrite::LowerResult batch =
      lower_for_run(graph, example_plan("linear_relu-batch2-fused.json"), {});
  const rewrite::LowerResult split =
      lower_for_run(graph, example_plan("linear_relu-split-in.json"), {});
  ASSERT_FALSE(batch.reduction_split);
  ASSERT_TRUE(split.reduction_split);
  using runtime::VerifyMode;
  const struct {
    VerifyCheck check;
    bool reference;
    const rewrite::LowerResult& lowered;
    VerifyMode mode;
    bool oracle;
  } rows[] = {
      {VerifyCheck::kBound, true, batch, VerifyMode::kBitwise, false},
      {VerifyCheck::kBound, true, split, VerifyMode::kBound, true},
      {VerifyCheck::kBound, false, batch, VerifyMode::kBound, true},
      {VerifyCheck::kBound, false, split, VerifyMode::kBound, true},
      {VerifyCheck::kExact, true, batch, VerifyMode::kExact, true},
      {VerifyCheck::kExact, false, split, VerifyMode::kExact, true},
  };
  for (const auto& row : rows) {
    const RunChoices choices{.verify = row.check, .reference_kernels = row.reference};
    EXPECT_EQ(verify_mode(choices, row.lowered), row.mode);
    EXPECT_EQ(verify_needs_oracle(choices, row.lowered), row.oracle);
  }
  EXPECT_FALSE(verify_needs_oracle({.verify = VerifyCheck::kNone}, batch));
}

// The steps of workflow/run.h in order, with the block executor.
struct Ran {
  runtime::BufferMap inputs;
  runtime::BufferMap results;
};

Ran run(const ir::Graph& graph, const rewrite::LowerResult& lowered, bool reference, bool exact) {
  Ran r;
  r.inputs = runtime::generate_inputs(graph, {.seed = 3, .exact = exact});
  const runtime::BlockExecutor executor(
      lowered.graph,
      {.threads = 2, .kernels = reference ? &runtime::ExecutableKernels::reference() : nullptr});
  r.results = graph_results(graph, lowered, executor.run(lowered_inputs(lowered, r.inputs)));
  return r;
}

TEST(RunWorkflow, EveryExamplePlanPassesItsVerification) {
  const struct {
    const char* graph;
    const char* plan;
  } cases[] = {{"linear_relu.tap", "linear_relu-split-in.json"},
               {"linear_relu.tap", "linear_relu-batch2-fused.json"},
               {"linear_relu.tap", "linear_relu-grid.json"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.plan);
    const ir::Graph graph = example(c.graph);
    const rewrite::LowerResult lowered = lower_for_run(graph, example_plan(c.plan), {});
    for (const bool reference : {true, false}) {
      const RunChoices choices{.verify = VerifyCheck::kBound, .reference_kernels = reference};
      check_memory(graph, lowered, choices, {});
      const Ran r = run(graph, lowered, reference, false);
      ASSERT_EQ(r.results.size(), runtime::graph_outputs(graph).size());
      const runtime::VerifyReport report =
          verify_run(graph, r.inputs, r.results, {.mode = verify_mode(choices, lowered)});
      EXPECT_TRUE(report.pass()) << report.text();
      EXPECT_EQ(report.outputs.front().mode, verify_mode(choices, lowered));
    }
  }
}

TEST(RunWorkflow, AChangedCellFailsEveryMode) {
  const ir::Graph graph = example("linear_relu.tap");
  const rewrite::LowerResult lowered =
      lower_for_run(graph, example_plan("linear_relu-grid.json"), {});
  for (const VerifyCheck check : {VerifyCheck::kBound, VerifyCheck::kExact}) {
    for (const bool reference : {true, false}) {
      const RunChoices choices{.verify = check, .reference_kernels = reference};
      Ran r = run(graph, lowered, reference, check == VerifyCheck::kExact);
      runtime::Buffer& y = r.results.begin()->second;
      const auto cells = y.view().typed<float>();
      const runtime::Point p = y.range().start();
      cells[p] = cells[p] + 0.5F;
      const runtime::VerifyReport report =
          verify_run(graph, r.inputs, r.results, {.mode = verify_mode(choices, lowered)});
      EXPECT_FALSE(report.pass()) << report.text();
      EXPECT_EQ(report.outputs.front().failing_cells, 1) << report.text();
    }
  }
}

TEST(RunWorkflow, AMissingOutputFails) {
  const ir::Graph graph = example("linear_relu.tap");
  const rewrite::LowerResult lowered = lower_for_run(graph, {}, {});
  Ran r = run(graph, lowered, true, false);
  r.results.clear();
  const runtime::VerifyReport report =
      verify_run(graph, r.inputs, r.results, {.mode = runtime::VerifyMode::kBitwise});
  EXPECT_FALSE(report.pass());
}

TEST(RunWorkflow, ExactVerificationIsRefusedOnInputsThatAreNotExact) {
  const ir::Graph graph = example("linear_relu.tap");
  const runtime::BufferMap inputs = runtime::generate_inputs(graph, {.seed = 1, .exact = false});
  try {
    (void)exact_oracle(graph, inputs, nullptr, "--verify=exact");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("--verify=exact does not apply: ")) << e.what();
  }
  // verify_run makes the oracle itself when not given one, and refuses the same way.
  EXPECT_THROW((void)verify_run(graph, inputs, {}, {.mode = runtime::VerifyMode::kExact}), Error);
  const runtime::BufferMap exact = runtime::generate_inputs(graph, {.seed = 1, .exact = true});
  EXPECT_TRUE(exact_oracle(graph, exact, nullptr, "--verify=exact").exact_reason.empty());
}

TEST(RunWorkflow, CheckMemoryRefusesAPlanOverTheLimit) {
  const ir::Graph graph = example("mlp.tap");
  const rewrite::LowerResult lowered = lower_for_run(graph, {}, {});
  EXPECT_THROW(check_memory(graph, lowered, {}, {.limit_bytes = 1024, .block_executor = true}),
               Error);
  EXPECT_NO_THROW(check_memory(graph, lowered, {}, {.limit_bytes = 0, .block_executor = true}));
}

}  // namespace
}  // namespace tapestry::workflow
