// Target queries, target files and the presets compiled into the binary. The JSON form is read
// and written in target_reader.cpp.
#include "tapestry/cost/target.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "preset_texts.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"

namespace tapestry::cost {

double DeviceType::efficiency_of(std::string_view kernel) const {
  const auto found = kernels.find(kernel);
  return found != kernels.end() && found->second.efficiency ? *found->second.efficiency
                                                            : efficiency;
}

bool is_gemm_kernel(std::string_view kernel) {
  return kernel == "matmul" || kernel == "linear" || kernel == "linear_nobias";
}

namespace {

// The table interpolated in log FLOPs, clamped at its ends.
double interpolate(const std::vector<GemmEfficiency>& table, double flops) {
  TAPESTRY_ASSERT(!table.empty(), "a GEMM efficiency table to read");
  const auto above = std::find_if(table.begin(), table.end(),
                                  [&](const GemmEfficiency& e) { return e.flops >= flops; });
  if (above == table.begin()) return above->efficiency;
  if (above == table.end()) return table.back().efficiency;
  const GemmEfficiency& below = *(above - 1);
  const double t = std::log(flops / below.flops) / std::log(above->flops / below.flops);
  return below.efficiency + t * (above->efficiency - below.efficiency);
}

}  // namespace

double DeviceType::gemm_efficiency_at(double flops) const {
  return interpolate(gemm_efficiency, flops);
}

double DeviceType::gemm_efficiency_at(double flops, ir::DType dtype) const {
  const auto own = dtype_gemm_efficiency.find(dtype);
  return interpolate(own != dtype_gemm_efficiency.end() ? own->second : gemm_efficiency, flops);
}

double DeviceType::bandwidth_efficiency_of(std::string_view kernel) const {
  const auto found = kernels.find(kernel);
  return found != kernels.end() && found->second.bandwidth_efficiency
             ? *found->second.bandwidth_efficiency
             : bandwidth_efficiency;
}

double DeviceType::dtype_efficiency(ir::DType dtype) const {
  const auto found = dtypes.find(dtype);
  return found != dtypes.end() && found->second.efficiency ? *found->second.efficiency : 1.0;
}

double DeviceType::dtype_bandwidth_efficiency(ir::DType dtype) const {
  const auto found = dtypes.find(dtype);
  return found != dtypes.end() && found->second.bandwidth_efficiency
             ? *found->second.bandwidth_efficiency
             : 1.0;
}

CollectiveRates Link::collective_rates() const {
  if (collective) return *collective;
  return CollectiveRates{bandwidth_Bps, latency_s, std::nullopt};
}

std::optional<std::size_t> Target::find_device(std::string_view name) const {
  if (name.size() > 1 && name[0] == '#') {  // "#3": device 3, whatever its name
    std::size_t index = 0;
    const auto [end, error] = std::from_chars(name.data() + 1, name.data() + name.size(), index);
    if (error != std::errc() || end != name.data() + name.size() || index >= devices.size())
      return std::nullopt;
    return index;
  }
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

namespace {

// 989e12 → "989 T", 3.35e12 → "3.35 T", 5e-6 → "5 µ": three significant digits and a prefix.
std::string si(double value, std::string_view unit) {
  static constexpr std::pair<double, const char*> kPrefixes[] = {
      {1e15, "P"}, {1e12, "T"}, {1e9, "G"},  {1e6, "M"}, {1e3, "k"},
      {1, ""},     {1e-3, "m"}, {1e-6, "µ"}, {1e-9, "n"}};
  if (value == 0) return fmt::format("0 {}", unit);
  for (const auto& [scale, prefix] : kPrefixes) {
    if (value >= scale) return fmt::format("{:.3g} {}{}", value / scale, prefix, unit);
  }
  return fmt::format("{:.3g} {}", value, unit);
}

std::string describe_link(const Link& link) {
  if (link.shared_memory) {
    return fmt::format("shared memory (transfers and collectives free; {} noted)",
                       si(link.bandwidth_Bps, "B/s"));
  }
  std::string out = fmt::format("{} per direction, latency {}", si(link.bandwidth_Bps, "B/s"),
                                si(link.latency_s, "s"));
  if (link.collective) {
    out += fmt::format("; collectives {}, {} per step", si(link.collective->bandwidth_Bps, "B/s"),
                       si(link.collective->step_latency_s, "s"));
    if (link.collective->nvls_bandwidth_Bps) {
      out += fmt::format(", NVLS {}", si(*link.collective->nvls_bandwidth_Bps, "B/s"));
    }
  }
  if (link.power_w > 0) out += fmt::format("; {} per port while busy", si(link.power_w, "W"));
  return out;
}

}  // namespace

std::string describe_target(const Target& t) {
  std::string out = fmt::format("target    {}\n", t.name);
  if (!t.about.empty()) out += fmt::format("about     {}\n", t.about);
  out += fmt::format("devices   {} on {} node{}: {} … {}\n", t.devices.size(), t.node_count,
                     t.node_count == 1 ? "" : "s", t.devices.front().name, t.devices.back().name);
  for (std::size_t i = 0; i < t.device_types.size(); ++i) {
    const DeviceType& d = t.device_types[i];
    const auto per_node = std::count_if(t.devices.begin(), t.devices.end(), [&](const Device& x) {
      return x.type == i && x.node == 0;
    });
    std::vector<std::string> peaks;
    for (const auto& [dtype, flops] : d.peak_flops) {
      peaks.push_back(fmt::format("{} {}", ir::dtype_name(dtype), si(flops, "FLOP/s")));
    }
    out += fmt::format("type      {} ({}), {} per node\n", d.name, d.kind, per_node);
    out += fmt::format("  peak        {}\n", fmt::join(peaks, ", "));
    out += fmt::format("  efficiency  {} of peak, launch {}\n", d.efficiency, si(d.launch_s, "s"));
    out += fmt::format("  memory      {} at {}, {} of it achieved\n",
                       si(static_cast<double>(d.memory_bytes), "B"),
                       si(d.memory_bandwidth_Bps, "B/s"), d.bandwidth_efficiency);
    if (d.cache_bytes > 0) {
      out += fmt::format("  cache       {} at {}\n", si(static_cast<double>(d.cache_bytes), "B"),
                         si(d.cache_bandwidth_Bps, "B/s"));
    }
    out += fmt::format("  power       {} idle, {} busy\n", si(d.idle_w, "W"), si(d.busy_w, "W"));
    const auto points = [](const std::vector<GemmEfficiency>& table) {
      std::vector<std::string> text;
      for (const GemmEfficiency& e : table) {
        text.push_back(fmt::format("{:.3g} at {}", e.efficiency, si(e.flops, "FLOP")));
      }
      return fmt::format("{}", fmt::join(text, ", "));
    };
    if (!d.gemm_efficiency.empty()) {
      out += fmt::format("  gemm        efficiency by FLOPs per call: {}\n",
                         points(d.gemm_efficiency));
    }
    for (const auto& [dtype, table] : d.dtype_gemm_efficiency) {
      out += fmt::format("  gemm        {} efficiency by FLOPs per call: {}\n",
                         ir::dtype_name(dtype), points(table));
    }
    if (d.streams > 1) {
      out += fmt::format("  streams     {} applications of an operation at once\n", d.streams);
    }
    if (d.fused_passes) out += "  fusion      a fused operation's stages as passes over memory\n";
    for (const auto& [kernel, r] : d.kernels) {
      std::vector<std::string> rates;
      if (r.efficiency) rates.push_back(fmt::format("{:.3g} of peak", *r.efficiency));
      if (r.bandwidth_efficiency) {
        rates.push_back(fmt::format("{:.3g} of bandwidth", *r.bandwidth_efficiency));
      }
      out += fmt::format("  kernel      {}: {}\n", kernel, fmt::join(rates, ", "));
    }
    for (const auto& [dtype, r] : d.dtypes) {
      std::vector<std::string> rates;
      if (r.efficiency) rates.push_back(fmt::format("{:.3g} of its efficiency", *r.efficiency));
      if (r.bandwidth_efficiency) {
        rates.push_back(fmt::format("{:.3g} of its bandwidth", *r.bandwidth_efficiency));
      }
      out += fmt::format("  dtype       {} outside GEMMs: {}\n", ir::dtype_name(dtype),
                         fmt::join(rates, ", "));
    }
  }
  out += fmt::format("intra     {}\n", describe_link(t.intra_node));
  if (t.inter_node) out += fmt::format("inter     {}\n", describe_link(*t.inter_node));
  if (t.host) out += fmt::format("host      {}\n", describe_link(*t.host));
  std::vector<std::string> axes;
  for (const MeshAxis& axis : t.mesh_axes())
    axes.push_back(fmt::format("{}={}", axis.name, axis.size));
  out +=
      fmt::format("mesh      {}{}\n", fmt::join(axes, " × "), t.mesh.empty() ? " (default)" : "");
  const auto where = [](Residence r) { return r == Residence::kHost ? "host" : "resident"; };
  out += fmt::format("inputs    {}, outputs {}\n", where(t.inputs), where(t.outputs));
  if (t.run_overhead_s > 0) out += fmt::format("per run   {} fixed\n", si(t.run_overhead_s, "s"));
  if (t.worker_start_s > 0 && t.intra_node.shared_memory) {
    out += fmt::format("workers   join {} into a run (devices after each node's first)\n",
                       si(t.worker_start_s, "s"));
  }
  return out;
}

}  // namespace tapestry::cost
