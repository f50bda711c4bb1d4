// TAPESTRY_ASSERT: internal invariants (docs/design.md §8, channel 1).
//
// A failed assertion is a bug in Tapestry, never a consequence of user input: it prints the
// condition, the message, and the source location, then aborts. Active when the build defines
// TAPESTRY_ENABLE_ASSERTIONS (debug and CI presets); compiled out in `release`.
//
//   TAPESTRY_ASSERT(rank <= kInlineRank || heap_ != nullptr, "inline storage overflow");
#pragma once

namespace tapestry::detail {
[[noreturn]] void assertion_failed(const char* condition, const char* message, const char* file,
                                   int line);
}  // namespace tapestry::detail

#if defined(TAPESTRY_ENABLE_ASSERTIONS)
#define TAPESTRY_ASSERT(condition, message)                                            \
  do {                                                                                 \
    if (!(condition)) [[unlikely]]                                                     \
      ::tapestry::detail::assertion_failed(#condition, (message), __FILE__, __LINE__); \
  } while (false)
#else
#define TAPESTRY_ASSERT(condition, message) \
  do {                                      \
    (void)sizeof(condition);                \
  } while (false)
#endif
