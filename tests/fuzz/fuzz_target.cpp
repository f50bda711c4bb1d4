// Fuzz harness: target JSON → cost::parse_target; an accepted target round-trips through its
// JSON text, describes itself, and answers its queries for every device and mesh corner.
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "tapestry/cost/target.h"

using namespace tapestry;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const cost::Target target = cost::parse_target(fuzz::as_text(data, size), "fuzz.json");
    FUZZ_CHECK(!target.devices.empty());
    FUZZ_CHECK(cost::parse_target(cost::target_json_text(target), "again.json") == target);
    FUZZ_CHECK(!cost::describe_target(target).empty());
    for (const cost::Device& device : target.devices) {
      FUZZ_CHECK(target.find_device(device.name) == device.index);
      if (device.index != 0) (void)target.link_between(0, device.index);
    }
    std::vector<std::int64_t> last;
    for (const cost::MeshAxis& axis : target.mesh_axes()) last.push_back(axis.size - 1);
    FUZZ_CHECK(target.device_at(last) == target.devices.size() - 1);
  } catch (const Error&) {
    // Bad input, reported as it should be.
  }
  return 0;
}
