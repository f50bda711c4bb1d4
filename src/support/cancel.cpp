#include "tapestry/support/cancel.h"

namespace tapestry::support {

namespace {

thread_local const CancelAt* innermost = nullptr;

}  // namespace

CancelAt::CancelAt(std::chrono::steady_clock::time_point deadline)
    : previous_(innermost), deadline_(deadline) {
  innermost = this;
}

CancelAt::~CancelAt() {
  innermost = previous_;
}

void check_cancelled() {
  if (innermost != nullptr && std::chrono::steady_clock::now() >= innermost->deadline_) {
    throw Cancelled();
  }
}

}  // namespace tapestry::support
