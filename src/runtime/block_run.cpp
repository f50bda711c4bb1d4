// The state of one run of a BlockProgram (block_run.h).
#include "block_run.h"

#include <algorithm>

#include <fmt/format.h>
#include <oneapi/tbb/task_arena.h>

#include "run_support.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/kernel_path.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime::detail {

Buffer BufferPool::take(DType dtype, const Range& range) {
  {
    const std::lock_guard lock(mutex_);
    auto it = free_.find(Key{dtype, range.shape()});
    if (it != free_.end()) {
      Buffer buffer = std::move(it->second).relocated(range.start());
      free_.erase(it);
      return buffer;
    }
  }
  return {dtype, range, Buffer::Uninitialized{}};
}

void BufferPool::give(Buffer buffer) {
  const std::lock_guard lock(mutex_);
  Key key{buffer.dtype(), buffer.range().shape()};
  free_.emplace(std::move(key), std::move(buffer));
}

void BufferPool::clear() {
  const std::lock_guard lock(mutex_);
  free_.clear();
}

bool BufferPool::Key::operator<(const Key& other) const {
  if (dtype != other.dtype) return dtype < other.dtype;
  return std::lexicographical_compare(shape.begin(), shape.end(), other.shape.begin(),
                                      other.shape.end()) ||
         (!std::lexicographical_compare(other.shape.begin(), other.shape.end(), shape.begin(),
                                        shape.end()) &&
          shape.rank() < other.shape.rank());
}

namespace {

// Scratch KernelCalls of one thread, as a stack: a kernel that waits inside TBB could have this
// thread run another task before it returns, which then takes the next call down.
struct CallStack {
  std::vector<std::unique_ptr<KernelCall>> calls;
  std::size_t depth = 0;
};
thread_local CallStack t_calls;

template <typename Port, typename Byte>
void patch_origins(ir::NamedLists<Port>& ports, const std::vector<PortAddress>& addresses,
                   const std::vector<std::byte*>& base) {
  std::size_t i = 0;
  ports.for_each_entry([&](const std::string&, std::uint32_t, Port& port) {
    const PortAddress& a = addresses[i++];
    Byte* origin = base[a.slot] == nullptr ? nullptr : base[a.slot] + a.byte_offset;
    port.view = BasicView<Byte>(port.view.dtype(), origin, port.view.box(), port.view.strides());
  });
}

}  // namespace

RunState::RunState(const BlockProgram& p, BufferPool& pool_, bool poison_)
    : program(p),
      pool(pool_),
      poison(poison_),
      buffers(p.slots.size()),
      base(p.slots.size(), nullptr),
      allocated(new std::once_flag[p.slots.size()]),
      uses_left(new std::atomic<std::uint32_t>[p.slots.size()]),
      pending(new std::atomic<std::uint32_t>[p.tasks.size()]) {
  for (std::size_t s = 0; s < p.slots.size(); ++s) uses_left[s] = p.slots[s].uses;
  for (std::size_t t = 0; t < p.tasks.size(); ++t) pending[t] = p.pending[t];
}

void RunState::add_live(std::int64_t bytes) {
  const std::int64_t now = live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::int64_t peak = peak_bytes.load(std::memory_order_relaxed);
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void RunState::allocate(std::uint32_t s) {
  std::call_once(allocated[s], [&] {
    const BufferSlot& slot = program.slots[s];
    buffers[s] = pool.take(slot.dtype, slot.range);
    if (poison) detail::poison(*buffers[s]);
    base[s] = buffers[s]->bytes();
    add_live(slot.bytes);
  });
}

void RunState::release(std::uint32_t s) {
  if (uses_left[s].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  const BufferSlot& slot = program.slots[s];
  if (slot.output || slot.input || slot.kept || !buffers[s]) return;
  pool.give(std::move(*buffers[s]));
  buffers[s].reset();
  base[s] = nullptr;
  add_live(-slot.bytes);
}

void RunState::run_kernel(std::uint32_t t) {
  const BlockTask& task = program.tasks[t];
  for (std::uint32_t s : task.writes) allocate(s);
  CallStack& stack = t_calls;
  if (stack.depth == stack.calls.size()) stack.calls.push_back(std::make_unique<KernelCall>());
  KernelCall& call = *stack.calls[stack.depth++];
  call = task.call;
  patch_origins<InputPort, const std::byte>(call.inputs, task.inputs, base);
  patch_origins<OutputPort, std::byte>(call.outputs, task.outputs, base);
  const bool measure = !records.empty();
  const Clock::time_point begin = measure ? Clock::now() : Clock::time_point{};
  // This call's fallbacks to the reference kernels (fast_kernels.h) and the kernel paths it
  // noted (kernel_path.h): the thread's are swapped out around it, and back in after, also when
  // the kernel throws.
  const std::uint64_t outer_fallbacks = exchange_thread_fallbacks(0);
  const KernelPathSet outer_paths = exchange_thread_kernel_paths({});
  try {
    task.kernel(call);
  } catch (const Error& e) {
    --stack.depth;
    (void)exchange_thread_fallbacks(outer_fallbacks);
    (void)exchange_thread_kernel_paths(outer_paths);
    throw e.with_context(fmt::format("application '{}'", task.name));
  } catch (...) {
    --stack.depth;
    (void)exchange_thread_fallbacks(outer_fallbacks);
    (void)exchange_thread_kernel_paths(outer_paths);
    throw;
  }
  --stack.depth;
  const std::uint64_t fallbacks = exchange_thread_fallbacks(outer_fallbacks);
  const KernelPath path = exchange_thread_kernel_paths(outer_paths).resolve();
  if (measure) {
    const Clock::time_point end = Clock::now();
    records[t] = {.start_ns = (begin - start).count(),
                  .end_ns = (end - start).count(),
                  .thread = static_cast<std::uint32_t>(
                      std::max(0, tbb::this_task_arena::current_thread_index())),
                  .fallbacks = fallbacks,
                  .path = path};
  }
}

void RunState::finish_task(std::uint32_t t) {
  const BlockTask& task = program.tasks[t];
  for (std::uint32_t s : task.touches) release(s);
  if (progress != nullptr) {
    progress->flops.fetch_add(task.flops, std::memory_order_relaxed);
    progress->done.fetch_add(1, std::memory_order_relaxed);
  }
}

void bind_inputs(const ir::Graph& graph, BufferMap inputs, RunState& state,
                 const std::vector<char>* needed) {
  const BlockProgram& p = state.program;
  for (std::uint32_t s = 0; s < p.slots.size(); ++s) {
    const BufferSlot& slot = p.slots[s];
    auto given = inputs.find(slot.tensor);
    if (!slot.input) {
      if (given != inputs.end()) {
        throw Error(fmt::format("tensor '{}' is computed by the graph; it cannot be an input",
                                tensor_name(graph, slot.tensor)));
      }
      continue;
    }
    if (needed != nullptr && (*needed)[s] == 0) {
      if (given != inputs.end()) inputs.erase(given);
      continue;
    }
    if (given == inputs.end()) {
      throw Error(fmt::format("input tensor '{}' has no buffer", tensor_name(graph, slot.tensor)));
    }
    if (slot.range == graph.tensor(slot.tensor).range()) {
      state.buffers[s] = bind_buffer(graph, slot.tensor, std::move(given->second));
    } else {  // a rank's part of the tensor (rank_program.h)
      if (given->second.dtype() != slot.dtype ||
          given->second.range().shape() != slot.range.shape()) {
        throw Error(fmt::format("input tensor '{}' needs its box {} here, but its buffer is {}",
                                tensor_name(graph, slot.tensor), slot.range,
                                given->second.describe()));
      }
      state.buffers[s] = std::move(given->second).relocated(slot.range.start());
    }
    state.base[s] = state.buffers[s]->bytes();
    inputs.erase(given);
    state.add_live(slot.bytes);
  }
  if (!inputs.empty()) {
    throw Error(fmt::format("a buffer is given for node #{}, which is not a tensor of the graph",
                            inputs.begin()->first.index()));
  }
}

RunMetrics make_metrics(const BlockProgram& p, const RunState& state, double wall_s, int threads) {
  RunMetrics m{.wall_s = wall_s,
               .flops = p.flops,
               .gflops = wall_s > 0 ? static_cast<double>(p.flops) / wall_s / 1e9 : 0.0,
               .peak_memory_bytes = state.peak_bytes.load(),
               .estimated_peak_memory_bytes = p.memory.peak_bytes,
               .threads = threads};
  std::map<std::uint32_t, OperationMetrics> by_op;
  std::vector<double> finish(p.tasks.size(), 0.0);  // longest chain ending at each task
  for (std::uint32_t t : p.order) {
    const BlockTask& task = p.tasks[t];
    const TaskRecord& r = state.records[t];
    const double duration = static_cast<double>(r.end_ns - r.start_ns) * 1e-9;
    finish[t] += duration;
    m.critical_path_s = std::max(m.critical_path_s, finish[t]);
    for (std::uint32_t k = p.dependents_first[t]; k < p.dependents_first[t + 1]; ++k) {
      finish[p.dependents[k]] = std::max(finish[p.dependents[k]], finish[t]);
    }
    m.busy_s += duration;
    m.applications.push_back({.name = task.name,
                              .operation = std::string(task.call.operation),
                              .kernel = std::string(task.call.kernel),
                              .thread = r.thread,
                              .start_s = static_cast<double>(r.start_ns) * 1e-9,
                              .duration_s = duration,
                              .flops = task.flops,
                              .bytes_read = task.bytes_read,
                              .bytes_written = task.bytes_written,
                              .fallbacks = r.fallbacks,
                              .path = r.path});
    OperationMetrics& op = by_op[task.operation.index()];
    op.operation = std::string(task.call.operation);
    op.kernel = std::string(task.call.kernel);
    ++op.applications;
    op.busy_s += duration;
    op.flops += task.flops;
    op.bytes_read += task.bytes_read;
    op.bytes_written += task.bytes_written;
    op.fallbacks += r.fallbacks;
    ++op.paths[static_cast<std::size_t>(r.path)];
  }
  std::sort(m.applications.begin(), m.applications.end(),
            [](const ApplicationMetrics& a, const ApplicationMetrics& b) {
              return a.start_s < b.start_s;
            });
  for (auto& [index, op] : by_op) m.operations.push_back(std::move(op));
  std::stable_sort(
      m.operations.begin(), m.operations.end(),
      [](const OperationMetrics& a, const OperationMetrics& b) { return a.busy_s > b.busy_s; });
  return m;
}

}  // namespace tapestry::runtime::detail
