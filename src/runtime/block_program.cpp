// Compiling an application graph for the block executor (block_program.h).
#include "block_program.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "run_support.h"
#include "tapestry/metakernel/kernel_facts.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/runtime/application_schedule.h"
#include "tapestry/runtime/run_metrics.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime::detail {

namespace {

using SlotOf = std::unordered_map<std::uint32_t, std::uint32_t>;  // tensor node index → slot

std::vector<BufferSlot> make_slots(const ir::Graph& graph, SlotOf& slot_of) {
  std::vector<BufferSlot> slots;
  for (ir::TensorId tensor : graph.tensors()) {
    slot_of.emplace(tensor.index(), static_cast<std::uint32_t>(slots.size()));
    BufferSlot slot{.tensor = tensor,
                    .dtype = tensor_dtype(graph, tensor),
                    .range = graph.tensor(tensor).range(),
                    .input = graph.producers(tensor).empty()};
    slot.bytes = zspace::checked_mul(slot.range.size(),
                                     static_cast<std::int64_t>(ir::dtype_size_bytes(slot.dtype)));
    slots.push_back(std::move(slot));
  }
  for (ir::TensorId tensor : graph_outputs(graph)) slots[slot_of.at(tensor.index())].output = true;
  return slots;
}

// Adds the ports of `selections` to `ports` with null origins, recording each one's address.
// Each selection must equal IPF(index) and lie inside its tensor.
template <typename Port>
void add_ports(const ir::Graph& graph, const Range& index, const ir::SelectionMap& selections,
               const ir::IpfMap& ipfs, const std::vector<BufferSlot>& slots, const SlotOf& slot_of,
               ir::NamedLists<Port>& ports, std::vector<PortAddress>& addresses) {
  for (const auto& entry : selections.entries()) {
    const zspace::IndexProjection& ipf = checked_ipf(entry, ipfs, index);
    const Range& expected = entry.value.range;
    auto found = slot_of.find(entry.value.tensor.index());
    if (found == slot_of.end()) {
      throw Error(
          fmt::format("selection {}[{}] names no tensor of the graph", entry.name, entry.position));
    }
    const BufferSlot& slot = slots[found->second];
    check_inside(graph, entry, expected, slot.tensor, slot.range);
    const Point strides = dense_strides(slot.range.shape());
    const std::int64_t offset =
        expected.is_empty() ? 0
                            : element_offset(slot.range, strides, expected.start()) *
                                  static_cast<std::int64_t>(ir::dtype_size_bytes(slot.dtype));
    ports.append(entry.name, Port{{slot.dtype, nullptr, expected, strides}, &ipf});
    addresses.push_back({found->second, offset});
  }
}

template <typename Port>
std::int64_t port_bytes(const ir::NamedLists<Port>& ports) {
  std::int64_t bytes = 0;
  for (const auto& e : ports.entries()) {
    bytes += e.value.view.box().size() *
             static_cast<std::int64_t>(ir::dtype_size_bytes(e.value.view.dtype()));
  }
  return bytes;
}

void unique_sorted(std::vector<std::uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Recomputes a task's writes and touches from its port addresses (make_task's rule).
void derive_writes_and_touches(BlockTask& task, const std::vector<BufferSlot>& slots) {
  task.writes.clear();
  for (const PortAddress& out : task.outputs) task.writes.push_back(out.slot);
  unique_sorted(task.writes);
  task.touches = task.writes;
  for (const PortAddress& in : task.inputs) {
    if (!slots[in.slot].input) task.touches.push_back(in.slot);
  }
  unique_sorted(task.touches);
}

BlockTask make_task(const ir::Graph& graph, ir::ApplicationId app_id,
                    const ExecutableKernels& kernels, const std::vector<BufferSlot>& slots,
                    const SlotOf& slot_of) {
  const ir::ApplicationView app = graph.application(app_id);
  if (!app.has_ipf_index()) {
    throw Error(fmt::format("application '{}' has no IPFIndex tag", graph.display_name(app_id)));
  }
  if (!graph.contains(app.operation()) || !graph.as_operation(app.operation())) {
    throw Error(fmt::format("application '{}' names no operation of the graph",
                            graph.display_name(app_id)));
  }
  const ir::OperationId op_id = app.operation();
  const ir::OperationView op = graph.operation(op_id);
  BlockTask task{.application = app_id,
                 .operation = op_id,
                 .name = graph.display_name(app_id),
                 .kernel = kernels.lookup(op.kernel(), graph.display_name(op_id)),
                 .call = {.kernel = op.kernel(),
                          .operation = graph.node(op_id).display_name(),
                          .index = *app.ipf_index(),
                          .params = &op.params(),
                          .index_names = op.body().index_names,
                          .reductions = op.body().reductions}};
  const ir::IpfSignature& signature = *op.ipf_signature();
  try {
    add_ports(graph, task.call.index, app.inputs(), signature.inputs, slots, slot_of,
              task.call.inputs, task.inputs);
    add_ports(graph, task.call.index, app.outputs(), signature.outputs, slots, slot_of,
              task.call.outputs, task.outputs);
  } catch (const Error& e) {
    throw e.with_context(fmt::format("application '{}'", graph.display_name(app_id)));
  }
  derive_writes_and_touches(task, slots);
  task.flops = estimate_flops(task.call);
  task.bytes_read = port_bytes(task.call.inputs);
  task.bytes_written = port_bytes(task.call.outputs);
  return task;
}

// The boxes of a task's ports, parallel to its input and output addresses.
struct TaskBoxes {
  std::vector<Range> inputs, outputs;
};

// SlotPieces::kRows (block_program.h): splits every intermediate slot whose boxes fall into
// disjoint row intervals into one slot per interval. The first piece keeps the slot's index, the
// others are appended; each port is pointed at the piece holding its box (a byte offset from the
// piece's first row), and the tasks' writes and touches are derived again. `extra` (per slot, or
// empty) adds boxes that must each lie in one piece too. Uses are not counted.
void split_row_pieces(std::vector<BufferSlot>& slots, std::vector<BlockTask>& tasks,
                      const std::vector<TaskBoxes>& boxes,
                      const std::vector<std::vector<Range>>& extra = {}) {
  using Rows = std::pair<std::int64_t, std::int64_t>;  // [first, end)
  const std::size_t n = slots.size();
  const auto eligible = [&](std::uint32_t s) {
    return !slots[s].input && !slots[s].output && slots[s].range.rank() > 0;
  };
  std::vector<std::vector<Rows>> rows(n);
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const auto add = [&](const std::vector<PortAddress>& addresses,
                         const std::vector<Range>& ranges) {
      for (std::size_t i = 0; i < addresses.size(); ++i) {
        if (eligible(addresses[i].slot) && !ranges[i].is_empty()) {
          rows[addresses[i].slot].emplace_back(ranges[i].start()[0], ranges[i].end()[0]);
        }
      }
    };
    add(tasks[t].inputs, boxes[t].inputs);
    add(tasks[t].outputs, boxes[t].outputs);
  }
  for (std::uint32_t s = 0; s < extra.size(); ++s) {
    for (const Range& box : extra[s]) {
      if (eligible(s) && !box.is_empty()) rows[s].emplace_back(box.start()[0], box.end()[0]);
    }
  }
  std::vector<std::vector<Rows>> pieces(n);
  std::vector<std::uint32_t> appended(n, 0);  // the slot of each slot's second piece
  const std::vector<BufferSlot> whole = slots;
  for (std::uint32_t s = 0; s < n; ++s) {
    std::vector<Rows>& r = rows[s];
    if (r.size() < 2) continue;
    std::sort(r.begin(), r.end());
    std::vector<Rows> merged{r.front()};
    for (const Rows& next : r) {
      if (next.first < merged.back().second) {
        merged.back().second = std::max(merged.back().second, next.second);
      } else {
        merged.push_back(next);
      }
    }
    if (merged.size() < 2) continue;
    appended[s] = static_cast<std::uint32_t>(slots.size());
    for (std::size_t k = 0; k < merged.size(); ++k) {
      BufferSlot piece = whole[s];
      piece.piece = true;
      piece.range = whole[s].range.with_dim(0, merged[k].first, merged[k].second);
      piece.bytes =
          piece.range.size() * static_cast<std::int64_t>(ir::dtype_size_bytes(piece.dtype));
      if (k == 0) {
        slots[s] = piece;
      } else {
        slots.push_back(piece);
      }
    }
    pieces[s] = std::move(merged);
  }
  if (slots.size() == n) return;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const auto readdress = [&](std::vector<PortAddress>& addresses,
                               const std::vector<Range>& ranges) {
      for (std::size_t i = 0; i < addresses.size(); ++i) {
        PortAddress& a = addresses[i];
        const std::uint32_t s = a.slot;
        if (pieces[s].empty()) continue;
        // The piece whose rows hold the box (an empty box: the first, at offset 0).
        std::size_t k = 0;
        if (!ranges[i].is_empty()) {
          const std::int64_t row = ranges[i].start()[0];
          k = static_cast<std::size_t>(
              std::upper_bound(pieces[s].begin(), pieces[s].end(), Rows{row, INT64_MAX}) -
              pieces[s].begin() - 1);
        }
        a.slot = k == 0 ? s : appended[s] + static_cast<std::uint32_t>(k - 1);
        const Range& range = whole[s].range;
        const std::int64_t row_bytes =
            range.shape()[0] == 0 ? 0 : whole[s].bytes / range.shape()[0];
        a.byte_offset = ranges[i].is_empty()
                            ? 0
                            : a.byte_offset - (pieces[s][k].first - range.start()[0]) * row_bytes;
      }
    };
    readdress(tasks[t].inputs, boxes[t].inputs);
    readdress(tasks[t].outputs, boxes[t].outputs);
    derive_writes_and_touches(tasks[t], slots);
  }
}

template <typename Port>
std::vector<Range> boxes_of(const ir::NamedLists<Port>& ports) {
  std::vector<Range> out;
  for (const auto& e : ports.entries()) out.push_back(e.value.view.box());
  return out;
}

// a + b, saturating at INT64_MAX: a plan of huge tensors must still report that it needs "more
// than any machine", not wrap around.
std::int64_t add_saturating(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::int64_t>::max() : sum;
}

// Simulates the sequential schedule: buffers allocated at their first write, freed after their
// last use. Returns the estimated peak and a description of what is live at that point. Reads
// only the slots (bytes, input/output, uses), the tasks' writes and touches, and the order.
MemoryEstimate estimate_memory(const std::vector<BufferSlot>& slots,
                               const std::vector<BlockTask>& tasks,
                               const std::vector<std::uint32_t>& order, const ir::Graph& graph) {
  std::vector<std::uint32_t> remaining(slots.size());
  std::vector<char> live(slots.size(), 0);
  std::int64_t bytes = 0;
  for (std::size_t s = 0; s < slots.size(); ++s) {
    remaining[s] = slots[s].uses;
    if (slots[s].input) {
      live[s] = 1;
      bytes = add_saturating(bytes, slots[s].bytes);
    }
  }
  MemoryEstimate estimate{.peak_bytes = bytes};
  std::vector<char> at_peak = live;
  std::uint32_t peak_task = UINT32_MAX;
  for (std::uint32_t t : order) {
    for (std::uint32_t s : tasks[t].writes) {
      if (live[s] == 0) bytes = add_saturating(bytes, slots[s].bytes);
      live[s] = 1;
    }
    if (bytes > estimate.peak_bytes) {
      estimate.peak_bytes = bytes;
      peak_task = t;
      at_peak = live;  // O(slots) per new peak: peaks are rare after the first few tasks
    }
    for (std::uint32_t s : tasks[t].touches) {
      if (--remaining[s] == 0 && !slots[s].output && !slots[s].kept && live[s] != 0) {
        bytes -= slots[s].bytes;  // exact unless saturated, and then the peak is saturated too
        live[s] = 0;
      }
    }
  }
  std::vector<std::uint32_t> biggest;
  for (std::uint32_t s = 0; s < slots.size(); ++s) {
    if (at_peak[s] != 0) biggest.push_back(s);
  }
  std::sort(biggest.begin(), biggest.end(),
            [&](std::uint32_t a, std::uint32_t b) { return slots[a].bytes > slots[b].bytes; });
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < biggest.size() && i < 4; ++i) {
    const BufferSlot& slot = slots[biggest[i]];
    parts.push_back(fmt::format(
        "{}{} {}", tensor_name(graph, slot.tensor),
        slot.piece ? fmt::format(" rows {}:{}", slot.range.start()[0], slot.range.end()[0]) : "",
        format_bytes(slot.bytes)));
  }
  if (biggest.size() > 4) parts.push_back(fmt::format("{} more", biggest.size() - 4));
  estimate.peak_description =
      peak_task == UINT32_MAX
          ? fmt::format("before any application: {}", fmt::join(parts, ", "))
          : fmt::format("after {} starts: {}",
                        describe_application(graph, tasks[peak_task].application),
                        fmt::join(parts, ", "));
  return estimate;
}

void build_dag(BlockProgram& p, const ApplicationSchedule& schedule) {
  const std::size_t n = p.tasks.size();
  p.pending.assign(n, 0);
  p.dependents_first.assign(n + 1, 0);
  for (std::size_t t = 0; t < n; ++t) {
    p.pending[t] = static_cast<std::uint32_t>(schedule.depends_on[t].size());
    for (std::uint32_t d : schedule.depends_on[t]) ++p.dependents_first[d + 1];
  }
  for (std::size_t t = 0; t < n; ++t) p.dependents_first[t + 1] += p.dependents_first[t];
  p.dependents.resize(p.dependents_first.back());
  std::vector<std::uint32_t> fill(p.dependents_first.begin(), p.dependents_first.end() - 1);
  for (std::uint32_t t = 0; t < n; ++t) {
    for (std::uint32_t d : schedule.depends_on[t]) p.dependents[fill[d]++] = t;
  }
  p.order = schedule.order;
  for (std::uint32_t t : p.order) {
    if (p.pending[t] == 0) p.roots.push_back(t);
  }
}

}  // namespace

void split_program_rows(BlockProgram& p, const std::vector<std::vector<Range>>& extra) {
  std::vector<TaskBoxes> boxes;
  boxes.reserve(p.tasks.size());
  for (const BlockTask& task : p.tasks) {
    boxes.push_back({boxes_of(task.call.inputs), boxes_of(task.call.outputs)});
  }
  split_row_pieces(p.slots, p.tasks, boxes, extra);
}

MemoryEstimate estimate_sequential_memory(const BlockProgram& p, const ir::Graph& graph) {
  return estimate_memory(p.slots, p.tasks, p.order, graph);
}

BlockProgram compile_block_program(const ir::Graph& graph, const ExecutableKernels& kernels,
                                   SlotPieces pieces) {
  check_tensor_dtypes(graph);
  check_operations_have_applications(graph);
  const ApplicationSchedule schedule = schedule_applications(graph);
  BlockProgram p;
  SlotOf slot_of;
  p.slots = make_slots(graph, slot_of);
  p.tasks.reserve(schedule.applications.size());
  std::unordered_map<std::uint32_t, const void*> prepared_for;  // operation index → data
  for (ir::ApplicationId app : schedule.applications) {
    p.tasks.push_back(make_task(graph, app, kernels, p.slots, slot_of));
    BlockTask& task = p.tasks.back();
    if (PrepareFn prepare = kernels.find_prepare(task.call.kernel)) {
      auto [it, fresh] = prepared_for.emplace(task.operation.index(), nullptr);
      if (fresh) {
        try {
          p.prepared.push_back(prepare(task.call));
        } catch (const Error& e) {
          throw e.with_context(fmt::format("operation '{}'", task.call.operation));
        }
        it->second = p.prepared.back().get();
      }
      task.call.prepared = it->second;
    }
    p.flops += p.tasks.back().flops;
  }
  if (pieces == SlotPieces::kRows) split_program_rows(p, {});
  for (const BlockTask& task : p.tasks) {
    for (std::uint32_t s : task.touches) ++p.slots[s].uses;
  }
  build_dag(p, schedule);
  p.memory = estimate_memory(p.slots, p.tasks, p.order, graph);
  return p;
}

MemoryEstimate estimate_program_memory(const ir::Graph& graph, SlotPieces pieces) {
  check_tensor_dtypes(graph);
  check_operations_have_applications(graph);  // as compile_block_program: no silent zero
  const ApplicationSchedule schedule = schedule_applications(graph);
  SlotOf slot_of;
  std::vector<BufferSlot> slots = make_slots(graph, slot_of);
  const auto slot_for = [&](const ir::SelectionMap::Entry& entry) {
    auto found = slot_of.find(entry.value.tensor.index());
    if (found == slot_of.end()) {
      throw Error(
          fmt::format("selection {}[{}] names no tensor of the graph", entry.name, entry.position));
    }
    return found->second;
  };
  // The tasks' ports, writes and touches as make_task derives them, from the selections alone
  // (the byte offsets are not needed).
  std::vector<BlockTask> tasks(schedule.applications.size());
  std::vector<TaskBoxes> boxes(tasks.size());
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    BlockTask& task = tasks[t];
    task.application = schedule.applications[t];
    const ir::ApplicationView app = graph.application(task.application);
    for (const auto& entry : app.inputs().entries()) {
      task.inputs.push_back({slot_for(entry), 0});
      boxes[t].inputs.push_back(entry.value.range);
    }
    for (const auto& entry : app.outputs().entries()) {
      task.outputs.push_back({slot_for(entry), 0});
      boxes[t].outputs.push_back(entry.value.range);
    }
    derive_writes_and_touches(task, slots);
  }
  if (pieces == SlotPieces::kRows) split_row_pieces(slots, tasks, boxes);
  for (const BlockTask& task : tasks) {
    for (std::uint32_t s : task.touches) ++slots[s].uses;
  }
  return estimate_memory(slots, tasks, schedule.order, graph);
}

// ---- FLOP model (run_metrics.h) -------------------------------------------------------------

namespace {

// The cells one index point touches through an IPF: the product of its shape.
std::int64_t cells_per_point(const zspace::IndexProjection& ipf) {
  std::int64_t cells = 1;
  for (std::int64_t s : ipf.shape()) cells *= s;
  return cells;
}

// The cost model's count (cost/work.h), from the kernel's facts: flops per index point, times the
// cells of the `per_point` port's window (found by `window`: the port's IPF, or null).
template <typename FindPort>
std::int64_t stage_flops(std::string_view kernel, const Range& index, FindPort window) {
  const metakernel::KernelFacts& facts = metakernel::kernel_facts(kernel);
  if (facts.flops == 0) return 0;
  double per_point = facts.flops;
  if (!facts.per_point.empty()) {
    if (const zspace::IndexProjection* ipf = window(facts.per_point)) {
      per_point *= static_cast<double>(cells_per_point(*ipf));
    }
  }
  return static_cast<std::int64_t>(per_point * static_cast<double>(index.size()));
}

}  // namespace

std::int64_t estimate_flops(const KernelCall& call) {
  std::string_view kernel = call.kernel;
  if (kernel.substr(0, 3) == "op:") kernel.remove_prefix(3);
  if (kernel == rewrite::kFusedKernel && call.params != nullptr) {
    std::int64_t total = 0;
    for (const rewrite::FusedStage& stage : rewrite::fused_stages(*call.params)) {
      const Range index = zspace::IndexProjection(stage.index_map).apply(call.index);
      total += stage_flops(stage.kernel, index,
                           [&](std::string_view port) -> const zspace::IndexProjection* {
                             for (const auto* ports : {&stage.inputs, &stage.outputs}) {
                               for (const rewrite::FusedPort& p : *ports) {
                                 if (p.name == port) return &p.ipf;
                               }
                             }
                             return nullptr;
                           });
    }
    return total;
  }
  return stage_flops(kernel, call.index,
                     [&](std::string_view port) -> const zspace::IndexProjection* {
                       for (const auto& e : call.inputs.entries()) {
                         if (e.name == port) return e.value.ipf;
                       }
                       for (const auto& e : call.outputs.entries()) {
                         if (e.name == port) return e.value.ipf;
                       }
                       return nullptr;
                     });
}

}  // namespace tapestry::runtime::detail
