// One rank's part of a block program, and the checks of a rank schedule (rank_program.h).
#include "rank_program.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/kernel_path.h"
#include "tapestry/runtime/view.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime::detail {

namespace {

template <typename Port>
std::vector<SlotBox> boxes_of(const ir::NamedLists<Port>& ports,
                              const std::vector<PortAddress>& addresses) {
  std::vector<SlotBox> out;
  std::size_t i = 0;
  for (const auto& entry : ports.entries()) {
    out.push_back({addresses[i++].slot, entry.value.view.box()});
  }
  return out;
}

// The program's tasks and slots looked up by node: what a schedule names by id.
struct Lookup {
  std::unordered_map<std::uint32_t, std::uint32_t> task_of;  // application index → task
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> slots_of;  // tensor → slots
  std::vector<std::vector<SlotBox>> reads, writes;                         // per task
  std::vector<std::uint32_t> rank;                                         // per task

  Lookup(const BlockProgram& p, const RankSchedule& schedule) {
    for (std::uint32_t s = 0; s < p.slots.size(); ++s)
      slots_of[p.slots[s].tensor.index()].push_back(s);
    for (std::uint32_t t = 0; t < p.tasks.size(); ++t) {
      const BlockTask& task = p.tasks[t];
      task_of.emplace(task.application.index(), t);
      reads.push_back(boxes_of(task.call.inputs, task.inputs));
      writes.push_back(boxes_of(task.call.outputs, task.outputs));
      auto found = schedule.rank_of.find(task.application);
      if (found == schedule.rank_of.end()) {
        throw Error(fmt::format("rank schedule: application '{}' has no rank", task.name));
      }
      if (found->second >= schedule.ranks()) {
        throw Error(fmt::format("rank schedule: application '{}' is on rank {}, but the job has {}",
                                task.name, found->second, schedule.ranks()));
      }
      rank.push_back(found->second);
    }
  }

  std::uint32_t task(const BlockProgram& p, ir::ApplicationId app, std::size_t message) const {
    auto found = task_of.find(app.index());
    if (found == task_of.end()) {
      throw Error(
          fmt::format("rank schedule: message {} names node #{}, not an application of "
                      "the graph",
                      message, app.index()));
    }
    (void)p;
    return found->second;
  }

  // The slot of `tensor` holding `box`: its row piece (block_program.h's SlotPieces), else its
  // first slot; nullopt for a node that is not a tensor of the program.
  std::optional<std::uint32_t> slot(const BlockProgram& p, ir::TensorId tensor,
                                    const Range& box) const {
    auto found = slots_of.find(tensor.index());
    if (found == slots_of.end()) return std::nullopt;
    for (std::uint32_t s : found->second) {
      if (!box.is_empty() && p.slots[s].range.contains(box)) return s;
    }
    return found->second.front();
  }
};

bool writes_inside(const std::vector<SlotBox>& boxes, std::uint32_t slot, const Range& box) {
  for (const SlotBox& b : boxes) {
    if (b.slot == slot && b.box.contains(box)) return true;
  }
  return false;
}

bool reads_some(const std::vector<SlotBox>& boxes, std::uint32_t slot, const Range& box) {
  for (const SlotBox& b : boxes) {
    if (b.slot == slot && b.box.intersect(box).has_value()) return true;
  }
  return false;
}

// Converts and checks the schedule's messages (rank_program.h); fills `consumers` (whole tasks)
// per message.
std::vector<RankMessageInfo> check_messages(const BlockProgram& p, const RankSchedule& schedule,
                                            const Lookup& lookup,
                                            std::vector<std::vector<std::uint32_t>>& consumers) {
  std::vector<RankMessageInfo> out;
  for (std::size_t m = 0; m < schedule.messages.size(); ++m) {
    const RankMessage& msg = schedule.messages[m];
    const std::uint32_t producer = lookup.task(p, msg.producer, m);
    const std::string& name = p.tasks[producer].name;
    const std::optional<std::uint32_t> slot = lookup.slot(p, msg.tensor, msg.box);
    if (!slot) {
      throw Error(fmt::format("rank schedule: message {} from '{}' names node #{}, not a tensor", m,
                              name, msg.tensor.index()));
    }
    if (msg.from != lookup.rank[producer] || msg.to >= schedule.ranks() || msg.to == msg.from) {
      throw Error(
          fmt::format("rank schedule: message {} of '{}' goes from rank {} to rank {}, "
                      "but '{}' runs on rank {} (and the job has {} ranks)",
                      m, name, msg.from, msg.to, name, lookup.rank[producer], schedule.ranks()));
    }
    if (msg.box.is_empty() || !writes_inside(lookup.writes[producer], *slot, msg.box)) {
      throw Error(fmt::format("rank schedule: message {} carries {}, which '{}' does not write", m,
                              msg.box, name));
    }
    std::vector<std::uint32_t> readers;
    for (ir::ApplicationId app : msg.consumers) {
      const std::uint32_t c = lookup.task(p, app, m);
      if (lookup.rank[c] != msg.to || !reads_some(lookup.reads[c], *slot, msg.box)) {
        throw Error(
            fmt::format("rank schedule: message {} from '{}' lists '{}' as a consumer, "
                        "but it runs on rank {} (the message goes to {}) or does not "
                        "read {}",
                        m, name, p.tasks[c].name, lookup.rank[c], msg.to, msg.box));
      }
      readers.push_back(c);
    }
    consumers.push_back(std::move(readers));
    out.push_back({.slot = *slot,
                   .box = msg.box,
                   .from = msg.from,
                   .to = msg.to,
                   .producer = producer,
                   .bytes = msg.box.size() *
                            static_cast<std::int64_t>(ir::dtype_size_bytes(p.slots[*slot].dtype))});
  }
  return out;
}

// Every dependency across ranks must be carried by a message (rank_program.h).
void check_coverage(const BlockProgram& p, const Lookup& lookup,
                    const std::vector<RankMessageInfo>& messages,
                    const std::vector<std::vector<std::uint32_t>>& consumers) {
  std::vector<std::vector<std::uint32_t>> by_producer(p.tasks.size());
  for (std::uint32_t m = 0; m < messages.size(); ++m)
    by_producer[messages[m].producer].push_back(m);
  for (std::uint32_t d = 0; d < p.tasks.size(); ++d) {
    for (std::uint32_t k = p.dependents_first[d]; k < p.dependents_first[d + 1]; ++k) {
      const std::uint32_t t = p.dependents[k];
      if (lookup.rank[t] == lookup.rank[d]) continue;
      for (const SlotBox& w : lookup.writes[d]) {
        for (const SlotBox& r : lookup.reads[t]) {
          if (w.slot != r.slot) continue;
          const std::optional<Range> needed = w.box.intersect(r.box);
          if (!needed) continue;
          bool carried = false;
          for (std::uint32_t m : by_producer[d]) {
            const RankMessageInfo& msg = messages[m];
            carried |= msg.slot == w.slot && msg.to == lookup.rank[t] &&
                       msg.box.contains(*needed) &&
                       std::find(consumers[m].begin(), consumers[m].end(), t) != consumers[m].end();
          }
          if (!carried) {
            throw Error(fmt::format(
                "rank schedule: '{}' on rank {} reads {} that '{}' writes on "
                "rank {}, but no message carries it",
                p.tasks[t].name, lookup.rank[t], *needed, p.tasks[d].name, lookup.rank[d]));
          }
        }
      }
    }
  }
}

// Gathers: every box of a graph output written on a rank other than 0 goes to rank 0.
void add_gathers(const BlockProgram& p, const Lookup& lookup,
                 std::vector<RankMessageInfo>& messages,
                 std::vector<std::vector<std::uint32_t>>& consumers) {
  for (std::uint32_t t = 0; t < p.tasks.size(); ++t) {
    if (lookup.rank[t] == 0) continue;
    for (const SlotBox& w : lookup.writes[t]) {
      if (!p.slots[w.slot].output || w.box.is_empty()) continue;
      messages.push_back({.slot = w.slot,
                          .box = w.box,
                          .from = lookup.rank[t],
                          .to = 0,
                          .producer = t,
                          .gather = true,
                          .bytes = w.box.size() * static_cast<std::int64_t>(ir::dtype_size_bytes(
                                                      p.slots[w.slot].dtype))});
      consumers.emplace_back();
    }
  }
}

// The reduce a collective replaces, on its root (a reduce-scatter's, on every member): a no-op that
// reads nothing (the sum arrives from MPI before it runs) and writes the result; its kernel path is
// `mpi`.
void make_no_op(BlockTask& task) {
  task.kernel = [](const KernelCall&) { note_kernel_path(KernelPath::kMpi); };
  task.call.inputs = {};
  task.inputs.clear();
  task.touches = task.writes;
  task.flops = 0;
  task.bytes_read = 0;
}

// Per slot, the rows (first dim) of every box this rank touches, every other dim whole
// (rank_program.h); outputs whole on rank 0 when `outputs_whole` (it gathers them during the
// run). Slots it never touches get an empty range at the tensor's start.
void shrink_slots(RankProgram& rp, bool outputs_whole) {
  BlockProgram& l = rp.local;
  std::vector<std::vector<Range>> boxes(l.slots.size());
  for (const BlockTask& task : l.tasks) {
    for (const SlotBox& b : boxes_of(task.call.inputs, task.inputs)) boxes[b.slot].push_back(b.box);
    for (const SlotBox& b : boxes_of(task.call.outputs, task.outputs))
      boxes[b.slot].push_back(b.box);
  }
  const auto received = [&](const RankReceive& r) {
    const RankMessageInfo& msg = rp.messages[r.message];
    boxes[msg.slot].push_back(msg.box);
  };
  for (const RankReceive& r : rp.receives) received(r);
  for (const RankCollectivePart& part : rp.parts) {
    for (const RankReceive& r : part.arrivals) {
      if (rp.messages[r.message].slot == rp.collectives[part.collective].result_slot) received(r);
    }
  }
  for (std::uint32_t s = 0; s < l.slots.size(); ++s) {
    BufferSlot& slot = l.slots[s];
    std::vector<Range> nonempty;
    for (const Range& b : boxes[s]) {
      if (!b.is_empty()) nonempty.push_back(b);
    }
    if ((slot.output && outputs_whole) || slot.range.rank() == 0) continue;
    if (nonempty.empty()) {
      slot.range = Range(slot.range.start(), slot.range.start());
    } else {
      const Range rows = Range::bounding(nonempty);
      slot.range = slot.range.with_dim(0, rows.start()[0], rows.end()[0]);
    }
    slot.bytes = slot.range.size() * static_cast<std::int64_t>(ir::dtype_size_bytes(slot.dtype));
  }
}

bool gathered_here(const RankProgram& rp, std::uint32_t m) {
  return std::find(rp.gathered.begin(), rp.gathered.end(), m) != rp.gathered.end();
}

// SlotPieces::kRows (block_program.h) on this rank's slots, after shrink_slots: the boxes of its
// tasks, of the messages it sends and receives, and of each collective it takes part in (all of
// a collective's boxes in one piece, clipped to the rank's rows) decide the pieces. The messages'
// and collectives' slots then name the pieces holding their boxes here, and the uses are counted
// again (this rank's tasks, plus one per message to it).
void split_local_rows(RankProgram& rp) {
  BlockProgram& l = rp.local;
  const std::size_t n = l.slots.size();
  std::vector<std::vector<Range>> extra(n);
  const auto add = [&](std::uint32_t s, const Range& box) {
    const Range& range = l.slots[s].range;
    if (box.is_empty() || range.rank() == 0) return;
    const std::int64_t first = std::max(box.start()[0], range.start()[0]);
    const std::int64_t end = std::min(box.end()[0], range.end()[0]);
    if (first < end) extra[s].push_back(range.with_dim(0, first, end));
  };
  std::vector<char> combined(rp.messages.size(), 0);
  for (const RankCombine& c : rp.combines) {
    for (const RankCombineStep& step : c.steps) {
      if (step.message == UINT32_MAX) {
        add(step.slot, step.box);
      } else {
        combined[step.message] = 1;
      }
    }
    add(c.result_slot, c.result_box);
  }
  for (std::uint32_t m = 0; m < rp.messages.size(); ++m) {
    const RankMessageInfo& msg = rp.messages[m];
    if (msg.from == rp.rank || (msg.to == rp.rank && !gathered_here(rp, m) && combined[m] == 0)) {
      add(msg.slot, msg.box);
    }
  }
  for (const RankCollectivePart& part : rp.parts) {
    const RankCollective& c = rp.collectives[part.collective];
    add(c.source_slot, Range::bounding(c.boxes));
    if (c.kind == CollectiveKind::kReduceScatter) {
      add(c.result_slot, Range::bounding(c.result_boxes));
    } else if (c.kind != CollectiveKind::kAllgather) {
      add(c.result_slot, c.result_box);
    }
  }
  split_program_rows(l, extra);
  std::vector<std::vector<std::uint32_t>> pieces(n);
  std::unordered_map<std::uint32_t, std::uint32_t> first_of;  // tensor index → its first slot
  for (std::uint32_t s = 0; s < n; ++s) {
    pieces[s].push_back(s);
    first_of.emplace(l.slots[s].tensor.index(), s);
  }
  for (std::uint32_t s = n; s < l.slots.size(); ++s) {
    pieces[first_of.at(l.slots[s].tensor.index())].push_back(s);
  }
  const auto piece = [&](std::uint32_t s, const Range& box) {
    for (std::uint32_t p : pieces[s]) {
      if (!box.is_empty() && l.slots[p].range.contains(box)) return p;
    }
    return s;
  };
  for (RankMessageInfo& msg : rp.messages) {
    if (msg.from == rp.rank || msg.to == rp.rank) msg.slot = piece(msg.slot, msg.box);
  }
  for (RankCombine& c : rp.combines) {
    for (RankCombineStep& step : c.steps) {
      if (step.message == UINT32_MAX) step.slot = piece(step.slot, step.box);
    }
    c.result_slot = piece(c.result_slot, c.result_box);
  }
  for (const RankCollectivePart& part : rp.parts) {
    RankCollective& c = rp.collectives[part.collective];
    c.source_slot = piece(c.source_slot, c.boxes[part.member]);
    if (c.kind == CollectiveKind::kAllgather) {  // the result is the source (rank_collectives.h)
      c.result_slot = c.source_slot;
    } else {
      c.result_slot = piece(c.result_slot, c.kind == CollectiveKind::kReduceScatter
                                               ? c.result_boxes[part.member]
                                               : c.result_box);
    }
  }
  for (BufferSlot& slot : l.slots) slot.uses = 0;
  for (const BlockTask& task : l.tasks) {
    for (std::uint32_t s : task.touches) ++l.slots[s].uses;
  }
  for (std::uint32_t m = 0; m < rp.messages.size(); ++m) {
    if (rp.messages[m].to == rp.rank && !gathered_here(rp, m) && combined[m] == 0) {
      ++l.slots[rp.messages[m].slot].uses;
    }
  }
  for (const RankCombine& c : rp.combines) {  // a local block: read by its step
    for (const RankCombineStep& step : c.steps) {
      if (step.message == UINT32_MAX) ++l.slots[step.slot].uses;
    }
  }
}

// Whether `box` spans every dim after the first of `range` whole (whole rows of it).
bool whole_rows_of(const Range& range, const Range& box) {
  for (std::size_t d = 1; d < range.rank(); ++d) {
    if (box.start()[d] != range.start()[d] || box.end()[d] != range.end()[d]) return false;
  }
  return true;
}

// Combines (rank_program.h), before the slots shrink to this rank's rows: each local `reduce` of
// a dtype the fold steps compute (float32, float64, int32, int64) whose one input box B of an
// intermediate slot is not whole rows, fed by at least one received message, where every
// received box that meets B lies in B, spans B's other dims whole (rows of B) and feeds that
// reduce alone, every box a local task writes that meets B does so in rows of B too, and
// together they tile B's rows. The reduce becomes a no-op waiting for its combine (one count,
// for the messages' it waited for); its messages leave `receives`. Anything else leaves the
// reduce as it is.
void add_combines(RankProgram& rp) {
  BlockProgram& l = rp.local;
  std::vector<char> combined(rp.receives.size(), 0);
  for (std::uint32_t r = 0; r < l.tasks.size(); ++r) {
    BlockTask& reduce = l.tasks[r];
    if (reduce.call.kernel != "reduce" || reduce.inputs.size() != 1 || reduce.outputs.size() != 1) {
      continue;
    }
    const std::uint32_t s = reduce.inputs[0].slot;
    const Range box = reduce.call.inputs.entries().front().value.view.box();
    const BufferSlot& slot = l.slots[s];
    const DType dtype = slot.dtype;
    if (slot.input || slot.output || slot.kept || box.is_empty() || box.rank() < 2 ||
        whole_rows_of(slot.range, box) || l.slots[reduce.outputs[0].slot].dtype != dtype ||
        (dtype != DType::kFloat32 && dtype != DType::kFloat64 && dtype != DType::kInt32 &&
         dtype != DType::kInt64)) {
      continue;
    }
    const auto rows_of_box = [&](const Range& part) {
      return part.with_dim(0, box.start()[0], box.end()[0]) == box;
    };
    RankCombine combine{.reduce = r,
                        .result_slot = reduce.outputs[0].slot,
                        .result_box = reduce.call.outputs.entries().front().value.view.box(),
                        .monoid = reduce.call.monoid("op", ir::Monoid::kSum)};
    std::vector<std::uint32_t> received;  // positions in rp.receives
    bool fits = true;
    for (std::uint32_t i = 0; i < rp.receives.size() && fits; ++i) {
      const RankMessageInfo& msg = rp.messages[rp.receives[i].message];
      if (msg.slot != s || !msg.box.overlaps(box)) continue;
      fits = combined[i] == 0 && box.contains(msg.box) && rows_of_box(msg.box) &&
             rp.receives[i].consumers == std::vector<std::uint32_t>{r};
      received.push_back(i);
      combine.steps.push_back({.box = msg.box, .message = rp.receives[i].message});
    }
    for (std::uint32_t t = 0; t < l.tasks.size() && fits; ++t) {
      for (const SlotBox& w : boxes_of(l.tasks[t].call.outputs, l.tasks[t].outputs)) {
        if (w.slot != s) continue;
        const std::optional<Range> part = w.box.intersect(box);
        if (!part || part->is_empty()) continue;
        fits = fits && rows_of_box(*part);
        combine.steps.push_back({.box = *part, .slot = s, .writer = t});
      }
    }
    if (!fits || received.empty()) continue;
    std::sort(combine.steps.begin(), combine.steps.end(),
              [](const RankCombineStep& a, const RankCombineStep& b) {
                return a.box.start()[0] < b.box.start()[0];
              });
    std::int64_t row = box.start()[0];  // the steps tile B's rows, in order
    for (const RankCombineStep& step : combine.steps) {
      fits = fits && step.box.start()[0] == row;
      row = step.box.end()[0];
    }
    if (!fits || row != box.end()[0]) continue;
    for (std::uint32_t i : received) combined[i] = 1;
    l.pending[r] -= static_cast<std::uint32_t>(received.size()) - 1;  // one count: the combine
    make_no_op(reduce);
    rp.combines.push_back(std::move(combine));
  }
  std::vector<RankReceive> kept;
  for (std::uint32_t i = 0; i < rp.receives.size(); ++i) {
    if (combined[i] == 0) kept.push_back(std::move(rp.receives[i]));
  }
  rp.receives = std::move(kept);
}

// Points every port of a local task at its slot's (smaller) range: strides and byte offsets.
template <typename Port>
void readdress(ir::NamedLists<Port>& ports, std::vector<PortAddress>& addresses,
               const std::vector<BufferSlot>& slots) {
  std::size_t i = 0;
  ports.for_each_entry([&](const std::string&, std::uint32_t, Port& port) {
    PortAddress& a = addresses[i++];
    const BufferSlot& slot = slots[a.slot];
    const Point strides = dense_strides(slot.range.shape());
    const Range& box = port.view.box();
    a.byte_offset = box.is_empty()
                        ? 0
                        : element_offset(slot.range, strides, box.start()) *
                              static_cast<std::int64_t>(ir::dtype_size_bytes(slot.dtype));
    port.view = decltype(port.view)(port.view.dtype(), nullptr, box, strides);
  });
}

// The local BlockProgram: this rank's tasks, their local edges, pending counts including the
// messages they wait for, and slot uses including unpacks.
void build_local(const ir::Graph& graph, const BlockProgram& p, const Lookup& lookup,
                 RankProgram& rp, const std::vector<std::vector<std::uint32_t>>& consumers,
                 SlotPieces pieces) {
  std::vector<std::uint32_t> local_of(p.tasks.size(), UINT32_MAX);
  std::vector<int> replaced_by(rp.messages.size(), -1);  // message → collective
  std::vector<int> part_of(rp.collectives.size(), -1);   // collective → this rank's part
  std::vector<char> no_op(p.tasks.size(), 0);
  for (std::uint32_t c = 0; c < rp.collectives.size(); ++c) {
    const RankCollective& coll = rp.collectives[c];
    for (std::uint32_t m : coll.replaced) replaced_by[m] = static_cast<int>(c);
    if (coll.reduce_task != UINT32_MAX && coll.root == rp.rank) no_op[coll.reduce_task] = 1;
    for (std::size_t i = 0; i < coll.reduce_tasks.size(); ++i) {
      if (coll.members[i] == rp.rank) no_op[coll.reduce_tasks[i]] = 1;
    }
  }
  BlockProgram& l = rp.local;
  l.slots = p.slots;
  for (BufferSlot& slot : l.slots) {
    slot.uses = 0;
    if (rp.rank != 0 && slot.output) {  // gathered to rank 0, and kept here as a device keeps it
      slot.output = false;
      slot.kept = true;
    }
  }
  rp.needed_inputs.assign(p.slots.size(), 0);
  for (std::uint32_t t = 0; t < p.tasks.size(); ++t) {
    if (lookup.rank[t] != rp.rank) continue;
    local_of[t] = static_cast<std::uint32_t>(l.tasks.size());
    rp.whole_task.push_back(t);
    l.tasks.push_back(p.tasks[t]);
    if (no_op[t] != 0) make_no_op(l.tasks.back());
    for (std::uint32_t s : l.tasks.back().touches) ++l.slots[s].uses;
    for (const PortAddress& in : l.tasks.back().inputs) {
      if (p.slots[in.slot].input) rp.needed_inputs[in.slot] = 1;
    }
    l.flops += l.tasks.back().flops;
  }
  const std::size_t n = l.tasks.size();
  l.pending.assign(n, 0);
  std::vector<std::vector<std::uint32_t>> dependents(n);
  for (std::uint32_t lt = 0; lt < n; ++lt) {
    const std::uint32_t d = rp.whole_task[lt];
    for (std::uint32_t k = p.dependents_first[d]; k < p.dependents_first[d + 1]; ++k) {
      const std::uint32_t t = local_of[p.dependents[k]];
      if (t == UINT32_MAX) continue;
      dependents[lt].push_back(t);
      ++l.pending[t];
    }
  }
  rp.sends.assign(n, {});
  rp.contributes.assign(n, {});
  for (std::uint32_t c = 0; c < rp.collectives.size(); ++c) {
    const RankCollective& coll = rp.collectives[c];
    const auto at = std::find(coll.members.begin(), coll.members.end(), rp.rank);
    if (at == coll.members.end()) continue;
    const auto member = static_cast<std::uint32_t>(at - coll.members.begin());
    part_of[c] = static_cast<int>(rp.parts.size());
    const std::uint32_t producer = local_of[coll.producers[member]];
    rp.contributes[producer].push_back(static_cast<std::uint32_t>(rp.parts.size()));
    rp.parts.push_back({.collective = c, .member = member, .producer = producer});
  }
  for (std::uint32_t m = 0; m < rp.messages.size(); ++m) {
    const RankMessageInfo& msg = rp.messages[m];
    if (msg.from == rp.rank) {
      if (replaced_by[m] < 0) rp.sends[local_of[msg.producer]].push_back(m);
      rp.bytes_sent += msg.bytes;
    }
    if (msg.to != rp.rank) continue;
    if (msg.gather && pieces == SlotPieces::kRows) {  // after this rank's part of the step
      rp.gathered.push_back(m);
      rp.bytes_received += msg.bytes;
      continue;
    }
    RankReceive receive{.message = m};
    for (std::uint32_t c : consumers[m]) {
      receive.consumers.push_back(local_of[c]);
      ++l.pending[local_of[c]];
    }
    ++l.slots[msg.slot].uses;
    rp.bytes_received += msg.bytes;
    if (replaced_by[m] >= 0) {
      TAPESTRY_ASSERT(part_of[static_cast<std::size_t>(replaced_by[m])] >= 0,
                      "a collective replaces a message to a rank outside it");
      rp.parts[static_cast<std::size_t>(part_of[static_cast<std::size_t>(replaced_by[m])])]
          .arrivals.push_back(std::move(receive));
    } else {
      rp.receives.push_back(std::move(receive));
    }
  }
  if (pieces == SlotPieces::kRows) add_combines(rp);
  l.dependents_first.assign(n + 1, 0);
  for (std::uint32_t t = 0; t < n; ++t) {
    l.dependents_first[t + 1] =
        l.dependents_first[t] + static_cast<std::uint32_t>(dependents[t].size());
    l.dependents.insert(l.dependents.end(), dependents[t].begin(), dependents[t].end());
  }
  for (std::uint32_t t : p.order) {
    if (local_of[t] != UINT32_MAX) l.order.push_back(local_of[t]);
  }
  for (std::uint32_t t : l.order) {
    if (l.pending[t] == 0) l.roots.push_back(t);
  }
  shrink_slots(rp, pieces == SlotPieces::kWhole);
  for (BlockTask& task : l.tasks) {
    readdress(task.call.inputs, task.inputs, l.slots);
    readdress(task.call.outputs, task.outputs, l.slots);
  }
  if (pieces == SlotPieces::kRows) split_local_rows(rp);
  l.memory = estimate_sequential_memory(l, graph);
}

}  // namespace

RankProgram compile_rank_program(const ir::Graph& graph, const BlockProgram& whole,
                                 const RankSchedule& schedule, std::uint32_t rank,
                                 CollectiveUse collectives, SlotPieces pieces) {
  TAPESTRY_ASSERT(rank < schedule.ranks(), "a rank outside the schedule");
  const Lookup lookup(whole, schedule);
  std::vector<std::vector<std::uint32_t>> consumers;
  RankProgram rp{.rank = rank, .ranks = schedule.ranks()};
  rp.messages = check_messages(whole, schedule, lookup, consumers);
  check_coverage(whole, lookup, rp.messages, consumers);
  add_gathers(whole, lookup, rp.messages, consumers);
  std::vector<std::uint32_t> position(whole.tasks.size(), 0);
  for (std::uint32_t i = 0; i < whole.order.size(); ++i) position[whole.order[i]] = i;
  for (std::uint32_t m = 0; m < rp.messages.size(); ++m) {
    for (std::uint32_t c : consumers[m]) {
      rp.messages[m].taken_at = std::min(rp.messages[m].taken_at, position[c]);
    }
  }
  rp.collectives = find_collectives(graph, whole, lookup.rank, lookup.reads, lookup.writes,
                                    rp.messages, consumers, collectives);
  build_local(graph, whole, lookup, rp, consumers, pieces);
  return rp;
}

}  // namespace tapestry::runtime::detail
