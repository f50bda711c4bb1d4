// Placement: default, place and mesh assignment; transfers derived from box intersections,
// checked against a cell-by-cell oracle on random graphs and plans.
#include "tapestry/cost/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "cost/cost_testing.h"
#include "rewrite/random_plans.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/cost/work.h"
#include "tapestry/cost/work_rule.h"
#include "tapestry/ir/dialect.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/ir/type_names.h"
#include "tapestry/zspace/format.h"

namespace tapestry::cost {
namespace {

using testing::place_tap;
using testing::toy_target;

constexpr std::string_view kLinearRelu =
    "X: f32[4096, 1024]\nW: f32[4096, 1024]\nb: f32[4096]\nY = relu(linear(X, W, b))\noutput Y\n";

constexpr std::string_view kMlp =
    "X: f32[4096, 1024]\nW1: f32[4096, 1024]\nb1: f32[4096]\nW2: f32[1024, 4096]\nb2: f32[1024]\n"
    "H = relu(linear(X, W1, b1))\nY = linear(H, W2, b2)\noutput Y\n";

std::vector<std::uint32_t> devices_of(const Placement& p, std::string_view op) {
  for (const PlacedOperation& o : p.operations) {
    if (o.name != op) continue;
    std::vector<std::uint32_t> d;
    for (std::uint32_t a : o.applications) d.push_back(p.applications[a].device);
    return d;
  }
  ADD_FAILURE() << "no operation " << op;
  return {};
}

TEST(Placement, HeaderExampleOneTransferOfTheRowsTheSecondShardReads) {
  const Placement p =
      place_tap(kLinearRelu, R"({"ops": {"Y": {"split": {"d0": 2}}}})", toy_target(1, 8));
  ASSERT_EQ(p.applications.size(), 3u);
  EXPECT_EQ(devices_of(p, "Y/linear"), (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(devices_of(p, "Y"), (std::vector<std::uint32_t>{0, 1}));
  ASSERT_EQ(p.transfers.size(), 1u);
  EXPECT_EQ(p.transfers[0].bytes, 2048 * 4096 * 4);
  EXPECT_EQ(fmt::format("{}", p.transfers[0].box), "zr[2048:4096, 0:4096]");
  EXPECT_EQ(p.transfers[0].from, 0u);
  EXPECT_EQ(p.transfers[0].to, 1u);
}

TEST(Placement, UnshardedPlansRunOnDeviceZeroAndMoveNothing) {
  const Placement p = place_tap(kMlp, "{}", toy_target(2, 4));
  for (const PlacedApplication& a : p.applications) EXPECT_EQ(a.device, 0u);
  EXPECT_TRUE(p.transfers.empty());
  // Every input each application reads is resident on device 0, counted once.
  EXPECT_EQ(p.resident_input_bytes[0], (4096 * 1024 + 4096 * 1024 + 4096 + 1024 * 4096 + 1024) * 4);
}

TEST(Placement, DefaultPlacementCyclesGridOrderOverTheDevices) {
  const Placement p =
      place_tap(kLinearRelu, R"({"ops": {"Y": {"split": {"d0": 3, "d1": 2}}}})", toy_target(1, 4));
  EXPECT_EQ(devices_of(p, "Y"), (std::vector<std::uint32_t>{0, 1, 2, 3, 0, 1}));
}

TEST(Placement, PlaceListsDevicesInGridOrderCycled) {
  const Placement p =
      place_tap(kLinearRelu, R"({"ops": {"Y": {"split": {"d0": 3}, "place": ["gpu:3", "gpu:1"]}}})",
                toy_target(1, 4));
  EXPECT_EQ(devices_of(p, "Y"), (std::vector<std::uint32_t>{3, 1, 3}));
}

TEST(Placement, MeshMapsSplitDimsOntoAxes) {
  Target t = toy_target(2, 4);
  t.mesh = {{"dp", 2}, {"tp", 4}};
  // Shard (i, j): dp = i mod 2, tp = j mod 4 → device dp·4 + tp.
  const Placement p = place_tap(
      kLinearRelu,
      R"({"ops": {"Y": {"split": {"d0": 2, "d1": 4}, "mesh": {"d0": "dp", "d1": "tp"}}}})", t);
  EXPECT_EQ(devices_of(p, "Y"), (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Only d1 on tp: dp takes coordinate 0.
  const Placement q = place_tap(
      kLinearRelu, R"({"ops": {"Y": {"split": {"d0": 2, "d1": 2}, "mesh": {"d1": "tp"}}}})", t);
  EXPECT_EQ(devices_of(q, "Y"), (std::vector<std::uint32_t>{0, 1, 0, 1}));
}

TEST(Placement, MeshFollowsASplitReductionOntoItsBlocks) {
  Target t = toy_target(1, 4);
  t.mesh = {{"tp", 4}};
  const Placement p = place_tap(
      kLinearRelu, R"({"ops": {"Y/linear": {"split": {"in": 4}, "mesh": {"in": "tp"}}}})", t);
  std::set<std::uint32_t> used;
  for (const PlacedOperation& o : p.operations) {
    if (o.kernel != "linear" && o.kernel != "linear_nobias") continue;
    for (std::uint32_t a : o.applications) used.insert(p.applications[a].device);
  }
  EXPECT_EQ(used, (std::set<std::uint32_t>{0, 1, 2, 3}));
}

TEST(Placement, BadPlacementsAreErrorsNamingThePlanPath) {
  const auto error_of = [](std::string_view plan, const Target& t) -> std::string {
    try {
      place_tap(kLinearRelu, plan, t);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(
      error_of(R"({"ops": {"Y": {"split": {"d0": 2}, "place": ["gpu:0", "gpu:9"]}}})",
               toy_target(1, 8)),
      "/ops/Y/place/1: operation 'Y': target 'toy' has no device 'gpu:9' (it has gpu:0 … gpu:7); "
      "--ignore-placement places the plan's shards on this target by the default rule");
  EXPECT_EQ(
      error_of(R"({"ops": {"Y": {"split": {"d0": 2}, "mesh": {"d0": "dp"}}}})", toy_target(1, 2)),
      "/ops/Y/mesh/d0: operation 'Y': target 'toy' has no mesh axis 'dp' (its mesh: d); "
      "--ignore-placement places the plan's shards on this target by the default rule");
}

// ---- the combine of a split reduction follows its blocks (rewrite::OpPlan::colocate) ---------

// The partial tensor's bytes that cross devices, and whether every application of `op` has one
// of the blocks it sums on its own device.
struct CombineTraffic {
  std::int64_t moved = 0;
  bool every_shard_has_a_local_block = true;
};

CombineTraffic combine_traffic(const Placement& p, std::string_view combine) {
  CombineTraffic out;
  for (const Transfer& t : p.transfers) {
    if (t.to != kHost && !t.consumers.empty() &&
        p.operations[p.applications[t.consumers.front()].operation].name == combine) {
      out.moved += t.bytes;
    }
  }
  for (const PlacedOperation& o : p.operations) {
    if (o.name != combine) continue;
    for (std::uint32_t a : o.applications) {
      bool local = false;
      for (std::uint32_t producer : p.applications[a].local_producers) {
        local = local || p.operations[p.applications[producer].operation].kernel != "reduce";
      }
      out.every_shard_has_a_local_block = out.every_shard_has_a_local_block && local;
    }
  }
  return out;
}

std::vector<CollectiveKind> kinds_of(const Placement& p) {
  std::vector<CollectiveKind> kinds;
  for (const Collective& c : p.collectives) kinds.push_back(c.kind);
  return kinds;
}

// Y's partial sums [4 blocks, 4096 × 1024] f32: a reduce-scatter moves 3/4 of the blocks' bytes
// (each device keeps its own quarter of every sum's rows), a gather onto one device 3 whole blocks.
constexpr std::int64_t kYBlock = std::int64_t{4096} * 1024 * 4;

TEST(Placement, TheDefaultCombineRunsWhereItsBlocksAre) {
  const Placement p = place_tap(kMlp, R"({"ops": {"Y": {"split": {"in": 4}}}})", toy_target(1, 8));
  EXPECT_EQ(devices_of(p, "Y/matmul"), (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(devices_of(p, "Y/matmul/reduce"), (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(devices_of(p, "Y"), (std::vector<std::uint32_t>{0, 1, 2, 3}));  // the bias_add
  const CombineTraffic traffic = combine_traffic(p, "Y/matmul/reduce");
  EXPECT_EQ(traffic.moved, 3 * kYBlock);
  EXPECT_TRUE(traffic.every_shard_has_a_local_block);
  EXPECT_THAT(kinds_of(p), ::testing::Contains(CollectiveKind::kReduceScatter));
}

// A place list on the partial operation: the combine's shard j goes where block j went, whatever
// the list's order — the rule the default placement could not give (it would put the shards on
// gpu:0 … gpu:3).
TEST(Placement, TheDefaultCombineFollowsAPlaceList) {
  const Placement p = place_tap(
      kMlp,
      R"({"ops": {"Y": {"split": {"in": 4}, "place": ["gpu:7", "gpu:5", "gpu:3", "gpu:1"]}}})",
      toy_target(1, 8));
  EXPECT_EQ(devices_of(p, "Y/matmul"), (std::vector<std::uint32_t>{7, 5, 3, 1}));
  EXPECT_EQ(devices_of(p, "Y/matmul/reduce"), (std::vector<std::uint32_t>{7, 5, 3, 1}));
  EXPECT_EQ(combine_traffic(p, "Y/matmul/reduce").moved, 3 * kYBlock);
}

// Blocks × batch rows on 8 devices: the combine inherits the 2 row groups and cuts each 4 ways
// more; every shard sums its rows' 4 blocks with one of them local.
TEST(Placement, AnInheritedDimKeepsTheCombineInsideItsGroup) {
  const Placement p =
      place_tap(kMlp, R"({"ops": {"Y": {"split": {"in": 4, "batch": 2}}}})", toy_target(1, 8));
  const std::vector<std::uint32_t> combine = devices_of(p, "Y/matmul/reduce");
  EXPECT_EQ(std::set<std::uint32_t>(combine.begin(), combine.end()).size(), 8u);
  const CombineTraffic traffic = combine_traffic(p, "Y/matmul/reduce");
  EXPECT_EQ(traffic.moved, 3 * kYBlock);  // 2 groups × 3/4 of 4 half blocks
  EXPECT_TRUE(traffic.every_shard_has_a_local_block);
  EXPECT_EQ(kinds_of(p), (std::vector<CollectiveKind>{CollectiveKind::kReduceScatter,
                                                      CollectiveKind::kReduceScatter}));
}

// dp 2 × tp 4 on two nodes of 4 (h100x64's layout in small): tensor parallel inside a node, the
// combine's reduce-scatters never cross the slow link.
TEST(Placement, OnAMeshEveryCombineStaysInsideItsNode) {
  Target t = toy_target(2, 4);
  t.mesh = {{"dp", 2}, {"tp", 4}};
  const Placement p = place_tap(kMlp, R"({"ops": {
      "H/linear": {"split": {"batch": 2, "out": 4}, "mesh": {"batch": "dp", "out": "tp"}},
      "H": {"split": {"d0": 2, "d1": 4}, "mesh": {"d0": "dp", "d1": "tp"}},
      "Y": {"split": {"batch": 2, "in": 4}, "mesh": {"batch": "dp", "in": "tp"}}},
      "fuse": "auto"})",
                                t);
  ASSERT_FALSE(p.transfers.empty());
  for (const Transfer& tr : p.transfers) {
    EXPECT_EQ(t.devices[tr.from].node, t.devices[tr.to].node)
        << fmt::format("{} → {}", tr.from, tr.to);
  }
  EXPECT_EQ(kinds_of(p), (std::vector<CollectiveKind>{CollectiveKind::kReduceScatter,
                                                      CollectiveKind::kReduceScatter}));
}

// ---- replicated outputs ------------------------------------------------------------------------

// Per device: the cells of `tensor` it ends the run with (written there, or received by a
// transfer that replicates the output).
std::map<std::uint32_t, std::int64_t> output_cells(const Placement& p, const ir::Graph& g,
                                                   std::string_view tensor) {
  std::map<std::uint32_t, std::int64_t> cells;
  for (const PlacedApplication& a : p.applications) {
    for (const auto& e : g.application(a.id).outputs().entries()) {
      if (g.tensor(e.value.tensor).label() == tensor) cells[a.device] += e.value.range.size();
    }
  }
  for (const Transfer& t : p.transfers) {
    if (t.replicates_output) cells[t.to] += t.box.size();
  }
  return cells;
}

TEST(Placement, ReplicateAllGivesEveryWriterTheWholeOutput) {
  rewrite::LowerResult r;
  const Placement p = place_tap(
      kMlp, R"({"ops": {"Y": {"split": {"in": 4}}}, "outputs": {"Y": {"replicate": "all"}}})",
      toy_target(1, 8), &r);
  const std::int64_t y = 4096 * 1024;
  EXPECT_EQ(output_cells(p, r.graph, "Y"),
            (std::map<std::uint32_t, std::int64_t>{{0, y}, {1, y}, {2, y}, {3, y}}));
  // Reduce-scatter + all-gather: the ring all-reduce.
  EXPECT_EQ(kinds_of(p), (std::vector<CollectiveKind>{CollectiveKind::kReduceScatter,
                                                      CollectiveKind::kAllGather}));
  for (const Transfer& t : p.transfers) {
    EXPECT_EQ(t.replicates_output, t.consumers.empty());
  }
  // Without "outputs", no transfer of Y.
  const Placement q = place_tap(kMlp, R"({"ops": {"Y": {"split": {"in": 4}}}})", toy_target(1, 8));
  EXPECT_EQ(q.transfers.size() + 12, p.transfers.size());
}

// Replicate along tp on a dp 2 × tp 4 mesh: each device gets the rows its tp group writes — two
// all-gathers of 4, nothing between the groups (DTensor's [Shard(0), Replicate()]).
TEST(Placement, ReplicateAlongAMeshAxisStaysInsideEachGroup) {
  Target t = toy_target(2, 4);
  t.mesh = {{"dp", 2}, {"tp", 4}};
  rewrite::LowerResult r;
  constexpr std::string_view kOnTheMesh = R"("ops": {"Y/linear": {"split": {"batch": 2, "out": 4},
      "mesh": {"batch": "dp", "out": "tp"}}}, "fuse": "auto")";
  const Placement p = place_tap(
      kLinearRelu, fmt::format(R"({{{}, "outputs": {{"Y": {{"replicate": "tp"}}}}}})", kOnTheMesh),
      t, &r);
  std::int64_t half = 2048 * 4096;
  std::map<std::uint32_t, std::int64_t> expected;
  for (std::uint32_t d = 0; d < 8; ++d) expected[d] = half;
  EXPECT_EQ(output_cells(p, r.graph, "Y"), expected);
  EXPECT_EQ(kinds_of(p),
            (std::vector<CollectiveKind>{CollectiveKind::kAllGather, CollectiveKind::kAllGather}));
  for (const Transfer& tr : p.transfers) EXPECT_EQ(tr.from / 4, tr.to / 4);
  // Along dp: pairs across the nodes.
  const Placement q =
      place_tap(kLinearRelu,
                fmt::format(R"({{{}, "outputs": {{"Y": {{"replicate": "dp"}}}}}})", kOnTheMesh), t);
  EXPECT_EQ(q.transfers.size(), 8u);
  for (const Transfer& tr : q.transfers) EXPECT_EQ(tr.from % 4, tr.to % 4);
}

// The receivers hold what they receive to the end of the run, as the writers do.
TEST(Placement, AReplicatedOutputIsHeldToTheEnd) {
  const Target t = toy_target(1, 2);
  constexpr std::string_view kRelu = "A: f32[1024, 1024]\nY = relu(A)\noutput Y\n";
  const CostVector split =
      simulate(place_tap(kRelu, R"({"ops": {"Y": {"split": {"d0": 2}}}})", t), t);
  const CostVector replicated = simulate(place_tap(kRelu, R"({"ops": {"Y": {"split": {"d0": 2}}},
                           "outputs": {"Y": {"replicate": "all"}}})",
                                                   t),
                                         t);
  // Each device ends with its own half and the other's.
  for (std::size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(replicated.per_device[d].peak_memory_bytes - split.per_device[d].peak_memory_bytes,
              std::int64_t{512} * 1024 * 4);
  }
  EXPECT_GT(replicated.makespan_s, split.makespan_s);
}

TEST(Placement, ABadReplicateIsAnErrorNamingThePlanPath) {
  const auto error_of = [](std::string_view plan) -> std::string {
    try {
      place_tap(kLinearRelu, plan, toy_target(1, 4));
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of(R"({"outputs": {"Y": {"replicate": "tp"}}})"),
            "/outputs/Y/replicate: target 'toy' has no mesh axis 'tp' (its mesh: d; or \"all\"); "
            "--ignore-placement drops it");
}

TEST(PlanMesh, ParsedCheckedAndExclusiveWithPlace) {
  const rewrite::Plan plan =
      rewrite::parse_plan(R"({"ops": {"Y": {"split": {"d0": 2}, "mesh": {"d0": "dp"}}}})");
  EXPECT_EQ(plan.ops.at("Y").mesh.at("d0"), "dp");
  EXPECT_EQ(rewrite::parse_plan(plan.to_json().dump()), plan);
  const auto error_of = [](std::string_view text) -> std::string {
    try {
      rewrite::parse_plan(text, "p.json");
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of(R"({"ops": {"Y": {"mesh": {"d0": "dp"}, "place": ["gpu:0"]}}})"),
            "p.json: /ops/Y: \"place\" and \"mesh\" both say where the shards run: give one");
  EXPECT_EQ(error_of(R"({"ops": {"Y": {"mesh": {"d0": "dp", "d1": "dp"}}}})"),
            "p.json: /ops/Y/mesh/d1: mesh axis 'dp' already carries dimension 'd0'");
  EXPECT_EQ(error_of(R"({"ops": {"Y": {"mesh": {}}}})"),
            "p.json: /ops/Y/mesh: a mesh mapping needs at least one dimension");
  ir::Graph g = rewrite::testing::build(kLinearRelu);
  const auto problems =
      rewrite::check_plan(rewrite::parse_plan(R"({"ops": {"Y": {"mesh": {"in": "dp"}}}})"), g);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].where.pointer, "/ops/Y/mesh/in");
  EXPECT_EQ(problems[0].message,
            "operation 'Y' has no index dimension 'in' (it has: d0, d1; aliases: batch = d0, out = "
            "d1)");
  // An alias names the dim (rewrite/dim_aliases.h): `batch` is Y's d0.
  EXPECT_TRUE(
      rewrite::check_plan(rewrite::parse_plan(R"({"ops": {"Y": {"mesh": {"batch": "dp"}}}})"), g)
          .empty());
}

TEST(Placement, HostResidenceLoadsInputsOncePerDeviceAndGathersOutputs) {
  Target t = toy_target(1, 2);
  t.inputs = Residence::kHost;
  t.outputs = Residence::kHost;
  const Placement p =
      place_tap(kLinearRelu, R"({"ops": {"Y/linear": {"split": {"batch": 2}}}})", t);
  std::int64_t loaded = 0;
  std::int64_t gathered = 0;
  for (const Transfer& tr : p.transfers) {
    if (tr.from == kHost) loaded += tr.bytes;
    if (tr.to == kHost) gathered += tr.bytes;
  }
  // Each device loads its half of X and all of W and b; Y comes back whole.
  EXPECT_EQ(loaded, (4096 * 1024 + 2 * (4096 * 1024 + 4096)) * 4);
  EXPECT_EQ(gathered, 4096 * 4096 * 4);
  EXPECT_EQ(p.resident_input_bytes, (std::vector<std::int64_t>{0, 0}));
}

TEST(PlacementDialect, AnnotatedGraphsValidateAndSurviveJson) {
  rewrite::LowerResult r = testing::lower_tap(kMlp, R"({"ops": {"H/linear": {"split": {"out": 2}},
      "H": {"split": {"d1": 2}}, "Y": {"split": {"in": 2}}}, "fuse": [["H/linear", "H"]]})");
  const Target t = toy_target(1, 8);
  const Placement p = place(r.graph, r.plan, t);
  ir::Graph placed = r.graph;
  annotate_placement(placed, p, t);
  // Written and read back, it is still valid in the placement dialect.
  ir::ReadResult back = ir::read_graph_json(ir::write_graph_json(placed));
  ASSERT_TRUE(back.graph.has_value());
  EXPECT_TRUE(ir::validate(*back.graph, ir::Dialect::placement()).issues.empty());
  // Without the tags it is not placed; in the application dialect it is fine either way.
  const ir::ValidationReport bare = ir::validate(r.graph, ir::Dialect::placement());
  EXPECT_EQ(ir::count_type(bare.issues, "application-placement"), r.graph.applications().size());
  EXPECT_TRUE(ir::validate(placed, ir::Dialect::application()).issues.empty());
  // Drop the two transfers of the reduce-scatter (each reduce shard reads the other block's
  // half of the partials): exactly those reads are reported.
  ir::Graph dropped = placed;
  for (ir::ApplicationId app : dropped.applications()) {
    nlohmann::json tag = dropped.node(app).other_tags()[std::string(ir::kPlacementTagUrl)];
    if (tag.contains("receives")) {
      tag.erase("receives");
      dropped.set_other_tag(app, std::string(ir::kPlacementTagUrl), tag);
    }
  }
  const ir::ValidationReport missing = ir::validate(dropped, ir::Dialect::placement());
  ASSERT_EQ(missing.issues.size(), 2u);
  EXPECT_EQ(missing.issues[0].summary, "Cross-device read without a transfer");
  EXPECT_THAT(missing.issues[0].message,
              ::testing::HasSubstr("reads zr[1:2, 0:2048, 0:1024] of tensor Y/matmul/partial, "
                                   "written on gpu:1"));
  EXPECT_THAT(missing.issues[1].message,
              ::testing::HasSubstr("reads zr[0:1, 2048:4096, 0:1024] of tensor Y/matmul/partial, "
                                   "written on gpu:0"));
  // A device the target lacks.
  const Target small = toy_target(1, 1);
  const std::vector<std::string> problems = check_devices(placed, small);
  ASSERT_FALSE(problems.empty());
  EXPECT_THAT(problems[0], ::testing::HasSubstr("which target 'toy' lacks (it has gpu:0)"));
}

TEST(Work, FlopsAndBytesFollowTheTable) {
  rewrite::LowerResult r = testing::lower_tap(kLinearRelu, "{}");
  for (ir::ApplicationId app : r.graph.applications()) {
    const Work w = application_work(r.graph, app);
    const std::string& kernel = r.graph.operation(r.graph.application(app).operation()).kernel();
    if (kernel == "linear") {
      EXPECT_DOUBLE_EQ(w.flops, 2.0 * 4096 * 4096 * 1024);
      EXPECT_EQ(w.bytes_read, (4096 * 1024 + 4096 * 1024 + 4096) * 4);
      EXPECT_EQ(w.bytes_written, 4096 * 4096 * 4);
    } else {
      EXPECT_EQ(kernel, "relu");
      EXPECT_DOUBLE_EQ(w.flops, 4096.0 * 4096);
    }
  }
  // Fused: the sum over the stages, each over its own box; only external boxes count.
  rewrite::LowerResult f = testing::lower_tap(kLinearRelu, R"({"fuse": "auto"})");
  ASSERT_EQ(f.graph.applications().size(), 1u);
  const Work w = application_work(f.graph, f.graph.applications()[0]);
  EXPECT_DOUBLE_EQ(w.flops, 2.0 * 4096 * 4096 * 1024 + 4096.0 * 4096);
  EXPECT_EQ(w.bytes_written, 4096 * 4096 * 4);
  EXPECT_EQ(flops_per_point("transpose"), 0);
  EXPECT_EQ(flops_per_point("a_user_kernel"), 1);
}

// conv2d's index has no window dims (the window is a tile of x and w): each point costs
// 2 · kh · kw FLOPs; softmax's index is its rows: each point costs 5 per element of the row.
// Fused conv2d ⇒ relu counts its conv stage the same way.
TEST(Work, ConvWindowsAndSoftmaxRowsCountEveryElement) {
  const char* conv = "X: f32[2, 3, 10, 10]\nK: f32[4, 3, 3, 3]\nY = conv2d(X, K)\noutput Y\n";
  rewrite::LowerResult c = testing::lower_tap(conv, "{}");
  ASSERT_EQ(c.graph.applications().size(), 1u);
  const double points = 2.0 * 4 * 8 * 8 * 3;  // n, o, oh, ow, c
  EXPECT_DOUBLE_EQ(application_work(c.graph, c.graph.applications()[0]).flops, points * 2 * 3 * 3);
  rewrite::LowerResult cf = testing::lower_tap(
      "X: f32[2, 3, 10, 10]\nK: f32[4, 3, 3, 3]\nY = relu(conv2d(X, K))\noutput Y\n",
      R"({"fuse": "auto"})");
  ASSERT_EQ(cf.graph.applications().size(), 1u);
  EXPECT_DOUBLE_EQ(application_work(cf.graph, cf.graph.applications()[0]).flops,
                   points * 2 * 3 * 3 + 2.0 * 4 * 8 * 8);
  rewrite::LowerResult s = testing::lower_tap("X: f32[6, 50]\nY = softmax(X)\noutput Y\n", "{}");
  ASSERT_EQ(s.graph.applications().size(), 1u);
  EXPECT_DOUBLE_EQ(application_work(s.graph, s.graph.applications()[0]).flops, 5.0 * 6 * 50);
}

// Stage::points counts a projected box without building it; it must agree with apply().
TEST(Work, StagePointsAgreeWithTheProjectedBox) {
  const zspace::Range box(zspace::Point{2, -3, 0}, zspace::Point{7, 5, 4});
  const std::vector<zspace::AffineMap> maps = {
      zspace::AffineMap::from_rows({{0, 1, 0}, {1, 0, 0}}, {0, 0}),   // permutation
      zspace::AffineMap::from_rows({{0, 0, -1}, {0, 0, 0}}, {3, 1}),  // negated, constant
      zspace::AffineMap::from_rows({{1, 1, 0}, {0, 2, 0}}, {0, 0}),   // not a projection
  };
  for (const zspace::AffineMap& m : maps) {
    WorkRule::Stage stage{"relu", 1, false, zspace::IndexProjection(m), {}};
    const std::int64_t expected = stage.index_map->apply(box).size();
    EXPECT_EQ(stage.points(box), expected);  // the general path
    const WorkRule::Stage fast = fused_stage("relu", 1, zspace::IndexProjection(m));
    EXPECT_EQ(fast.projection.empty(), &m == &maps.back());
    EXPECT_EQ(fast.points(box), expected);
  }
}

// The oracle: per destination device, the cells transfers bring are exactly the cells its
// applications read that another device wrote — computed cell by cell.
using Cell = std::tuple<std::uint32_t, std::uint32_t, std::vector<std::int64_t>>;  // device, tensor

std::set<Cell> cells_of(std::uint32_t device, ir::TensorId tensor, const zspace::Range& box) {
  std::set<Cell> out;
  for (const zspace::Point& point : box.points()) {
    out.emplace(device, tensor.index(), std::vector<std::int64_t>(point.begin(), point.end()));
  }
  return out;
}

RC_GTEST_PROP(PlacementProperties, TransfersBringExactlyTheRemoteCellsEachDeviceReads, ()) {
  const std::optional<rewrite::LowerResult> r = testing::random_lowered(4);
  const Target t = toy_target(2, *rc::gen::inRange<std::size_t>(1, 4));
  const Placement p = place(r->graph, r->plan, t);
  RC_ASSERT(p.applications.size() == r->graph.applications().size());

  // Who wrote each cell.
  std::map<std::pair<std::uint32_t, std::vector<std::int64_t>>, std::uint32_t> writer;
  for (const PlacedApplication& a : p.applications) {
    for (const auto& out : r->graph.application(a.id).outputs().entries()) {
      for (const zspace::Point& pt : out.value.range.points()) {
        writer[{out.value.tensor.index(), std::vector<std::int64_t>(pt.begin(), pt.end())}] =
            a.device;
      }
    }
  }
  std::set<Cell> needed;
  for (const PlacedApplication& a : p.applications) {
    for (const auto& in : r->graph.application(a.id).inputs().entries()) {
      for (const zspace::Point& pt : in.value.range.points()) {
        std::vector<std::int64_t> cell(pt.begin(), pt.end());
        auto w = writer.find({in.value.tensor.index(), cell});
        if (w != writer.end() && w->second != a.device) {
          needed.emplace(a.device, in.value.tensor.index(), cell);
        }
      }
    }
  }
  std::set<Cell> moved;
  for (const Transfer& tr : p.transfers) {
    RC_ASSERT(tr.from != tr.to);
    const auto element = ir::dtype_size_bytes(*r->graph.tensor(tr.tensor).dtype().known());
    RC_ASSERT(tr.bytes == tr.box.size() * static_cast<std::int64_t>(element));
    const auto cells = cells_of(tr.to, tr.tensor, tr.box);
    moved.insert(cells.begin(), cells.end());
    for (std::uint32_t c : tr.consumers) RC_ASSERT(p.applications[c].device == tr.to);
  }
  RC_ASSERT(moved == needed);
  RC_CLASSIFY(!p.transfers.empty(), "with transfers");

  // The placement dialect, an independent check of the same fact, accepts the annotated graph.
  ir::Graph placed = r->graph;
  annotate_placement(placed, p, t);
  const ir::ValidationReport report = ir::validate(placed, ir::Dialect::placement());
  RC_ASSERT(report.issues.empty());
  RC_ASSERT(check_devices(placed, t).empty());
}

}  // namespace
}  // namespace tapestry::cost
