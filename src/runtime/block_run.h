// The state of one run of a compiled BlockProgram (block_program.h), shared by the executors
// that run one: the block executor (block_executor.h) and the MPI executor (mpi_executor.h),
// which runs a rank's part of the program and moves boxes between ranks around it.
//
// A run keeps, per buffer slot, the buffer (allocated once, by the first writer to start, under
// std::call_once) and a countdown of the tasks still to touch it; per task, a countdown of the
// tasks it waits for. The acquire/release countdowns order every kernel's reads after the
// writes they depend on, and a buffer's allocation before any use.
//
// Concurrency: run_kernel / finish_task of different tasks, allocate and release may run on
// any threads at once; binding inputs and reading the results happen before and after.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "block_program.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/run_metrics.h"

namespace tapestry::runtime::detail {

/// Buffers kept between the runs of one executor, by dtype and shape (a freed intermediate is
/// reused by the next tensor of the same kind, in this run or the next). Thread-safe.
class BufferPool {
 public:
  Buffer take(DType dtype, const Range& range);
  void give(Buffer buffer);
  void clear();

 private:
  struct Key {
    DType dtype;
    Point shape;
    bool operator<(const Key& other) const;
  };
  std::mutex mutex_;
  std::multimap<Key, Buffer> free_;
};

using Clock = std::chrono::steady_clock;

struct TaskRecord {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t thread = 0;
  std::uint64_t fallbacks = 0;               // calls handed to the reference kernels
  KernelPath path = KernelPath::kReference;  // what computed it (kernel_path.h)
};

struct RunState {
  const BlockProgram& program;
  BufferPool& pool;
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

  RunState(const BlockProgram& p, BufferPool& pool_, bool poison_);

  void add_live(std::int64_t bytes);
  /// Allocates slot `s` once (the first caller wins; later ones see its buffer).
  void allocate(std::uint32_t s);
  /// One use of slot `s` is over; the last one frees an intermediate back to the pool.
  void release(std::uint32_t s);
  /// Allocates what task `t` writes and runs its kernel (timed when measuring); an Error names
  /// the application.
  void run_kernel(std::uint32_t t);
  /// Releases what task `t` touched and counts it as done.
  void finish_task(std::uint32_t t);
  void run_task(std::uint32_t t) {
    run_kernel(t);
    finish_task(t);
  }
};

/// Moves the graph inputs into the run before any work starts: every input slot in `needed`
/// (all of them when null) must be given; a given buffer for a slot not needed is dropped; a
/// buffer for a tensor that is not an input is an Error.
void bind_inputs(const ir::Graph& graph, BufferMap inputs, RunState& state,
                 const std::vector<char>* needed = nullptr);

/// The metrics of a finished, measured run.
RunMetrics make_metrics(const BlockProgram& p, const RunState& state, double wall_s, int threads);

}  // namespace tapestry::runtime::detail
