// One rank's part of a block program under a rank schedule (src/runtime/rank_program.h): the
// schedule's checks, and the local DAG, messages and gathers. No MPI needed; the MPI runs
// themselves are tests/cli/mpi_test.sh.
#include "rank_program.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernel_graphs.h"
#include "run_helpers.h"
#include "tapestry/runtime/executable_kernels.h"

namespace tapestry::runtime {
namespace {

using namespace testing;  // NOLINT: the test helpers
using ::testing::HasSubstr;

// Y = relu(linear(X, W, b)): linear in 2 shards along batch, relu in 2 shards along columns,
// so each relu shard reads rows from both linear shards.
struct Graph2 {
  GraphBuilder b;
  Built lin, relu;
  std::vector<ir::ApplicationId> lin_apps, relu_apps;
  Graph2() {
    TensorId x = b.tensor("X", "float32", Range({-4, 0}, {4, 6}));
    lin = add_linear(b, x, b.tensor("W", "float32", Range::of_shape({6, 6})),
                     b.tensor("b", "float32", Range::of_shape({6})));
    relu = add_unary(b, "relu", lin.result);
    b.shard(lin.op, {2, 1, 1});
    b.shard(relu.op, {1, 2});
    for (ir::ApplicationId a : b.graph.applications()) {
      (b.graph.application(a).operation() == lin.op ? lin_apps : relu_apps).push_back(a);
    }
  }
};

// A correct schedule by brute force: shard i of each operation on rank i mod `ranks`, one
// message per (producer, consumer, tensor) intersection across ranks.
RankSchedule brute_force(const ir::Graph& g, std::uint32_t ranks,
                         const std::vector<std::vector<ir::ApplicationId>>& by_op) {
  RankSchedule s;
  for (std::uint32_t r = 0; r < ranks; ++r) s.rank_names.push_back("rank:" + std::to_string(r));
  for (const auto& apps : by_op) {
    for (std::size_t i = 0; i < apps.size(); ++i) s.rank_of[apps[i]] = i % ranks;
  }
  for (ir::ApplicationId p : g.applications()) {
    for (ir::ApplicationId c : g.applications()) {
      if (s.rank_of[p] == s.rank_of[c]) continue;
      for (const auto& out : g.application(p).outputs().entries()) {
        for (const auto& in : g.application(c).inputs().entries()) {
          if (out.value.tensor != in.value.tensor) continue;
          if (auto box = out.value.range.intersect(in.value.range)) {
            s.messages.push_back({.tensor = out.value.tensor,
                                  .box = *box,
                                  .from = s.rank_of[p],
                                  .to = s.rank_of[c],
                                  .producer = p,
                                  .consumers = {c}});
          }
        }
      }
    }
  }
  return s;
}

TEST(RankProgram, SplitsTheProgramAndItsMessagesOverTwoRanks) {
  Graph2 g;
  const detail::BlockProgram whole =
      detail::compile_block_program(g.b.graph, ExecutableKernels::reference());
  const RankSchedule s = brute_force(g.b.graph, 2, {g.lin_apps, g.relu_apps});
  ASSERT_EQ(s.messages.size(), 2u);  // lin/1 → relu/0 and lin/0 → relu/1: 4 rows × 3 cols each
  const detail::RankProgram r0 = detail::compile_rank_program(g.b.graph, whole, s, 0);
  const detail::RankProgram r1 = detail::compile_rank_program(g.b.graph, whole, s, 1);
  EXPECT_EQ(r0.local.tasks.size(), 2u);
  EXPECT_EQ(r1.local.tasks.size(), 2u);
  // Every rank lists the same messages: the schedule's two, then rank 1's Y box gathered to 0.
  ASSERT_EQ(r0.messages.size(), 3u);
  ASSERT_EQ(r1.messages.size(), 3u);
  EXPECT_TRUE(r0.messages[2].gather);
  EXPECT_EQ(r0.messages[2].from, 1u);
  EXPECT_EQ(r0.messages[2].to, 0u);
  EXPECT_EQ(r0.messages[2].box, r1.messages[2].box);
  EXPECT_EQ(r0.messages[2].bytes, 8 * 3 * 4);
  // Rank 0 receives lin/1's rows and the gather; its relu waits for lin/0 and one message.
  EXPECT_EQ(r0.receives.size(), 2u);
  EXPECT_EQ(r1.receives.size(), 1u);
  EXPECT_EQ(r0.bytes_received, 4 * 3 * 4 + 8 * 3 * 4);
  EXPECT_EQ(r1.bytes_sent, 4 * 3 * 4 + 8 * 3 * 4);
  std::vector<std::uint32_t> pending0 = r0.local.pending;
  std::sort(pending0.begin(), pending0.end());
  EXPECT_EQ(pending0, (std::vector<std::uint32_t>{0, 2}));
  EXPECT_EQ(r0.local.roots.size(), 1u);
  // Outputs stay on rank 0 only; rank 1 frees its Y box once sent.
  for (const detail::BufferSlot& slot : r1.local.slots) EXPECT_FALSE(slot.output);
  bool has_output = false;
  for (const detail::BufferSlot& slot : r0.local.slots) has_output |= slot.output;
  EXPECT_TRUE(has_output);
  // Inputs: each rank reads X's rows of its linear shard, W and b.
  EXPECT_EQ(std::count(r0.needed_inputs.begin(), r0.needed_inputs.end(), 1), 3);
}

TEST(RankProgram, OneRankNeedsNoMessages) {
  Graph2 g;
  const detail::BlockProgram whole =
      detail::compile_block_program(g.b.graph, ExecutableKernels::reference());
  const RankSchedule s = brute_force(g.b.graph, 1, {g.lin_apps, g.relu_apps});
  const detail::RankProgram r0 = detail::compile_rank_program(g.b.graph, whole, s, 0);
  EXPECT_TRUE(r0.messages.empty());
  EXPECT_EQ(r0.local.tasks.size(), 4u);
  EXPECT_EQ(r0.local.roots, whole.roots);
}

// Every way a schedule can fail to fit the graph is an Error naming what is wrong.
TEST(RankProgram, RejectsSchedulesThatDoNotFit) {
  Graph2 g;
  const detail::BlockProgram whole =
      detail::compile_block_program(g.b.graph, ExecutableKernels::reference());
  const RankSchedule good = brute_force(g.b.graph, 2, {g.lin_apps, g.relu_apps});
  const auto error = [&](const RankSchedule& s) {
    return error_of([&] { (void)detail::compile_rank_program(g.b.graph, whole, s, 0); });
  };
  EXPECT_EQ(error(good), "no error");
  {
    RankSchedule s = good;
    s.rank_of.erase(g.relu_apps[1]);
    EXPECT_THAT(error(s), HasSubstr("has no rank"));
  }
  {
    RankSchedule s = good;
    s.rank_of[g.relu_apps[1]] = 2;
    EXPECT_THAT(error(s), HasSubstr("is on rank 2, but the job has 2"));
  }
  {
    RankSchedule s = good;
    s.messages.pop_back();  // lin/0 → relu/1 missing
    EXPECT_THAT(error(s), HasSubstr("but no message carries it"));
  }
  {
    RankSchedule s = good;  // a message one row short
    s.messages[0].box = Range(s.messages[0].box.start(),
                              Point{s.messages[0].box.end()[0] - 1, s.messages[0].box.end()[1]});
    EXPECT_THAT(error(s), HasSubstr("but no message carries it"));
  }
  {
    RankSchedule s = good;  // a box the producer does not write
    s.messages[0].box = Range({-4, 0}, {4, 3});
    EXPECT_THAT(error(s), HasSubstr("does not write"));
  }
  {
    RankSchedule s = good;
    s.messages[0].from = s.messages[0].to;
    EXPECT_THAT(error(s), HasSubstr("goes from rank"));
  }
  {
    RankSchedule s = good;  // the consumer listed is on the sending rank
    s.messages[0].consumers = {g.relu_apps[s.messages[0].from == 0 ? 0 : 1]};
    EXPECT_THAT(error(s), HasSubstr("lists"));
  }
  {
    RankSchedule s = good;
    s.messages[0].producer = g.relu_apps[0];
    EXPECT_THAT(error(s), Not(HasSubstr("no error")));
  }
}

}  // namespace
}  // namespace tapestry::runtime
