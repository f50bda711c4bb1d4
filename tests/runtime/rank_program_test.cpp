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
          if (auto box = out.value.range.intersect(in.value.range); box && !box->is_empty()) {
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
  // Each message is taken at its consumer's place in the whole program's order (the relu shard
  // it names); a gather after the step.
  std::vector<std::uint32_t> position(whole.tasks.size());
  for (std::uint32_t i = 0; i < whole.order.size(); ++i) position[whole.order[i]] = i;
  for (std::uint32_t m = 0; m < 2; ++m) {
    ASSERT_EQ(s.messages[m].consumers.size(), 1u);
    const auto consumer = std::find_if(whole.tasks.begin(), whole.tasks.end(), [&](const auto& t) {
      return t.application == s.messages[m].consumers[0];
    });
    ASSERT_NE(consumer, whole.tasks.end());
    EXPECT_EQ(r0.messages[m].taken_at, position[consumer - whole.tasks.begin()]);
    EXPECT_EQ(r1.messages[m].taken_at, r0.messages[m].taken_at);
  }
  EXPECT_EQ(r0.messages[2].taken_at, UINT32_MAX);
  // Rank 0 receives lin/1's rows; its relu waits for lin/0 and one message. The gather it takes
  // after its own part of the step, into the whole Y it returns (not a receive into its slot);
  // the code generators' programs (SlotPieces::kWhole) receive it into the whole slot instead.
  EXPECT_EQ(r0.receives.size(), 1u);
  EXPECT_EQ(r0.gathered, (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(r1.receives.size(), 1u);
  EXPECT_TRUE(r1.gathered.empty());
  const detail::RankProgram whole0 = detail::compile_rank_program(
      g.b.graph, whole, s, 0, CollectiveUse::kExact, detail::SlotPieces::kWhole);
  EXPECT_EQ(whole0.receives.size(), 2u);
  EXPECT_TRUE(whole0.gathered.empty());
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

// P = relu(A) in k blocks along A's leading dim, Y = reduce(P) in `y_parts` along its rows
// (default: unsharded), Z = linear(Y, W, b) in `z_parts` along `out` (every Z shard reads Y
// whole) or, with `z_by_rows`, along batch (each reads the rows of Y it needs).
struct ReduceGraph {
  GraphBuilder b;
  std::vector<ir::ApplicationId> p_apps, y_apps, z_apps;
  ReduceGraph(std::int64_t k, std::int64_t z_parts, std::int64_t y_parts = 1,
              bool z_by_rows = false) {
    const Built p = add_unary(b, "relu", b.tensor("A", "float32", Range::of_shape({k, 4, 6})));
    const Built y = add_reduce(b, p.result, ir::Monoid::kSum);
    const Built z = add_linear(b, y.result, b.tensor("W", "float32", Range::of_shape({6, 6})),
                               b.tensor("b", "float32", Range::of_shape({6})));
    b.shard(p.op, {k, 1, 1});
    b.shard(y.op, {y_parts, 1, 1});
    b.shard(z.op, z_by_rows ? std::vector<std::int64_t>{z_parts, 1, 1}
                            : std::vector<std::int64_t>{1, z_parts, 1});
    for (ir::ApplicationId a : b.graph.applications()) {
      const ir::OperationId op = b.graph.application(a).operation();
      (op == p.op ? p_apps : op == y.op ? y_apps : z_apps).push_back(a);
    }
  }
  detail::RankProgram compile(std::uint32_t ranks, std::uint32_t rank, CollectiveUse use) {
    whole = detail::compile_block_program(b.graph, ExecutableKernels::reference());
    return detail::compile_rank_program(
        b.graph, whole, brute_force(b.graph, ranks, {p_apps, y_apps, z_apps}), rank, use);
  }
  detail::BlockProgram whole;
};

TEST(RankCollectives, PartialsSummedForEveryMemberAreAnAllreduce) {
  ReduceGraph g(2, 2);
  const detail::RankProgram r0 = g.compile(2, 0, CollectiveUse::kExact);
  ASSERT_EQ(r0.collectives.size(), 1u);
  const detail::RankCollective& c = r0.collectives[0];
  EXPECT_EQ(c.kind, detail::CollectiveKind::kAllreduce);
  EXPECT_EQ(c.members, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(c.root, 0u);
  EXPECT_TRUE(c.bitwise);            // two partials: p0 + p1 == p1 + p0
  EXPECT_EQ(c.replaced.size(), 2u);  // P[1] to the reduce, Y to rank 1
  EXPECT_EQ(c.bytes, 4 * 6 * 4);
  // Rank 0: the reduce is a no-op waiting for the collective; only gathers of Z left, taken
  // after its part of the step.
  EXPECT_TRUE(r0.receives.empty());
  for (std::uint32_t m : r0.gathered) EXPECT_TRUE(r0.messages[m].gather);
  ASSERT_EQ(r0.parts.size(), 1u);
  EXPECT_EQ(r0.parts[0].arrivals.size(), 1u);
  const auto reduce = std::find(r0.whole_task.begin(), r0.whole_task.end(), c.reduce_task);
  ASSERT_NE(reduce, r0.whole_task.end());
  const detail::BlockTask& no_op = r0.local.tasks[reduce - r0.whole_task.begin()];
  EXPECT_EQ(no_op.flops, 0);
  EXPECT_TRUE(no_op.inputs.empty());
  for (const auto& sends : r0.sends) {
    for (std::uint32_t m : sends) EXPECT_TRUE(r0.messages[m].gather);
  }
  // Rank 1 receives Y from the collective; its P holds only its block.
  const detail::RankProgram r1 = g.compile(2, 1, CollectiveUse::kExact);
  ASSERT_EQ(r1.parts.size(), 1u);
  EXPECT_EQ(r1.parts[0].arrivals.size(), 1u);
  EXPECT_EQ(r1.local.slots[c.source_slot].range, Range({1, 0, 0}, {2, 4, 6}));
  // Off: point-to-point.
  EXPECT_TRUE(g.compile(2, 0, CollectiveUse::kNone).collectives.empty());
}

TEST(RankCollectives, PartialsSummedOnOneRankAreAReduce) {
  ReduceGraph g(2, 1);
  const detail::RankProgram r1 = g.compile(2, 1, CollectiveUse::kExact);
  ASSERT_EQ(r1.collectives.size(), 1u);
  EXPECT_EQ(r1.collectives[0].kind, detail::CollectiveKind::kReduce);
  EXPECT_EQ(r1.collectives[0].replaced.size(), 1u);
  EXPECT_TRUE(r1.receives.empty());
  EXPECT_TRUE(r1.parts[0].arrivals.empty());  // rank 1 only contributes
}

TEST(RankCollectives, ThreePartialsOnlyWhenMpisOrderIsAllowed) {
  ReduceGraph g(3, 2);  // Z on ranks 0 and 1 only: rank 2 does not need Y, so a reduce
  EXPECT_TRUE(g.compile(3, 0, CollectiveUse::kExact).collectives.empty());
  const detail::RankProgram r0 = g.compile(3, 0, CollectiveUse::kAll);
  ASSERT_EQ(r0.collectives.size(), 1u);
  EXPECT_EQ(r0.collectives[0].kind, detail::CollectiveKind::kReduce);
  EXPECT_FALSE(r0.collectives[0].bitwise);
  EXPECT_EQ(r0.collectives[0].members, (std::vector<std::uint32_t>{0, 1, 2}));
}

TEST(RankCollectives, TwoPartialsOnOneRankStayPointToPoint) {
  ReduceGraph g(4, 2);  // blocks 0, 2 on rank 0 and 1, 3 on rank 1
  EXPECT_TRUE(g.compile(2, 0, CollectiveUse::kAll).collectives.empty());
}

// Y's rows split as P's blocks are: each rank sums its rows of every block — a reduce-scatter;
// with Z by rows each rank reads only its own rows of Y, with Z by `out` every rank then
// gathers all of Y (the reduce-scatter and an allgather: a ring all-reduce's two halves).
TEST(RankCollectives, RowsOfTheSumWhereTheirPartialsAreAreAReduceScatter) {
  for (bool z_by_rows : {true, false}) {
    ReduceGraph g(2, 2, 2, z_by_rows);
    const detail::RankProgram r1 = g.compile(2, 1, CollectiveUse::kExact);
    ASSERT_EQ(r1.collectives.size(), z_by_rows ? 1u : 2u);
    const detail::RankCollective& c = r1.collectives[0];
    EXPECT_EQ(c.kind, detail::CollectiveKind::kReduceScatter);
    EXPECT_EQ(c.members, (std::vector<std::uint32_t>{0, 1}));
    EXPECT_TRUE(c.bitwise);  // two partials per row
    EXPECT_EQ(c.boxes,
              (std::vector<Range>{Range({0, 0, 0}, {1, 4, 6}), Range({1, 0, 0}, {2, 4, 6})}));
    EXPECT_EQ(c.result_boxes, (std::vector<Range>{Range({0, 0}, {2, 6}), Range({2, 0}, {4, 6})}));
    EXPECT_EQ(c.replaced.size(), 2u);  // rows 2..4 of block 0 to rank 1, rows 0..2 of block 1 to 0
    EXPECT_EQ(c.bytes, 4 * 6 * 4);
    // Rank 1's reduce is a no-op holding its rows of the sum, released by the collective.
    const auto reduce = std::find(r1.whole_task.begin(), r1.whole_task.end(), c.reduce_tasks[1]);
    ASSERT_NE(reduce, r1.whole_task.end());
    EXPECT_EQ(r1.local.tasks[reduce - r1.whole_task.begin()].flops, 0);
    ASSERT_GE(r1.parts.size(), 1u);
    EXPECT_EQ(r1.parts[0].arrivals.size(), 1u);
    if (!z_by_rows) {
      EXPECT_EQ(r1.collectives[1].kind, detail::CollectiveKind::kAllgather);
      EXPECT_EQ(r1.collectives[1].source_slot, c.result_slot);
    }
    EXPECT_TRUE(g.compile(2, 1, CollectiveUse::kNone).collectives.empty());
  }
}

TEST(RankCollectives, AReduceScatterOfThreeOnlyWhenMpisOrderIsAllowed) {
  ReduceGraph g(3, 3, 3, true);
  const detail::RankProgram exact = g.compile(3, 0, CollectiveUse::kExact);
  for (const detail::RankCollective& c : exact.collectives) {
    EXPECT_NE(c.kind, detail::CollectiveKind::kReduceScatter);
  }
  const detail::RankProgram all = g.compile(3, 0, CollectiveUse::kAll);
  ASSERT_EQ(all.collectives.size(), 1u);
  EXPECT_EQ(all.collectives[0].kind, detail::CollectiveKind::kReduceScatter);
  EXPECT_FALSE(all.collectives[0].bitwise);
  EXPECT_EQ(all.collectives[0].members, (std::vector<std::uint32_t>{0, 1, 2}));
}

// Four blocks on two ranks (two each), Y's rows in two: each rank's reduce reads two blocks it
// holds and two it receives — no collective shape; point-to-point.
TEST(RankCollectives, TwoBlocksOnOneRankAreNoReduceScatter) {
  ReduceGraph g(4, 2, 2, true);
  EXPECT_TRUE(g.compile(2, 0, CollectiveUse::kAll).collectives.empty());
}

// Four blocks on four ranks, Y's rows in four, under kExact (not a collective: a sum of four is
// not bitwise in MPI's order): each rank's reduce reads one row of every block. It becomes a
// combine — a no-op waiting for its steps, the rows of blocks 0..3 in order: three received, its
// own read from the block its relu writes — and its slot of P holds only its own block; the rows
// of every block whole were 4× that. Under kAll the reduce-scatter runs instead, and kWhole (the
// code generators) keeps the reduce and one slot per tensor.
TEST(RankProgram, ASplitSumOverFourRanksIsFoldedStepByStepInBlockOrder) {
  ReduceGraph g(4, 4, 4, true);
  const auto local = [&](const detail::RankProgram& rp,
                         const std::vector<ir::ApplicationId>& apps) {
    for (std::uint32_t t = 0; t < rp.local.tasks.size(); ++t) {
      if (std::find(apps.begin(), apps.end(), rp.local.tasks[t].application) != apps.end()) {
        return t;
      }
    }
    ADD_FAILURE() << "no local task of the operation";
    return 0u;
  };
  const detail::RankProgram r1 = g.compile(4, 1, CollectiveUse::kExact);
  ASSERT_TRUE(r1.collectives.empty());
  const std::uint32_t relu = local(r1, g.p_apps);
  const std::uint32_t reduce = local(r1, g.y_apps);
  const std::uint32_t block = r1.local.tasks[relu].outputs[0].slot;
  EXPECT_EQ(r1.local.slots[block].range, Range({1, 0, 0}, {2, 4, 6}));
  ASSERT_EQ(r1.combines.size(), 1u);
  const detail::RankCombine& c = r1.combines[0];
  EXPECT_EQ(c.reduce, reduce);
  EXPECT_EQ(c.result_slot, r1.local.tasks[reduce].outputs[0].slot);
  EXPECT_EQ(c.result_box, Range({1, 0}, {2, 6}));
  EXPECT_EQ(c.monoid, ir::Monoid::kSum);
  ASSERT_EQ(c.steps.size(), 4u);
  for (std::int64_t j = 0; j < 4; ++j) {
    const detail::RankCombineStep& step = c.steps[static_cast<std::size_t>(j)];
    EXPECT_EQ(step.box, Range({j, 1, 0}, {j + 1, 2, 6}));
    if (j == 1) {  // its own, read in place once the relu has written it
      EXPECT_EQ(step.message, UINT32_MAX);
      EXPECT_EQ(step.slot, block);
      EXPECT_EQ(step.writer, relu);
    } else {
      ASSERT_LT(step.message, r1.messages.size());
      EXPECT_EQ(r1.messages[step.message].from, static_cast<std::uint32_t>(j));
      EXPECT_EQ(r1.messages[step.message].box, step.box);
    }
  }
  // The reduce reads nothing and waits for its relu's edge and the combine; the steps' messages
  // are not among the receives; the block is used by the relu and its step (the executor adds a
  // use per send made from it).
  EXPECT_TRUE(r1.local.tasks[reduce].inputs.empty());
  EXPECT_EQ(r1.local.tasks[reduce].flops, 0);
  EXPECT_EQ(r1.local.pending[reduce], 2u);
  for (const detail::RankReceive& r : r1.receives) {
    EXPECT_NE(r1.local.slots[r1.messages[r.message].slot].tensor, r1.local.slots[block].tensor);
  }
  EXPECT_EQ(r1.local.slots[block].uses, 2u);

  const detail::RankProgram all = g.compile(4, 1, CollectiveUse::kAll);
  ASSERT_EQ(all.collectives.size(), 1u);
  EXPECT_EQ(all.collectives[0].kind, detail::CollectiveKind::kReduceScatter);
  EXPECT_TRUE(all.combines.empty());
  const detail::RankProgram whole = detail::compile_rank_program(
      g.b.graph, g.whole, brute_force(g.b.graph, 4, {g.p_apps, g.y_apps, g.z_apps}), 1,
      CollectiveUse::kExact, detail::SlotPieces::kWhole);
  EXPECT_TRUE(whole.combines.empty());
  EXPECT_FALSE(whole.local.tasks[local(whole, g.y_apps)].inputs.empty());
}

// Q = relu(A) in two column halves, Z = linear(Q, W, b): along `out`, each shard reads Q whole
// (an allgather); along batch, each reads half of each half (point-to-point).
TEST(RankCollectives, BoxesEveryWriterNeedsAreAnAllgather) {
  for (bool by_out : {true, false}) {
    GraphBuilder b;
    const Built q = add_unary(b, "relu", b.tensor("A", "float32", Range::of_shape({4, 6})));
    const Built z = add_linear(b, q.result, b.tensor("W", "float32", Range::of_shape({6, 6})),
                               b.tensor("b", "float32", Range::of_shape({6})));
    b.shard(q.op, {1, 2});
    b.shard(z.op, by_out ? std::vector<std::int64_t>{1, 2, 1} : std::vector<std::int64_t>{2, 1, 1});
    std::vector<ir::ApplicationId> q_apps, z_apps;
    for (ir::ApplicationId a : b.graph.applications()) {
      (b.graph.application(a).operation() == q.op ? q_apps : z_apps).push_back(a);
    }
    const detail::BlockProgram whole =
        detail::compile_block_program(b.graph, ExecutableKernels::reference());
    const RankSchedule s = brute_force(b.graph, 2, {q_apps, z_apps});
    const detail::RankProgram r1 = detail::compile_rank_program(b.graph, whole, s, 1);
    if (!by_out) {
      EXPECT_TRUE(r1.collectives.empty());
      continue;
    }
    ASSERT_EQ(r1.collectives.size(), 1u);
    const detail::RankCollective& c = r1.collectives[0];
    EXPECT_EQ(c.kind, detail::CollectiveKind::kAllgather);
    EXPECT_EQ(whole.slots[c.source_slot].tensor, q.result);
    EXPECT_EQ(c.boxes, (std::vector<Range>{Range({0, 0}, {4, 3}), Range({0, 3}, {4, 6})}));
    EXPECT_EQ(r1.parts[0].arrivals.size(), 1u);
    EXPECT_TRUE(r1.receives.empty());
  }
}

// A rank allocates the rows it touches: with linear split by batch, rank 1 holds rows 0..4 of X
// (its shard's) and every column.
TEST(RankProgram, SlotsHoldOnlyTheRowsARankTouches) {
  Graph2 g;
  const detail::BlockProgram whole =
      detail::compile_block_program(g.b.graph, ExecutableKernels::reference());
  const RankSchedule s = brute_force(g.b.graph, 2, {g.lin_apps, g.relu_apps});
  const detail::RankProgram r1 = detail::compile_rank_program(g.b.graph, whole, s, 1);
  const detail::BufferSlot& x = r1.local.slots[0];
  EXPECT_EQ(x.range, Range({0, 0}, {4, 6}));
  EXPECT_EQ(x.bytes, 4 * 6 * 4);
  EXPECT_LT(r1.local.memory.peak_bytes, whole.memory.peak_bytes);
}

}  // namespace
}  // namespace tapestry::runtime
