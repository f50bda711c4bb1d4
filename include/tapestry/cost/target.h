// Target: a machine Tapestry can price a plan on without running on it.
//
// A target lists its device types (speeds, memory, power), how many devices each node holds, the
// links between devices (inside a node, between nodes, to a host), an optional device mesh with
// named axes (as JAX's Mesh and PyTorch's DeviceMesh), and where graph inputs and outputs live.
// It is JSON, read with located errors; docs/cost.md is the reference and cites every constant of
// the presets in targets/ (also compiled into the binary: `--target h100x8`).
//
//   {
//     "name": "h100x8",
//     "about": "one 8-GPU H100 SXM node",
//     "device_types": {
//       "h100": {"kind": "gpu",
//                "peak_flops": {"bfloat16": 989e12, "float32": 67e12},
//                "efficiency": 0.7, "launch_s": 5e-6,
//                "memory_bandwidth_Bps": 3.35e12, "bandwidth_efficiency": 0.8,
//                "memory_bytes": 80e9, "idle_w": 70, "busy_w": 700,
//                "cache": {"bytes": 50e6, "bandwidth_Bps": 10e12},
//                "kernels": {"softmax": {"bandwidth_efficiency": 0.4}},
//                "gemm_efficiency": [[2.1e9, 0.35], [1.7e10, 0.6], [1.4e11, 0.7]]}
//     },
//     "nodes": {"count": 1, "devices": {"h100": 8}},
//     "links": {"intra_node": {"bandwidth_Bps": 450e9, "latency_s": 2e-6,
//                              "collective": {"bandwidth_Bps": 370e9, "step_latency_s": 3.4e-6}},
//               "inter_node": {"bandwidth_Bps": 50e9, "latency_s": 5e-6, "power_w": 20},
//               "host":       {"bandwidth_Bps": 55e9, "latency_s": 1e-5}},
//     "mesh": {"dp": 2, "tp": 4},
//     "inputs": "resident", "outputs": "resident",
//     "run_overhead_s": 0, "worker_start_s": 0
//   }
//
// Devices are named `<kind>:<i>`, numbered per kind across nodes in node order (node 0 holds
// gpu:0 … gpu:7, node 1 gpu:8 …), the names a plan's `place` uses. A mesh's axes, in order,
// are laid over the devices row-major (dp=2, tp=4: gpu:0–3 are dp 0, gpu:4–7 are dp 1), and the
// product of its sizes must equal the number of devices; since the order matters it may also be
// written as pairs, [["dp", 2], ["tp", 4]] (to_json does when the axes are not in name order).
// A device type's optional "kernels" member overrides efficiency and bandwidth_efficiency for
// the kernels named there (a kernel whose achieved rate differs from the device's: on a CPU an
// erf-based gelu or a direct conv2d; `tapestry calibrate` measures them). A fused operation takes
// its stages' efficiencies, weighted by the FLOPs of each stage (simulate.h).
// A device type's optional "gemm_efficiency" table makes a GEMM's efficiency depend on its size: a
// small GEMM is slower per FLOP (on a GPU too few output tiles to fill every SM, on a CPU the
// packing and loop set-up a call pays once). Its entries are [FLOPs of one call, efficiency], the
// FLOPs strictly increasing; a GEMM of F FLOPs (matmul, linear, linear_nobias, or such a stage of
// a fused operation: the stage's FLOPs in one application) runs at the efficiency interpolated
// linearly in log F between the two entries around it, the first entry's below it and the last
// one's above. It replaces `efficiency` for those kernels (a "kernels" entry giving one of them
// an efficiency is then an error: the table says it). With the table above, a GEMM of 6e9 FLOPs
// runs at 0.35 + (0.6 − 0.35) · ln(6e9 / 2.1e9) / ln(1.7e10 / 2.1e9) = 0.4755 of peak.
// A device type's optional "dtypes" member scales the rates of the work of one element type
// outside GEMMs: {"bfloat16": {"efficiency": e, "bandwidth_efficiency": b}} multiplies the
// efficiency of a bf16 operation's non-GEMM FLOPs by e and its bandwidth efficiency by b (both in
// (0, 1]), on top of the kernel's own. peak_flops is per dtype already, but it is the GEMM's
// peak: a CPU with a bf16 dot product doubles its bf16 GEMM rate, while its bf16 elementwise
// kernels compute in float32 and convert — `tapestry calibrate` measures a bf16 gelu and add
// against the float32 ones and writes the factors. GEMM FLOPs keep peak_flops[dtype] (and the
// gemm_efficiency table). Without the member, or for a dtype it does not name, the factors are 1.
// A dtype's entry may carry its own "gemm_efficiency" table ({"float32": {"gemm_efficiency":
// [[3.4e7, 0.04], [2.1e9, 0.69], [1.7e10, 0.96]]}}), used for GEMMs of that dtype instead of the
// device type's (which it requires): a GEMM's efficiency depends on how long it runs, so a
// float32 GEMM, 15× slower per FLOP than a bf16 one on an H100, fills the GPU at far fewer FLOPs
// (`tapestry calibrate --device cuda` measures every dtype's squares).
// A device type's optional "streams" (≥ 1, default 1) is how many applications it runs at once:
// a GPU whose executor spreads independent kernels over CUDA streams (`run --device cuda
// --streams 4`). Applications of one operation never depend on each other, so on such a device
// the k applications of an operation placed there run min(k, streams) at a time, and a GEMM
// among them runs at the efficiency of one call of min(k, streams) times its FLOPs — a GEMM cut
// into 8 row blocks on one GPU fills its SMs as a GEMM of 4 blocks' size would. The applications
// are still priced one after another (their times add), so streams changes GEMM efficiency only.
// A device type's optional "fused_passes": true says it runs a fused operation stage by stage,
// a kernel per stage whose result goes through memory to the next (the CUDA executor; a CPU's
// block executor runs the stages over one block in cache: false, the default). A fused
// application then pays, for each stage after the first, a launch and a pass writing and reading
// back that stage's input — its elements, the stage's FLOPs over its kernel's FLOPs per point —
// except a relu right after a GEMM (the GEMM's epilogue).
// Links are per device and per direction: each device has one port of each link class
// (`intra_node` to devices of its node, `inter_node` to other nodes, `host` to the host); a
// transfer occupies the sender's and the receiver's port for latency + bytes / bandwidth. A link
// class with `"shared_memory": true` (a CPU's cores) moves no bytes over a wire: its transfers
// cost nothing but are still counted in `bytes_moved`. A link's optional "collective" member gives
// the effective bandwidth and per-step latency collectives reach over it (collective.h), its
// optional "power_w" what one port draws while busy (simulate.h).
//
//   Target t = read_target_file("targets/h100x8.json");  // or *preset_target("h100x8")
//   t.devices.size()                     // 8
//   t.find_device("gpu:3")               // 3
//   t.link_between(0, 3).bandwidth_Bps   // 450e9 (same node)
//   t.type_of(0).peak_flops.at(DType::kBFloat16) // 989e12
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/dtype.h"

namespace tapestry::cost {

/// A kernel's own fractions of a device's rates (unset: the device type's).
struct KernelRates {
  std::optional<double> efficiency;            // of peak_flops, in (0, 1]
  std::optional<double> bandwidth_efficiency;  // of memory_bandwidth_Bps, in (0, 1]

  friend bool operator==(const KernelRates&, const KernelRates&) = default;
};

/// One entry of a GEMM efficiency table (DeviceType::gemm_efficiency).
struct GemmEfficiency {
  double flops = 0;       // of one call, > 0
  double efficiency = 1;  // of peak_flops, in (0, 1]

  friend bool operator==(const GemmEfficiency&, const GemmEfficiency&) = default;
};

/// The kernels a GEMM efficiency table applies to: matmul, linear, linear_nobias.
bool is_gemm_kernel(std::string_view kernel);

/// One kind of device. All rates are sustained figures a kernel can reach, per device.
struct DeviceType {
  std::string name;  // the key in "device_types"
  std::string kind;  // "cpu", "gpu", "tpu", …: the prefix of device names
  /// Dense peak FLOP/s per element type; a kernel on a dtype the device lacks is an Error at
  /// simulation naming the dtype and the device type.
  std::map<ir::DType, double> peak_flops;
  /// Fraction of peak_flops a compute-bound kernel achieves, in (0, 1].
  double efficiency = 1.0;
  /// Fixed cost of one kernel invocation (launch, dispatch), seconds, >= 0.
  double launch_s = 0.0;
  /// Memory bandwidth, bytes/s, > 0, and the fraction of it a memory-bound kernel achieves.
  double memory_bandwidth_Bps = 0.0;
  double bandwidth_efficiency = 1.0;
  /// An optional cache (JSON "cache": {"bytes": …, "bandwidth_Bps": …}, both > 0; 0: none): an
  /// application whose bytes read + written fit in cache_bytes streams at cache_bandwidth_Bps
  /// instead of memory_bandwidth_Bps (times the same bandwidth_efficiency). On a CPU: a core's
  /// L2, which holds what the previous application just wrote (calibrate measures both).
  std::int64_t cache_bytes = 0;
  double cache_bandwidth_Bps = 0.0;
  /// Memory capacity, bytes, > 0.
  std::int64_t memory_bytes = 0;
  /// Power drawn idle and busy, watts, 0 <= idle <= busy.
  double idle_w = 0.0;
  double busy_w = 0.0;
  /// Per-kernel overrides, by kernel name ("gelu", "conv2d", …).
  std::map<std::string, KernelRates, std::less<>> kernels;
  /// GEMM efficiency by the FLOPs of one call (above); empty: GEMMs run at efficiency_of().
  std::vector<GemmEfficiency> gemm_efficiency;
  /// Per-dtype factors on the rates of non-GEMM work of that dtype (above), by dtype.
  std::map<ir::DType, KernelRates> dtypes;
  /// Per-dtype GEMM efficiency tables (JSON: "dtypes" → dtype → "gemm_efficiency"), replacing
  /// gemm_efficiency for GEMMs of that dtype; only with gemm_efficiency set.
  std::map<ir::DType, std::vector<GemmEfficiency>> dtype_gemm_efficiency;
  /// Applications the device runs at once (above); ≥ 1.
  int streams = 1;
  /// A fused operation's stages run as passes over memory (above).
  bool fused_passes = false;

  /// The efficiencies in effect for `kernel`.
  [[nodiscard]] double efficiency_of(std::string_view kernel) const;
  /// The efficiency of a GEMM of `flops` FLOPs in one call: the table interpolated in log FLOPs,
  /// clamped at its ends. Precondition: the table is not empty.
  [[nodiscard]] double gemm_efficiency_at(double flops) const;
  /// The same from `dtype`'s own table when it has one (dtype_gemm_efficiency).
  [[nodiscard]] double gemm_efficiency_at(double flops, ir::DType dtype) const;
  [[nodiscard]] double bandwidth_efficiency_of(std::string_view kernel) const;
  /// The "dtypes" factors for work of `dtype`: (efficiency, bandwidth efficiency), 1 when unset.
  [[nodiscard]] double dtype_efficiency(ir::DType dtype) const;
  [[nodiscard]] double dtype_bandwidth_efficiency(ir::DType dtype) const;

  friend bool operator==(const DeviceType&, const DeviceType&) = default;
};

/// What a link class achieves in a collective (JSON: a link's "collective" member): NCCL's
/// effective ("bus") bandwidth of one ring step and its per-step latency, which differ from the
/// line rate — protocol overhead takes ~20% of NVLink's (collective.h prices with them).
struct CollectiveRates {
  double bandwidth_Bps = 0.0;   // B, > 0, per device and direction
  double step_latency_s = 0.0;  // α, >= 0
  /// NVLink SHARP: the bandwidth of an all-gather or reduce-scatter run in the switch, > 0;
  /// absent: the link class has none.
  std::optional<double> nvls_bandwidth_Bps;

  friend bool operator==(const CollectiveRates&, const CollectiveRates&) = default;
};

/// One direction of one port: a transfer of n bytes takes latency_s + n / bandwidth_Bps.
struct Link {
  double bandwidth_Bps = 0.0;  // > 0
  double latency_s = 0.0;      // >= 0
  /// Devices share memory (a CPU's cores): transfers are free, though counted as bytes moved.
  bool shared_memory = false;
  /// Collective figures; absent: collectives run at the line rate and latency above.
  std::optional<CollectiveRates> collective;
  /// Watts one port of this class draws while it sends or receives (simulate.h), >= 0.
  double power_w = 0.0;

  /// `collective`, or {bandwidth_Bps, latency_s} when it is absent.
  [[nodiscard]] CollectiveRates collective_rates() const;

  friend bool operator==(const Link&, const Link&) = default;
};

/// One device of the target.
struct Device {
  std::string name;       // "gpu:3"
  std::size_t type = 0;   // index into Target::device_types
  std::size_t node = 0;   // index of the node that holds it
  std::size_t index = 0;  // position in Target::devices

  friend bool operator==(const Device&, const Device&) = default;
};

/// One named axis of the device mesh.
struct MeshAxis {
  std::string name;  // "dp"
  std::int64_t size = 1;

  friend bool operator==(const MeshAxis&, const MeshAxis&) = default;
};

/// Where graph inputs start and outputs end.
enum class Residence : std::uint8_t {
  kResident,  // already wherever consumers need them (inputs) / stay where produced (outputs)
  kHost,      // loaded from / gathered to the host over the host link
};

struct Target {
  std::string name;
  std::string about;
  std::vector<DeviceType> device_types;
  std::vector<Device> devices;  // every device, in name order per kind, node by node
  std::size_t node_count = 1;
  Link intra_node;
  std::optional<Link> inter_node;  // required when node_count > 1
  std::optional<Link> host;        // required when inputs or outputs are on the host
  std::vector<MeshAxis> mesh;      // empty: a one-axis mesh over every device, named "d"
  Residence inputs = Residence::kResident;
  Residence outputs = Residence::kResident;
  /// A fixed cost of every run, seconds, >= 0, added to the makespan: starting and joining the
  /// executor (the block executor's thread pool: ~10 µs on a CPU). 0 when absent.
  double run_overhead_s = 0.0;
  /// On a node whose devices share memory (a CPU's hardware threads, `intra_node.shared_memory`),
  /// the devices after the node's first take work only from this many seconds into a run: the
  /// executor's idle pool threads waking and joining it (`tapestry calibrate` measures it under
  /// back-to-back runs; short runs on a cold pool stay on one thread). >= 0; 0 when absent.
  double worker_start_s = 0.0;
  /// The optional "calibration" member, kept verbatim (null when absent, else an object):
  /// `tapestry calibrate` records its raw measurements there; nothing reads it back.
  nlohmann::json calibration;

  [[nodiscard]] const DeviceType& type_of(std::size_t device) const {
    return device_types[devices[device].type];
  }
  /// The position of the device named `name` ("gpu:3"), or of device i for `#i` (a pipeline
  /// stage's default device, rewrite/pipeline.h); nullopt when the target has none.
  [[nodiscard]] std::optional<std::size_t> find_device(std::string_view name) const;
  /// The link a transfer from device `from` to device `to` (different devices) uses.
  [[nodiscard]] const Link& link_between(std::size_t from, std::size_t to) const;
  /// The mesh axes in effect (the declared mesh, or {"d", devices.size()}).
  [[nodiscard]] std::vector<MeshAxis> mesh_axes() const;
  /// The device at mesh coordinate `coordinate` (one entry per mesh axis, row-major).
  [[nodiscard]] std::size_t device_at(std::span<const std::int64_t> coordinate) const;

  friend bool operator==(const Target&, const Target&) = default;
};

/// Parses a target. A syntax error, a duplicate key, an unknown member, a missing or
/// out-of-range value, an unknown dtype or device type, a mesh whose sizes do not multiply to the
/// device count — each is an Error naming `source` and the line:column or JSON path
/// ("h100x8.json: /device_types/h100/memory_bandwidth_Bps: must be > 0, got -1").
Target parse_target(std::string_view text, std::string_view source_name = "<target>");
/// Reads a target file (an Error names the file when it cannot be read).
Target read_target_file(const std::filesystem::path& path);
/// A preset compiled into the binary from targets/*.json ("cpu-local", "h100x8", "h100x64", …).
std::optional<Target> preset_target(std::string_view name);
/// The names of the presets, sorted.
std::vector<std::string> preset_target_names();
/// `spec` is a file path when such a file exists (or it contains '/' or ends in ".json"), else a
/// preset name; an Error lists the presets when it is neither.
Target resolve_target(std::string_view spec);

/// A human description of `target`, one fact a line (`tapestry targets NAME`): its devices and
/// nodes, each device type's rates, memory and power, the links, the mesh and the residence.
std::string describe_target(const Target& target);

/// The JSON form parse_target reads (round trip: parse_target(to_json(t).dump()) == t).
nlohmann::json to_json(const Target& target);
/// to_json(target) as indented text with the members in the documented order (name, about,
/// device_types, nodes, links, mesh, inputs, outputs, run_overhead_s, calibration) and a final
/// newline: the form `tapestry calibrate` writes and `tapestry targets NAME --json` prints.
std::string target_json_text(const Target& target);

}  // namespace tapestry::cost
