// parse_target and to_json: the JSON form of a Target (docs/cost.md is its reference).
//
// The reader walks the document once, top-down, with the JSON pointer of every value in hand, so
// each error names `source: /pointer: message`. The document is read as an ordered_json so the
// mesh keeps its axes in the order written; everything else is canonical whatever the key order
// (device types sorted by name; devices node by node, types in name order within a node), which
// is what makes parse_target(to_json(t).dump()) == t hold.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tapestry/cost/target.h"
#include "tapestry/support/diagnostic.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/json.h"

namespace tapestry::cost {

namespace {

using Json = nlohmann::ordered_json;

// More devices than this is a typo, not a machine (the largest clusters hold ~10^5 accelerators);
// the cap keeps a hostile count from allocating the device list.
constexpr std::int64_t kMaxDevices = std::int64_t{1} << 20;

std::string child(const std::string& path, std::string_view key) {
  return path + "/" + zspace::json_pointer_token(key);
}

// Names of kinds, device types and mesh axes: they appear in device names ("gpu:3") and in
// plans, so they are identifiers.
bool is_identifier(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) != 0 || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  });
}

std::string dtype_names() {
  std::vector<std::string_view> names;
  for (ir::DType d : ir::all_dtypes()) names.push_back(ir::dtype_name(d));
  return fmt::format("{}", fmt::join(names, ", "));
}

class TargetReader {
 public:
  explicit TargetReader(std::string_view source) : source_(source) {}

  Target read(const Json& root) {
    Target t;
    members(
        root, "", {"name", "device_types", "nodes", "links"},
        {"about", "mesh", "inputs", "outputs", "run_overhead_s", "worker_start_s", "calibration"});
    t.name = string(root["name"], "/name");
    if (t.name.empty()) fail("/name", "must not be empty");
    if (root.contains("about")) t.about = string(root["about"], "/about");
    read_device_types(root["device_types"], t);
    read_nodes(root["nodes"], t);
    if (root.contains("inputs")) t.inputs = residence(root["inputs"], "/inputs");
    if (root.contains("outputs")) t.outputs = residence(root["outputs"], "/outputs");
    if (root.contains("run_overhead_s")) {
      t.run_overhead_s = non_negative(root["run_overhead_s"], "/run_overhead_s");
    }
    if (root.contains("worker_start_s")) {
      t.worker_start_s = non_negative(root["worker_start_s"], "/worker_start_s");
    }
    read_links(root["links"], t);
    if (root.contains("mesh")) read_mesh(root["mesh"], t);
    if (root.contains("calibration")) {
      const Json& c = root["calibration"];
      if (!c.is_object())
        fail("/calibration", fmt::format("expected an object, got {}", c.type_name()));
      t.calibration = nlohmann::json::parse(c.dump());
    }
    return t;
  }

 private:
  [[noreturn]] void fail(const std::string& path, std::string message) const {
    throw support::DiagnosticError(
        support::Diagnostic::at_pointer(path, std::move(message), std::string(source_)));
  }

  // `j` is an object holding every member of `required`, and otherwise only `optional` ones.
  void members(const Json& j, const std::string& path, std::initializer_list<const char*> required,
               std::initializer_list<const char*> optional) const {
    if (!j.is_object()) fail(path, fmt::format("expected an object, got {}", j.type_name()));
    for (const char* key : required) {
      if (!j.contains(key)) fail(path, fmt::format("missing member \"{}\"", key));
    }
    for (const auto& item : j.items()) {
      const std::string& key = item.key();  // not a structured binding: lambdas capture it
      const auto is = [&](const char* k) { return key == k; };
      if (std::any_of(required.begin(), required.end(), is) ||
          std::any_of(optional.begin(), optional.end(), is)) {
        continue;
      }
      std::vector<std::string_view> known(required.begin(), required.end());
      known.insert(known.end(), optional.begin(), optional.end());
      fail(child(path, key),
           fmt::format("unknown member (expected one of {})", fmt::join(known, ", ")));
    }
  }

  void object(const Json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, fmt::format("expected an object, got {}", j.type_name()));
    if (j.empty()) fail(path, "must not be empty");
  }

  std::string string(const Json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, fmt::format("expected a string, got {}", j.type_name()));
    return j.get<std::string>();
  }

  std::string identifier(std::string_view name, const std::string& path,
                         std::string_view what) const {
    if (!is_identifier(name)) {
      fail(path,
           fmt::format("{} \"{}\" is not a name (letters, digits, '_' and '-', starting with a "
                       "letter or '_')",
                       what, name));
    }
    return std::string(name);
  }

  // A finite number (JSON has no NaN or infinity; "NaN" as a string or null lands here).
  double number(const Json& j, const std::string& path) const {
    if (!j.is_number()) fail(path, fmt::format("expected a number, got {}", j.type_name()));
    const double v = j.get<double>();
    if (!std::isfinite(v)) fail(path, fmt::format("must be finite, got {}", j.dump()));
    return v;
  }
  double positive(const Json& j, const std::string& path) const {
    const double v = number(j, path);
    if (!(v > 0)) fail(path, fmt::format("must be > 0, got {}", j.dump()));
    return v;
  }
  double non_negative(const Json& j, const std::string& path) const {
    const double v = number(j, path);
    if (!(v >= 0)) fail(path, fmt::format("must be >= 0, got {}", j.dump()));
    return v;
  }
  double fraction(const Json& j, const std::string& path) const {
    const double v = number(j, path);
    if (!(v > 0 && v <= 1)) fail(path, fmt::format("must be in (0, 1], got {}", j.dump()));
    return v;
  }
  bool boolean(const Json& j, const std::string& path) const {
    if (!j.is_boolean()) fail(path, fmt::format("expected true or false, got {}", j.type_name()));
    return j.get<bool>();
  }
  // A positive integer; a double is accepted when it is one exactly (80e9 bytes).
  std::int64_t positive_integer(const Json& j, const std::string& path, std::int64_t max) const {
    const double v = number(j, path);
    const bool integral = j.is_number_integer() || std::floor(v) == v;
    if (!integral) fail(path, fmt::format("must be an integer, got {}", j.dump()));
    if (v < 1) fail(path, fmt::format("must be >= 1, got {}", j.dump()));
    if ((j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) ||
        v > static_cast<double>(max)) {
      fail(path, fmt::format("must be <= {}, got {}", max, j.dump()));
    }
    return j.is_number_integer() ? j.get<std::int64_t>() : static_cast<std::int64_t>(v);
  }

  Residence residence(const Json& j, const std::string& path) const {
    const std::string s = string(j, path);
    if (s == "resident") return Residence::kResident;
    if (s == "host") return Residence::kHost;
    fail(path, fmt::format("expected \"resident\" or \"host\", got \"{}\"", s));
  }

  void read_device_types(const Json& types, Target& t) const {
    object(types, "/device_types");
    for (const auto& [name, body] : types.items()) {
      const std::string path = child("/device_types", name);
      t.device_types.push_back(read_device_type(name, body, path));
    }
    std::sort(t.device_types.begin(), t.device_types.end(),
              [](const DeviceType& a, const DeviceType& b) { return a.name < b.name; });
  }

  DeviceType read_device_type(const std::string& name, const Json& j,
                              const std::string& path) const {
    DeviceType d;
    d.name = identifier(name, path, "device type");
    members(j, path, {"kind", "peak_flops", "memory_bandwidth_Bps", "memory_bytes"},
            {"efficiency", "launch_s", "bandwidth_efficiency", "idle_w", "busy_w", "kernels",
             "cache", "gemm_efficiency", "dtypes", "streams", "fused_passes"});
    d.kind = identifier(string(j["kind"], path + "/kind"), path + "/kind", "kind");
    object(j["peak_flops"], path + "/peak_flops");
    for (const auto& [dtype_name, flops] : j["peak_flops"].items()) {
      const std::string at = child(path + "/peak_flops", dtype_name);
      const std::optional<ir::DType> dtype = ir::parse_dtype(dtype_name);
      if (!dtype) {
        fail(at,
             fmt::format("unknown dtype \"{}\" (expected one of {})", dtype_name, dtype_names()));
      }
      d.peak_flops.emplace(*dtype, positive(flops, at));
    }
    d.memory_bandwidth_Bps = positive(j["memory_bandwidth_Bps"], path + "/memory_bandwidth_Bps");
    d.memory_bytes = positive_integer(j["memory_bytes"], path + "/memory_bytes",
                                      std::numeric_limits<std::int64_t>::max() / 2);
    if (j.contains("efficiency")) d.efficiency = fraction(j["efficiency"], path + "/efficiency");
    if (j.contains("bandwidth_efficiency")) {
      d.bandwidth_efficiency = fraction(j["bandwidth_efficiency"], path + "/bandwidth_efficiency");
    }
    if (j.contains("launch_s")) d.launch_s = non_negative(j["launch_s"], path + "/launch_s");
    if (j.contains("fused_passes")) {
      d.fused_passes = boolean(j["fused_passes"], path + "/fused_passes");
    }
    if (j.contains("streams")) {
      d.streams = static_cast<int>(positive_integer(j["streams"], path + "/streams", 1024));
    }
    if (j.contains("idle_w")) d.idle_w = non_negative(j["idle_w"], path + "/idle_w");
    if (j.contains("busy_w")) d.busy_w = non_negative(j["busy_w"], path + "/busy_w");
    if (d.idle_w > d.busy_w) {
      fail(path, fmt::format("idle_w ({}) must be <= busy_w ({})", d.idle_w, d.busy_w));
    }
    if (j.contains("cache")) {
      const std::string at = path + "/cache";
      members(j["cache"], at, {"bytes", "bandwidth_Bps"}, {});
      d.cache_bytes = positive_integer(j["cache"]["bytes"], at + "/bytes", d.memory_bytes);
      d.cache_bandwidth_Bps = positive(j["cache"]["bandwidth_Bps"], at + "/bandwidth_Bps");
    }
    if (j.contains("kernels")) {
      const std::string at = path + "/kernels";
      object(j["kernels"], at);
      for (const auto& [kernel, rates] : j["kernels"].items()) {
        const std::string kernel_at = child(at, kernel);
        if (kernel.empty()) fail(kernel_at, "a kernel name must not be empty");
        d.kernels.emplace(kernel, read_rates(rates, kernel_at));
      }
    }
    if (j.contains("dtypes")) {
      const std::string at = path + "/dtypes";
      object(j["dtypes"], at);
      for (const auto& [dtype_name, rates] : j["dtypes"].items()) {
        const std::string dtype_at = child(at, dtype_name);
        const std::optional<ir::DType> dtype = ir::parse_dtype(dtype_name);
        if (!dtype) {
          fail(dtype_at,
               fmt::format("unknown dtype \"{}\" (expected one of {})", dtype_name, dtype_names()));
        }
        read_dtype_entry(rates, dtype_at, *dtype, d);
      }
    }
    if (!d.dtype_gemm_efficiency.empty() && !j.contains("gemm_efficiency")) {
      const auto& [dtype, table] = *d.dtype_gemm_efficiency.begin();
      fail(child(path + "/dtypes", std::string(ir::dtype_name(dtype))) + "/gemm_efficiency",
           "a dtype's gemm_efficiency table needs the device type's own gemm_efficiency table "
           "(for the other dtypes' GEMMs)");
    }
    if (j.contains("gemm_efficiency")) {
      d.gemm_efficiency = read_gemm_efficiency(j["gemm_efficiency"], path + "/gemm_efficiency");
      for (const auto& [kernel, rates] : d.kernels) {
        if (is_gemm_kernel(kernel) && rates.efficiency) {
          fail(child(path + "/kernels", kernel) + "/efficiency",
               fmt::format("a device type with a gemm_efficiency table takes {}'s efficiency from "
                           "it; give one or the other",
                           kernel));
        }
      }
    }
    return d;
  }

  // {"efficiency": e, "bandwidth_efficiency": b}, at least one of them, each in (0, 1].
  KernelRates read_rates(const Json& rates, const std::string& at) const {
    members(rates, at, {}, {"efficiency", "bandwidth_efficiency"});
    KernelRates r;
    if (rates.contains("efficiency"))
      r.efficiency = fraction(rates["efficiency"], at + "/efficiency");
    if (rates.contains("bandwidth_efficiency")) {
      r.bandwidth_efficiency =
          fraction(rates["bandwidth_efficiency"], at + "/bandwidth_efficiency");
    }
    if (!r.efficiency && !r.bandwidth_efficiency) {
      fail(at, "expected \"efficiency\" or \"bandwidth_efficiency\" (or both)");
    }
    return r;
  }

  // A "dtypes" entry: the rates of the dtype's work outside GEMMs and its own GEMM table, at
  // least one of the three.
  void read_dtype_entry(const Json& j, const std::string& at, ir::DType dtype,
                        DeviceType& d) const {
    members(j, at, {}, {"efficiency", "bandwidth_efficiency", "gemm_efficiency"});
    if (j.contains("gemm_efficiency")) {
      d.dtype_gemm_efficiency.emplace(
          dtype, read_gemm_efficiency(j["gemm_efficiency"], at + "/gemm_efficiency"));
      if (j.size() == 1) return;
    }
    Json rates = j;
    rates.erase("gemm_efficiency");
    d.dtypes.emplace(dtype, read_rates(rates, at));
  }

  // [[flops, efficiency], …]: at least one entry, FLOPs > 0 and strictly increasing.
  std::vector<GemmEfficiency> read_gemm_efficiency(const Json& j, const std::string& path) const {
    if (!j.is_array()) fail(path, fmt::format("expected an array, got {}", j.type_name()));
    if (j.empty()) fail(path, "must not be empty");
    std::vector<GemmEfficiency> table;
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string at = fmt::format("{}/{}", path, i);
      if (!j[i].is_array() || j[i].size() != 2) fail(at, "expected a pair [flops, efficiency]");
      const GemmEfficiency e{positive(j[i][0], at + "/0"), fraction(j[i][1], at + "/1")};
      if (!table.empty() && !(e.flops > table.back().flops)) {
        fail(at + "/0", fmt::format("FLOPs must increase from entry to entry, got {} after {}",
                                    j[i][0].dump(), table.back().flops));
      }
      table.push_back(e);
    }
    return table;
  }

  // Devices node by node; within a node, types in name order; each named <kind>:<i>, i counting
  // per kind across the whole target.
  void read_nodes(const Json& j, Target& t) const {
    members(j, "/nodes", {"devices"}, {"count"});
    const std::int64_t nodes =
        j.contains("count") ? positive_integer(j["count"], "/nodes/count", kMaxDevices) : 1;
    object(j["devices"], "/nodes/devices");
    std::vector<std::int64_t> per_type(t.device_types.size(), 0);
    std::int64_t per_node = 0;
    for (const auto& item : j["devices"].items()) {
      const std::string& type = item.key();  // not a structured binding: the lambda captures it
      const Json& count = item.value();
      const std::string at = child("/nodes/devices", type);
      const auto it = std::find_if(t.device_types.begin(), t.device_types.end(),
                                   [&](const DeviceType& d) { return d.name == type; });
      if (it == t.device_types.end()) {
        std::vector<std::string_view> known;
        for (const DeviceType& d : t.device_types) known.push_back(d.name);
        fail(at, fmt::format("unknown device type \"{}\" (device_types declares {})", type,
                             fmt::join(known, ", ")));
      }
      const std::int64_t n = positive_integer(count, at, kMaxDevices);
      per_type[static_cast<std::size_t>(it - t.device_types.begin())] = n;
      per_node += n;
    }
    if (per_node > kMaxDevices / nodes) {
      fail("/nodes", fmt::format("{} nodes of {} devices is more than {} devices", nodes, per_node,
                                 kMaxDevices));
    }
    t.node_count = static_cast<std::size_t>(nodes);
    std::map<std::string, std::size_t, std::less<>> next_of_kind;
    for (std::size_t node = 0; node < t.node_count; ++node) {
      for (std::size_t type = 0; type < per_type.size(); ++type) {
        for (std::int64_t k = 0; k < per_type[type]; ++k) {
          const std::string& kind = t.device_types[type].kind;
          const std::size_t i = next_of_kind[kind]++;
          t.devices.push_back(Device{fmt::format("{}:{}", kind, i), type, node, t.devices.size()});
        }
      }
    }
  }

  CollectiveRates read_collective(const Json& j, const std::string& path) const {
    members(j, path, {"bandwidth_Bps"}, {"step_latency_s", "nvls_bandwidth_Bps"});
    CollectiveRates rates;
    rates.bandwidth_Bps = positive(j["bandwidth_Bps"], path + "/bandwidth_Bps");
    if (j.contains("step_latency_s")) {
      rates.step_latency_s = non_negative(j["step_latency_s"], path + "/step_latency_s");
    }
    if (j.contains("nvls_bandwidth_Bps")) {
      rates.nvls_bandwidth_Bps = positive(j["nvls_bandwidth_Bps"], path + "/nvls_bandwidth_Bps");
    }
    return rates;
  }

  Link read_link(const Json& j, const std::string& path) const {
    members(j, path, {"bandwidth_Bps"}, {"latency_s", "shared_memory", "collective", "power_w"});
    Link link;
    link.bandwidth_Bps = positive(j["bandwidth_Bps"], path + "/bandwidth_Bps");
    if (j.contains("latency_s")) link.latency_s = non_negative(j["latency_s"], path + "/latency_s");
    if (j.contains("shared_memory")) {
      link.shared_memory = boolean(j["shared_memory"], path + "/shared_memory");
    }
    if (j.contains("collective")) {
      link.collective = read_collective(j["collective"], path + "/collective");
    }
    if (j.contains("power_w")) link.power_w = non_negative(j["power_w"], path + "/power_w");
    return link;
  }

  void read_links(const Json& j, Target& t) const {
    members(j, "/links", {"intra_node"}, {"inter_node", "host"});
    t.intra_node = read_link(j["intra_node"], "/links/intra_node");
    if (j.contains("inter_node")) t.inter_node = read_link(j["inter_node"], "/links/inter_node");
    if (j.contains("host")) t.host = read_link(j["host"], "/links/host");
    if (t.node_count > 1 && !t.inter_node) {
      fail("/links",
           fmt::format("missing member \"inter_node\" (required: the target has {} nodes)",
                       t.node_count));
    }
    if (!t.host && (t.inputs == Residence::kHost || t.outputs == Residence::kHost)) {
      fail("/links", fmt::format("missing member \"host\" (required: {} on the host)",
                                 t.inputs == Residence::kHost ? "inputs are" : "outputs are"));
    }
  }

  // `{"dp": 2, "tp": 4}` (axes in the order written) or `[["dp", 2], ["tp", 4]]`.
  void read_mesh(const Json& j, Target& t) const {
    if (j.is_array()) {
      if (j.empty()) fail("/mesh", "must not be empty");
      for (std::size_t i = 0; i < j.size(); ++i) {
        const std::string at = fmt::format("/mesh/{}", i);
        if (!j[i].is_array() || j[i].size() != 2) fail(at, "expected a pair [\"axis\", size]");
        add_axis(string(j[i][0], at + "/0"), at + "/0", j[i][1], at + "/1", t);
      }
    } else {
      object(j, "/mesh");
      for (const auto& [axis, size] : j.items()) {
        add_axis(axis, child("/mesh", axis), size, child("/mesh", axis), t);
      }
    }
    std::int64_t product = 1;
    for (const MeshAxis& axis : t.mesh) product *= axis.size;  // each <= devices: no overflow
    if (product != static_cast<std::int64_t>(t.devices.size())) {
      std::vector<std::string> sizes;
      for (const MeshAxis& axis : t.mesh)
        sizes.push_back(fmt::format("{}={}", axis.name, axis.size));
      fail("/mesh", fmt::format("the mesh {} holds {} devices, but the target has {}",
                                fmt::join(sizes, " x "), product, t.devices.size()));
    }
  }

  void add_axis(const std::string& name, const std::string& name_path, const Json& size,
                const std::string& size_path, Target& t) const {
    identifier(name, name_path, "mesh axis");
    for (const MeshAxis& axis : t.mesh) {
      if (axis.name == name) fail(name_path, fmt::format("mesh axis \"{}\" named twice", name));
    }
    const auto devices = static_cast<std::int64_t>(t.devices.size());
    t.mesh.push_back(MeshAxis{name, positive_integer(size, size_path, devices)});
  }

  std::string source_;
};

nlohmann::json link_json(const Link& link) {
  nlohmann::json j = {{"bandwidth_Bps", link.bandwidth_Bps}, {"latency_s", link.latency_s}};
  if (link.shared_memory) j["shared_memory"] = true;
  if (link.collective) {
    j["collective"] = {{"bandwidth_Bps", link.collective->bandwidth_Bps},
                       {"step_latency_s", link.collective->step_latency_s}};
    if (link.collective->nvls_bandwidth_Bps) {
      j["collective"]["nvls_bandwidth_Bps"] = *link.collective->nvls_bandwidth_Bps;
    }
  }
  if (link.power_w > 0) j["power_w"] = link.power_w;
  return j;
}

}  // namespace

Target parse_target(std::string_view text, std::string_view source_name) {
  (void)zspace::parse_json_text(text, source_name);  // located syntax errors
  zspace::reject_duplicate_keys(text, source_name);
  return TargetReader(source_name).read(Json::parse(text));
}

namespace {

// [[flops, efficiency], …], as read_gemm_efficiency reads it.
nlohmann::json gemm_table_json(const std::vector<GemmEfficiency>& table) {
  nlohmann::json out = nlohmann::json::array();
  for (const GemmEfficiency& e : table) out.push_back({e.flops, e.efficiency});
  return out;
}

}  // namespace

nlohmann::json to_json(const Target& target) {
  nlohmann::json j;
  j["name"] = target.name;
  if (!target.about.empty()) j["about"] = target.about;
  nlohmann::json types = nlohmann::json::object();
  for (const DeviceType& d : target.device_types) {
    nlohmann::json flops = nlohmann::json::object();
    for (const auto& [dtype, peak] : d.peak_flops) flops[std::string(ir::dtype_name(dtype))] = peak;
    types[d.name] = {{"kind", d.kind},
                     {"peak_flops", std::move(flops)},
                     {"efficiency", d.efficiency},
                     {"launch_s", d.launch_s},
                     {"memory_bandwidth_Bps", d.memory_bandwidth_Bps},
                     {"bandwidth_efficiency", d.bandwidth_efficiency},
                     {"memory_bytes", d.memory_bytes},
                     {"idle_w", d.idle_w},
                     {"busy_w", d.busy_w}};
    if (d.cache_bytes > 0) {
      types[d.name]["cache"] = {{"bytes", d.cache_bytes}, {"bandwidth_Bps", d.cache_bandwidth_Bps}};
    }
    if (!d.kernels.empty()) {
      nlohmann::json kernels = nlohmann::json::object();
      for (const auto& [kernel, r] : d.kernels) {
        nlohmann::json k = nlohmann::json::object();
        if (r.efficiency) k["efficiency"] = *r.efficiency;
        if (r.bandwidth_efficiency) k["bandwidth_efficiency"] = *r.bandwidth_efficiency;
        kernels[kernel] = std::move(k);
      }
      types[d.name]["kernels"] = std::move(kernels);
    }
    if (d.streams != 1) types[d.name]["streams"] = d.streams;
    if (d.fused_passes) types[d.name]["fused_passes"] = true;
    if (!d.dtypes.empty() || !d.dtype_gemm_efficiency.empty()) {
      nlohmann::json dtypes = nlohmann::json::object();
      for (const auto& [dtype, r] : d.dtypes) {
        nlohmann::json k = nlohmann::json::object();
        if (r.efficiency) k["efficiency"] = *r.efficiency;
        if (r.bandwidth_efficiency) k["bandwidth_efficiency"] = *r.bandwidth_efficiency;
        dtypes[std::string(ir::dtype_name(dtype))] = std::move(k);
      }
      for (const auto& [dtype, gemm] : d.dtype_gemm_efficiency) {
        dtypes[std::string(ir::dtype_name(dtype))]["gemm_efficiency"] = gemm_table_json(gemm);
      }
      types[d.name]["dtypes"] = std::move(dtypes);
    }
    if (!d.gemm_efficiency.empty()) {
      types[d.name]["gemm_efficiency"] = gemm_table_json(d.gemm_efficiency);
    }
  }
  j["device_types"] = std::move(types);
  // Every node holds the same devices: count node 0's.
  nlohmann::json per_node = nlohmann::json::object();
  for (const Device& device : target.devices) {
    if (device.node != 0) break;
    const std::string& type = target.device_types[device.type].name;
    per_node[type] = per_node.value(type, 0) + 1;
  }
  j["nodes"] = {{"count", target.node_count}, {"devices", std::move(per_node)}};
  j["links"]["intra_node"] = link_json(target.intra_node);
  if (target.inter_node) j["links"]["inter_node"] = link_json(*target.inter_node);
  if (target.host) j["links"]["host"] = link_json(*target.host);
  if (!target.mesh.empty()) {
    // An object when its keys sort in axis order (nlohmann::json sorts them), else the pair form.
    const bool sorted =
        std::is_sorted(target.mesh.begin(), target.mesh.end(),
                       [](const MeshAxis& a, const MeshAxis& b) { return a.name < b.name; });
    nlohmann::json mesh = sorted ? nlohmann::json::object() : nlohmann::json::array();
    for (const MeshAxis& axis : target.mesh) {
      if (sorted) {
        mesh[axis.name] = axis.size;
      } else {
        mesh.push_back({axis.name, axis.size});
      }
    }
    j["mesh"] = std::move(mesh);
  }
  j["inputs"] = target.inputs == Residence::kHost ? "host" : "resident";
  j["outputs"] = target.outputs == Residence::kHost ? "host" : "resident";
  if (target.run_overhead_s > 0) j["run_overhead_s"] = target.run_overhead_s;
  if (target.worker_start_s > 0) j["worker_start_s"] = target.worker_start_s;
  if (target.calibration.is_object()) j["calibration"] = target.calibration;
  return j;
}

std::string target_json_text(const Target& target) {
  const nlohmann::json j = to_json(target);
  Json ordered = Json::object();
  for (const char* key : {"name", "about", "device_types", "nodes", "links", "mesh", "inputs",
                          "outputs", "run_overhead_s", "worker_start_s", "calibration"}) {
    if (j.contains(key)) ordered[key] = Json::parse(j[key].dump());
  }
  return ordered.dump(2) + "\n";
}

}  // namespace tapestry::cost
