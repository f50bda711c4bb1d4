#include "tapestry/support/assert.h"

#include <cstdio>
#include <cstdlib>

namespace tapestry::detail {

void assertion_failed(const char* condition, const char* message, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: internal error: assertion `%s` failed: %s\n", file, line, condition,
               message);
  std::fflush(stderr);
  std::abort();
}

}  // namespace tapestry::detail
