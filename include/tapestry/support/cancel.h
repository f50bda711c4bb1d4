// Cancellation at a deadline: long computations (lowering, placement, the cost model's list
// scheduler) call check_cancelled() in their loops, and a caller that must stop at a deadline
// — the search's time budget (search/optimize.h) — opens a CancelAt scope on the thread that
// runs them. Once the deadline has passed, the next check throws support::Cancelled, which
// unwinds to the scope's owner: the pricing under way is abandoned, not finished seconds later.
//
//   {
//     support::CancelAt scope(deadline);  // this thread, until the scope closes
//     cost = evaluator.evaluate(plan);    // throws support::Cancelled once `deadline` passed
//   }
//
// Cancelled is not a tapestry::Error: no `catch (const Error&)` — a rewrite refusing a plan, the
// Evaluator falling back to its reference path — mistakes it for an answer about the plan.
// Without a scope on the thread check_cancelled() is a thread-local read; with one, a clock read.
// Code that keeps state across calls checks only where the state is whole (a memo entry is
// stored after the work that builds it, never half-built).
#pragma once

#include <chrono>
#include <exception>

namespace tapestry::support {

class Cancelled : public std::exception {
 public:
  [[nodiscard]] const char* what() const noexcept override {
    return "cancelled: the deadline passed before the work finished";
  }
};

class CancelAt {
 public:
  /// check_cancelled() on this thread throws Cancelled from `deadline` on, until this scope
  /// closes (the scope it was opened in, if any, applies again then).
  explicit CancelAt(std::chrono::steady_clock::time_point deadline);
  ~CancelAt();
  CancelAt(const CancelAt&) = delete;
  CancelAt& operator=(const CancelAt&) = delete;

 private:
  const CancelAt* previous_;
  std::chrono::steady_clock::time_point deadline_;
  friend void check_cancelled();
};

/// Throws Cancelled when this thread is in a CancelAt scope whose deadline has passed.
void check_cancelled();

}  // namespace tapestry::support
