// Memory budgets: the estimate from the graph alone equals the block executor's, and graphs
// whose tensors cannot fit are refused (limit, physical memory) before anything is allocated.
#include "tapestry/runtime/memory_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernel_cases.h"
#include "kernel_graphs.h"
#include "run_helpers.h"
#include "tapestry/runtime/block_executor.h"

namespace tapestry::runtime {
namespace {

using namespace testing;  // NOLINT: test helpers
using ::testing::HasSubstr;

// X → relu → relu → … (`links` operations), each one application; every tensor is f32[n].
struct UnaryChain {
  GraphBuilder b;
  UnaryChain(std::int64_t n, int links) {
    TensorId t = b.tensor("X", "float32", Range::of_shape({n}));
    for (int i = 0; i < links; ++i) {
      const Built relu = add_unary(b, "relu", t);
      b.shard(relu.op, {1});
      t = relu.result;
    }
  }
};

TEST(MemoryBudget, TheEstimateFromTheGraphIsTheBlockExecutors) {
  int graphs = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    for (const auto& parts : c.shardings) {
      GraphBuilder b;
      const Built built = c.build(b);
      b.shard(built.op, parts);
      const BlockExecutor exec(b.graph, {.threads = 1, .kernels = &ExecutableKernels::reference()});
      EXPECT_EQ(estimate_block_memory(b.graph).peak_bytes, exec.estimated_peak_memory_bytes());
      ++graphs;
    }
  }
  // A chain frees its intermediates: X and two links live at once.
  UnaryChain chain(1000, 5);
  const MemoryEstimate e = estimate_block_memory(chain.b.graph);
  EXPECT_EQ(e.peak_bytes, 3 * 4000);
  EXPECT_THAT(e.peak_description, HasSubstr("X 3.91 KiB"));
  EXPECT_EQ(tensor_bytes(chain.b.graph), 6 * 4000);
  EXPECT_EQ(tensor_bytes(chain.b.graph, /*inputs_only=*/true), 4000);
  EXPECT_GT(graphs, 10);
}

TEST(MemoryBudget, OperationsWithoutApplicationsAreAnErrorNotAZero) {
  GraphBuilder b;
  (void)add_unary(b, "relu", b.tensor("X", "float32", Range::of_shape({4})));
  EXPECT_THAT(error_of([&] { (void)estimate_block_memory(b.graph); }), HasSubstr("relu"));
}

// `X: f32[1000000000000, 5]; Y = relu(X)`: 18.2 TiB at the peak. Refused by the limit, and
// without one by the physical memory — by the estimate, the executor's construction and
// check_run_memory alike, before any buffer exists.
TEST(MemoryBudget, GraphsLargerThanTheMachineAreRefused) {
  GraphBuilder b;
  const Built relu =
      add_unary(b, "relu", b.tensor("X", "float32", Range::of_shape({1000000000000, 5})));
  b.shard(relu.op, {1, 1});
  const MemoryEstimate e = estimate_block_memory(b.graph);
  EXPECT_EQ(e.peak_bytes, 2 * 4 * 5'000'000'000'000);
  EXPECT_THAT(error_of([&] { check_memory_budget(e, std::int64_t{1} << 30); }),
              HasSubstr("memory limit 1.00 GiB exceeded: the plan needs an estimated 36.4 TiB at "
                        "its peak (after the application of "));
  // Applications made by lowering have no label: the message names the operation and the box,
  // never the application's UUID key.
  EXPECT_THAT(e.peak_description, HasSubstr(" over zr[0:1000000000000, 0:5] starts: "));
  EXPECT_THAT(e.peak_description, ::testing::Not(HasSubstr("0000-4000")));
  ASSERT_GT(physical_memory_bytes(), 0);
  EXPECT_THAT(error_of([&] { check_memory_budget(e, 0); }),
              HasSubstr("the plan needs an estimated 36.4 TiB, more than this machine's"));
  EXPECT_THAT(error_of([&] {
                const BlockExecutor exec(b.graph, {.kernels = &ExecutableKernels::reference()});
              }),
              HasSubstr("more than this machine's"));
  EXPECT_THAT(error_of([&] { check_run_memory(b.graph, b.graph, {}); }),
              HasSubstr("the run needs an estimated 54.6 TiB, more than this machine's"));
}

// Sums of tensor sizes saturate: two tensors of 2^62 bytes need "more than any machine", they
// do not wrap around to a small or negative estimate.
TEST(MemoryBudget, SumsSaturateInsteadOfOverflowing) {
  UnaryChain chain(std::int64_t{1} << 60, 3);  // four f32 tensors of 2^62 bytes
  const MemoryEstimate e = estimate_block_memory(chain.b.graph);
  EXPECT_EQ(e.peak_bytes, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(tensor_bytes(chain.b.graph), std::numeric_limits<std::int64_t>::max());
  EXPECT_THAT(error_of([&] { check_run_memory(chain.b.graph, chain.b.graph, {}); }),
              HasSubstr("more than this machine's"));
}

// A chain of 10 links over tensors of 1/8 of the physical memory: the block executor (X + two
// live links, plus the caller's inputs: 4/8) fits; every tensor at once (the application
// executor: 12/8) does not. --verify's streaming naive run holds two links (the inputs, the
// run's buffers and the results: 6/8 in all), which fits; its oracle does not. Nothing is
// allocated to find out.
TEST(MemoryBudget, TheRunCountsTheExecutorAndVerify) {
  const std::int64_t eighth = physical_memory_bytes() / 8;
  ASSERT_GT(eighth, 0);
  const std::int64_t cells = eighth / 4;
  UnaryChain chain(cells, 10);
  EXPECT_NO_THROW(check_run_memory(chain.b.graph, chain.b.graph, {}));
  EXPECT_THAT(
      error_of([&] { check_run_memory(chain.b.graph, chain.b.graph, {.block_executor = false}); }),
      HasSubstr("every tensor of the graph"));
  EXPECT_NO_THROW(check_run_memory(chain.b.graph, chain.b.graph, {.verify = true}));
  EXPECT_THAT(error_of([&] {
                check_run_memory(chain.b.graph, chain.b.graph, {.verify = true, .oracle = true});
              }),
              HasSubstr("the float64 oracle"));
  EXPECT_EQ(naive_run_bytes(chain.b.graph), 2 * 4 * cells);
  // The oracle's peak: the links run as a chain, an eighth of the cells at a time
  // (oracle_chains.h): the last link assembled whole (24 bytes a cell) and, in the largest
  // block, two links' value, σ and D and a relu's temporaries (4 float64 buffers of its input's
  // size and 10 of its output's) — not two whole links and a whole relu's temporaries.
  const std::int64_t block = (cells + 7) / 8;
  EXPECT_EQ(oracle_bytes(chain.b.graph), 24 * cells + (2 * 24 + 8 * (4 + 10)) * block);
  // The limit bounds the plan's peak alone.
  EXPECT_THAT(
      error_of([&] { check_run_memory(chain.b.graph, chain.b.graph, {.limit_bytes = eighth}); }),
      HasSubstr("memory limit"));
}

// One relu over tensors of 1/10 of the physical memory: the run and a bitwise --verify (its
// naive run) fit; the float64 oracle (X's float64 value, Y's value, σ and D, the rule's
// temporaries: 8 + 24 + 112 bytes a cell) of a --verify within bounds does not.
TEST(MemoryBudget, TheOracleOfVerifyIsCounted) {
  const std::int64_t tenth = physical_memory_bytes() / 10;
  UnaryChain relu(tenth / 4, 1);
  EXPECT_NO_THROW(check_run_memory(relu.b.graph, relu.b.graph, {.verify = true}));
  EXPECT_THAT(error_of([&] {
                check_run_memory(relu.b.graph, relu.b.graph, {.verify = true, .oracle = true});
              }),
              HasSubstr("and the float64 oracle"));
}

}  // namespace
}  // namespace tapestry::runtime
