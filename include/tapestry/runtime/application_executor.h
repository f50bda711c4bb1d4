// ApplicationExecutor: runs each Application (shard) over its own box, sequentially.
//
// Every Application of an application-dialect graph is run once, in the order of
// schedule_applications(), by calling its operation's kernel with `index` = the application's
// IPFIndex sub-box and the views of its own selections (each must equal IPF(sub-box)). The
// same reference kernels as the naive executor are used, so with no reduction split the result
// is bitwise identical to NaiveExecutor's — the proof obligation of docs/design.md §7, checked in
// tests/runtime/application_executor_test.cpp. (The fast, parallel block executor is separate.)
//
//   ApplicationExecutor sharded(app_graph);      // schedules once; Error on unknown kernels
//   BufferMap a = sharded.run(inputs);
//   BufferMap b = NaiveExecutor(app_graph).run(inputs);
//   compare_tensors(app_graph, a, b).all_bitwise_equal()
//
// An operation with a non-empty index and no applications is an Error (its outputs would never
// be written); lowering must give every operation its applications.
#pragma once

#include <vector>

#include "tapestry/runtime/application_schedule.h"
#include "tapestry/runtime/executor.h"

namespace tapestry::runtime {

class ApplicationExecutor final : public Executor {
 public:
  /// Checks dtypes and tags, schedules the applications and resolves every kernel; Error naming
  /// the node on failure.
  explicit ApplicationExecutor(const ir::Graph& graph,
                               const ExecutableKernels& kernels = ExecutableKernels::reference());

  [[nodiscard]] BufferMap run(BufferMap inputs) const override;

  [[nodiscard]] const ApplicationSchedule& schedule() const { return schedule_; }

 private:
  const ir::Graph& graph_;
  ApplicationSchedule schedule_;
  std::vector<KernelFn> kernels_;  // parallel to schedule_.applications
};

}  // namespace tapestry::runtime
