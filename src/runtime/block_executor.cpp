// BlockExecutor: the compiled program run on a oneTBB arena (see block_executor.h).
//
// A run's state (buffers, countdowns: block_run.h) is driven by tbb::parallel_for_each from the
// roots; each finished task feeds the dependents whose countdown reaches zero.
#include "tapestry/runtime/block_executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for_each.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_scheduler_observer.h>
#if defined(__linux__)
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#include "block_program.h"
#include "block_run.h"
#include "run_support.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/memory_budget.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime {

using detail::Clock;
using detail::RunState;

namespace {

// Debian's libtbb.so is not built with ThreadSanitizer, so TSan cannot see the happens-before
// edges TBB creates when it hands a task (and the body object it captures) to another thread or
// waits for one. Under TSan the executor declares the edges its correctness rests on, and no
// others: the run's setup before every task (one release by the caller, an acquire at the start
// of each task), each producer before its dependents (the acquire/release countdowns, which TSan
// does see), every task before the caller's use of the results, and the thread pool's observer
// (ThreadPool::WorkerObserver) made before its callbacks. Elsewhere these are no-ops. The run's
// edges use the addresses of two globals: a task cannot read anything the caller made — not even a
// captured pointer — before its acquire.
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

// Releases `address` (by default g_tsan_done, when a task ends) on leaving the scope, normally
// or by an exception.
class TsanReleaseOnExit {
 public:
  explicit TsanReleaseOnExit(void* address = &g_tsan_done) : address_(address) {}
  TsanReleaseOnExit(const TsanReleaseOnExit&) = delete;
  TsanReleaseOnExit& operator=(const TsanReleaseOnExit&) = delete;
  ~TsanReleaseOnExit() { tsan_release(address_); }

 private:
  void* address_;
};

}  // namespace

namespace detail {

/// A TBB arena of `threads` threads, one per thread count for the whole process (shared_pool):
/// a run on a fresh arena pays for its workers joining it, which shows on runs of a few
/// milliseconds, and oneTBB 2021.8 (Debian 12) loses workers when arenas come and go: after ten
/// 2-thread arenas were made, run briefly and destroyed, a new arena's tasks all ran on the
/// calling thread, although two 30 ms tasks were waiting (a process that makes an executor per
/// run — Python's Graph.run, a test binary — ran serially from then on). An arena destroyed 20 ms
/// after its workers left did not show it; one kept for the process's life cannot. TBB caps its
/// workers at the hardware concurrency unless told otherwise; `allow` honours more threads
/// (oversubscription is the caller's choice, and tests use it to shake out races).
///
/// Workers off the caller's core (Linux): when a worker thread first joins the arena, the run
/// that follows restricts it to the process's CPUs minus the one the calling thread is on. The
/// kernel may wake an idle worker on its waker's core when it judges that core cache-hot; the
/// caller then keeps that core busy with the run's first tasks and the worker waits, so runs of
/// under a millisecond stayed on one thread in most processes (`tapestry run --repeat` of
/// convnet's two-shard plan: every application on the caller's thread, 0.47–0.62 ms; with the
/// workers kept off: both threads, 0.31–0.39 ms; docs/runtime.md). Set once per worker, not per
/// run: moving a worker between cores every run costs it its caches.
///
/// Never destroyed (shared_pool keeps it): so its observer stays registered, and TBB's record of
/// it (an observer_proxy, which a worker in the arena references from TBB's own allocator, where
/// LeakSanitizer cannot look) stays reachable from the observer.
struct ThreadPool {
  explicit ThreadPool(int threads) {
    if (threads > tbb::this_task_arena::max_concurrency()) {
      allow.emplace(tbb::global_control::max_allowed_parallelism,
                    static_cast<std::size_t>(threads));
    }
    arena.emplace(threads);
    if (threads > 1) {
      arena->initialize();
      observer.emplace(*this);
    }
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// On the calling thread before a run: workers that joined since the last call are kept off
  /// the caller's current core.
  void place_new_workers() {
#if defined(__linux__)
    // Most runs find no new worker: an atomic check keeps them off the mutex.
    if (!has_new_workers.load(std::memory_order_acquire)) return;
    const std::lock_guard<std::mutex> lock(mutex);
    has_new_workers.store(false, std::memory_order_relaxed);
    if (new_workers.empty()) return;
    const int cpu = sched_getcpu();
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (cpu >= 0 && sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
      CPU_CLR(cpu, &allowed);
      if (CPU_COUNT(&allowed) > 0) {  // one core: nothing to keep apart
        for (const pid_t tid : new_workers) (void)sched_setaffinity(tid, sizeof allowed, &allowed);
      }
    }
    placed.insert(placed.end(), new_workers.begin(), new_workers.end());
    new_workers.clear();
#endif
  }

  // Notes the worker threads that join the arena (their kernel thread ids). TBB calls it under
  // its own locks, in libtbb.so, which ThreadSanitizer does not see: the tsan_release/
  // tsan_acquire pair on the observer declares the edge those locks make — its construction
  // before every callback.
  struct WorkerObserver : tbb::task_scheduler_observer {
    explicit WorkerObserver(ThreadPool& pool)
        : tbb::task_scheduler_observer(*pool.arena), pool_(pool) {
      tsan_release(this);
      observe(true);
    }
    void on_scheduler_entry(bool worker) override {
      tsan_acquire(this);
      if (!worker) return;
#if defined(__linux__)
      const std::lock_guard<std::mutex> lock(pool_.mutex);
      const auto tid = static_cast<pid_t>(syscall(SYS_gettid));
      for (const std::vector<pid_t>* seen : {&pool_.placed, &pool_.new_workers}) {
        if (std::find(seen->begin(), seen->end(), tid) != seen->end()) return;
      }
      pool_.new_workers.push_back(tid);
      pool_.has_new_workers.store(true, std::memory_order_release);
#endif
    }
    ThreadPool& pool_;
  };

  std::optional<tbb::global_control> allow;
  std::optional<tbb::task_arena> arena;
  std::mutex mutex;  // guards the two lists
#if defined(__linux__)
  std::vector<pid_t> placed;                 // workers already kept off the caller's core
  std::vector<pid_t> new_workers;            // joined since the last run began
  std::atomic<bool> has_new_workers{false};  // new_workers may be non-empty
#endif
  std::optional<WorkerObserver> observer;  // last: it reads the members above
};

// The process's pool of `threads` threads, made on first use (ThreadPool says why it is shared
// and never destroyed: the map is reachable from a static, so LeakSanitizer does not count it).
ThreadPool& shared_pool(int threads) {
  static std::mutex mutex;
  static auto* const pools = new std::map<int, std::unique_ptr<ThreadPool>>;
  const std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<ThreadPool>& pool = (*pools)[threads];
  if (!pool) pool = std::make_unique<ThreadPool>(threads);
  return *pool;
}

}  // namespace detail

void run_on_threads(int threads, const std::function<void()>& f) {
  if (threads <= 0) threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  detail::shared_pool(threads).arena->execute(f);
}

BlockExecutor::BlockExecutor(const ir::Graph& graph, BlockExecutorOptions options)
    : graph_(graph),
      threads_(options.threads > 0
                   ? options.threads
                   : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()))),
      poison_(options.poison),
      pool_(std::make_unique<detail::BufferPool>()),
      threads_pool_(&detail::shared_pool(threads_)) {
  const ExecutableKernels& kernels = options.kernels != nullptr ? *options.kernels : fast_kernels();
  program_ = std::make_unique<const detail::BlockProgram>(
      detail::compile_block_program(graph, kernels, detail::SlotPieces::kRows));
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

// Runs every task on `arena`: the roots first, then each task as soon as the last of its
// producers finishes. On one thread, the tasks run on the caller in the program's order instead
// — the order the memory estimate (estimate_sequential_memory) assumes. TBB's feeder would run
// them depth-first (a shard's consumer before the shard's sibling), allocating a consumer's
// output while its producer's inputs were still live: the ResNet bottleneck's batch plan
// measured 62.0 MiB against its estimate of 55.4 MiB that way.
void run_tasks(RunState& state, tbb::task_arena& arena, int threads) {
  const detail::BlockProgram& p = state.program;
  if (threads == 1) {
    limit_library_threads_to_one();
    for (const std::uint32_t t : p.order) state.run_task(t);
    return;
  }
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
  detail::bind_inputs(graph_, std::move(inputs), state);
  if (metrics != nullptr) state.records.resize(p.tasks.size());
  threads_pool_->place_new_workers();
  state.start = Clock::now();
  run_tasks(state, *threads_pool_->arena, threads_);
  const double wall_s = std::chrono::duration<double>(Clock::now() - state.start).count();

  BufferMap result;  // the inputs and outputs; intermediates went back to the pool
  for (std::uint32_t s = 0; s < p.slots.size(); ++s) {
    const detail::BufferSlot& slot = p.slots[s];
    if (slot.output && !state.buffers[s]) state.allocate(s);  // an output nobody writes: empty
    if (state.buffers[s]) result.emplace(slot.tensor, std::move(*state.buffers[s]));
  }
  if (metrics != nullptr) *metrics = detail::make_metrics(p, state, wall_s, threads_);
  return result;
}

}  // namespace tapestry::runtime
