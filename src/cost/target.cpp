// Target queries, target files and the presets compiled into the binary. The JSON form is read
// and written in target_reader.cpp.
#include "tapestry/cost/target.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "preset_texts.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"

namespace tapestry::cost {

std::optional<std::size_t> Target::find_device(std::string_view name) const {
  for (const Device& device : devices) {
    if (device.name == name) return device.index;
  }
  return std::nullopt;
}

const Link& Target::link_between(std::size_t from, std::size_t to) const {
  TAPESTRY_ASSERT(from < devices.size() && to < devices.size() && from != to,
                  "link_between: two different devices of the target");
  if (devices[from].node == devices[to].node) return intra_node;
  TAPESTRY_ASSERT(inter_node.has_value(), "a target of several nodes has an inter_node link");
  return *inter_node;
}

std::vector<MeshAxis> Target::mesh_axes() const {
  if (!mesh.empty()) return mesh;
  return {MeshAxis{"d", static_cast<std::int64_t>(devices.size())}};
}

std::size_t Target::device_at(std::span<const std::int64_t> coordinate) const {
  const std::vector<MeshAxis> axes = mesh_axes();
  TAPESTRY_ASSERT(coordinate.size() == axes.size(), "one coordinate entry per mesh axis");
  std::int64_t index = 0;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    TAPESTRY_ASSERT(coordinate[i] >= 0 && coordinate[i] < axes[i].size,
                    "a mesh coordinate within its axis");
    index = index * axes[i].size + coordinate[i];
  }
  return static_cast<std::size_t>(index);
}

Target read_target_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open target file", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_target(text.str(), path.string());
}

std::optional<Target> preset_target(std::string_view name) {
  for (const detail::PresetText& preset : detail::preset_texts()) {
    if (preset.name == name) {
      return parse_target(preset.text, fmt::format("targets/{}.json", preset.name));
    }
  }
  return std::nullopt;
}

std::vector<std::string> preset_target_names() {
  std::vector<std::string> names;
  for (const detail::PresetText& preset : detail::preset_texts()) {
    names.emplace_back(preset.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Target resolve_target(std::string_view spec) {
  const std::filesystem::path path{std::string(spec)};
  std::error_code ec;
  const bool is_file = std::filesystem::is_regular_file(path, ec);
  if (is_file || spec.find('/') != std::string_view::npos || spec.ends_with(".json")) {
    return read_target_file(path);
  }
  if (std::optional<Target> preset = preset_target(spec)) return *std::move(preset);
  throw Error(fmt::format("unknown target \"{}\": no such file, and the presets are {}", spec,
                          fmt::join(preset_target_names(), ", ")));
}

}  // namespace tapestry::cost
