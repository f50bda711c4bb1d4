#include "tapestry/cost/target.h"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <cmath>

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/diagnostic_testing.h"
#include "tapestry/support/error.h"

namespace tapestry::cost {
namespace {

using ir::DType;
using nlohmann::json;

// Two nodes of two GPUs plus one "fast" GPU type sharing the kind: gpu:0–2 on node 0, gpu:3–5 on
// node 1 (within a node, types in name order: "big" before "small").
constexpr std::string_view kTwoNodes = R"({
  "name": "two-nodes",
  "about": "a test target",
  "device_types": {
    "small": {"kind": "gpu", "peak_flops": {"float32": 1e12, "bfloat16": 4e12},
              "memory_bandwidth_Bps": 1e11, "memory_bytes": 16e9,
              "efficiency": 0.5, "launch_s": 5e-6, "bandwidth_efficiency": 0.9,
              "idle_w": 30, "busy_w": 300},
    "big": {"kind": "gpu", "peak_flops": {"float32": 2e12},
            "memory_bandwidth_Bps": 2e11, "memory_bytes": 32000000000}
  },
  "nodes": {"count": 2, "devices": {"small": 2, "big": 1}},
  "links": {"intra_node": {"bandwidth_Bps": 1e11, "latency_s": 1e-6},
            "inter_node": {"bandwidth_Bps": 1e10, "latency_s": 5e-6},
            "host": {"bandwidth_Bps": 2e10}},
  "mesh": {"tp": 3, "dp": 2},
  "inputs": "host"
})";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Target, ParsesEveryMember) {
  const Target t = parse_target(kTwoNodes, "t.json");
  EXPECT_EQ(t.name, "two-nodes");
  EXPECT_EQ(t.about, "a test target");
  ASSERT_EQ(t.device_types.size(), 2u);
  EXPECT_EQ(t.device_types[0].name, "big");  // sorted by name
  const DeviceType& small = t.device_types[1];
  EXPECT_EQ(small.kind, "gpu");
  EXPECT_EQ(small.peak_flops,
            (std::map<DType, double>{{DType::kFloat32, 1e12}, {DType::kBFloat16, 4e12}}));
  EXPECT_EQ(small.efficiency, 0.5);
  EXPECT_EQ(small.launch_s, 5e-6);
  EXPECT_EQ(small.memory_bandwidth_Bps, 1e11);
  EXPECT_EQ(small.bandwidth_efficiency, 0.9);
  EXPECT_EQ(small.memory_bytes, 16'000'000'000);  // written 16e9
  EXPECT_EQ(small.idle_w, 30);
  EXPECT_EQ(small.busy_w, 300);
  // Defaults of the optional members.
  const DeviceType& big = t.device_types[0];
  EXPECT_EQ(big.efficiency, 1.0);
  EXPECT_EQ(big.launch_s, 0.0);
  EXPECT_EQ(big.bandwidth_efficiency, 1.0);
  EXPECT_EQ(big.idle_w, 0.0);
  EXPECT_EQ(big.busy_w, 0.0);
  EXPECT_EQ(t.node_count, 2u);
  EXPECT_EQ(t.intra_node, (Link{1e11, 1e-6, false}));
  EXPECT_EQ(t.inter_node, (Link{1e10, 5e-6, false}));
  EXPECT_EQ(t.host, (Link{2e10, 0.0, false}));
  EXPECT_EQ(t.inputs, Residence::kHost);
  EXPECT_EQ(t.outputs, Residence::kResident);
  EXPECT_TRUE(t.calibration.is_null());
}

TEST(Target, NamesDevicesPerKindNodeByNode) {
  const Target t = parse_target(kTwoNodes, "t.json");
  std::vector<std::string> names;
  std::vector<std::string> types;
  for (const Device& d : t.devices) {
    EXPECT_EQ(&t.devices[d.index], &d);
    names.push_back(d.name);
    types.push_back(fmt::format("{}@{}", t.type_of(d.index).name, d.node));
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"gpu:0", "gpu:1", "gpu:2", "gpu:3", "gpu:4", "gpu:5"}));
  EXPECT_EQ(types, (std::vector<std::string>{"big@0", "small@0", "small@0", "big@1", "small@1",
                                             "small@1"}));
}

TEST(Target, FindDevice) {
  const Target t = parse_target(kTwoNodes, "t.json");
  EXPECT_EQ(t.find_device("gpu:0"), 0u);
  EXPECT_EQ(t.find_device("gpu:5"), 5u);
  EXPECT_EQ(t.find_device("gpu:6"), std::nullopt);
  EXPECT_EQ(t.find_device("cpu:0"), std::nullopt);
  EXPECT_EQ(t.find_device("gpu:"), std::nullopt);
  EXPECT_EQ(t.find_device(""), std::nullopt);
}

TEST(Target, LinkBetweenSameAndOtherNode) {
  const Target t = parse_target(kTwoNodes, "t.json");
  EXPECT_EQ(&t.link_between(0, 2), &t.intra_node);
  EXPECT_EQ(&t.link_between(2, 0), &t.intra_node);
  EXPECT_EQ(&t.link_between(2, 3), &*t.inter_node);
  EXPECT_EQ(&t.link_between(5, 0), &*t.inter_node);
  EXPECT_EQ(t.link_between(4, 5).bandwidth_Bps, 1e11);
  EXPECT_EQ(t.link_between(1, 4).bandwidth_Bps, 1e10);
}

TEST(Target, MeshKeepsTheAxisOrderWrittenAndIsRowMajor) {
  const Target t = parse_target(kTwoNodes, "t.json");
  EXPECT_EQ(t.mesh_axes(), (std::vector<MeshAxis>{{"tp", 3}, {"dp", 2}}));
  const std::vector<std::int64_t> c00{0, 0}, c01{0, 1}, c10{1, 0}, c21{2, 1};
  EXPECT_EQ(t.device_at(c00), 0u);
  EXPECT_EQ(t.device_at(c01), 1u);
  EXPECT_EQ(t.device_at(c10), 2u);
  EXPECT_EQ(t.device_at(c21), 5u);
  // The pair form says the same.
  json j = json::parse(kTwoNodes);
  j["mesh"] = json::parse(R"([["tp", 3], ["dp", 2]])");
  EXPECT_EQ(parse_target(j.dump(), "t.json"), t);
}

TEST(Target, WithoutAMeshOneAxisOverEveryDevice) {
  json j = json::parse(kTwoNodes);
  j.erase("mesh");
  const Target t = parse_target(j.dump(), "t.json");
  EXPECT_TRUE(t.mesh.empty());
  EXPECT_EQ(t.mesh_axes(), (std::vector<MeshAxis>{{"d", 6}}));
  const std::vector<std::int64_t> c4{4};
  EXPECT_EQ(t.device_at(c4), 4u);
}

TEST(Target, RoundTripsThroughJson) {
  Target t = parse_target(kTwoNodes, "t.json");
  t.calibration = json::parse(R"({"gemm_flops": [1, 2.5], "note": "x"})");
  const Target back = parse_target(to_json(t).dump(2), "back.json");
  EXPECT_EQ(back, t);
  // Mesh axes in name order come out as an object, others as pairs; both read back equal.
  EXPECT_TRUE(to_json(t)["mesh"].is_array());
  json j = json::parse(kTwoNodes);
  j["mesh"] = json::parse(R"({"a": 2, "b": 3})");
  const Target sorted = parse_target(j.dump(), "t.json");
  EXPECT_TRUE(to_json(sorted)["mesh"].is_object());
  EXPECT_EQ(parse_target(to_json(sorted).dump(), "t.json"), sorted);
  for (const std::string& name : preset_target_names()) {
    const Target p = *preset_target(name);
    EXPECT_EQ(parse_target(to_json(p).dump(), name), p) << name;
  }
}

TEST(Target, PresetsParseAndEqualTheirFiles) {
  const std::vector<std::string> names = preset_target_names();
  for (const char* required : {"cpu-local", "h100x8", "h100x64", "a100x8"}) {
    EXPECT_THAT(names, ::testing::Contains(required));
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(TAPESTRY_TARGETS_DIR)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().stem().string());
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(names, files) << "targets/ and the compiled presets differ: rebuild";
  for (const std::string& name : names) {
    const std::filesystem::path path =
        std::filesystem::path(TAPESTRY_TARGETS_DIR) / (name + ".json");
    const Target from_file = read_target_file(path);
    EXPECT_EQ(from_file, *preset_target(name)) << name;
    EXPECT_EQ(from_file, resolve_target(path.string())) << name;
    EXPECT_EQ(from_file, resolve_target(name)) << name;
    EXPECT_EQ(from_file.name, name);
  }
}

TEST(Target, PresetConstants) {
  const Target h8 = *preset_target("h100x8");
  EXPECT_EQ(h8.devices.size(), 8u);
  EXPECT_EQ(h8.node_count, 1u);
  EXPECT_EQ(h8.type_of(0).peak_flops.at(DType::kBFloat16), 989e12);
  EXPECT_EQ(h8.type_of(7).memory_bytes, 80'000'000'000);
  EXPECT_EQ(h8.link_between(0, 7).bandwidth_Bps, 450e9);
  // Collective figures (docs/cost.md cites them): NCCL's ring busbw over NVLink 4, per step.
  EXPECT_EQ(h8.intra_node.collective_rates(), (CollectiveRates{370e9, 3.4e-6, std::nullopt}));
  const Target h64 = *preset_target("h100x64");
  EXPECT_EQ(h64.devices.size(), 64u);
  EXPECT_EQ(h64.devices[63].name, "gpu:63");
  EXPECT_EQ(h64.devices[63].node, 7u);
  EXPECT_EQ(h64.link_between(0, 8).bandwidth_Bps, 50e9);
  EXPECT_EQ(h64.link_between(8, 15).bandwidth_Bps, 450e9);
  EXPECT_EQ(h64.intra_node.collective_rates(), (CollectiveRates{370e9, 3.4e-6, std::nullopt}));
  EXPECT_EQ(h64.inter_node->collective_rates(), (CollectiveRates{46e9, 14e-6, std::nullopt}));
  const Target a8 = *preset_target("a100x8");
  EXPECT_EQ(a8.type_of(0).peak_flops.at(DType::kBFloat16), 312e12);
  EXPECT_EQ(a8.intra_node.collective_rates(), (CollectiveRates{230e9, 3.4e-6, std::nullopt}));
  const Target cpu = *preset_target("cpu-local");
  EXPECT_TRUE(cpu.intra_node.shared_memory);
  EXPECT_EQ(cpu.devices[0].name, "cpu:0");
  EXPECT_TRUE(cpu.calibration.is_object());
}

TEST(Target, ResolveTarget) {
  EXPECT_EQ(preset_target("no-such-preset"), std::nullopt);
  EXPECT_THAT([] { (void)resolve_target("h100x9"); },
              ::testing::ThrowsMessage<Error>(::testing::StartsWith(
                  "unknown target \"h100x9\": no such file, and the presets are a100x8, ")));
  EXPECT_THAT([] { (void)resolve_target("missing/h100x8.json"); },
              ::testing::ThrowsMessage<Error>(
                  ::testing::StrEq("missing/h100x8.json: cannot open target file")));
  EXPECT_THAT(
      [] { (void)resolve_target("h100x8.json"); },  // a path, though no such file here
      ::testing::ThrowsMessage<Error>(::testing::StrEq("h100x8.json: cannot open target file")));
}

TEST(Target, JsonTextIsInDocumentedOrderAndReadsBack) {
  Target t = parse_target(kTwoNodes, "t.json");
  t.calibration = json::parse(R"({"x": 1})");
  const std::string text = target_json_text(t);
  EXPECT_EQ(parse_target(text, "t.json"), t);
  EXPECT_LT(text.find("\"name\""), text.find("\"about\""));
  EXPECT_LT(text.find("\"about\""), text.find("\"device_types\""));
  EXPECT_LT(text.find("\"links\""), text.find("\"mesh\""));
  EXPECT_LT(text.find("\"outputs\""), text.find("\"calibration\""));
  EXPECT_TRUE(text.ends_with("}\n"));
}

TEST(Target, DescribeNamesDevicesLinksAndMesh) {
  const std::string text = describe_target(parse_target(kTwoNodes, "t.json"));
  for (const char* line :
       {"target    two-nodes\n", "devices   6 on 2 nodes: gpu:0 … gpu:5\n",
        "type      small (gpu), 2 per node\n",
        "  peak        float32 1 TFLOP/s, bfloat16 4 TFLOP/s\n",
        "  efficiency  0.5 of peak, launch 5 µs\n",
        "  memory      16 GB at 100 GB/s, 0.9 of it achieved\n",
        "  power       30 W idle, 300 W busy\n", "inter     10 GB/s per direction, latency 5 µs\n",
        "host      20 GB/s per direction, latency 0 s\n", "mesh      tp=3 × dp=2\n",
        "inputs    host, outputs resident\n"}) {
    EXPECT_THAT(text, ::testing::HasSubstr(line));
  }
}

// The adversarial table: each bad target with the exact error it must get. `patch` is a JSON
// Patch (RFC 6902) applied to kTwoNodes; `text`, when set, is the whole file instead.
struct BadTarget {
  std::string_view what;
  std::string_view patch;
  std::string_view text;
  std::string_view error;
};

const BadTarget kBadTargets[] = {
    {"syntax error", "", "{\"name\": \"x\",\n  \"nodes\": }",
     "t.json:2:12: invalid JSON: syntax error while parsing value - unexpected '}'; expected '[', "
     "'{', or a literal"},
    {"number beyond double", "", "{\"name\": 1e999}",
     "t.json:1:10: invalid JSON: number 1e999 is out of range"},
    {"duplicate key", "", "{\"name\": \"x\",\n \"device_types\": {\"g\": {}},\n \"name\": \"y\"}",
     "t.json:3:2: duplicate key \"name\" (a JSON object names each member once)"},
    {"not an object", "", "[1]", "t.json: /: expected an object, got array"},
    {"unknown member", R"([{"op": "add", "path": "/link", "value": {}}])", "",
     "t.json: /link: unknown member (expected one of name, device_types, nodes, links, about, "
     "mesh, "
     "inputs, outputs, run_overhead_s, worker_start_s, calibration)"},
    {"unknown device member", R"([{"op": "add", "path": "/device_types/big/tflops", "value": 1}])",
     "",
     "t.json: /device_types/big/tflops: unknown member (expected one of kind, peak_flops, "
     "memory_bandwidth_Bps, memory_bytes, efficiency, launch_s, bandwidth_efficiency, idle_w, "
     "busy_w, kernels, cache, gemm_efficiency, dtypes, streams, fused_passes)"},
    {"missing name", R"([{"op": "remove", "path": "/name"}])", "",
     "t.json: /: missing member \"name\""},
    {"unknown device type in nodes", R"([{"op": "add", "path": "/nodes/devices/tpu", "value": 1}])",
     "",
     "t.json: /nodes/devices/tpu: unknown device type \"tpu\" (device_types declares big, small)"},
    {"negative bandwidth",
     R"([{"op": "replace", "path": "/device_types/big/memory_bandwidth_Bps", "value": -1}])", "",
     "t.json: /device_types/big/memory_bandwidth_Bps: must be > 0, got -1"},
    {"negative link bandwidth",
     R"([{"op": "replace", "path": "/links/inter_node/bandwidth_Bps", "value": -2.5e9}])", "",
     "t.json: /links/inter_node/bandwidth_Bps: must be > 0, got -2500000000.0"},
    {"negative latency",
     R"([{"op": "replace", "path": "/links/intra_node/latency_s", "value": -1e-6}])", "",
     "t.json: /links/intra_node/latency_s: must be >= 0, got -1e-06"},
    {"NaN as a string",
     R"([{"op": "replace", "path": "/device_types/big/peak_flops/float32", "value": "NaN"}])", "",
     "t.json: /device_types/big/peak_flops/float32: expected a number, got string"},
    {"null for a number",
     R"([{"op": "replace", "path": "/device_types/small/launch_s", "value": null}])", "",
     "t.json: /device_types/small/launch_s: expected a number, got null"},
    {"Infinity as a string",
     R"([{"op": "replace", "path": "/links/host/bandwidth_Bps", "value": "Infinity"}])", "",
     "t.json: /links/host/bandwidth_Bps: expected a number, got string"},
    {"zero memory", R"([{"op": "replace", "path": "/device_types/big/memory_bytes", "value": 0}])",
     "", "t.json: /device_types/big/memory_bytes: must be >= 1, got 0"},
    {"fractional memory",
     R"([{"op": "replace", "path": "/device_types/big/memory_bytes", "value": 1.5}])", "",
     "t.json: /device_types/big/memory_bytes: must be an integer, got 1.5"},
    {"memory beyond int64",
     R"([{"op": "replace", "path": "/device_types/big/memory_bytes", "value": 1e30}])", "",
     "t.json: /device_types/big/memory_bytes: must be <= 4611686018427387903, got 1e+30"},
    {"mesh 3x3 over 6 devices",
     R"([{"op": "replace", "path": "/mesh", "value": {"a": 3, "b": 3}}])", "",
     "t.json: /mesh: the mesh a=3 x b=3 holds 9 devices, but the target has 6"},
    {"mesh axis of 0", R"([{"op": "replace", "path": "/mesh", "value": {"a": 0, "b": 6}}])", "",
     "t.json: /mesh/a: must be >= 1, got 0"},
    {"mesh axis named twice",
     R"([{"op": "replace", "path": "/mesh", "value": [["a", 2], ["a", 3]]}])", "",
     "t.json: /mesh/1/0: mesh axis \"a\" named twice"},
    {"empty mesh", R"([{"op": "replace", "path": "/mesh", "value": {}}])", "",
     "t.json: /mesh: must not be empty"},
    {"missing inter_node on 2 nodes", R"([{"op": "remove", "path": "/links/inter_node"}])", "",
     "t.json: /links: missing member \"inter_node\" (required: the target has 2 nodes)"},
    {"missing host with inputs on the host", R"([{"op": "remove", "path": "/links/host"}])", "",
     "t.json: /links: missing member \"host\" (required: inputs are on the host)"},
    {"bad residence", R"([{"op": "add", "path": "/outputs", "value": "device"}])", "",
     "t.json: /outputs: expected \"resident\" or \"host\", got \"device\""},
    {"unknown dtype",
     R"([{"op": "add", "path": "/device_types/big/peak_flops/fp32", "value": 1e12}])", "",
     "t.json: /device_types/big/peak_flops/fp32: unknown dtype \"fp32\" (expected one of "
     "float32, float64, int32, int64, bfloat16, float16, bool, int8, int16, uint8)"},
    {"no peak_flops", R"([{"op": "replace", "path": "/device_types/big/peak_flops", "value": {}}])",
     "", "t.json: /device_types/big/peak_flops: must not be empty"},
    {"idle > busy", R"([{"op": "replace", "path": "/device_types/small/idle_w", "value": 301}])",
     "", "t.json: /device_types/small: idle_w (301) must be <= busy_w (300)"},
    {"negative power", R"([{"op": "replace", "path": "/device_types/small/idle_w", "value": -1}])",
     "", "t.json: /device_types/small/idle_w: must be >= 0, got -1"},
    {"efficiency 0", R"([{"op": "replace", "path": "/device_types/small/efficiency", "value": 0}])",
     "", "t.json: /device_types/small/efficiency: must be in (0, 1], got 0"},
    {"efficiency > 1",
     R"([{"op": "replace", "path": "/device_types/small/bandwidth_efficiency", "value": 1.01}])",
     "", "t.json: /device_types/small/bandwidth_efficiency: must be in (0, 1], got 1.01"},
    {"empty nodes", R"([{"op": "replace", "path": "/nodes/devices", "value": {}}])", "",
     "t.json: /nodes/devices: must not be empty"},
    {"zero devices of a type", R"([{"op": "replace", "path": "/nodes/devices/big", "value": 0}])",
     "", "t.json: /nodes/devices/big: must be >= 1, got 0"},
    {"zero nodes", R"([{"op": "replace", "path": "/nodes/count", "value": 0}])", "",
     "t.json: /nodes/count: must be >= 1, got 0"},
    {"too many devices", R"([{"op": "replace", "path": "/nodes/count", "value": 1000000}])", "",
     "t.json: /nodes: 1000000 nodes of 3 devices is more than 1048576 devices"},
    {"no device types", R"([{"op": "replace", "path": "/device_types", "value": {}}])", "",
     "t.json: /device_types: must not be empty"},
    {"kind with a colon",
     R"([{"op": "replace", "path": "/device_types/big/kind", "value": "g:1"}])", "",
     "t.json: /device_types/big/kind: kind \"g:1\" is not a name (letters, digits, '_' and '-', "
     "starting with a letter or '_')"},
    {"empty name", R"([{"op": "replace", "path": "/name", "value": ""}])", "",
     "t.json: /name: must not be empty"},
    {"shared_memory not a bool",
     R"([{"op": "add", "path": "/links/intra_node/shared_memory", "value": 1}])", "",
     "t.json: /links/intra_node/shared_memory: expected true or false, got number"},
    {"calibration not an object", R"([{"op": "add", "path": "/calibration", "value": [1]}])", "",
     "t.json: /calibration: expected an object, got array"},
    {"kernels not an object",
     R"([{"op": "add", "path": "/device_types/big/kernels", "value": [1]}])", "",
     "t.json: /device_types/big/kernels: expected an object, got array"},
    {"a kernel entry without a rate",
     R"([{"op": "add", "path": "/device_types/big/kernels", "value": {"gelu": {}}}])", "",
     "t.json: /device_types/big/kernels/gelu: expected \"efficiency\" or "
     "\"bandwidth_efficiency\" (or both)"},
    {"a kernel efficiency of 0",
     R"([{"op": "add", "path": "/device_types/big/kernels", "value": {"gelu": {"efficiency": 0}}}])",
     "", "t.json: /device_types/big/kernels/gelu/efficiency: must be in (0, 1], got 0"},
    {"an unknown kernel rate",
     R"([{"op": "add", "path": "/device_types/big/kernels", "value": {"gelu": {"speed": 2}}}])", "",
     "t.json: /device_types/big/kernels/gelu/speed: unknown member (expected one of efficiency, "
     "bandwidth_efficiency)"},
    {"a dtype entry for an unknown dtype",
     R"([{"op": "add", "path": "/device_types/big/dtypes", "value": {"bf17": {"efficiency": 0.5}}}])",
     "",
     "t.json: /device_types/big/dtypes/bf17: unknown dtype \"bf17\" (expected one of float32, "
     "float64, int32, int64, bfloat16, float16, bool, int8, int16, uint8)"},
    {"a dtype entry without a rate",
     R"([{"op": "add", "path": "/device_types/big/dtypes", "value": {"bfloat16": {}}}])", "",
     "t.json: /device_types/big/dtypes/bfloat16: expected \"efficiency\" or "
     "\"bandwidth_efficiency\" (or both)"},
    {"a dtype bandwidth efficiency above 1",
     R"([{"op": "add", "path": "/device_types/big/dtypes",
          "value": {"bfloat16": {"bandwidth_efficiency": 2}}}])",
     "",
     "t.json: /device_types/big/dtypes/bfloat16/bandwidth_efficiency: must be in (0, 1], got 2"},
    {"a cache without its bandwidth",
     R"([{"op": "add", "path": "/device_types/big/cache", "value": {"bytes": 1024}}])", "",
     "t.json: /device_types/big/cache: missing member \"bandwidth_Bps\""},
    {"a cache of 0 bytes",
     R"([{"op": "add", "path": "/device_types/big/cache",
          "value": {"bytes": 0, "bandwidth_Bps": 1e12}}])",
     "", "t.json: /device_types/big/cache/bytes: must be >= 1, got 0"},
    {"a cache larger than the memory",
     R"([{"op": "add", "path": "/device_types/big/cache",
          "value": {"bytes": 1e15, "bandwidth_Bps": 1e12}}])",
     "", "t.json: /device_types/big/cache/bytes: must be <= 32000000000, got 1e+15"},
    {"a negative cache bandwidth",
     R"([{"op": "add", "path": "/device_types/big/cache",
          "value": {"bytes": 1024, "bandwidth_Bps": -1}}])",
     "", "t.json: /device_types/big/cache/bandwidth_Bps: must be > 0, got -1"},
    {"an unknown cache member",
     R"([{"op": "add", "path": "/device_types/big/cache",
          "value": {"bytes": 1024, "bandwidth_Bps": 1e12, "level": 2}}])",
     "",
     "t.json: /device_types/big/cache/level: unknown member (expected one of bytes, "
     "bandwidth_Bps)"},
    {"collective figures without a bandwidth",
     R"([{"op": "add", "path": "/links/intra_node/collective", "value": {"step_latency_s": 1e-6}}])",
     "", "t.json: /links/intra_node/collective: missing member \"bandwidth_Bps\""},
    {"a collective bandwidth of 0",
     R"([{"op": "add", "path": "/links/inter_node/collective", "value": {"bandwidth_Bps": 0}}])",
     "", "t.json: /links/inter_node/collective/bandwidth_Bps: must be > 0, got 0"},
    {"a negative step latency",
     R"([{"op": "add", "path": "/links/intra_node/collective",
          "value": {"bandwidth_Bps": 1e9, "step_latency_s": -1}}])",
     "", "t.json: /links/intra_node/collective/step_latency_s: must be >= 0, got -1"},
    {"a negative NVLS bandwidth",
     R"([{"op": "add", "path": "/links/intra_node/collective",
          "value": {"bandwidth_Bps": 1e9, "nvls_bandwidth_Bps": -5}}])",
     "", "t.json: /links/intra_node/collective/nvls_bandwidth_Bps: must be > 0, got -5"},
    {"an unknown collective member",
     R"([{"op": "add", "path": "/links/intra_node/collective",
          "value": {"bandwidth_Bps": 1e9, "algorithm": "ring"}}])",
     "",
     "t.json: /links/intra_node/collective/algorithm: unknown member (expected one of "
     "bandwidth_Bps, step_latency_s, nvls_bandwidth_Bps)"},
    {"collective figures not an object",
     R"([{"op": "add", "path": "/links/intra_node/collective", "value": 370e9}])", "",
     "t.json: /links/intra_node/collective: expected an object, got number"},
    {"negative link power", R"([{"op": "add", "path": "/links/inter_node/power_w", "value": -3}])",
     "", "t.json: /links/inter_node/power_w: must be >= 0, got -3"},
    {"a key with '/' is escaped in the pointer",
     R"([{"op": "add", "path": "/links/a~1b", "value": {}}])", "",
     "t.json: /links/a~1b: unknown member (expected one of intra_node, inter_node, host)"},
    {"gemm table not an array",
     R"([{"op": "add", "path": "/device_types/big/gemm_efficiency", "value": {"1e9": 0.5}}])", "",
     "t.json: /device_types/big/gemm_efficiency: expected an array, got object"},
    {"empty gemm table",
     R"([{"op": "add", "path": "/device_types/big/gemm_efficiency", "value": []}])", "",
     "t.json: /device_types/big/gemm_efficiency: must not be empty"},
    {"gemm entry not a pair",
     R"([{"op": "add", "path": "/device_types/big/gemm_efficiency", "value": [[1e9, 0.5, 1]]}])",
     "", "t.json: /device_types/big/gemm_efficiency/0: expected a pair [flops, efficiency]"},
    {"gemm entry of zero FLOPs",
     R"([{"op": "add", "path": "/device_types/big/gemm_efficiency", "value": [[0, 0.5]]}])", "",
     "t.json: /device_types/big/gemm_efficiency/0/0: must be > 0, got 0"},
    {"gemm efficiency above 1",
     R"([{"op": "add", "path": "/device_types/big/gemm_efficiency", "value": [[1e9, 0.5], [1e10, 1.5]]}])",
     "", "t.json: /device_types/big/gemm_efficiency/1/1: must be in (0, 1], got 1.5"},
    {"gemm FLOPs not increasing",
     R"([{"op": "add", "path": "/device_types/big/gemm_efficiency", "value": [[1e9, 0.5], [1e9, 0.6]]}])",
     "",
     "t.json: /device_types/big/gemm_efficiency/1/0: FLOPs must increase from entry to entry, got "
     "1000000000.0 after 1000000000"},
    {"dtype gemm table without the device's",
     R"([{"op": "add", "path": "/device_types/big/dtypes",
          "value": {"float32": {"gemm_efficiency": [[1e9, 0.5]]}}}])",
     "",
     "t.json: /device_types/big/dtypes/float32/gemm_efficiency: a dtype's gemm_efficiency table "
     "needs the device type's own gemm_efficiency table (for the other dtypes' GEMMs)"},
    {"bad dtype gemm table",
     R"([{"op": "add", "path": "/device_types/big/gemm_efficiency", "value": [[1e9, 0.5]]},
         {"op": "add", "path": "/device_types/big/dtypes",
          "value": {"float32": {"gemm_efficiency": [[1e9, 0.5], [1e8, 0.6]]}}}])",
     "",
     "t.json: /device_types/big/dtypes/float32/gemm_efficiency/1/0: FLOPs must increase from "
     "entry to entry, got 100000000.0 after 1000000000"},
    {"empty dtype entry",
     R"([{"op": "add", "path": "/device_types/big/dtypes", "value": {"float32": {}}}])", "",
     "t.json: /device_types/big/dtypes/float32: expected \"efficiency\" or "
     "\"bandwidth_efficiency\" (or both)"},
    {"fused_passes not a boolean",
     R"([{"op": "add", "path": "/device_types/big/fused_passes", "value": 1}])", "",
     "t.json: /device_types/big/fused_passes: expected true or false, got number"},
    {"streams 0", R"([{"op": "add", "path": "/device_types/big/streams", "value": 0}])", "",
     "t.json: /device_types/big/streams: must be >= 1, got 0"},
    {"gemm table and a GEMM kernel's efficiency",
     R"([{"op": "add", "path": "/device_types/big/gemm_efficiency", "value": [[1e9, 0.5]]},
         {"op": "add", "path": "/device_types/big/kernels", "value": {"matmul": {"efficiency": 0.4}}}])",
     "",
     "t.json: /device_types/big/kernels/matmul/efficiency: a device type with a gemm_efficiency "
     "table takes matmul's efficiency from it; give one or the other"},
};

// Per-kernel rates: read, used by efficiency_of, written back, described.
TEST(Target, KernelRatesOverrideTheDeviceTypesAndRoundTrip) {
  const std::string text = json::parse(kTwoNodes)
                               .patch(json::parse(
                                   R"([{"op": "add", "path": "/device_types/big/kernels",
                   "value": {"gelu": {"efficiency": 0.01},
                             "pad": {"bandwidth_efficiency": 0.25},
                             "conv2d": {"efficiency": 0.5, "bandwidth_efficiency": 0.5}}}])"))
                               .dump();
  const Target t = parse_target(text, "t.json");
  const DeviceType& big = t.device_types[0];
  ASSERT_EQ(big.name, "big");
  EXPECT_EQ(big.kernels.size(), 3u);
  EXPECT_DOUBLE_EQ(big.efficiency_of("gelu"), 0.01);
  EXPECT_DOUBLE_EQ(big.bandwidth_efficiency_of("gelu"), big.bandwidth_efficiency);
  EXPECT_DOUBLE_EQ(big.efficiency_of("pad"), big.efficiency);
  EXPECT_DOUBLE_EQ(big.bandwidth_efficiency_of("pad"), 0.25);
  EXPECT_DOUBLE_EQ(big.efficiency_of("relu"), big.efficiency);
  EXPECT_EQ(parse_target(to_json(t).dump(), "again"), t);
  EXPECT_EQ(parse_target(target_json_text(t), "again"), t);
  EXPECT_THAT(describe_target(t), ::testing::HasSubstr("  kernel      gelu: 0.01 of peak\n"));
  EXPECT_THAT(describe_target(t),
              ::testing::HasSubstr("  kernel      conv2d: 0.5 of peak, 0.5 of bandwidth\n"));
}

// A device type's "dtypes" factors: read by dtype name, 1 for a dtype without an entry,
// written back, described.
TEST(Target, DtypeRatesAreReadAndRoundTrip) {
  const std::string text = json::parse(kTwoNodes)
                               .patch(json::parse(
                                   R"([{"op": "add", "path": "/device_types/big/dtypes",
                   "value": {"bfloat16": {"efficiency": 0.25, "bandwidth_efficiency": 0.5},
                             "float16": {"bandwidth_efficiency": 0.75}}}])"))
                               .dump();
  const Target t = parse_target(text, "t.json");
  const DeviceType& big = t.device_types[0];
  EXPECT_DOUBLE_EQ(big.dtype_efficiency(ir::DType::kBFloat16), 0.25);
  EXPECT_DOUBLE_EQ(big.dtype_bandwidth_efficiency(ir::DType::kBFloat16), 0.5);
  EXPECT_DOUBLE_EQ(big.dtype_efficiency(ir::DType::kFloat16), 1.0);
  EXPECT_DOUBLE_EQ(big.dtype_bandwidth_efficiency(ir::DType::kFloat16), 0.75);
  EXPECT_DOUBLE_EQ(big.dtype_efficiency(ir::DType::kFloat32), 1.0);
  EXPECT_EQ(parse_target(to_json(t).dump(), "again"), t);
  EXPECT_EQ(parse_target(target_json_text(t), "again"), t);
  EXPECT_THAT(describe_target(t),
              ::testing::HasSubstr("  dtype       bfloat16 outside GEMMs: 0.25 of its efficiency, "
                                   "0.5 of its bandwidth\n"));
}

// A link's collective figures and port power: read, defaulted, written back, described.
TEST(Target, CollectiveFiguresAndLinkPowerAreReadAndRoundTrip) {
  const Target plain = parse_target(kTwoNodes, "t.json");
  EXPECT_EQ(plain.intra_node.collective, std::nullopt);
  EXPECT_EQ(plain.intra_node.power_w, 0.0);
  // Absent: collectives run at the line rate and latency.
  EXPECT_EQ(plain.intra_node.collective_rates(), (CollectiveRates{1e11, 1e-6, std::nullopt}));
  const std::string text = json::parse(kTwoNodes)
                               .patch(json::parse(R"([
            {"op": "add", "path": "/links/intra_node/collective",
             "value": {"bandwidth_Bps": 8e10, "step_latency_s": 3e-6, "nvls_bandwidth_Bps": 9e10}},
            {"op": "add", "path": "/links/inter_node/collective", "value": {"bandwidth_Bps": 9e9}},
            {"op": "add", "path": "/links/inter_node/power_w", "value": 20}])"))
                               .dump();
  const Target t = parse_target(text, "t.json");
  EXPECT_EQ(t.intra_node.collective_rates(), (CollectiveRates{8e10, 3e-6, 9e10}));
  EXPECT_EQ(t.inter_node->collective_rates(), (CollectiveRates{9e9, 0.0, std::nullopt}));
  EXPECT_EQ(t.inter_node->power_w, 20.0);
  EXPECT_EQ(parse_target(to_json(t).dump(), "again"), t);
  EXPECT_EQ(parse_target(target_json_text(t), "again"), t);
  EXPECT_FALSE(to_json(plain)["links"]["intra_node"].contains("collective"));
  EXPECT_FALSE(to_json(plain)["links"]["intra_node"].contains("power_w"));
  const std::string described = describe_target(t);
  EXPECT_THAT(described, ::testing::HasSubstr(
                             "intra     100 GB/s per direction, latency 1 µs; collectives 80 GB/s, "
                             "3 µs per step, NVLS 90 GB/s\n"));
  EXPECT_THAT(described, ::testing::HasSubstr("inter     10 GB/s per direction, latency 5 µs; "
                                              "collectives 9 GB/s, 0 s per step; 20 W per port "
                                              "while busy\n"));
}

// A device type's cache: read, written back, described.
TEST(Target, CacheIsReadAndRoundTrips) {
  const std::string text =
      json::parse(kTwoNodes)
          .patch(json::parse(R"([{"op": "add", "path": "/device_types/big/cache",
                                  "value": {"bytes": 1048576, "bandwidth_Bps": 5e10}}])"))
          .dump();
  const Target t = parse_target(text, "t.json");
  EXPECT_EQ(t.device_types[0].cache_bytes, 1048576);
  EXPECT_DOUBLE_EQ(t.device_types[0].cache_bandwidth_Bps, 5e10);
  EXPECT_EQ(t.device_types[1].cache_bytes, 0);  // "small" declares none
  EXPECT_EQ(parse_target(to_json(t).dump(), "again"), t);
  EXPECT_EQ(parse_target(target_json_text(t), "again"), t);
  EXPECT_THAT(describe_target(t), ::testing::HasSubstr("  cache       1.05 MB at 50 GB/s\n"));
  EXPECT_FALSE(to_json(parse_target(kTwoNodes, "t.json"))["device_types"]["big"].contains("cache"));
}

// A dtype's GEMM table and streams: read, written back, described.
TEST(Target, DtypeGemmTablesAndStreamsRoundTrip) {
  const std::string text =
      json::parse(kTwoNodes)
          .patch(json::parse(R"([{"op": "add", "path": "/device_types/big/gemm_efficiency",
                                  "value": [[2.1e9, 0.35], [1.7e10, 0.6]]},
                                 {"op": "add", "path": "/device_types/big/streams", "value": 4},
                                 {"op": "add", "path": "/device_types/big/fused_passes",
                                  "value": true},
                                 {"op": "add", "path": "/device_types/big/dtypes",
                                  "value": {"float32": {"gemm_efficiency": [[2.1e9, 0.7]]},
                                            "bfloat16": {"efficiency": 0.5,
                                                         "gemm_efficiency": [[1e9, 0.2]]}}}])"))
          .dump();
  const Target t = parse_target(text, "t.json");
  const DeviceType& big = t.device_types[0];
  EXPECT_EQ(big.streams, 4);
  EXPECT_TRUE(big.fused_passes);
  EXPECT_FALSE(t.device_types[1].fused_passes);
  ASSERT_EQ(big.dtype_gemm_efficiency.size(), 2u);
  EXPECT_EQ(big.dtype_gemm_efficiency.at(ir::DType::kFloat32),
            (std::vector<GemmEfficiency>{{2.1e9, 0.7}}));
  EXPECT_EQ(big.dtypes.count(ir::DType::kFloat32), 0u);  // a table alone sets no factor
  EXPECT_EQ(big.dtypes.at(ir::DType::kBFloat16).efficiency, 0.5);
  EXPECT_DOUBLE_EQ(big.gemm_efficiency_at(1e12, ir::DType::kFloat32), 0.7);
  EXPECT_DOUBLE_EQ(big.gemm_efficiency_at(1e12, ir::DType::kFloat16), 0.6);  // the device's
  EXPECT_EQ(parse_target(to_json(t).dump(), "again"), t);
  EXPECT_THAT(describe_target(t),
              ::testing::HasSubstr("  gemm        float32 efficiency by FLOPs per call: 0.7 at "
                                   "2.1 GFLOP\n"));
  EXPECT_THAT(describe_target(t),
              ::testing::HasSubstr("  streams     4 applications of an operation at once\n"));
  EXPECT_FALSE(
      to_json(parse_target(kTwoNodes, "t.json"))["device_types"]["big"].contains("streams"));
  EXPECT_FALSE(
      to_json(parse_target(kTwoNodes, "t.json"))["device_types"]["big"].contains("fused_passes"));
  EXPECT_THAT(describe_target(t),
              ::testing::HasSubstr("  fusion      a fused operation's stages as passes over "
                                   "memory\n"));
}

// A GEMM efficiency table: read, interpolated in log FLOPs (clamped at its ends), written back,
// described; the worked example of target.h.
TEST(Target, GemmEfficiencyTableInterpolatesInLogFlops) {
  const std::string text =
      json::parse(kTwoNodes)
          .patch(json::parse(R"([{"op": "add", "path": "/device_types/big/gemm_efficiency",
                                  "value": [[2.1e9, 0.35], [1.7e10, 0.6], [1.4e11, 0.7]]}])"))
          .dump();
  const Target t = parse_target(text, "t.json");
  const DeviceType& big = t.device_types[0];
  ASSERT_EQ(big.gemm_efficiency.size(), 3u);
  EXPECT_EQ(big.gemm_efficiency[1], (GemmEfficiency{1.7e10, 0.6}));
  EXPECT_NEAR(big.gemm_efficiency_at(6e9), 0.4755, 5e-5);
  EXPECT_DOUBLE_EQ(big.gemm_efficiency_at(6e9),
                   0.35 + 0.25 * std::log(6e9 / 2.1e9) / std::log(1.7e10 / 2.1e9));
  EXPECT_DOUBLE_EQ(big.gemm_efficiency_at(1.7e10), 0.6);  // at an entry: its value
  EXPECT_DOUBLE_EQ(big.gemm_efficiency_at(1e3), 0.35);    // below the first: the first's
  EXPECT_DOUBLE_EQ(big.gemm_efficiency_at(1e15), 0.7);    // above the last: the last's
  // Geometric midpoints get the arithmetic mean of their neighbours' figures.
  EXPECT_NEAR(big.gemm_efficiency_at(std::sqrt(1.7e10 * 1.4e11)), 0.65, 1e-12);
  // Monotone between and beyond entries of a rising table, and within its range.
  double last = 0;
  for (double f = 1e8; f < 1e13; f *= 1.37) {
    const double e = big.gemm_efficiency_at(f);
    EXPECT_GE(e, last) << f;
    EXPECT_GE(e, 0.35);
    EXPECT_LE(e, 0.7);
    last = e;
  }
  EXPECT_TRUE(t.device_types[1].gemm_efficiency.empty());  // "small" declares none
  EXPECT_EQ(parse_target(to_json(t).dump(), "again"), t);
  EXPECT_EQ(parse_target(target_json_text(t), "again"), t);
  EXPECT_THAT(describe_target(t),
              ::testing::HasSubstr("  gemm        efficiency by FLOPs per call: 0.35 at 2.1 GFLOP, "
                                   "0.6 at 17 GFLOP, 0.7 at 140 GFLOP\n"));
  EXPECT_FALSE(to_json(parse_target(kTwoNodes, "t.json"))["device_types"]["big"].contains(
      "gemm_efficiency"));
  EXPECT_TRUE(is_gemm_kernel("matmul"));
  EXPECT_TRUE(is_gemm_kernel("linear_nobias"));
  EXPECT_FALSE(is_gemm_kernel("conv2d"));
}

TEST(Target, BadTargetsGetTheirExactError) {
  for (const BadTarget& bad : kBadTargets) {
    const std::string text = bad.text.empty()
                                 ? json::parse(kTwoNodes).patch(json::parse(bad.patch)).dump()
                                 : std::string(bad.text);
    EXPECT_THAT([&] { (void)parse_target(text, "t.json"); },
                ::testing::ThrowsMessage<Error>(::testing::StrEq(std::string(bad.error))))
        << bad.what;
  }
}

// The reader's errors carry their place as data: file + JSON pointer, or file + line and column.
TEST(Target, ReadErrorsCarryTheirLocation) {
  support::Diagnostic d =
      support::testing::thrown_diagnostic([] { (void)parse_target(R"({"name": "x"})", "t.json"); });
  EXPECT_EQ(d.where.file, "t.json");
  EXPECT_EQ(d.where.pointer, "/");
  EXPECT_EQ(d.message, "missing member \"device_types\"");
  json unnamed = json::parse(kTwoNodes);
  unnamed["name"] = "";
  d = support::testing::thrown_diagnostic([&] { (void)parse_target(unnamed.dump(), "t.json"); });
  EXPECT_EQ(d.where.pointer, "/name");
  EXPECT_EQ(d.message, "must not be empty");
  d = support::testing::thrown_diagnostic(
      [] { (void)parse_target("{\"name\": \"x\",\n \"name\": \"y\"}", "t.json"); });
  EXPECT_EQ(d.where.file, "t.json");
  EXPECT_EQ(d.where.pos, (support::SourcePos{2, 2}));
}

TEST(Target, ReadTargetFileNamesTheFile) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / fmt::format("target_test_{}.json", ::getpid());
  {
    std::ofstream out(path);
    out << R"({"name": "x"})";
  }
  EXPECT_THAT([&] { (void)read_target_file(path); },
              ::testing::ThrowsMessage<Error>(
                  ::testing::StrEq(path.string() + ": /: missing member \"device_types\"")));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tapestry::cost
