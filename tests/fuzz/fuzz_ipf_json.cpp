// Fuzz harness: the JSON forms of zspace values (`--ipf` of `tapestry project`, and the IPFs,
// ranges and points inside loom graphs) → zspace::parse_json_text, then zspace::*_from_json. A
// value that reads writes back to the same JSON; an IPF that reads is applied to a point and a
// range of its input rank, as `tapestry project` does (overflow must be an Error, never UB).
#include <cstdint>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "tapestry/zspace/json.h"

using namespace tapestry;  // NOLINT

namespace {

template <typename Read>
void round_trip(const nlohmann::json& json, Read read) {
  try {
    const auto value = read(json);
    FUZZ_CHECK(read(zspace::to_json(value)) == value);
  } catch (const Error&) {
  }
}

// Applies `ipf` to a point and to a range of its index rank, once small and once near the
// int64 limits (where every product and sum must be checked).
void apply(const zspace::IndexProjection& ipf, std::int64_t low, std::int64_t high) {
  const std::size_t rank = ipf.index_rank();
  std::vector<std::int64_t> start(rank, low), end(rank, high);
  try {
    (void)ipf.apply(zspace::Point(std::span<const std::int64_t>(end)));
  } catch (const Error&) {
  }
  try {
    (void)ipf.apply(zspace::Range(zspace::Point(std::span<const std::int64_t>(start)),
                                  zspace::Point(std::span<const std::int64_t>(end))));
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  nlohmann::json json;
  try {
    json = zspace::parse_json_text(fuzz::as_text(data, size), "fuzz.json");
  } catch (const Error&) {
    return 0;
  }
  round_trip(json, zspace::point_from_json);
  round_trip(json, zspace::range_from_json);
  round_trip(json, zspace::affine_map_from_json);
  round_trip(json, zspace::index_projection_from_json);
  try {
    const zspace::IndexProjection ipf = zspace::index_projection_from_json(json);
    apply(ipf, -3, 5);
    apply(ipf, std::numeric_limits<std::int64_t>::min() / 2,
          std::numeric_limits<std::int64_t>::max() / 2);
  } catch (const Error&) {
  }
  return 0;
}
