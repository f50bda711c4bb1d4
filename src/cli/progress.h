// A progress line on stderr while a long run executes:
//
//   [run] 1843/4096 applications  45%  231.4 GFLOP/s
//
// It appears only after the run has taken a second, only when stderr is a terminal, and never
// with --quiet; it is redrawn in place (\r) four times a second and erased when the run ends.
//
//   runtime::RunProgress progress;
//   {
//     ProgressLine line(progress, executor.application_count(), !options.quiet);
//     result = executor.run_measured(inputs, &progress);
//   }                                        // the destructor stops and erases the line
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "tapestry/runtime/block_executor.h"

namespace tapestry::cli {

class ProgressLine {
 public:
  /// Starts the reporter thread when `enabled` and stderr is a terminal.
  ProgressLine(const runtime::RunProgress& progress, std::uint64_t total, bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

 private:
  void report();

  const runtime::RunProgress& progress_;
  std::uint64_t total_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  bool drawn_ = false;
  std::thread thread_;
};

}  // namespace tapestry::cli
