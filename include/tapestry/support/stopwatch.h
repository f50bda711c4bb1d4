// Timing a scope: its wall seconds added to a total.
//
//   double naive_s = 0;
//   {
//     const Stopwatch running(naive_s);
//     run_it();
//   }  // naive_s += the seconds run_it took
#pragma once

#include <chrono>

namespace tapestry {

/// Adds the wall seconds (steady clock) from its construction to its destruction to `total`.
class Stopwatch {
 public:
  explicit Stopwatch(double& total) : total_(total) {}
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;
  ~Stopwatch() { total_ += elapsed(); }

  /// Seconds since construction.
  [[nodiscard]] double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace tapestry
