// Target lookups (target.h). Parsing and presets live here too.
#include "tapestry/cost/target.h"

#include "tapestry/support/assert.h"

namespace tapestry::cost {

std::optional<std::size_t> Target::find_device(std::string_view name) const {
  for (const Device& d : devices) {
    if (d.name == name) return d.index;
  }
  return std::nullopt;
}

const Link& Target::link_between(std::size_t from, std::size_t to) const {
  TAPESTRY_ASSERT(from < devices.size() && to < devices.size() && from != to,
                  "link_between needs two different devices of the target");
  if (devices[from].node == devices[to].node) return intra_node;
  TAPESTRY_ASSERT(inter_node.has_value(), "a target with several nodes has an inter_node link");
  return *inter_node;
}

std::vector<MeshAxis> Target::mesh_axes() const {
  if (!mesh.empty()) return mesh;
  return {MeshAxis{"d", static_cast<std::int64_t>(devices.size())}};
}

std::size_t Target::device_at(std::span<const std::int64_t> coordinate) const {
  const std::vector<MeshAxis> axes = mesh_axes();
  TAPESTRY_ASSERT(coordinate.size() == axes.size(), "one mesh coordinate per axis");
  std::int64_t device = 0;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    TAPESTRY_ASSERT(coordinate[a] >= 0 && coordinate[a] < axes[a].size,
                    "mesh coordinate inside the mesh");
    device = device * axes[a].size + coordinate[a];
  }
  return static_cast<std::size_t>(device);
}

}  // namespace tapestry::cost
