// BlockExecutor: runs an application graph as a dependency DAG on a oneTBB thread pool.
//
// Construction compiles the graph once into a program (the run-independent part of every run):
//   * one task per Application: its kernel, its index box, and a ready-made KernelCall whose
//     views only lack their buffer's base address (each selection is checked against
//     IPF(index) here, once, not per run);
//   * the task DAG from box intersections (application_schedule.h; O(n + dependencies)): a task
//     starts as soon as every box it reads has been written;
//   * a buffer per tensor with its lifetime: allocated when its first writer starts, freed when
//     the last application touching it finishes (graph outputs are kept, inputs are the
//     caller's), and the peak of that schedule run sequentially in topological order — the
//     program's memory estimate, checked against `memory_limit_bytes` and the machine's
//     physical memory before anything runs (memory_budget.h computes the same estimate from
//     the graph alone, before inputs exist).
// A run then only allocates buffers (from a pool the executor keeps between runs; the TBB arena
// of `threads` threads is kept too), pushes the
// ready tasks into tbb::parallel_for_each and, as each finishes, the tasks it unblocks; per-task
// overhead is a few hundred nanoseconds (bench/dispatch_bench).
//
//   BlockExecutor exec(app_graph, {.threads = 2});            // fast kernels by default
//   auto [buffers, metrics] = exec.run_measured(inputs);
//   BufferMap reference = NaiveExecutor(app_graph).run(inputs);
//   compare_tensors(app_graph, buffers, reference, tolerance)  // see compare.h
//
// With `ExecutableKernels::reference()` the result is bitwise identical to ApplicationExecutor's:
// each cell is computed by one application with the same kernel, whatever the thread order.
// Kernels run concurrently only on disjoint output boxes (the DAG orders every read after the
// writes it needs, and writes never intersect — checked at construction).
//
// Errors: construction throws tapestry::Error for what schedule_applications rejects, unknown
// kernels, selections that disagree with their IPFs, and an estimate above the memory limit or
// the physical memory (naming the estimate, the limit and the largest live tensors at the
// peak); `run` throws the first kernel Error, with the application's name as context.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "tapestry/runtime/executor.h"
#include "tapestry/runtime/run_metrics.h"

namespace tapestry::runtime {

namespace detail {
struct BlockProgram;
class BufferPool;
struct ThreadPool;
}  // namespace detail

/// Counters a run updates as applications finish; poll them from another thread (progress).
struct RunProgress {
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::int64_t> flops{0};
};

struct BlockExecutorOptions {
  /// Pool threads (≥ 1); 0 means one per hardware thread.
  int threads = 0;
  /// Kernels to run; nullptr means fast_kernels() (fast_kernels.h).
  const ExecutableKernels* kernels = nullptr;
  /// When > 0, construction fails if the estimated peak memory exceeds it (it always fails
  /// when the estimate exceeds the machine's physical memory).
  std::int64_t memory_limit_bytes = 0;
  /// Fill each tensor buffer with NaN (lowest integer) before its writers run, as the reference
  /// executors do, so an unwritten cell shows; costs one pass over memory per tensor.
  bool poison = false;
};

class BlockExecutor final : public Executor {
 public:
  /// Compiles `graph` (which must outlive the executor and stay unchanged); see the file comment.
  explicit BlockExecutor(const ir::Graph& graph, BlockExecutorOptions options = {});
  ~BlockExecutor() override;
  BlockExecutor(const BlockExecutor&) = delete;
  BlockExecutor& operator=(const BlockExecutor&) = delete;

  /// Runs the graph; `inputs` must hold exactly the graph inputs (executor.h).
  [[nodiscard]] BufferMap run(BufferMap inputs) const override;

  struct Measured {
    BufferMap buffers;
    RunMetrics metrics;
  };
  /// Runs and measures every application; `progress`, when given, is updated as tasks finish.
  [[nodiscard]] Measured run_measured(BufferMap inputs, RunProgress* progress = nullptr) const;

  [[nodiscard]] std::size_t application_count() const;
  /// Total FLOPs of one run (run_metrics.h's model).
  [[nodiscard]] std::int64_t flops() const;
  /// Peak memory of the sequential schedule: inputs + live buffers, in bytes.
  [[nodiscard]] std::int64_t estimated_peak_memory_bytes() const;
  [[nodiscard]] int threads() const { return threads_; }
  /// Frees the buffers kept for reuse between runs.
  void release_memory() const;

 private:
  BufferMap execute(BufferMap inputs, RunMetrics* metrics, RunProgress* progress) const;

  const ir::Graph& graph_;
  int threads_ = 1;
  bool poison_ = false;
  std::unique_ptr<const detail::BlockProgram> program_;
  std::unique_ptr<detail::BufferPool> pool_;
  detail::ThreadPool* threads_pool_;  // the process's TBB arena of threads_ threads (shared)
};

/// Runs `f` on the process's oneTBB arena of `threads` threads (≥ 1; 0: one per hardware
/// thread), the one a BlockExecutor of that many threads runs on, and returns when it returns:
/// parallel loops inside `f` (the verifier's naive run and oracle) use those threads.
void run_on_threads(int threads, const std::function<void()>& f);

}  // namespace tapestry::runtime
