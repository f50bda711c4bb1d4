// Fuzz harness: the bytes of a `.npy` file → the runtime's reader (parse_npy, the in-memory
// form of read_npy). An array that reads must write back to the same bytes' meaning: format_npy
// then parse_npy gives the same dtype, range and data.
#include <cstring>
#include <string>

#include "fuzz_support.h"
#include "tapestry/runtime/npy.h"

using namespace tapestry;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const runtime::Buffer buffer = runtime::parse_npy(fuzz::as_text(data, size), "fuzz.npy");
    const runtime::Buffer again = runtime::parse_npy(runtime::format_npy(buffer), "again.npy");
    FUZZ_CHECK(again.dtype() == buffer.dtype() && again.range() == buffer.range());
    FUZZ_CHECK(again.size_bytes() == buffer.size_bytes());
    FUZZ_CHECK(buffer.size_bytes() == 0 ||
               std::memcmp(again.bytes(), buffer.bytes(), buffer.size_bytes()) == 0);
  } catch (const Error&) {
    // Bad input, reported as it should be.
  }
  return 0;
}
