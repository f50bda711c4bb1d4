// rank_device_program.h without a GPU: every rank of a placed plan laid out for its GPU, checked,
// and run on fake devices joined by a fake communicator — each rank's arena in host memory, its
// kernel steps the CPU kernels, its NCCL calls done in host memory with NCCL's blocking
// semantics (a call completes once every rank it involves has reached it on its communication
// stream, all of them at once) — interleaving every rank's streams at random wherever the events
// and the calls allow. Rank 0's outputs must be the block executor's bits. And the faults: a
// send that no longer waits for its producer, a receive into the wrong offset, calls issued in
// different orders on two ranks (a deadlock), a program whose checks must fail.
#include "rank_device_program.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "fake_device.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/verify.h"
#include "tapestry/runtime/view.h"
#include "tapestry/workflow/mpi.h"

namespace tapestry::gpu {
namespace {

using fake_device::lower;
using fake_device::Lowered;
using runtime::Buffer;
using runtime::BufferMap;
using runtime::CollectiveUse;

struct Job {
  Lowered l;
  runtime::detail::BlockProgram whole;
  runtime::RankSchedule schedule;
  std::vector<RankDeviceProgram> ranks;
};

Job plan_lowered(Lowered l, const char* plan, std::uint32_t ranks, CollectiveUse use,
                 int streams = 4) {
  Job j{std::move(l), {}, {}, {}};
  j.whole = runtime::detail::compile_block_program(j.l.lowered.graph, runtime::fast_kernels());
  j.schedule = workflow::prepare_mpi(j.l.lowered, "", ranks, plan).schedule;
  for (std::uint32_t r = 0; r < ranks; ++r) {
    j.ranks.push_back(plan_rank_device_program(j.l.lowered.graph, j.whole, j.schedule, r, {},
                                               {.streams = streams}, use));
  }
  return j;
}

Job plan_job(const char* graph, const char* plan, std::uint32_t ranks, CollectiveUse use,
             int streams = 4) {
  return plan_lowered(lower(graph, plan), plan, ranks, use, streams);
}

// The collectives' graphs of tests/cli/mpi_test.sh: Y = X·W split along k, its reduce's result
// read whole by each Z shard (reduce, allreduce); partials P written out, Y = reduce(P) split by
// rows (reduce-scatter, then an allgather where Z's shards read Y whole).
constexpr const char* kAllreduce = R"(X: f32[64, 48]
W: f32[48, 32]
V: f32[16, 32]
c: f32[16]
Y = matmul(X, W)
Z = linear(Y, V, c)
output Z
)";
constexpr const char* kReduceScatter = R"(H: f32[2, 64, 24]
W: f32[2, 24, 32]
V: f32[16, 32]
c: f32[16]
P = matmul(H, W)
Y = reduce(P)
Z = linear(Y, V, c)
output Z
)";

Lowered lower_text(const char* tap, const char* plan) {
  Lowered l{workflow_testing::build(tap, "collectives.tap"), {}};
  l.lowered = workflow::lower_for_run(l.graph, rewrite::parse_plan(plan, "plan.json"), {});
  return l;
}

// One rank on the fake device.
struct FakeRank {
  const RankDeviceProgram* p = nullptr;
  std::byte* arena = nullptr;
  std::vector<std::byte*> base;
  std::vector<std::vector<std::size_t>> queue;  // per stream: steps
  std::vector<std::size_t> head;
  std::vector<char> done;    // per event
  std::vector<char> posted;  // per communication step
  ~FakeRank() { std::free(arena); }
};

std::byte* at(FakeRank& r, const CommBuffer& b) {
  return r.base[b.slot] + b.byte_offset;
}

void copy_runs(FakeRank& r, const StagedBox& s, bool pack) {
  for (const BoxRun& run : s.runs) {
    for (std::int64_t h = 0; h < run.height; ++h) {
      std::byte* slot = r.base[s.slot] + run.slot_offset + h * run.pitch;
      std::byte* staging = r.base[s.staging] + run.staging_offset + h * run.width;
      std::memcpy(pack ? staging : slot, pack ? slot : staging,
                  static_cast<std::size_t>(run.width));
    }
  }
}

template <typename T>
void add_into(std::byte* into, const std::byte* from, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    T a, b;
    std::memcpy(&a, into + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    std::memcpy(&b, from + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    a = a + b;
    std::memcpy(into + i * static_cast<std::int64_t>(sizeof(T)), &a, sizeof(T));
  }
}

// The sum of the members' `count` elements from `offset` (elements) of their send buffers, in
// member order.
std::vector<std::byte> sum(const std::vector<std::pair<FakeRank*, const CommStep*>>& members,
                           std::int64_t offset, std::int64_t count) {
  const ir::DType dtype = members[0].second->dtype;
  const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(dtype));
  std::vector<std::byte> total(static_cast<std::size_t>(count * element));
  for (std::size_t i = 0; i < members.size(); ++i) {
    const std::byte* from = at(*members[i].first, members[i].second->send) + offset * element;
    if (i == 0) {
      std::memcpy(total.data(), from, total.size());
    } else if (dtype == ir::DType::kFloat64) {
      add_into<double>(total.data(), from, count);
    } else {
      EXPECT_EQ(dtype, ir::DType::kFloat32);
      add_into<float>(total.data(), from, count);
    }
  }
  return total;
}

// Call `op` on every rank it involves (sorted by rank), at once.
void complete(const std::vector<std::pair<FakeRank*, const CommStep*>>& members) {
  const CommStep& first = *members[0].second;
  const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(first.dtype));
  const auto put = [](FakeRank& r, const CommBuffer& b, const std::vector<std::byte>& bytes,
                      std::int64_t offset) {
    std::memcpy(at(r, b) + offset, bytes.data(), bytes.size());
  };
  switch (first.kind) {
    case CommKind::kSend:
    case CommKind::kRecv: {
      ASSERT_EQ(members.size(), 2U);
      const auto& [from, send] =
          members[0].second->kind == CommKind::kSend ? members[0] : members[1];
      const auto& [to, recv] = members[0].second->kind == CommKind::kSend ? members[1] : members[0];
      ASSERT_EQ(send->kind, CommKind::kSend);
      ASSERT_EQ(recv->kind, CommKind::kRecv);
      ASSERT_EQ(send->count, recv->count);
      std::memcpy(at(*to, recv->recv), at(*from, send->send),
                  static_cast<std::size_t>(send->count));
      break;
    }
    case CommKind::kReduce:
    case CommKind::kAllreduce: {
      const std::vector<std::byte> total = sum(members, 0, first.count);
      for (const auto& [r, step] : members) {
        if (step->kind == CommKind::kAllreduce || step->member == step->root)
          put(*r, step->recv, total, 0);
      }
      break;
    }
    case CommKind::kReduceScatter:
      for (const auto& [r, step] : members) {
        const std::vector<std::byte> slice =
            sum(members, static_cast<std::int64_t>(step->displacements[step->member]),
                static_cast<std::int64_t>(step->counts[step->member]));
        put(*r, step->recv, slice, 0);
      }
      break;
    case CommKind::kAllgather: {
      std::vector<std::vector<std::byte>> boxes;  // every member's, read before any write
      for (const auto& [r, step] : members) {
        const std::byte* from = at(*r, step->send);
        boxes.emplace_back(from,
                           from + static_cast<std::int64_t>(step->counts[step->member]) * element);
      }
      for (const auto& [r, step] : members) {
        for (std::size_t j = 0; j < members.size(); ++j) {
          put(*r, step->recv, boxes[j],
              static_cast<std::int64_t>(step->displacements[j]) * element);
        }
      }
      break;
    }
  }
}

// How many ranks call `op`.
std::size_t participants(const RankDeviceProgram& p, const CommStep& step) {
  if (step.kind == CommKind::kSend || step.kind == CommKind::kRecv) return 2;
  return p.rank.collectives[step.collective].members.size();
}

struct FakeResult {
  BufferMap outputs;  // rank 0's
  std::string error;  // "deadlock: …"
};

// Every rank of `programs` on the fake device (see the file comment).
FakeResult fake_job(const std::vector<RankDeviceProgram>& programs, const Lowered& l,
                    const BufferMap& inputs, std::uint32_t seed) {
  std::vector<FakeRank> ranks(programs.size());
  for (std::size_t r = 0; r < programs.size(); ++r) {
    FakeRank& f = ranks[r];
    const RankDeviceProgram& p = programs[r];
    const DeviceProgram& d = p.device;
    f.p = &p;
    // Slack past the arena: a fault test may write a little past a slot's end.
    const auto bytes = static_cast<std::size_t>((d.arena_bytes + 4096 + 255) / 256 * 256);
    f.arena = static_cast<std::byte*>(std::aligned_alloc(256, bytes));
    std::memset(f.arena, 0xFF, bytes);  // NaN: a read before its write shows
    f.base.resize(d.block.slots.size());
    for (std::size_t s = 0; s < f.base.size(); ++s) f.base[s] = f.arena + d.placement[s].offset;
    // This rank's rows of each input it reads, from the whole tensor.
    for (std::size_t s = 0; s < d.block.slots.size(); ++s) {
      const runtime::detail::BufferSlot& slot = d.block.slots[s];
      if (!slot.input || slot.bytes == 0) continue;
      const Buffer& all = inputs.at(slot.tensor);
      const std::int64_t offset =
          runtime::element_offset(all.range(), all.strides(), slot.range.start()) *
          static_cast<std::int64_t>(ir::dtype_size_bytes(slot.dtype));
      std::memcpy(f.base[s], all.bytes() + offset, static_cast<std::size_t>(slot.bytes));
    }
    f.queue.resize(static_cast<std::size_t>(d.streams));
    for (std::size_t i = 0; i < d.steps.size(); ++i) {
      f.queue[static_cast<std::size_t>(d.steps[i].stream)].push_back(i);
    }
    f.head.assign(f.queue.size(), 0);
    f.done.assign(d.events, 0);
    f.posted.assign(p.comm.size(), 0);
  }
  std::map<std::uint32_t, std::vector<std::pair<FakeRank*, const CommStep*>>> posts;  // per op
  std::mt19937 rng(seed);
  while (true) {
    // What can happen next: a kernel step, a call posted, or a call every rank has posted done.
    struct Move {
      std::size_t rank, stream;
      bool complete;
    };
    std::vector<Move> moves;
    std::set<std::uint32_t> completable;
    bool finished = true;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      FakeRank& f = ranks[r];
      const DeviceProgram& d = f.p->device;
      for (std::size_t s = 0; s < f.queue.size(); ++s) {
        if (f.head[s] == f.queue[s].size()) continue;
        finished = false;
        const DeviceStep& step = d.steps[f.queue[s][f.head[s]]];
        bool ready = true;
        for (std::uint32_t e : step.waits) ready = ready && f.done[e] != 0;
        if (!ready) continue;
        if (!step.communication) {
          moves.push_back({r, s, false});
          continue;
        }
        const std::size_t c = step.task - d.communication_from;
        const CommStep& call = f.p->comm[c];
        if (f.posted[c] == 0) {
          moves.push_back({r, s, false});
        } else if (posts[call.op].size() == participants(*f.p, call) &&
                   completable.insert(call.op).second) {
          moves.push_back({r, s, true});
        }
      }
    }
    if (finished) break;
    if (moves.empty()) {
      std::string where;
      for (const auto& [op, members] : posts) {
        if (!members.empty())
          where += fmt::format(" call {} ({} of {} ranks)", op, members.size(),
                               participants(*members[0].first->p, *members[0].second));
      }
      return {{}, "deadlock:" + where};
    }
    const Move m = moves[std::uniform_int_distribution<std::size_t>(0, moves.size() - 1)(rng)];
    FakeRank& f = ranks[m.rank];
    const DeviceProgram& d = f.p->device;
    const DeviceStep& step = d.steps[f.queue[m.stream][f.head[m.stream]]];
    const auto finish = [](FakeRank& r, std::size_t stream) {
      const DeviceStep& s = r.p->device.steps[r.queue[stream][r.head[stream]++]];
      if (s.record >= 0) r.done[static_cast<std::size_t>(s.record)] = 1;
    };
    if (!step.communication) {
      fake_device::run_task(d.block.tasks[step.task], f.base);
      finish(f, m.stream);
      continue;
    }
    const std::size_t c = step.task - d.communication_from;
    const CommStep& call = f.p->comm[c];
    if (!m.complete) {  // post: pack what it sends; the call reads it when it completes
      for (const StagedBox& s : call.pack) copy_runs(f, s, true);
      f.posted[c] = 1;
      posts[call.op].push_back({&f, &call});
      continue;
    }
    std::vector<std::pair<FakeRank*, const CommStep*>> members = posts[call.op];
    std::sort(members.begin(), members.end(), [&](const auto& a, const auto& b) {
      return a.first->p->rank.rank < b.first->p->rank.rank;
    });
    for (const auto& [r, s] : members) {
      if (s->kind != call.kind && !(call.kind == CommKind::kSend || call.kind == CommKind::kRecv)) {
        return {{}, fmt::format("call {}: ranks disagree on its kind", call.op)};
      }
    }
    complete(members);
    for (const auto& [r, s] : members) {
      for (const StagedBox& staged : s->unpack) copy_runs(*r, staged, false);
      const std::size_t stream = static_cast<std::size_t>(r->p->device.streams - 1);
      finish(*r, stream);
    }
    posts.erase(call.op);
  }
  FakeResult result;
  const RankDeviceProgram& p0 = programs[0];
  for (std::size_t s = 0; s < p0.device.block.slots.size(); ++s) {
    const auto& slot = p0.device.block.slots[s];
    if (!slot.output) continue;
    Buffer b(slot.dtype, slot.range);
    if (slot.bytes > 0)
      std::memcpy(b.bytes(), ranks[0].base[s], static_cast<std::size_t>(slot.bytes));
    result.outputs.emplace(slot.tensor, std::move(b));
  }
  (void)l;
  return result;
}

struct Reference {
  BufferMap inputs;
  BufferMap want;
};

Reference reference(const Lowered& l) {
  Reference r;
  r.inputs = workflow::lowered_inputs(l.lowered, runtime::generate_inputs(l.graph, {.seed = 5}));
  r.want =
      runtime::BlockExecutor(l.lowered.graph, {.threads = 1, .kernels = &runtime::fast_kernels()})
          .run(r.inputs);
  return r;
}

// Every rank's program checked, its calls counted by kind, and all ranks run on fake devices in
// 4 interleavings: rank 0's outputs the block executor's bits.
void check_and_run(const Job& job, std::map<CommKind, int>& kinds) {
  const Reference ref = reference(job.l);
  for (const RankDeviceProgram& p : job.ranks) {
    ASSERT_EQ(check_rank_device_program(p), "") << "rank " << p.rank.rank;
    for (const CommStep& s : p.comm) ++kinds[s.kind];
  }
  for (std::uint32_t seed = 0; seed < 4; ++seed) {
    const FakeResult got = fake_job(job.ranks, job.l, ref.inputs, seed);
    ASSERT_EQ(got.error, "") << "seed " << seed;
    EXPECT_TRUE(fake_device::same_outputs(job.l.lowered.graph, got.outputs, ref.want))
        << "seed " << seed;
  }
}

const struct Case {
  const char* graph;
  const char* plan;
  std::uint32_t ranks;
} kCases[] = {{"linear_relu.tap", "linear_relu-batch2-fused.json", 2},
              {"linear_relu.tap", "linear_relu-split-in.json", 2},
              {"linear_relu.tap", "linear_relu-grid.json", 4},
              {"mlp.tap", "mlp-megatron.json", 2},
              {"mlp.tap", "mlp-data-parallel.json", 2},
              {"mlp.tap", "mlp-best.json", 4},
              {"transformer_block.tap", "transformer_block-heads.json", 2},
              {"convnet.tap", "convnet-batch.json", 2},
              {"mlp_grad.tap", "mlp_grad-data-parallel.json", 2},
              {"resnet_bottleneck.tap", "resnet_bottleneck-batch.json", 2}};

TEST(RankDeviceProgram, EveryBundledPlanAndEveryCollectiveRunsOnFakeRanksBitwise) {
  std::map<CommKind, int> kinds;
  for (const Case& c : kCases) {
    for (const CollectiveUse use : {CollectiveUse::kExact, CollectiveUse::kNone}) {
      SCOPED_TRACE(fmt::format("{} {} on {} ranks, collectives {}", c.graph, c.plan, c.ranks,
                               use == CollectiveUse::kNone ? "none" : "exact"));
      const Job job = plan_job(c.graph, c.plan, c.ranks, use);
      check_and_run(job, kinds);
    }
  }
  // And the collectives' graphs: reduce, allreduce, reduce-scatter and allgather, slices in
  // and against rank order.
  const struct {
    const char* tap;
    const char* plan;
  } collectives[] = {
      {kAllreduce,
       R"({"ops": {"Y": {"split": {"k": 2}}, "Y/reduce": {}, "Z": {"split": {"out": 2}}}})"},
      {kAllreduce, R"({"ops": {"Y": {"split": {"k": 2}}, "Y/reduce": {}}})"},
      {kAllreduce, R"({"ops": {"Y": {"split": {"k": 2}}, "Z": {"split": {"out": 2}}}})"},
      {kReduceScatter,
       R"({"ops": {"P": {"split": {"batch": 2}}, "Y": {"split": {"d0": 2}}, "Z": {"split": {"batch": 2}}}})"},
      {kReduceScatter,
       R"({"ops": {"P": {"split": {"batch": 2}}, "Y": {"split": {"d0": 2}}, "Z": {"split": {"out": 2}}}})"},
      {kReduceScatter,
       R"({"ops": {"P": {"split": {"batch": 2}}, "Y": {"split": {"d0": 2}, "place": ["rank:1", "rank:0"]}, "Z": {"split": {"out": 2}}}})"}};
  for (const auto& c : collectives) {
    SCOPED_TRACE(c.plan);
    const Job job = plan_lowered(lower_text(c.tap, c.plan), "plan.json", 2, CollectiveUse::kExact);
    check_and_run(job, kinds);
  }
  // The cases exercise every kind of call.
  for (const CommKind k : {CommKind::kSend, CommKind::kRecv, CommKind::kReduce,
                           CommKind::kAllreduce, CommKind::kReduceScatter, CommKind::kAllgather}) {
    EXPECT_GT(kinds[k], 0) << comm_kind_name(k);
  }
}

TEST(RankDeviceProgram, EveryBundledPlanForcedOntoOneRankMakesNoCallAndRunsBitwise) {
  // What the GPU test (nccl_executor_test.cpp) runs through NCCL on one GPU.
  for (const Case& c : kCases) {
    SCOPED_TRACE(fmt::format("{} {}", c.graph, c.plan));
    const Job job = plan_job(c.graph, c.plan, 1, CollectiveUse::kExact);
    ASSERT_EQ(check_rank_device_program(job.ranks[0]), "");
    EXPECT_EQ(job.ranks[0].comm.size(), 0U);
    EXPECT_EQ(job.ranks[0].device.streams, 4);  // no communication stream
    const Reference ref = reference(job.l);
    const FakeResult got = fake_job(job.ranks, job.l, ref.inputs, 1);
    ASSERT_EQ(got.error, "");
    EXPECT_TRUE(fake_device::same_outputs(job.l.lowered.graph, got.outputs, ref.want));
    // Rank 0's outputs verify as the GPU test verifies them.
    const runtime::VerifyReport report = workflow::verify_run(
        job.l.graph, runtime::generate_inputs(job.l.graph, {.seed = 5}),
        workflow::graph_results(job.l.graph, job.l.lowered, BufferMap(got.outputs)),
        {.mode = runtime::VerifyMode::kBound}, std::nullopt);
    EXPECT_TRUE(report.pass()) << report.text();
  }
}

// --- Faults the checks and the fake ranks must catch.

// A job with calls between ranks 0 and 1 in both directions.
Job megatron_block() {
  return plan_job("transformer_block.tap", "transformer_block-heads.json", 2,
                  CollectiveUse::kExact);
}

int wrong_runs(const Job& job, const std::vector<RankDeviceProgram>& programs) {
  const Reference ref = reference(job.l);
  int wrong = 0;
  for (std::uint32_t seed = 0; seed < 12; ++seed) {
    const FakeResult got = fake_job(programs, job.l, ref.inputs, seed);
    if (!got.error.empty() ||
        !fake_device::same_outputs(job.l.lowered.graph, got.outputs, ref.want)) {
      ++wrong;
    }
  }
  return wrong;
}

TEST(RankDeviceProgramFaults, ASendThatNoLongerWaitsForItsProducerIsCaught) {
  const Job job = megatron_block();
  std::size_t faults = 0;
  for (std::uint32_t r = 0; r < 2; ++r) {
    for (std::size_t i = 0; i < job.ranks[r].device.steps.size(); ++i) {
      const DeviceStep& step = job.ranks[r].device.steps[i];
      const bool send =
          step.communication &&
          job.ranks[r].comm[step.task - job.ranks[r].device.communication_from].kind ==
              CommKind::kSend;
      if (!send || step.waits.empty()) continue;
      SCOPED_TRACE(job.ranks[r].device.block.tasks[step.task].name);
      std::vector<RankDeviceProgram> programs = job.ranks;
      programs[r].device.steps[i].waits.clear();  // the event before the send dropped
      EXPECT_NE(check_rank_device_program(programs[r]).find("may start before"), std::string::npos);
      EXPECT_GT(wrong_runs(job, programs), 0);
      ++faults;
      break;
    }
  }
  EXPECT_EQ(faults, 2U);
}

TEST(RankDeviceProgramFaults, AReceiveIntoTheWrongOffsetIsCaught) {
  // One row of the tensor's slot off where the receive lands in place (the Megatron MLP's
  // partial and its gathered output, point to point), or a row or a column off where a staged
  // one is unpacked (the transformer block's column blocks). Each must give wrong values in
  // every interleaving.
  std::size_t in_place = 0, staged = 0;
  for (const Job& job :
       {plan_job("mlp.tap", "mlp-megatron.json", 2, CollectiveUse::kNone), megatron_block()}) {
    for (std::size_t c = 0; c < job.ranks[0].comm.size(); ++c) {
      const CommStep& call = job.ranks[0].comm[c];
      if (call.kind != CommKind::kRecv) continue;
      SCOPED_TRACE(
          job.ranks[0].device.block.tasks[job.ranks[0].device.communication_from + c].name);
      std::vector<RankDeviceProgram> programs = job.ranks;
      CommStep& wrong = programs[0].comm[c];
      const auto& slots = programs[0].device.block.slots;
      const auto row_of = [&](std::uint32_t slot) {
        return slots[slot].bytes / std::max<std::int64_t>(1, slots[slot].range.shape()[0]);
      };
      if (wrong.unpack.empty()) {
        const std::int64_t row = row_of(wrong.recv.slot);
        wrong.recv.byte_offset += wrong.recv.byte_offset >= row ? -row : row;
        if (wrong.recv.byte_offset + wrong.count > slots[wrong.recv.slot].bytes) continue;
        ++in_place;
      } else {
        // A row up where the box has one above it, else one column left.
        std::int64_t shift = row_of(wrong.unpack[0].slot);
        for (const BoxRun& run : wrong.unpack[0].runs) {
          if (run.slot_offset < shift) {
            shift =
                static_cast<std::int64_t>(ir::dtype_size_bytes(slots[wrong.unpack[0].slot].dtype));
          }
        }
        bool fits = true;
        for (BoxRun& run : wrong.unpack[0].runs) {
          run.slot_offset -= shift;
          fits = fits && run.slot_offset >= 0;
        }
        if (!fits) continue;
        ++staged;
      }
      EXPECT_EQ(check_rank_device_program(programs[0]), "");  // the offsets stay in the slots
      EXPECT_EQ(wrong_runs(job, programs), 12);
    }
  }
  EXPECT_GE(in_place, 2U);
  EXPECT_GE(staged, 1U);
}

TEST(RankDeviceProgramFaults, CallsInAnotherOrderOnOneRankDeadlock) {
  const Job job = megatron_block();
  // Rank 1 issues its first two calls the other way round (with their events, so only the order
  // of the calls differs): rank 0 waits in call 0 for rank 1, which waits in call 1 for rank 0.
  std::vector<RankDeviceProgram> programs = job.ranks;
  DeviceProgram& d = programs[1].device;
  std::vector<std::size_t> calls;
  for (std::size_t i = 0; i < d.steps.size() && calls.size() < 2; ++i) {
    if (d.steps[i].communication) calls.push_back(i);
  }
  ASSERT_EQ(calls.size(), 2U);
  std::swap(programs[1].comm[d.steps[calls[0]].task - d.communication_from].op,
            programs[1].comm[d.steps[calls[1]].task - d.communication_from].op);
  EXPECT_NE(check_rank_device_program(programs[1]).find("issued after call"), std::string::npos);
  const Reference ref = reference(job.l);
  for (std::uint32_t seed = 0; seed < 4; ++seed) {
    const FakeResult got = fake_job(programs, job.l, ref.inputs, seed);
    EXPECT_TRUE(got.error.starts_with("deadlock")) << got.error;
  }
}

}  // namespace
}  // namespace tapestry::gpu
