// explain(): DTensor placements, communication patterns and the critical path, on plans whose
// answers are known (the Megatron MLP, data parallelism, an all-gather).
#include "tapestry/cost/explain.h"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "cost/cost_testing.h"

namespace tapestry::cost {
namespace {

using testing::place_tap;
using testing::toy_target;

constexpr std::string_view kMlp =
    "X: f32[4096, 1024]\nW1: f32[4096, 1024]\nb1: f32[4096]\nW2: f32[1024, 4096]\nb2: f32[1024]\n"
    "H = relu(linear(X, W1, b1))\nY = linear(H, W2, b2)\noutput Y\n";

constexpr std::string_view kMegatron = R"({
  "ops": {"H/linear": {"split": {"out": 2}}, "H": {"split": {"d1": 2}}, "Y": {"split": {"in": 2}}},
  "fuse": [["H/linear", "H"]]})";

Explanation explain_tap(std::string_view tap, std::string_view plan, const Target& t) {
  rewrite::LowerResult lowered;
  const Placement p = place_tap(tap, plan, t, &lowered);
  Schedule s;
  const CostVector c = simulate(p, t, &s);
  return explain(lowered.graph, p, t, c, s);
}

const OperationSharding& op_named(const Explanation& e, std::string_view name) {
  for (const OperationSharding& op : e.operations) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << "no operation " << name;
  static const OperationSharding none;
  return none;
}

std::string placements(const OperationSharding& op, std::string_view port) {
  for (const TensorSharding& t : op.tensors) {
    if (t.port == port) return t.tensor + " " + fmt::format("{}", fmt::join(t.placements, ", "));
  }
  return "no port";
}

TEST(Explain, MegatronMlpInDTensorTerms) {
  const Explanation e = explain_tap(kMlp, kMegatron, toy_target(1, 8));
  const OperationSharding& h = op_named(e, "H");
  EXPECT_EQ(h.kernel, "fused");
  EXPECT_EQ(h.axes, (std::vector<std::string>{"out=2"}));
  EXPECT_EQ(h.devices, (std::vector<std::string>{"gpu:0", "gpu:1"}));
  EXPECT_EQ(placements(h, "s0_x"), "X Replicate()");
  EXPECT_EQ(placements(h, "s0_w"), "W1 Shard(0)");
  EXPECT_EQ(placements(h, "result"), "H Shard(1)");
  // Splitting Y's reduction dim `in` decomposes the linear (so the bias is added once): Wᵀ is
  // cut as W2 is, and the matmul's blocks are partial sums of Y/matmul.
  const OperationSharding& t = op_named(e, "Y/transpose");
  EXPECT_EQ(t.devices, (std::vector<std::string>{"gpu:0", "gpu:1"}));
  EXPECT_EQ(placements(t, "x"), "W2 Shard(1)");
  const OperationSharding& y = op_named(e, "Y/matmul");
  EXPECT_EQ(y.axes, (std::vector<std::string>{"block=2"}));
  EXPECT_EQ(placements(y, "a"), "H Shard(1)");
  EXPECT_EQ(placements(y, "b"), "Y/transpose Shard(0)");
  EXPECT_EQ(placements(y, "result"), "Y/matmul Partial(sum)");
  EXPECT_EQ(op_named(e, "Y").axes, std::vector<std::string>{});
  // One reduce: gpu:1's partial (tokens × hidden floats) to gpu:0, where the reduce runs.
  ASSERT_EQ(e.communication.size(), 1u);
  const Communication& c = e.communication[0];
  EXPECT_EQ(c.pattern, "reduce");
  EXPECT_EQ(c.bytes, 4096 * 1024 * 4);
  EXPECT_EQ(c.from, (std::vector<std::string>{"gpu:1"}));
  EXPECT_EQ(c.to, (std::vector<std::string>{"gpu:0"}));
  EXPECT_EQ(e.cost.bytes_moved, 4096 * 1024 * 4);
}

TEST(Explain, AllGatherIsRecognised) {
  // (A collective: collective.h recognises it and the simulation prices it as a ring.)
  // A is split by rows over 4 devices; C = linear(A, W, b) split on out reads all of A on each
  // of the 4 devices: each receives the other three quarters of A.
  constexpr std::string_view tap =
      "X: f32[64, 32]\nW: f32[64, 32]\nb: f32[64]\nA = relu(X)\nC = linear(A, W, b)\noutput C\n";
  const Explanation e = explain_tap(
      tap, R"({"ops": {"A": {"split": {"d0": 4}}, "C": {"split": {"out": 4}}}})", toy_target(1, 4));
  ASSERT_EQ(e.communication.size(), 1u);
  EXPECT_EQ(e.communication[0].pattern, "all-gather");
  EXPECT_EQ(e.communication[0].transfers, 12);
  EXPECT_EQ(e.communication[0].bytes, 4 * 3 * 16 * 32 * 4);
  EXPECT_EQ(placements(op_named(e, "C"), "x"), "A Replicate()");
  EXPECT_EQ(placements(op_named(e, "C"), "w"), "W Shard(0)");
}

TEST(Explain, AllToAllIsRecognised) {
  // Rows on 4 devices, then columns on 4 devices: each device receives its column slice of the
  // other devices' rows — an all-to-all, not an all-gather.
  constexpr std::string_view tap = "X: f32[64, 64]\nA = relu(X)\nB = neg(A)\noutput B\n";
  const Explanation e = explain_tap(
      tap, R"({"ops": {"A": {"split": {"d0": 4}}, "B": {"split": {"d1": 4}}}})", toy_target(1, 4));
  ASSERT_EQ(e.communication.size(), 1u);
  EXPECT_EQ(e.communication[0].pattern, "all-to-all");
  EXPECT_EQ(e.communication[0].transfers, 12);
  EXPECT_EQ(e.communication[0].bytes, 12 * 16 * 16 * 4);
  EXPECT_EQ(placements(op_named(e, "B"), "x"), "A Shard(1)");
}

TEST(Explain, RowsReadElsewhereAreARedistribution) {
  constexpr std::string_view tap = "X: f32[64, 64]\nA = relu(X)\nB = neg(A)\noutput B\n";
  const Explanation e =
      explain_tap(tap, R"({"ops": {"B": {"split": {"d0": 2}}}})", toy_target(1, 2));
  ASSERT_EQ(e.communication.size(), 1u);
  EXPECT_EQ(e.communication[0].pattern, "redistribute");
  EXPECT_EQ(e.communication[0].bytes, 32 * 64 * 4);
}

// A reduce-scatter into the combine, then an all-gather of the combine's output over the same 8
// GPUs: one all-reduce line with both halves' times, and wall time from the first start to the
// last end.
TEST(Explain, AReduceScatterAndTheAllGatherOfItsCombineAreOneAllReduce) {
  constexpr std::string_view tap =
      "H: bf16[8, 8192, 2048]\nW: bf16[8, 2048, 4096]\nW3: bf16[4096, 4096]\nb3: bf16[4096]\n"
      "P = matmul(H, W)\nY = reduce(P)\nO = linear(Y, W3, b3)\noutput O\n";
  const Explanation e = explain_tap(
      tap,
      R"({"ops": {"P": {"split": {"batch": 8}}, "Y": {"split": {"d0": 8}}, "O": {"split": {"out": 8}}}})",
      *preset_target("h100x8"));
  ASSERT_EQ(e.communication.size(), 1u);
  const Communication& c = e.communication[0];
  EXPECT_EQ(c.pattern, "all-reduce");
  EXPECT_EQ(c.algorithm, "ring: reduce-scatter + all-gather");
  EXPECT_EQ(c.producer, "P");
  EXPECT_EQ(c.consumer, "O");
  EXPECT_EQ(c.collectives, 1);
  EXPECT_EQ(c.size_bytes, 64 << 20);
  EXPECT_EQ(c.transfers, 2 * 56);
  EXPECT_EQ(c.bytes, 2 * 56 * (8 << 20));
  EXPECT_EQ(c.devices.size(), 8u);
  const double half = 7 * (3.4e-6 + (8 << 20) / 370e9);  // each ring: 182.5 µs
  ASSERT_EQ(c.parts_s.size(), 2u);
  EXPECT_DOUBLE_EQ(c.parts_s[0], half);
  EXPECT_DOUBLE_EQ(c.parts_s[1], half);
  // Wall time: the reduce-scatter's start to the all-gather's end, the combine between.
  EXPECT_GT(c.seconds, 2 * half);
  EXPECT_DOUBLE_EQ(c.seconds, c.end_s - c.start_s);
  const std::string text = to_text(e);
  EXPECT_NE(text.find("  all-reduce (ring: reduce-scatter + all-gather)  P of P → O: 64.0 MiB over "
                      "8 devices (gpu:0 … gpu:7), 112 transfers, "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(reduce-scatter 182.5 µs, all-gather 182.5 µs)"), std::string::npos) << text;
  EXPECT_EQ(e.critical_path.collectives, 2);
  EXPECT_NE(text.find("2 collectives + 0 transfers"), std::string::npos) << text;
  const nlohmann::json j = to_json(e).at("communication").at(0);
  EXPECT_EQ(j.at("algorithm"), "ring: reduce-scatter + all-gather");
  EXPECT_EQ(j.at("size_bytes"), 64 << 20);
  EXPECT_EQ(j.at("parts_s").size(), 2u);
}

// The same collective over two groups of devices (the data-parallel halves of a 2-D plan) is one
// line, "2 × …".
TEST(Explain, CollectivesOfOneShapeOverGroupsAreOneLine) {
  constexpr std::string_view tap =
      "X: f32[64, 32]\nW: f32[64, 32]\nb: f32[64]\nA = relu(X)\nC = linear(A, W, b)\noutput C\n";
  const Explanation e = explain_tap(
      tap, R"({"ops": {"A": {"split": {"d0": 4}}, "C": {"split": {"batch": 2, "out": 2}}}})",
      toy_target(1, 4));
  ASSERT_EQ(e.communication.size(), 1u);
  const Communication& c = e.communication[0];
  EXPECT_EQ(c.pattern, "all-gather");
  EXPECT_EQ(c.collectives, 2);
  EXPECT_EQ(c.size_bytes, 32 * 32 * 4);
  EXPECT_EQ(c.transfers, 4);
  EXPECT_NE(to_text(e).find("  2 × all-gather (ring)  A of A → C: 4.0 KiB over 2 devices each "
                            "(gpu:0 … gpu:3), 4 transfers, "),
            std::string::npos)
      << to_text(e);
}

// Point-to-point transfers keep their wording; their time is wall time, not a sum: gpu:0 → gpu:2
// and gpu:1 → gpu:3 move at once.
TEST(Explain, PointToPointGroupsReportWallTime) {
  constexpr std::string_view tap = "X: f32[1000, 250]\nA = relu(X)\nB = neg(A)\noutput B\n";
  const Explanation e = explain_tap(
      tap,
      R"({"ops": {"A": {"split": {"d0": 2}}, "B": {"split": {"d0": 2}, "place": ["gpu:2", "gpu:3"]}}})",
      toy_target(1, 4, 1e-6));
  ASSERT_EQ(e.communication.size(), 1u);
  const Communication& c = e.communication[0];
  EXPECT_EQ(c.pattern, "redistribute");
  EXPECT_EQ(c.collectives, 0);
  EXPECT_EQ(c.transfers, 2);
  EXPECT_DOUBLE_EQ(c.seconds, 1e-6 + 500'000 / 1e9);  // one transfer's time: they overlap
  EXPECT_NE(to_text(e).find("redistribute  A of A → B: 2 transfers, 976.6 KiB, gpu:0,gpu:1 → "
                            "gpu:2,gpu:3, 501.0 µs"),
            std::string::npos)
      << to_text(e);
}

TEST(Explain, UnshardedPlanHasNoCommunicationAndIsComputeBound) {
  const Explanation e = explain_tap(kMlp, "{}", toy_target(1, 8));
  EXPECT_TRUE(e.communication.empty());
  EXPECT_EQ(e.cost.devices_used, 1);
  EXPECT_EQ(e.critical_path.bound, "compute");
  EXPECT_EQ(e.critical_path.transfers, 0);
  EXPECT_DOUBLE_EQ(e.critical_path.compute_s, e.cost.makespan_s);
  const std::string text = to_text(e);
  EXPECT_NE(text.find("none: every application reads only what its device holds"),
            std::string::npos);
  EXPECT_NE(text.find("bound by compute"), std::string::npos);
}

TEST(Explain, CriticalPathAddsUpToTheMakespanOnAChain) {
  // relu on gpu:0, then its rows moved to gpu:1 and negated there: compute, transfer, compute.
  constexpr std::string_view tap = "X: f32[1000, 250]\nA = relu(X)\nB = neg(A)\noutput B\n";
  const Explanation e =
      explain_tap(tap, R"({"ops": {"B": {"place": ["gpu:1"]}}})", toy_target(1, 2, 1e-6));
  const CriticalPath& p = e.critical_path;
  EXPECT_EQ(p.applications, 2);
  EXPECT_EQ(p.transfers, 1);
  EXPECT_NEAR(p.compute_s + p.communication_s + p.waiting_s, e.cost.makespan_s, 1e-15);
  EXPECT_EQ(to_json(e).at("critical_path").at("bound"), "compute");
}

}  // namespace
}  // namespace tapestry::cost

namespace tapestry::cost {
namespace {

// The predicted schedule as a Chrome trace: a named track per device used and per receiver, one
// event per application and per transfer at the simulated times (µs).
TEST(ChromeTrace, HoldsEveryApplicationAndTransferAtItsSimulatedTime) {
  const Target t = testing::toy_target();
  rewrite::LowerResult lowered;
  // A unsharded on gpu:0, then Y split in two: gpu:1 receives its half of A.
  const Placement p = testing::place_tap("X: f32[1000, 250]\nA = relu(X)\nY = relu(A)\noutput Y\n",
                                         R"({"ops": {"Y": {"split": {"d0": 2}}}})", t, &lowered);
  Schedule s;
  (void)simulate(p, t, &s);
  const nlohmann::json trace = chrome_trace(lowered.graph, p, t, s);
  std::vector<nlohmann::json> apps, transfers;
  std::map<int, std::string> tracks;
  for (const nlohmann::json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      tracks[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
    } else if (e.at("ph") == "X") {
      (e.at("cat") == "transfer" ? transfers : apps).push_back(e);
    }
  }
  ASSERT_EQ(apps.size(), p.applications.size());
  ASSERT_EQ(transfers.size(), p.transfers.size());
  ASSERT_FALSE(transfers.empty());
  EXPECT_EQ(tracks.at(0), "gpu:0");
  EXPECT_EQ(tracks.at(1), "gpu:1");
  EXPECT_EQ(tracks.at(3), "gpu:1 receives");  // devices + 1
  for (std::size_t a = 0; a < apps.size(); ++a) {
    EXPECT_DOUBLE_EQ(apps[a].at("ts").get<double>(), s.applications[a].start * 1e6);
    EXPECT_DOUBLE_EQ(apps[a].at("dur").get<double>(),
                     (s.applications[a].end - s.applications[a].start) * 1e6);
    EXPECT_EQ(apps[a].at("tid").get<std::uint32_t>(), s.devices[a]);
    EXPECT_EQ(apps[a].at("args").at("operation"), p.operations[p.applications[a].operation].name);
  }
  EXPECT_EQ(transfers[0].at("args").at("from"), "gpu:0");
  EXPECT_EQ(transfers[0].at("args").at("tensor"), "A");
  EXPECT_EQ(transfers[0].at("args").at("bytes").get<std::int64_t>(), p.transfers[0].bytes);
  EXPECT_DOUBLE_EQ(transfers[0].at("ts").get<double>(), s.transfers[0].start * 1e6);
}

}  // namespace
}  // namespace tapestry::cost
