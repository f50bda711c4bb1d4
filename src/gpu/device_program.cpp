// DeviceProgram planning (device_program.h): device kernels, the arena, streams and events.
#include "device_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>

#include "tapestry/support/assert.h"

namespace tapestry::gpu {

namespace {

using runtime::detail::BlockProgram;
using runtime::detail::BlockTask;

std::int64_t round_up(std::int64_t bytes, std::int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

void sorted_unique(std::vector<std::uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Which tasks run on the GPU: those whose kernel has a device kernel that supports the call.
void choose_kernels(DeviceProgram& p, const DeviceKernels& device) {
  p.kernels.assign(p.block.tasks.size(), nullptr);
  for (std::size_t t = 0; t < p.communication_from; ++t) {
    const BlockTask& task = p.block.tasks[t];
    const DeviceKernel* kernel = device.find(task.call.kernel);
    if (kernel != nullptr && kernel->supports(task.call)) {
      p.kernels[t] = kernel;
    } else {
      std::string_view name = task.call.kernel;
      if (name.starts_with("op:")) name.remove_prefix(3);
      ++p.host_steps_by_kernel[std::string(name)];
      ++p.host_steps;
    }
  }
}

// The slots each task reads (graph inputs included), writes, and the tasks writing each slot.
struct SlotUse {
  std::vector<std::vector<std::uint32_t>> writers;  // per slot
  std::vector<std::vector<std::uint32_t>> users;    // per slot: tasks reading or writing it
};

SlotUse slot_uses(const BlockProgram& b) {
  SlotUse u{std::vector<std::vector<std::uint32_t>>(b.slots.size()),
            std::vector<std::vector<std::uint32_t>>(b.slots.size())};
  for (std::uint32_t t = 0; t < b.tasks.size(); ++t) {
    const BlockTask& task = b.tasks[t];
    for (std::uint32_t s : task.writes) u.writers[s].push_back(t);
    for (const auto& in : task.inputs) u.users[in.slot].push_back(t);
    for (const auto& out : task.outputs) u.users[out.slot].push_back(t);
  }
  for (auto& users : u.users) sorted_unique(users);
  return u;
}

// A free range of the arena and the tasks that last used any part of it.
struct FreeBlock {
  std::int64_t offset = 0;
  std::int64_t bytes = 0;
  std::vector<std::uint32_t> last_users;
};

class ArenaPlanner {
 public:
  explicit ArenaPlanner(std::int64_t base) : top_(base) {}

  // Best fit among the free blocks, else the top of the arena (merging a free block that ends
  // there). Returns the offset and the tasks that used the memory before.
  std::pair<std::int64_t, std::vector<std::uint32_t>> take(std::int64_t bytes) {
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].bytes >= bytes && (!best || free_[i].bytes < free_[*best].bytes)) best = i;
    }
    if (best) {
      FreeBlock& block = free_[*best];
      const std::int64_t offset = block.offset;
      std::vector<std::uint32_t> users = block.last_users;
      block.offset += bytes;
      block.bytes -= bytes;
      if (block.bytes == 0) free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(*best));
      return {offset, std::move(users)};
    }
    if (!free_.empty() && free_.back().offset + free_.back().bytes == top_) {
      FreeBlock last = std::move(free_.back());
      free_.pop_back();
      top_ = last.offset + bytes;
      return {last.offset, std::move(last.last_users)};
    }
    const std::int64_t offset = top_;
    top_ += bytes;
    return {offset, {}};
  }

  void give(std::int64_t offset, std::int64_t bytes, const std::vector<std::uint32_t>& users) {
    auto it = std::lower_bound(free_.begin(), free_.end(), offset,
                               [](const FreeBlock& b, std::int64_t o) { return b.offset < o; });
    it = free_.insert(it, FreeBlock{offset, bytes, users});
    // Merge with the neighbours it touches; the merged block carries both sets of users.
    if (it + 1 != free_.end() && it->offset + it->bytes == (it + 1)->offset) {
      merge_into(*it, *(it + 1));
      free_.erase(it + 1);
    }
    if (it != free_.begin() && (it - 1)->offset + (it - 1)->bytes == it->offset) {
      merge_into(*(it - 1), *it);
      free_.erase(it);
    }
  }

  [[nodiscard]] std::int64_t top() const { return top_; }

 private:
  static void merge_into(FreeBlock& into, const FreeBlock& from) {
    into.bytes += from.bytes;
    into.last_users.insert(into.last_users.end(), from.last_users.begin(), from.last_users.end());
    sorted_unique(into.last_users);
  }

  std::int64_t top_;
  std::vector<FreeBlock> free_;  // sorted by offset, never adjacent
};

// Inputs and outputs first, each its own memory; then the intermediates in issue order, each
// from its first writer to its last user, reusing what earlier ones gave back (memory edges).
void place_slots(DeviceProgram& p, const SlotUse& uses, const DeviceProgramOptions& options) {
  const BlockProgram& b = p.block;
  p.placement.assign(b.slots.size(), {});
  p.memory_edges.assign(b.tasks.size(), {});
  std::int64_t fixed = 0;
  for (std::size_t s = 0; s < b.slots.size(); ++s) {
    if (!b.slots[s].input && !b.slots[s].output) continue;
    p.placement[s] = {fixed, b.slots[s].bytes};
    fixed += round_up(b.slots[s].bytes, options.alignment);
  }
  std::vector<std::uint32_t> position(b.tasks.size());
  for (std::uint32_t i = 0; i < b.order.size(); ++i) position[b.order[i]] = i;
  constexpr std::uint32_t kNever = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::vector<std::uint32_t>> born(b.tasks.size()), dies(b.tasks.size());
  for (std::uint32_t s = 0; s < b.slots.size(); ++s) {
    if (b.slots[s].input || b.slots[s].output || uses.writers[s].empty()) continue;
    std::uint32_t first = kNever, last = 0;
    for (std::uint32_t t : uses.writers[s]) first = std::min(first, position[t]);
    for (std::uint32_t t : uses.users[s]) last = std::max(last, position[t]);
    born[b.order[first]].push_back(s);
    dies[b.order[last]].push_back(s);
  }
  ArenaPlanner arena(fixed);
  std::int64_t next_private = fixed;  // reuse off: every slot its own memory
  for (std::uint32_t t : b.order) {
    for (std::uint32_t s : born[t]) {
      const std::int64_t bytes =
          round_up(std::max<std::int64_t>(b.slots[s].bytes, 1), options.alignment);
      if (!options.reuse_memory) {
        p.placement[s] = {next_private, b.slots[s].bytes};
        next_private += bytes;
        continue;
      }
      auto [offset, before] = arena.take(bytes);
      p.placement[s] = {offset, b.slots[s].bytes};
      for (std::uint32_t w : uses.writers[s]) {
        auto& edges = p.memory_edges[w];
        edges.insert(edges.end(), before.begin(), before.end());
      }
    }
    if (!options.reuse_memory) continue;
    for (std::uint32_t s : dies[t]) {
      arena.give(p.placement[s].offset,
                 round_up(std::max<std::int64_t>(b.slots[s].bytes, 1), options.alignment),
                 uses.users[s]);
    }
  }
  for (auto& edges : p.memory_edges) sorted_unique(edges);
  p.arena_bytes = options.reuse_memory ? arena.top() : next_private;
}

// Every task's dependencies: the DAG's (from the CSR of dependents) and its memory edges.
std::vector<std::vector<std::uint32_t>> all_dependencies(const DeviceProgram& p) {
  const BlockProgram& b = p.block;
  std::vector<std::vector<std::uint32_t>> deps(b.tasks.size());
  for (std::uint32_t t = 0; t < b.tasks.size(); ++t) {
    for (std::uint32_t i = b.dependents_first[t]; i < b.dependents_first[t + 1]; ++i) {
      deps[b.dependents[i]].push_back(t);
    }
  }
  for (std::uint32_t t = 0; t < b.tasks.size(); ++t) {
    deps[t].insert(deps[t].end(), p.memory_edges[t].begin(), p.memory_edges[t].end());
    sorted_unique(deps[t]);
  }
  return deps;
}

// Streams and events, in issue order (see the file comment). `clock[t]` is, per stream, how
// many of its steps are known complete once task t completes (a vector clock).
void assign_streams(DeviceProgram& p, const std::vector<std::vector<std::uint32_t>>& deps) {
  const BlockProgram& b = p.block;
  const auto streams = static_cast<std::size_t>(p.streams);
  // With communication steps, the last stream is theirs: kernels take the others.
  const bool communicates = p.communication_from < b.tasks.size();
  const std::size_t compute_streams = communicates ? streams - 1 : streams;
  std::vector<int> stream_of(b.tasks.size(), -1);
  std::vector<std::uint32_t> index_in_stream(b.tasks.size(), 0);
  std::vector<std::vector<std::uint32_t>> clock(b.tasks.size());
  std::vector<std::int64_t> last_on_stream(streams, -1);
  std::vector<std::uint32_t> count(streams, 0);
  std::vector<double> work(streams, 0);
  std::vector<std::vector<std::uint32_t>> known(streams, std::vector<std::uint32_t>(streams, 0));
  std::vector<std::int32_t> event_of(b.tasks.size(), -1);
  std::vector<std::size_t> step_of(b.tasks.size(), 0);
  p.steps.clear();
  p.events = 0;
  for (std::uint32_t t : b.order) {
    // Continue the chain of the most recently issued dependency that ends its stream.
    const bool communication = t >= p.communication_from;
    int stream = communication ? static_cast<int>(compute_streams) : -1;
    std::int64_t latest = -1;
    for (std::uint32_t d : deps[t]) {
      const int s = stream_of[d];
      if (communication || static_cast<std::size_t>(s) >= compute_streams) continue;
      if (last_on_stream[static_cast<std::size_t>(s)] == d &&
          static_cast<std::int64_t>(step_of[d]) > latest) {
        latest = static_cast<std::int64_t>(step_of[d]);
        stream = s;
      }
    }
    if (stream < 0) {
      stream = static_cast<int>(
          std::min_element(work.begin(),
                           work.begin() + static_cast<std::ptrdiff_t>(compute_streams)) -
          work.begin());
    }
    const auto s = static_cast<std::size_t>(stream);
    DeviceStep step{.task = t,
                    .on_device = communication || p.kernels[t] != nullptr,
                    .communication = communication,
                    .stream = stream};
    std::vector<std::uint32_t> now = known[s];
    for (std::uint32_t d : deps[t]) {
      const auto ds = static_cast<std::size_t>(stream_of[d]);
      if (ds == s || index_in_stream[d] < now[ds]) continue;  // implied by stream order/clock
      if (event_of[d] < 0) {
        event_of[d] = static_cast<std::int32_t>(p.events++);
        p.steps[step_of[d]].record = event_of[d];
      }
      step.waits.push_back(static_cast<std::uint32_t>(event_of[d]));
      for (std::size_t k = 0; k < streams; ++k) now[k] = std::max(now[k], clock[d][k]);
    }
    sorted_unique(step.waits);
    stream_of[t] = stream;
    index_in_stream[t] = count[s]++;
    now[s] = count[s];
    known[s] = now;
    clock[t] = std::move(now);
    last_on_stream[s] = t;
    // Work: FLOPs plus a launch's worth per step, so many tiny steps spread too.
    work[s] += static_cast<double>(b.tasks[t].flops) + 1e5;
    step_of[t] = p.steps.size();
    p.steps.push_back(std::move(step));
  }
}

}  // namespace

std::vector<BoxRun> box_runs(const runtime::Point& strides, const runtime::Point& shape,
                             std::int64_t element, std::int64_t first,
                             std::int64_t staging_offset) {
  std::vector<BoxRun> runs;
  const std::size_t rank = shape.rank();
  for (std::size_t k = 0; k < rank; ++k) {
    if (shape[k] == 0) return runs;  // empty: nothing to copy
  }
  if (rank == 0) return {{first, staging_offset, element, 1, element}};
  std::size_t k = rank - 1;
  std::int64_t run = shape[k];
  while (k > 0 && strides[k - 1] == run) {
    run *= shape[k - 1];
    --k;
  }
  const std::int64_t width = run * element;
  if (k == 0) return {{first, staging_offset, width, 1, width}};
  const std::int64_t height = shape[k - 1];
  const std::int64_t pitch = strides[k - 1] * element;
  std::vector<std::int64_t> index(k - 1, 0);
  std::int64_t at = staging_offset;
  while (true) {
    std::int64_t offset = first;
    for (std::size_t d = 0; d + 1 < k; ++d) offset += index[d] * strides[d] * element;
    runs.push_back({offset, at, width, height, pitch});
    at += width * height;
    std::size_t d = k - 1;
    while (d > 0) {
      if (++index[d - 1] < shape[d - 1]) break;
      index[d - 1] = 0;
      --d;
    }
    if (d == 0) break;
  }
  return runs;
}

DeviceProgram plan_device_program(const ir::Graph& graph, const runtime::ExecutableKernels& host,
                                  const DeviceKernels& device, DeviceProgramOptions options) {
  TAPESTRY_ASSERT(options.streams >= 1, "a device program needs a stream");
  TAPESTRY_ASSERT(options.alignment > 0 && (options.alignment & (options.alignment - 1)) == 0,
                  "arena alignment must be a power of two");
  runtime::detail::BlockProgram block = runtime::detail::compile_block_program(graph, host);
  const auto tasks = static_cast<std::uint32_t>(block.tasks.size());
  return plan_device_program(std::move(block), device, options, tasks);
}

DeviceProgram plan_device_program(runtime::detail::BlockProgram block, const DeviceKernels& device,
                                  DeviceProgramOptions options, std::uint32_t communication_from) {
  TAPESTRY_ASSERT(options.streams >= 1, "a device program needs a stream");
  TAPESTRY_ASSERT(communication_from <= block.tasks.size(), "communication steps out of range");
  DeviceProgram p;
  p.block = std::move(block);
  p.communication_from = communication_from;
  p.streams = options.streams + (communication_from < p.block.tasks.size() ? 1 : 0);
  choose_kernels(p, device);
  place_slots(p, slot_uses(p.block), options);
  assign_streams(p, all_dependencies(p));
  return p;
}

std::string check_device_program(const DeviceProgram& p) {
  const BlockProgram& b = p.block;
  const std::size_t n = p.steps.size();
  if (n != b.tasks.size()) return fmt::format("{} steps for {} tasks", n, b.tasks.size());
  // happens[i]: the steps that complete before step i starts (bitset over steps).
  const std::size_t words = (n + 63) / 64;
  std::vector<std::vector<std::uint64_t>> happens(n, std::vector<std::uint64_t>(words, 0));
  const auto add = [&](std::size_t into, std::size_t from) {
    for (std::size_t w = 0; w < words; ++w) happens[into][w] |= happens[from][w];
    happens[into][from / 64] |= std::uint64_t{1} << (from % 64);
  };
  std::vector<std::int64_t> recorded_by(p.events, -1);
  std::vector<std::int64_t> last_of_stream(static_cast<std::size_t>(p.streams), -1);
  std::vector<std::int64_t> step_of_task(b.tasks.size(), -1);
  for (std::size_t i = 0; i < n; ++i) {
    const DeviceStep& step = p.steps[i];
    if (step.stream < 0 || step.stream >= p.streams) return fmt::format("step {}: no stream", i);
    const bool communication = step.task >= p.communication_from;
    if (communication != step.communication || (p.communication_from < b.tasks.size() &&
                                                communication != (step.stream == p.streams - 1))) {
      return fmt::format("step {} ({}): {} step on stream {}", i, b.tasks[step.task].name,
                         communication ? "a communication" : "a kernel", step.stream);
    }
    if (step_of_task[step.task] >= 0) return fmt::format("task {} issued twice", step.task);
    step_of_task[step.task] = static_cast<std::int64_t>(i);
    const std::int64_t previous = last_of_stream[static_cast<std::size_t>(step.stream)];
    if (previous >= 0) add(i, static_cast<std::size_t>(previous));
    for (std::uint32_t e : step.waits) {
      if (e >= p.events || recorded_by[e] < 0) {
        return fmt::format("step {} waits for event {} before it is recorded", i, e);
      }
      add(i, static_cast<std::size_t>(recorded_by[e]));
    }
    if (step.record >= 0) {
      const auto e = static_cast<std::size_t>(step.record);
      if (e >= p.events || recorded_by[e] >= 0) return fmt::format("event {} recorded twice", e);
      recorded_by[e] = static_cast<std::int64_t>(i);
    }
    last_of_stream[static_cast<std::size_t>(step.stream)] = static_cast<std::int64_t>(i);
  }
  const auto before = [&](std::uint32_t a, std::uint32_t t) {
    const auto ia = static_cast<std::size_t>(step_of_task[a]);
    const auto it = static_cast<std::size_t>(step_of_task[t]);
    return (happens[it][ia / 64] >> (ia % 64) & 1U) != 0;
  };
  for (std::uint32_t t = 0; t < b.tasks.size(); ++t) {
    for (std::uint32_t i = b.dependents_first[t]; i < b.dependents_first[t + 1]; ++i) {
      if (!before(t, b.dependents[i])) {
        return fmt::format("task {} ({}) may start before task {} ({}) it depends on",
                           b.dependents[i], b.tasks[b.dependents[i]].name, t, b.tasks[t].name);
      }
    }
  }
  // Memory: two slots that share bytes must be used one after the other — every user of one
  // before every writer of the other — and inputs/outputs share with nothing.
  const SlotUse uses = slot_uses(b);
  const auto overlap = [&](std::size_t a, std::size_t c) {
    const SlotPlacement& x = p.placement[a];
    const SlotPlacement& y = p.placement[c];
    return x.bytes > 0 && y.bytes > 0 && x.offset < y.offset + y.bytes &&
           y.offset < x.offset + x.bytes;
  };
  const auto all_before = [&](std::size_t first, std::size_t second) {
    for (std::uint32_t u : uses.users[first]) {
      for (std::uint32_t w : uses.writers[second]) {
        if (!before(u, w)) return false;
      }
    }
    return true;
  };
  for (std::size_t a = 0; a < b.slots.size(); ++a) {
    if (p.placement[a].bytes > 0 && p.placement[a].offset + p.placement[a].bytes > p.arena_bytes) {
      return fmt::format("slot {} ends past the arena", a);
    }
    for (std::size_t c = a + 1; c < b.slots.size(); ++c) {
      if (!overlap(a, c)) continue;
      const bool fixed =
          b.slots[a].input || b.slots[a].output || b.slots[c].input || b.slots[c].output;
      if (fixed || (!all_before(a, c) && !all_before(c, a))) {
        return fmt::format("tensors {} and {} share arena bytes while both may be live",
                           b.slots[a].tensor.index(), b.slots[c].tensor.index());
      }
    }
  }
  return "";
}

}  // namespace tapestry::gpu
