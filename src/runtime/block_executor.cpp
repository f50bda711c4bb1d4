// BlockExecutor: the compiled program run on a oneTBB arena (see block_executor.h).
//
// A run keeps, per buffer slot, the buffer (allocated once, by the first writer to start, under
// std::call_once) and a countdown of the tasks still to touch it; per task, a countdown of the
// tasks it waits for. tbb::parallel_for_each starts from the roots; each finished task feeds
// the dependents whose countdown reaches zero. The acquire/release countdowns order every
// kernel's reads after the writes they depend on, and a buffer's allocation before any use.
#include "tapestry/runtime/block_executor.h"

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for_each.h>
#include <oneapi/tbb/task_arena.h>
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#include "block_program.h"
#include "run_support.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/memory_budget.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime {

namespace detail {

/// Buffers kept between the runs of one executor, by dtype and shape (a freed intermediate is
/// reused by the next tensor of the same kind, in this run or the next). Thread-safe.
class BufferPool {
 public:
  Buffer take(DType dtype, const Range& range) {
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
  void give(Buffer buffer) {
    const std::lock_guard lock(mutex_);
    Key key{buffer.dtype(), buffer.range().shape()};
    free_.emplace(std::move(key), std::move(buffer));
  }
  void clear() {
    const std::lock_guard lock(mutex_);
    free_.clear();
  }

 private:
  struct Key {
    DType dtype;
    Point shape;
    bool operator<(const Key& other) const {
      if (dtype != other.dtype) return dtype < other.dtype;
      return std::lexicographical_compare(shape.begin(), shape.end(), other.shape.begin(),
                                          other.shape.end()) ||
             (!std::lexicographical_compare(other.shape.begin(), other.shape.end(), shape.begin(),
                                            shape.end()) &&
              shape.rank() < other.shape.rank());
    }
  };
  std::mutex mutex_;
  std::multimap<Key, Buffer> free_;
};

/// The executor's TBB arena, made once: a run on a fresh arena pays for its workers joining it,
/// which shows on runs of a few milliseconds. TBB caps its workers at the hardware concurrency
/// unless told otherwise; `allow` honours more threads (oversubscription is the caller's choice,
/// and tests use it to shake out races) while the executor lives.
struct ThreadPool {
  explicit ThreadPool(int threads) {
    if (threads > tbb::this_task_arena::max_concurrency()) {
      allow.emplace(tbb::global_control::max_allowed_parallelism,
                    static_cast<std::size_t>(threads));
    }
    arena.emplace(threads);
  }
  std::optional<tbb::global_control> allow;
  std::optional<tbb::task_arena> arena;
};

}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;

// Debian's libtbb.so is not built with ThreadSanitizer, so TSan cannot see the happens-before
// edges TBB creates when it hands a task (and the body object it captures) to another thread or
// waits for one. Under TSan the executor declares the edges its correctness rests on, and no
// others: the run's setup before every task (one release by the caller, an acquire at the start
// of each task), each producer before its dependents (the acquire/release countdowns, which TSan
// does see), and every task before the caller's use of the results. Elsewhere these are no-ops.
// The edges use the addresses of two globals: a task cannot read anything the caller made — not
// even a captured pointer — before its acquire.
char g_tsan_setup = 0;
char g_tsan_done = 0;
#if defined(__SANITIZE_THREAD__)
void tsan_release(void* address) {
  __tsan_release(address);
}
void tsan_acquire(void* address) {
  __tsan_acquire(address);
}
#else
void tsan_release(void* /*address*/) {}
void tsan_acquire(void* /*address*/) {}
#endif

// Releases g_tsan_done when a task ends, normally or by an exception.
struct TsanReleaseOnExit {
  TsanReleaseOnExit() = default;
  TsanReleaseOnExit(const TsanReleaseOnExit&) = delete;
  TsanReleaseOnExit& operator=(const TsanReleaseOnExit&) = delete;
  ~TsanReleaseOnExit() { tsan_release(&g_tsan_done); }
};

struct TaskRecord {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t thread = 0;
  std::uint64_t fallbacks = 0;  // calls handed to the reference kernels
};

// Scratch KernelCalls of one thread, as a stack: a kernel that waits inside TBB could have this
// thread run another task before it returns, which then takes the next call down.
struct CallStack {
  std::vector<std::unique_ptr<KernelCall>> calls;
  std::size_t depth = 0;
};
thread_local CallStack t_calls;

template <typename Port, typename Byte>
void patch_origins(ir::NamedLists<Port>& ports, const std::vector<detail::PortAddress>& addresses,
                   const std::vector<std::byte*>& base) {
  std::size_t i = 0;
  ports.for_each_entry([&](const std::string&, std::uint32_t, Port& port) {
    const detail::PortAddress& a = addresses[i++];
    Byte* origin = base[a.slot] == nullptr ? nullptr : base[a.slot] + a.byte_offset;
    port.view = BasicView<Byte>(port.view.dtype(), origin, port.view.box(), port.view.strides());
  });
}

}  // namespace

// The state of one run.
struct RunState {
  const detail::BlockProgram& program;
  detail::BufferPool& pool;
  bool poison = false;
  std::vector<std::optional<Buffer>> buffers;
  std::vector<std::byte*> base;
  std::unique_ptr<std::once_flag[]> allocated;
  std::unique_ptr<std::atomic<std::uint32_t>[]> uses_left;
  std::unique_ptr<std::atomic<std::uint32_t>[]> pending;
  std::atomic<std::int64_t> live_bytes{0};
  std::atomic<std::int64_t> peak_bytes{0};
  std::vector<TaskRecord> records;  // empty unless measuring
  Clock::time_point start;
  RunProgress* progress = nullptr;

  RunState(const detail::BlockProgram& p, detail::BufferPool& pool_, bool poison_)
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

  void add_live(std::int64_t bytes) {
    const std::int64_t now = live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    std::int64_t peak = peak_bytes.load(std::memory_order_relaxed);
    while (now > peak && !peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }

  void allocate(std::uint32_t s) {
    std::call_once(allocated[s], [&] {
      const detail::BufferSlot& slot = program.slots[s];
      buffers[s] = pool.take(slot.dtype, slot.range);
      if (poison) detail::poison(*buffers[s]);
      base[s] = buffers[s]->bytes();
      add_live(slot.bytes);
    });
  }

  void release(std::uint32_t s) {
    if (uses_left[s].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    const detail::BufferSlot& slot = program.slots[s];
    if (slot.output || slot.input || !buffers[s]) return;
    pool.give(std::move(*buffers[s]));
    buffers[s].reset();
    base[s] = nullptr;
    add_live(-slot.bytes);
  }

  void run_task(std::uint32_t t) {
    const detail::BlockTask& task = program.tasks[t];
    for (std::uint32_t s : task.writes) allocate(s);
    CallStack& stack = t_calls;
    if (stack.depth == stack.calls.size()) stack.calls.push_back(std::make_unique<KernelCall>());
    KernelCall& call = *stack.calls[stack.depth++];
    call = task.call;
    patch_origins<InputPort, const std::byte>(call.inputs, task.inputs, base);
    patch_origins<OutputPort, std::byte>(call.outputs, task.outputs, base);
    const bool measure = !records.empty();
    const Clock::time_point begin = measure ? Clock::now() : Clock::time_point{};
    // This call's fallbacks to the reference kernels (fast_kernels.h): the thread's count is
    // swapped out around it, and back in after, also when the kernel throws.
    const std::uint64_t outer_fallbacks = exchange_thread_fallbacks(0);
    try {
      task.kernel(call);
    } catch (const Error& e) {
      --stack.depth;
      (void)exchange_thread_fallbacks(outer_fallbacks);
      throw e.with_context(fmt::format("application '{}'", task.name));
    } catch (...) {
      --stack.depth;
      (void)exchange_thread_fallbacks(outer_fallbacks);
      throw;
    }
    --stack.depth;
    const std::uint64_t fallbacks = exchange_thread_fallbacks(outer_fallbacks);
    if (measure) {
      const Clock::time_point end = Clock::now();
      records[t] = {.start_ns = (begin - start).count(),
                    .end_ns = (end - start).count(),
                    .thread = static_cast<std::uint32_t>(
                        std::max(0, tbb::this_task_arena::current_thread_index())),
                    .fallbacks = fallbacks};
    }
    for (std::uint32_t s : task.touches) release(s);
    if (progress != nullptr) {
      progress->flops.fetch_add(task.flops, std::memory_order_relaxed);
      progress->done.fetch_add(1, std::memory_order_relaxed);
    }
  }
};

namespace {

RunMetrics make_metrics(const detail::BlockProgram& p, const RunState& state, double wall_s,
                        int threads) {
  RunMetrics m{.wall_s = wall_s,
               .flops = p.flops,
               .gflops = wall_s > 0 ? static_cast<double>(p.flops) / wall_s / 1e9 : 0.0,
               .peak_memory_bytes = state.peak_bytes.load(),
               .estimated_peak_memory_bytes = p.memory.peak_bytes,
               .threads = threads};
  std::map<std::uint32_t, OperationMetrics> by_op;
  std::vector<double> finish(p.tasks.size(), 0.0);  // longest chain ending at each task
  for (std::uint32_t t : p.order) {
    const detail::BlockTask& task = p.tasks[t];
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
                              .fallbacks = r.fallbacks});
    OperationMetrics& op = by_op[task.operation.index()];
    op.operation = std::string(task.call.operation);
    op.kernel = std::string(task.call.kernel);
    ++op.applications;
    op.busy_s += duration;
    op.flops += task.flops;
    op.bytes_read += task.bytes_read;
    op.bytes_written += task.bytes_written;
    op.fallbacks += r.fallbacks;
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

}  // namespace

BlockExecutor::BlockExecutor(const ir::Graph& graph, BlockExecutorOptions options)
    : graph_(graph),
      threads_(options.threads > 0
                   ? options.threads
                   : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()))),
      poison_(options.poison),
      pool_(std::make_unique<detail::BufferPool>()),
      threads_pool_(std::make_unique<detail::ThreadPool>(threads_)) {
  const ExecutableKernels& kernels = options.kernels != nullptr ? *options.kernels : fast_kernels();
  program_ =
      std::make_unique<const detail::BlockProgram>(detail::compile_block_program(graph, kernels));
  check_memory_budget(program_->memory, options.memory_limit_bytes);
}

BlockExecutor::~BlockExecutor() = default;

std::size_t BlockExecutor::application_count() const {
  return program_->tasks.size();
}
std::int64_t BlockExecutor::flops() const {
  return program_->flops;
}
std::int64_t BlockExecutor::estimated_peak_memory_bytes() const {
  return program_->memory.peak_bytes;
}
void BlockExecutor::release_memory() const {
  pool_->clear();
}

BufferMap BlockExecutor::run(BufferMap inputs) const {
  return execute(std::move(inputs), nullptr, nullptr);
}

BlockExecutor::Measured BlockExecutor::run_measured(BufferMap inputs, RunProgress* progress) const {
  Measured out;
  out.buffers = execute(std::move(inputs), &out.metrics, progress);
  return out;
}

namespace {

// Moves the graph inputs into the run (every one given, nothing else) before any work starts.
void bind_inputs(const ir::Graph& graph, BufferMap inputs, RunState& state) {
  const detail::BlockProgram& p = state.program;
  for (std::uint32_t s = 0; s < p.slots.size(); ++s) {
    const detail::BufferSlot& slot = p.slots[s];
    auto given = inputs.find(slot.tensor);
    if (!slot.input) {
      if (given != inputs.end()) {
        throw Error(fmt::format("tensor '{}' is computed by the graph; it cannot be an input",
                                tensor_name(graph, slot.tensor)));
      }
      continue;
    }
    if (given == inputs.end()) {
      throw Error(fmt::format("input tensor '{}' has no buffer", tensor_name(graph, slot.tensor)));
    }
    state.buffers[s] = bind_buffer(graph, slot.tensor, std::move(given->second));
    state.base[s] = state.buffers[s]->bytes();
    inputs.erase(given);
    state.add_live(slot.bytes);
  }
  if (!inputs.empty()) {
    throw Error(fmt::format("a buffer is given for node #{}, which is not a tensor of the graph",
                            inputs.begin()->first.index()));
  }
}

// Runs every task on `arena`: the roots first, then each task as soon as the last of its
// producers finishes.
void run_tasks(RunState& state, tbb::task_arena& arena) {
  const detail::BlockProgram& p = state.program;
  try {
    arena.execute([&] {
      const auto body = [&](std::uint32_t t, tbb::feeder<std::uint32_t>& feeder) {
        tsan_acquire(&g_tsan_setup);   // before touching anything the caller prepared
        const TsanReleaseOnExit done;  // also when the task throws: the caller reads after it
        // Keeps BLAS single-threaded on this pool thread (a thread-local check after the first
        // call; simpler than a TBB task_scheduler_observer).
        limit_library_threads_to_one();
        (void)state.pending[t].load(std::memory_order_acquire);  // every producer of t
        state.run_task(t);
        for (std::uint32_t k = p.dependents_first[t]; k < p.dependents_first[t + 1]; ++k) {
          const std::uint32_t d = p.dependents[k];
          if (state.pending[d].fetch_sub(1, std::memory_order_acq_rel) == 1) feeder.add(d);
        }
      };
      tsan_release(&g_tsan_setup);  // after `body` is made: tasks read its captures
      tbb::parallel_for_each(p.roots.begin(), p.roots.end(), body);
    });
  } catch (...) {
    tsan_acquire(&g_tsan_done);  // the failed run's tasks are over too
    throw;
  }
  tsan_acquire(&g_tsan_done);
}

}  // namespace

BufferMap BlockExecutor::execute(BufferMap inputs, RunMetrics* metrics,
                                 RunProgress* progress) const {
  const detail::BlockProgram& p = *program_;
  RunState state(p, *pool_, poison_);
  state.progress = progress;
  bind_inputs(graph_, std::move(inputs), state);
  if (metrics != nullptr) state.records.resize(p.tasks.size());
  state.start = Clock::now();
  run_tasks(state, *threads_pool_->arena);
  const double wall_s = std::chrono::duration<double>(Clock::now() - state.start).count();

  BufferMap result;  // the inputs and outputs; intermediates went back to the pool
  for (std::uint32_t s = 0; s < p.slots.size(); ++s) {
    const detail::BufferSlot& slot = p.slots[s];
    if (slot.output && !state.buffers[s]) state.allocate(s);  // an output nobody writes: empty
    if (state.buffers[s]) result.emplace(slot.tensor, std::move(*state.buffers[s]));
  }
  if (metrics != nullptr) *metrics = make_metrics(p, state, wall_s, threads_);
  return result;
}

}  // namespace tapestry::runtime
