// Fuzz harness: the text forms of index points and ranges (`--index 'zr[0:3, 0:3]'`, `(1, 2)`)
// → zspace::parse_range / parse_point. What parses prints back to text that parses to the same
// value.
#include <string>

#include <fmt/format.h>

#include "fuzz_support.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/text.h"

using namespace tapestry;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  try {
    const zspace::Range range = zspace::parse_range(text);
    FUZZ_CHECK(zspace::parse_range(fmt::format("{}", range)) == range);
  } catch (const Error&) {
  }
  try {
    const zspace::Point point = zspace::parse_point(text);
    FUZZ_CHECK(zspace::parse_point(fmt::format("{}", point)) == point);
  } catch (const Error&) {
  }
  return 0;
}
