// Shared by the libFuzzer harnesses of tests/fuzz (docs/reliability.md).
//
// A harness is one `LLVMFuzzerTestOneInput` over one loader. Bad input is the normal case: a
// loader answers it with tapestry::Error (or issues as data), which the harness swallows.
// Everything else is a finding: a crash, an ASan/UBSan report, an exception of another type
// escaping (it reaches std::terminate), a failed TAPESTRY_ASSERT, or a failed FUZZ_CHECK — the
// properties a harness checks on inputs the loader accepted (round trips, validity by
// construction).
//
// The same files build two ways: with libFuzzer (the `fuzz` preset, `make fuzz`) and, in every
// ordinary build, with replay_main.cpp, which feeds each file of the committed corpus and
// regression folders to the entry point once (ctest `fuzz_replay.<name>`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tapestry/support/error.h"

namespace tapestry::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void check_failed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", file, line, condition);
  std::abort();
}

}  // namespace tapestry::fuzz

// A property of accepted input; active in every build (unlike TAPESTRY_ASSERT).
#define FUZZ_CHECK(condition)                                                         \
  do {                                                                                \
    if (!(condition)) ::tapestry::fuzz::check_failed(#condition, __FILE__, __LINE__); \
  } while (false)
