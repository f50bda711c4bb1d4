// ProgressLine: a reporter thread polling RunProgress (see progress.h).
#include "progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

namespace tapestry::cli {

ProgressLine::ProgressLine(const runtime::RunProgress& progress, std::uint64_t total, bool enabled)
    : progress_(progress), total_(total) {
  if (enabled && ::isatty(STDERR_FILENO) == 1) thread_ = std::thread([this] { report(); });
}

ProgressLine::~ProgressLine() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  thread_.join();
}

void ProgressLine::report() {
  using namespace std::chrono_literals;
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  if (stop_.wait_for(lock, 1s, [this] { return stopping_; })) return;  // short runs stay quiet
  for (;;) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::uint64_t done = progress_.done.load(std::memory_order_relaxed);
    const double gflops =
        static_cast<double>(progress_.flops.load(std::memory_order_relaxed)) / seconds / 1e9;
    fmt::print(stderr, "\r[run] {}/{} applications  {:3.0f}%  {:.1f} GFLOP/s ", done, total_,
               total_ > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0,
               gflops);
    std::fflush(stderr);
    drawn_ = true;
    if (stop_.wait_for(lock, 250ms, [this] { return stopping_; })) break;
  }
  if (drawn_) {
    fmt::print(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

}  // namespace tapestry::cli
