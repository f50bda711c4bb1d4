// A rank's program laid out for its GPU, with its NCCL calls (rank_device_program.h).
#include "rank_device_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/runtime/view.h"
#include "tapestry/support/assert.h"
#include "tapestry/zspace/format.h"

namespace tapestry::gpu {

namespace {

using runtime::Range;
using runtime::detail::BlockProgram;
using runtime::detail::BlockTask;
using runtime::detail::BufferSlot;
using runtime::detail::CollectiveKind;
using runtime::detail::PortAddress;
using runtime::detail::RankCollective;
using runtime::detail::RankMessageInfo;
using runtime::detail::RankProgram;

// `box` of a dense row-major buffer over `range` as 2-D runs (device_program.h).
std::vector<BoxRun> box_runs(const Range& range, const Range& box, std::int64_t element,
                             std::int64_t staging_offset) {
  if (box.is_empty()) return {};
  const runtime::Point strides = runtime::dense_strides(range.shape());
  return gpu::box_runs(strides, box.shape(), element,
                       runtime::element_offset(range, strides, box.start()) * element,
                       staging_offset);
}

bool contiguous(const std::vector<BoxRun>& runs) {
  return runs.size() == 1 && (runs[0].height == 1 || runs[0].pitch == runs[0].width);
}

// Builds the communication tasks' buffers: boxes in place where contiguous, else staging slots.
class CommBuilder {
 public:
  explicit CommBuilder(std::vector<BufferSlot>& slots) : slots_(slots) {}

  std::int64_t element(std::uint32_t slot) const {
    return static_cast<std::int64_t>(ir::dtype_size_bytes(slots_[slot].dtype));
  }

  // A dense staging slot of `elements` elements of `slot`'s dtype.
  std::uint32_t staging(std::uint32_t slot, std::int64_t elements) {
    BufferSlot s;
    s.tensor = slots_[slot].tensor;
    s.dtype = slots_[slot].dtype;
    s.range = Range::of_shape(runtime::Point{elements});
    s.bytes = elements * element(slot);
    slots_.push_back(s);
    return static_cast<std::uint32_t>(slots_.size() - 1);
  }

  // `box` of `slot`: in place, or packed (send) / unpacked (receive) through a staging slot.
  CommBuffer buffer(CommStep& step, std::uint32_t slot, const Range& box, bool send) {
    std::vector<BoxRun> runs = box_runs(slots_[slot].range, box, element(slot), 0);
    if (box.is_empty()) return {slot, 0};
    if (contiguous(runs)) return {slot, runs[0].slot_offset};
    const std::uint32_t s = staging(slot, box.size());
    (send ? step.pack : step.unpack).push_back({slot, s, std::move(runs)});
    return {s, 0};
  }

 private:
  std::vector<BufferSlot>& slots_;
};

std::string box_text(const ir::Graph& graph, const BufferSlot& slot, const Range& box) {
  return fmt::format("{}{}", runtime::tensor_name(graph, slot.tensor), box);
}

// One communication step of this rank for the job's call `op`: a message (send or receive) or a
// collective this rank is a member of.
CommStep message_step(const RankProgram& rp, std::uint32_t m, std::uint32_t op,
                      CommBuilder& builder) {
  const RankMessageInfo& msg = rp.messages[m];
  const bool send = msg.from == rp.rank;
  CommStep step{.kind = send ? CommKind::kSend : CommKind::kRecv,
                .op = op,
                .message = m,
                .peer = static_cast<int>(send ? msg.to : msg.from),
                .dtype = ir::DType::kUInt8};
  (send ? step.send : step.recv) = builder.buffer(step, msg.slot, msg.box, send);
  step.count = msg.box.size() * builder.element(msg.slot);
  return step;
}

CommStep collective_step(const RankProgram& rp, const std::vector<BufferSlot>& slots,
                         std::uint32_t c, std::uint32_t op, CommBuilder& builder) {
  const RankCollective& coll = rp.collectives[c];
  const auto member = static_cast<std::uint32_t>(
      std::find(coll.members.begin(), coll.members.end(), rp.rank) - coll.members.begin());
  const auto root = static_cast<std::uint32_t>(
      std::find(coll.members.begin(), coll.members.end(), coll.root) - coll.members.begin());
  CommStep step{
      .collective = c, .dtype = slots[coll.source_slot].dtype, .member = member, .root = root};
  step.op = op;
  const Range& mine = coll.boxes[member];
  switch (coll.kind) {
    case CollectiveKind::kReduce:
    case CollectiveKind::kAllreduce:
      step.kind = coll.kind == CollectiveKind::kReduce ? CommKind::kReduce : CommKind::kAllreduce;
      step.send = builder.buffer(step, coll.source_slot, mine, true);
      if (step.kind == CommKind::kAllreduce || coll.root == rp.rank) {
        step.recv = builder.buffer(step, coll.result_slot, coll.result_box, false);
      }
      step.count = coll.result_box.size();
      break;
    case CollectiveKind::kReduceScatter: {
      step.kind = CommKind::kReduceScatter;
      // The member's box as its slices j × S_i, one after another in member order.
      const std::int64_t element = builder.element(coll.source_slot);
      std::vector<std::vector<BoxRun>> pieces;
      std::int64_t total = 0;
      bool in_place = true;
      std::int64_t next = -1;
      for (const Range& slice : coll.result_boxes) {
        const Range piece(mine.start().slice(0, 1).concat(slice.start()),
                          mine.end().slice(0, 1).concat(slice.end()));
        pieces.push_back(box_runs(slots[coll.source_slot].range, piece, element, total * element));
        in_place = in_place && contiguous(pieces.back()) &&
                   (next < 0 || pieces.back()[0].slot_offset == next);
        if (!pieces.back().empty()) next = pieces.back()[0].slot_offset + piece.size() * element;
        step.counts.push_back(static_cast<std::size_t>(piece.size()));
        step.displacements.push_back(static_cast<std::size_t>(total));
        total += piece.size();
      }
      if (in_place) {
        step.send = {coll.source_slot, pieces[0][0].slot_offset};
      } else {
        const std::uint32_t s = builder.staging(coll.source_slot, total);
        StagedBox staged{coll.source_slot, s, {}};
        for (const auto& runs : pieces)
          staged.runs.insert(staged.runs.end(), runs.begin(), runs.end());
        step.pack.push_back(std::move(staged));
        step.send = {s, 0};
      }
      step.recv = builder.buffer(step, coll.result_slot, coll.result_boxes[member], false);
      break;
    }
    case CollectiveKind::kAllgather: {
      step.kind = CommKind::kAllgather;
      const std::int64_t element = builder.element(coll.source_slot);
      const Range& range = slots[coll.source_slot].range;
      bool in_place = true;
      for (const Range& box : coll.boxes) {
        in_place = in_place && contiguous(box_runs(range, box, element, 0));
      }
      std::int64_t total = 0;
      for (const Range& box : coll.boxes) {
        step.counts.push_back(static_cast<std::size_t>(box.size()));
        if (in_place) {
          step.displacements.push_back(
              static_cast<std::size_t>(box_runs(range, box, element, 0)[0].slot_offset / element));
        } else {
          step.displacements.push_back(static_cast<std::size_t>(total));
        }
        total += box.size();
      }
      if (in_place) {
        step.recv = {coll.source_slot, 0};
        step.send = {coll.source_slot,
                     static_cast<std::int64_t>(step.displacements[member]) * element};
        break;
      }
      const std::uint32_t s = builder.staging(coll.source_slot, total);
      for (std::uint32_t j = 0; j < coll.boxes.size(); ++j) {
        StagedBox staged{coll.source_slot, s,
                         box_runs(range, coll.boxes[j], element,
                                  static_cast<std::int64_t>(step.displacements[j]) * element)};
        (j == member ? step.pack : step.unpack).push_back(std::move(staged));
      }
      step.send = {s, static_cast<std::int64_t>(step.displacements[member]) * element};
      step.recv = {s, 0};
      break;
    }
  }
  return step;
}

void sorted_unique(std::vector<std::uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

std::string_view comm_kind_name(CommKind kind) {
  switch (kind) {
    case CommKind::kSend:
      return "send";
    case CommKind::kRecv:
      return "recv";
    case CommKind::kReduce:
      return "reduce";
    case CommKind::kAllreduce:
      return "allreduce";
    case CommKind::kReduceScatter:
      return "reduce_scatter";
    case CommKind::kAllgather:
      return "allgather";
  }
  return "?";
}

RankDeviceProgram plan_rank_device_program(const ir::Graph& graph, const BlockProgram& whole,
                                           const runtime::RankSchedule& schedule,
                                           std::uint32_t rank, const DeviceKernels& device,
                                           DeviceProgramOptions options,
                                           runtime::CollectiveUse collectives) {
  RankDeviceProgram out;
  out.rank = runtime::detail::compile_rank_program(graph, whole, schedule, rank, collectives,
                                                   runtime::detail::SlotPieces::kWhole);
  const RankProgram& rp = out.rank;
  const BlockProgram& local = rp.local;
  std::vector<std::uint32_t> position(whole.tasks.size());
  for (std::uint32_t i = 0; i < whole.order.size(); ++i) position[whole.order[i]] = i;

  // The job's calls, in one order on every rank (the file comment): (key, kind, index).
  std::vector<char> replaced(rp.messages.size(), 0);
  for (const RankCollective& c : rp.collectives) {
    for (std::uint32_t m : c.replaced) replaced[m] = 1;
  }
  using Call = std::tuple<std::uint32_t, int, std::uint32_t>;
  std::vector<Call> calls;
  for (std::uint32_t m = 0; m < rp.messages.size(); ++m) {
    if (replaced[m] == 0) calls.emplace_back(position[rp.messages[m].producer], 0, m);
  }
  for (std::uint32_t c = 0; c < rp.collectives.size(); ++c) {
    std::uint32_t key = 0;
    for (std::uint32_t t : rp.collectives[c].producers) key = std::max(key, position[t]);
    calls.emplace_back(key, 1, c);
  }
  std::sort(calls.begin(), calls.end());
  out.ops = static_cast<std::uint32_t>(calls.size());

  // The kernel tasks: the rank program's, less the reduces its collectives replace.
  std::vector<char> no_op(local.tasks.size(), 0);
  std::vector<std::uint32_t> local_of(whole.tasks.size(), UINT32_MAX);
  for (std::uint32_t l = 0; l < local.tasks.size(); ++l) local_of[rp.whole_task[l]] = l;
  std::vector<std::uint32_t> replaced_by_part(local.tasks.size(), UINT32_MAX);
  for (std::uint32_t i = 0; i < rp.parts.size(); ++i) {
    const RankCollective& c = rp.collectives[rp.parts[i].collective];
    if (c.reduce_task != UINT32_MAX && c.root == rank) {
      no_op[local_of[c.reduce_task]] = 1;
      replaced_by_part[local_of[c.reduce_task]] = i;
    }
    for (std::size_t j = 0; j < c.reduce_tasks.size(); ++j) {
      if (c.members[j] != rank) continue;
      no_op[local_of[c.reduce_tasks[j]]] = 1;
      replaced_by_part[local_of[c.reduce_tasks[j]]] = i;
    }
  }
  BlockProgram b;
  b.slots = local.slots;
  b.prepared = local.prepared;
  std::vector<std::uint32_t> task_of(local.tasks.size(), UINT32_MAX);  // local → b
  for (std::uint32_t l = 0; l < local.tasks.size(); ++l) {
    if (no_op[l] != 0) continue;
    task_of[l] = static_cast<std::uint32_t>(b.tasks.size());
    b.tasks.push_back(local.tasks[l]);
    out.whole_task.push_back(rp.whole_task[l]);
    b.flops += local.tasks[l].flops;
  }
  const auto communication_from = static_cast<std::uint32_t>(b.tasks.size());

  // The communication tasks, in the calls' order; a replaced reduce becomes its collective.
  CommBuilder builder(b.slots);
  std::vector<std::uint32_t> task_of_part(rp.parts.size(), UINT32_MAX);
  std::vector<std::uint32_t> task_of_message(rp.messages.size(), UINT32_MAX);
  for (std::uint32_t op = 0; op < calls.size(); ++op) {
    const auto [key, type, index] = calls[op];
    CommStep step;
    std::string what;
    if (type == 0) {
      const RankMessageInfo& msg = rp.messages[index];
      if (msg.from != rank && msg.to != rank) continue;
      step = message_step(rp, index, op, builder);
      what = fmt::format("{} {} {} rank {}", comm_kind_name(step.kind),
                         box_text(graph, b.slots[msg.slot], msg.box),
                         step.kind == CommKind::kSend ? "to" : "from", step.peer);
      task_of_message[index] = static_cast<std::uint32_t>(b.tasks.size());
    } else {
      const auto part = std::find_if(rp.parts.begin(), rp.parts.end(),
                                     [&](const auto& p) { return p.collective == index; });
      if (part == rp.parts.end()) continue;
      step = collective_step(rp, b.slots, index, op, builder);
      what = fmt::format("{} {}", comm_kind_name(step.kind), rp.collectives[index].what);
      task_of_part[static_cast<std::size_t>(part - rp.parts.begin())] =
          static_cast<std::uint32_t>(b.tasks.size());
    }
    BlockTask task;
    task.name = what;
    // The slots it reads (inputs) and writes (outputs, writes): what the arena planner orders.
    const auto reads = [&](std::uint32_t slot) { task.inputs.push_back({slot, 0}); };
    const auto writes = [&](std::uint32_t slot) {
      task.outputs.push_back({slot, 0});
      task.writes.push_back(slot);
    };
    if (step.send.slot != CommBuffer::kNoSlot) reads(step.send.slot);
    if (step.recv.slot != CommBuffer::kNoSlot) writes(step.recv.slot);
    for (const StagedBox& s : step.pack) {
      reads(s.slot);
      writes(s.staging);
    }
    for (const StagedBox& s : step.unpack) {
      reads(s.staging);
      writes(s.slot);
    }
    sorted_unique(task.writes);
    task.touches = task.writes;
    b.tasks.push_back(std::move(task));
    out.comm.push_back(std::move(step));
  }
  for (std::uint32_t l = 0; l < local.tasks.size(); ++l) {
    if (no_op[l] != 0) task_of[l] = task_of_part[replaced_by_part[l]];
  }

  // The DAG: the rank program's edges, and each call's.
  const std::size_t n = b.tasks.size();
  std::vector<std::vector<std::uint32_t>> dependents(n);
  const auto edge = [&](std::uint32_t from, std::uint32_t to) {
    TAPESTRY_ASSERT(from != UINT32_MAX && to != UINT32_MAX, "an edge to a task this rank lacks");
    if (from != to) dependents[from].push_back(to);
  };
  for (std::uint32_t l = 0; l < local.tasks.size(); ++l) {
    for (std::uint32_t k = local.dependents_first[l]; k < local.dependents_first[l + 1]; ++k) {
      edge(task_of[l], task_of[local.dependents[k]]);
    }
  }
  for (std::uint32_t m = 0; m < rp.messages.size(); ++m) {
    if (task_of_message[m] == UINT32_MAX || rp.messages[m].from != rank) continue;
    edge(task_of[local_of[rp.messages[m].producer]], task_of_message[m]);
  }
  for (const runtime::detail::RankReceive& r : rp.receives) {
    for (std::uint32_t consumer : r.consumers) edge(task_of_message[r.message], task_of[consumer]);
  }
  for (std::uint32_t i = 0; i < rp.parts.size(); ++i) {
    edge(task_of[rp.parts[i].producer], task_of_part[i]);
    for (const runtime::detail::RankReceive& r : rp.parts[i].arrivals) {
      for (std::uint32_t consumer : r.consumers) edge(task_of_part[i], task_of[consumer]);
    }
  }
  b.dependents_first.assign(n + 1, 0);
  b.pending.assign(n, 0);
  for (std::uint32_t t = 0; t < n; ++t) {
    sorted_unique(dependents[t]);
    for (std::uint32_t d : dependents[t]) ++b.pending[d];
    b.dependents_first[t + 1] =
        b.dependents_first[t] + static_cast<std::uint32_t>(dependents[t].size());
    b.dependents.insert(b.dependents.end(), dependents[t].begin(), dependents[t].end());
  }
  // The issue order: kernels at their position in the whole program, each call right after
  // what it sends (its key), calls in the job's order.
  std::vector<std::tuple<std::uint32_t, int, std::uint32_t, std::uint32_t>> keyed;
  for (std::uint32_t t = 0; t < communication_from; ++t) {
    keyed.emplace_back(position[out.whole_task[t]], 0, t, t);
  }
  for (std::uint32_t i = 0; i < out.comm.size(); ++i) {
    keyed.emplace_back(std::get<0>(calls[out.comm[i].op]), 1, out.comm[i].op,
                       communication_from + i);
  }
  std::sort(keyed.begin(), keyed.end());
  for (const auto& k : keyed) b.order.push_back(std::get<3>(k));
  for (std::uint32_t t : b.order) {
    if (b.pending[t] == 0) b.roots.push_back(t);
  }
  out.device = plan_device_program(std::move(b), device, options, communication_from);
  return out;
}

std::string check_rank_device_program(const RankDeviceProgram& p) {
  std::string error = check_device_program(p.device);
  if (!error.empty()) return error;
  const DeviceProgram& d = p.device;
  if (d.block.tasks.size() - d.communication_from != p.comm.size()) {
    return fmt::format("{} communication tasks for {} calls",
                       d.block.tasks.size() - d.communication_from, p.comm.size());
  }
  std::int64_t last_op = -1;
  for (const DeviceStep& step : d.steps) {
    if (!step.communication) continue;
    const CommStep& c = p.comm[step.task - d.communication_from];
    if (static_cast<std::int64_t>(c.op) <= last_op || c.op >= p.ops) {
      return fmt::format("{}: call {} issued after call {}", d.block.tasks[step.task].name, c.op,
                         last_op);
    }
    last_op = c.op;
    const auto inside = [&](const CommBuffer& buffer, std::int64_t bytes) {
      if (buffer.slot == CommBuffer::kNoSlot) return true;
      const std::int64_t size = d.block.slots[buffer.slot].bytes;
      return buffer.byte_offset >= 0 && buffer.byte_offset + bytes <= size;
    };
    const std::int64_t element = static_cast<std::int64_t>(ir::dtype_size_bytes(c.dtype));
    std::int64_t send = c.count * element, recv = c.count * element;
    if (c.kind == CommKind::kReduceScatter) {
      send = 0;
      for (std::size_t n : c.counts) send += static_cast<std::int64_t>(n) * element;
      recv = static_cast<std::int64_t>(c.counts[c.member]) * element;
    } else if (c.kind == CommKind::kAllgather) {
      send = static_cast<std::int64_t>(c.counts[c.member]) * element;
      recv = 0;
      for (std::size_t i = 0; i < c.counts.size(); ++i) {
        recv =
            std::max(recv, static_cast<std::int64_t>(c.displacements[i] + c.counts[i]) * element);
      }
    }
    if ((c.kind != CommKind::kRecv && !inside(c.send, send)) ||
        (c.kind != CommKind::kSend && !inside(c.recv, recv))) {
      return fmt::format("{}: a buffer reaches past its slot", d.block.tasks[step.task].name);
    }
  }
  return "";
}

}  // namespace tapestry::gpu
