// Standard plans (standard_plans.h): each one that applies lowers with validation, places, and runs
// on small copies of the examples equal to the naive run (bitwise, or within --verify's bars when
// it splits a reduction); on the examples at full size it is the plan written by hand where one
// exists, priced the same; one that does not apply says why.
#include "tapestry/cost/standard_plans.h"

#include <gtest/gtest.h>

#include <set>

#include "cost/cost_testing.h"
#include "cost/step_testing.h"
#include "tapestry/cost/evaluator.h"
#include "tapestry/cost/graph_roles.h"
#include "tapestry/cost/placement.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"

namespace tapestry::cost {
namespace {

namespace fs = std::filesystem;

// Small copies of the examples (the same layers and dims, extents a CPU runs in milliseconds).
constexpr std::string_view kMlp = R"(
X:  f32[64, 32]
W1: f32[128, 32]
b1: f32[128]
W2: f32[32, 128]
b2: f32[32]
H = relu(linear(X, W1, b1))
Y = linear(H, W2, b2)
output Y
)";

// transformer_block.tap at B = 2 sequences of S = 8 tokens, width 32 = 4 heads of 8, MLP 64.
constexpr std::string_view kBlock = R"(
X:  f32[16, 32]
Wq: f32[32, 32]
bq: f32[32]
Wk: f32[32, 32]
bk: f32[32]
Wv: f32[32, 32]
bv: f32[32]
Wo: f32[32, 32]
bo: f32[32]
W1: f32[64, 32]
b1: f32[64]
W2: f32[32, 64]
b2: f32[32]
Scale: f32[1]
Q = permute(reshape(linear(X, Wq, bq), shape=[2, 8, 4, 8]), perm=[0, 2, 1, 3])
K = permute(reshape(linear(X, Wk, bk), shape=[2, 8, 4, 8]), perm=[0, 2, 1, 3])
V = permute(reshape(linear(X, Wv, bv), shape=[2, 8, 4, 8]), perm=[0, 2, 1, 3])
Scores = mul(matmul(Q, transpose(K)), Scale)
P = softmax(Scores)
Ctx = matmul(P, V)
Attn = linear(reshape(permute(Ctx, perm=[0, 2, 1, 3]), shape=[16, 32]), Wo, bo)
R1 = add(X, Attn)
M = linear(gelu(linear(R1, W1, b1)), W2, b2)
Y = add(R1, M)
output Y
)";

constexpr std::string_view kConvnet = R"(
Img: f32[4, 3, 8, 8]
K1:  f32[8, 3, 3, 3]
K2:  f32[8, 8, 3, 3]
Wh:  f32[10, 128]
bh:  f32[10]
C1 = relu(conv2d(Img, K1, padding=1))
C2 = relu(conv2d(C1, K2, stride=2, padding=1))
Logits = linear(reshape(C2, shape=[4, 128]), Wh, bh)
output Logits
)";

// linear_relu.tap as it is: rows -40..59 (100 of them), an offset index.
constexpr std::string_view kLinearRelu = R"(
X: f32[-40:60, 20:32]
W: f32[32, 12]
b: f32[32]
Y = relu(linear(X, W, b))
output Y
)";

// Four devices on one axis; the same four as a dp × tp mesh.
Target four() {
  return testing::toy_target(1, 4);
}
Target mesh_2x2() {
  Target t = testing::toy_target(1, 4);
  t.mesh = {{"dp", 2}, {"tp", 2}};
  return t;
}

// Why `plan` fails to lower, place, run or verify on `g` (nullopt: it passes).
std::optional<std::string> why_it_fails(const ir::Graph& g, const rewrite::Plan& plan,
                                        const Target& target) {
  try {
    const rewrite::LowerResult r = rewrite::lower(g, plan);
    (void)place(r.graph, r.plan, target);
    bool reduction_split = false;
    for (const rewrite::RewriteEvent& e : r.log) {
      reduction_split |= e.applied && e.pattern == "split-reduction";
    }
    if (reduction_split) {
      const runtime::VerifyReport report =
          rewrite::testing::within_documented_bound(g, rewrite::testing::run_lowered(g, r.graph));
      if (!report.pass()) return "results differ\n" + report.text();
    } else {
      const runtime::TensorsComparison cmp = rewrite::testing::run_both(g, r.graph);
      if (!cmp.all_bitwise_equal()) return "results differ\n" + cmp.summary();
    }
  } catch (const Error& e) {
    return std::string("refused: ") + e.what();
  }
  return std::nullopt;
}

struct Case {
  std::string_view graph_name;
  std::string_view tap;
  bool mesh;
  // Which of data-parallel, megatron, megatron-rs, 2d apply (zero3 and megatron-3d-* apply to
  // training steps only: none of these).
  std::array<bool, 4> applies;
};

// Every standard plan that applies runs, and the ones that should apply do.
TEST(StandardPlans, EachOneThatAppliesLowersPlacesAndVerifies) {
  const Case cases[] = {
      {"mlp", kMlp, false, {true, true, true, false}},
      {"mlp", kMlp, true, {true, true, true, true}},
      {"block", kBlock, false, {true, true, true, false}},
      {"block", kBlock, true, {true, true, true, true}},
      {"convnet", kConvnet, false, {true, false, false, false}},
      {"convnet", kConvnet, true, {true, false, false, false}},
      {"linear_relu", kLinearRelu, false, {true, false, false, false}},
  };
  for (const Case& c : cases) {
    const ir::Graph g = rewrite::testing::build(c.tap);
    const Target target = c.mesh ? mesh_2x2() : four();
    for (std::size_t i = 0; i < standard_plan_names().size(); ++i) {
      const std::string& name = standard_plan_names()[i];
      SCOPED_TRACE(fmt::format("{} {} on {}", c.graph_name, name, c.mesh ? "dp 2 × tp 2" : "4"));
      const StandardPlan s = checked_standard_plan(g, target, name);
      EXPECT_EQ(s.name, name);
      EXPECT_EQ(s.plan.has_value(), i < c.applies.size() && c.applies[i]) << s.reason;
      if (!s.plan) {
        EXPECT_FALSE(s.reason.empty());
        continue;
      }
      EXPECT_TRUE(s.reason.empty());
      EXPECT_FALSE(s.summary.empty());
      EXPECT_TRUE(s.plan->fuse_auto);
      EXPECT_FALSE(s.plan->ops.empty());
      if (auto why = why_it_fails(g, *s.plan, target)) ADD_FAILURE() << *why;
    }
  }
}

// What each plan cuts, on the MLP: data parallel its rows, Megatron the hidden dim (column: out,
// row: in), 2d both on their mesh axes.
TEST(StandardPlans, TheMlpsCuts) {
  const ir::Graph g = rewrite::testing::build(kMlp);
  const StandardPlan dp = standard_plan(g, four(), "data-parallel");
  ASSERT_TRUE(dp.plan);
  EXPECT_EQ(dp.plan->to_json()["ops"], nlohmann::json::parse(R"({
    "H/linear": {"split": {"batch": 4}}, "H": {"split": {"d0": 4}}, "Y": {"split": {"batch": 4}}
  })"));
  EXPECT_EQ(dp.summary, "data parallel ×4");
  const StandardPlan tp = standard_plan(g, four(), "megatron");
  ASSERT_TRUE(tp.plan);
  EXPECT_EQ(tp.plan->to_json()["ops"], nlohmann::json::parse(R"({
    "H/linear": {"split": {"out": 4}}, "H": {"split": {"d1": 4}}, "Y": {"split": {"in": 4}}
  })"));
  EXPECT_EQ(tp.summary, "tensor parallel ×4 (Megatron), 1 column → row pair");
  const StandardPlan two = standard_plan(g, mesh_2x2(), "2d");
  ASSERT_TRUE(two.plan);
  EXPECT_EQ(two.plan->to_json()["ops"], nlohmann::json::parse(R"({
    "H/linear": {"split": {"batch": 2, "out": 2}, "mesh": {"batch": "dp", "out": "tp"}},
    "H": {"split": {"d0": 2, "d1": 2}, "mesh": {"d0": "dp", "d1": "tp"}},
    "Y": {"split": {"batch": 2, "in": 2}, "mesh": {"batch": "dp", "in": "tp"}}
  })"));
  EXPECT_EQ(two.summary, "2-D: data 2 × tensor 2 (mesh axes dp × tp), 1 column → row pair");
}

// Attention is cut by heads, the MLP by its hidden dim; between the layers Megatron cuts the
// hidden dim of the residual adds, megatron-rs their rows (sequence parallelism).
TEST(StandardPlans, TheBlocksHeadsAndLayers) {
  const ir::Graph g = rewrite::testing::build(kBlock);
  const StandardPlan tp = standard_plan(g, four(), "megatron");
  ASSERT_TRUE(tp.plan);
  const auto split = [](const StandardPlan& s, const std::string& op) {
    return s.plan->to_json()["ops"][op]["split"];
  };
  EXPECT_EQ(split(tp, "Q/linear"), nlohmann::json::parse(R"({"out": 4})"));
  EXPECT_EQ(split(tp, "Q/reshape"), nlohmann::json::parse(R"({"d2": 4})"));  // heads
  EXPECT_EQ(split(tp, "Scores/matmul"), nlohmann::json::parse(R"({"batch1": 4})"));
  EXPECT_EQ(split(tp, "P"), nlohmann::json::parse(R"({"batch1": 4})"));
  EXPECT_EQ(split(tp, "Attn"), nlohmann::json::parse(R"({"in": 4})"));
  EXPECT_EQ(split(tp, "M/linear"), nlohmann::json::parse(R"({"out": 4})"));
  EXPECT_EQ(split(tp, "M"), nlohmann::json::parse(R"({"in": 4})"));
  EXPECT_EQ(split(tp, "R1"), nlohmann::json::parse(R"({"d1": 4})"));
  EXPECT_EQ(split(tp, "Y"), nlohmann::json::parse(R"({"d1": 4})"));
  EXPECT_EQ(tp.summary, "tensor parallel ×4 (Megatron), 2 column → row pairs");
  const StandardPlan rs = standard_plan(g, four(), "megatron-rs");
  ASSERT_TRUE(rs.plan);
  EXPECT_EQ(split(rs, "R1"), nlohmann::json::parse(R"({"d0": 4})"));
  EXPECT_EQ(split(rs, "Y"), nlohmann::json::parse(R"({"d0": 4})"));
  EXPECT_EQ(split(rs, "Attn"), split(tp, "Attn"));
  // Data parallelism cuts the sequences (2 of them), not the tokens: the reshape into heads cuts
  // the row dim into sequences, so no count above 2 divides every batch-like dim.
  const StandardPlan dp = standard_plan(g, four(), "data-parallel");
  ASSERT_TRUE(dp.plan);
  EXPECT_EQ(dp.summary, "data parallel ×2");
  EXPECT_EQ(split(dp, "Q/reshape"), nlohmann::json::parse(R"({"d0": 2})"));
  EXPECT_EQ(split(dp, "Q/linear"), nlohmann::json::parse(R"({"batch": 2})"));
}

// Where a standard plan does not apply, the reason names what is missing.
TEST(StandardPlans, ThoseThatDoNotApplySayWhy) {
  const ir::Graph conv = rewrite::testing::build(kConvnet);
  const StandardPlan tp = standard_plan(conv, four(), "megatron");
  EXPECT_FALSE(tp.plan);
  // The classifier's linear is a column start whose cut reaches no row end.
  EXPECT_EQ(tp.reason,
            "no column → row pair stands (Logits: its cut reaches no row-parallel linear)");
  const ir::Graph mlp = rewrite::testing::build(kMlp);
  EXPECT_EQ(standard_plan(mlp, four(), "2d").reason,
            "the target's mesh has 1 axis (d=4); 2d needs two axes, named dp and tp or in that "
            "order (a target with \"mesh\": {\"dp\": 2, \"tp\": 4})");
  const Target one = testing::toy_target(1, 1);
  EXPECT_EQ(standard_plan(mlp, one, "data-parallel").reason, "the target has one device");
  EXPECT_FALSE(standard_plan(mlp, one, "megatron").plan);
  // 3 devices: no count from 2 to 3 divides 64 rows... 2 does; 7 devices and 100 rows: 5.
  EXPECT_EQ(standard_plan(rewrite::testing::build(kLinearRelu), testing::toy_target(1, 7),
                          "data-parallel")
                .summary,
            "data parallel ×5");
  // A graph of weights alone has no batch-like dim.
  const ir::Graph weights = rewrite::testing::build("W: f32[8, 8]\nT = transpose(W)\noutput T\n");
  EXPECT_FALSE(standard_plan(weights, four(), "data-parallel").plan);
  // 2d with a data axis that does not divide the sequences.
  Target wide = testing::toy_target(1, 8);
  wide.mesh = {{"dp", 4}, {"tp", 2}};
  const StandardPlan two = standard_plan(rewrite::testing::build(kBlock), wide, "2d");
  EXPECT_FALSE(two.plan);
  EXPECT_EQ(two.reason, "the data axis dp=4 does not divide every batch-like dim (their gcd is 2)");
  EXPECT_THROW(
      {
        try {
          (void)standard_plan(mlp, four(), "fsdp");
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(),
                       "unknown standard plan 'fsdp' (expected one of data-parallel, megatron, "
                       "megatron-rs, 2d, zero3, megatron-3d-full, megatron-3d-selective)");
          throw;
        }
      },
      Error);
}

rewrite::Plan read_plan(const fs::path& path) {
  return rewrite::parse_plan(read_file(path));
}

ir::Graph read_graph(const fs::path& path) {
  return rewrite::testing::build(read_file(path));
}

double priced(const ir::Graph& g, const rewrite::Plan& plan, const Target& target) {
  const rewrite::LowerResult r = rewrite::lower(g, plan);
  return simulate(place(r.graph, r.plan, target), target).makespan_s;
}

// On the graphs the optimizer's expert-plan tests use, the standard Megatron plan is the plan
// written by hand there with its graph output replicated on every device (the all-gather that
// makes the combine's reduce-scatter Megatron-LM's all-reduce; the hand plans leave it cut, as
// megatron-rs does), and `cost` prices both the same (so does the evaluator the search uses).
TEST(StandardPlans, MegatronIsTheExpertsHandWrittenPlan) {
  const Target h100x8 = *preset_target("h100x8");
  const fs::path data = fs::path(TAPESTRY_TEST_DATA) / "search";
  const std::pair<std::string, std::string> pairs[] = {
      {"transformer_mlp_bf16.tap", "transformer_mlp-megatron.json"},
      {"attention_bf16.tap", "attention_heads8.json"},
  };
  for (const auto& [graph, hand] : pairs) {
    SCOPED_TRACE(graph);
    const ir::Graph g = read_graph(data / graph);
    rewrite::Plan written = read_plan(data / hand);
    for (ir::TensorId t : metakernel::graph_outputs(g)) {
      written.outputs[rewrite::output_name(g, t)].replicate = rewrite::kReplicateAll;
    }
    const StandardPlan s = standard_plan(g, h100x8, "megatron");
    ASSERT_TRUE(s.plan) << s.reason;
    EXPECT_EQ(s.plan->to_json(), written.to_json());
    const double hand_s = priced(g, written, h100x8);
    EXPECT_EQ(priced(g, *s.plan, h100x8), hand_s);
    Evaluator evaluator(g, h100x8);
    EXPECT_DOUBLE_EQ(evaluator.evaluate(*s.plan).makespan_s, hand_s);
  }
}

// examples/plans, for two devices: the MLP's Megatron plan names the standard plan's cuts (it
// fuses by name, the standard plan "auto", which also fuses the combine with the bias add); its
// data-parallel plan leaves relu's entry out (fusion gives it the linear's cut) and prices as the
// standard plan does.
TEST(StandardPlans, TheMlpsExamplePlans) {
  const fs::path examples(TAPESTRY_EXAMPLES);
  const ir::Graph g = read_graph(examples / "mlp.tap");
  Target pair = *preset_target("h100x8");
  pair.devices.resize(2);
  const StandardPlan tp = standard_plan(g, pair, "megatron");
  ASSERT_TRUE(tp.plan) << tp.reason;
  rewrite::Plan written = read_plan(examples / "plans" / "mlp-megatron.json");
  EXPECT_EQ(tp.plan->to_json()["ops"], written.to_json()["ops"]);
  written.fuse.clear();
  written.fuse_auto = true;
  written.outputs["Y"].replicate = rewrite::kReplicateAll;
  EXPECT_EQ(priced(g, *tp.plan, pair), priced(g, written, pair));
  const StandardPlan dp = standard_plan(g, pair, "data-parallel");
  ASSERT_TRUE(dp.plan) << dp.reason;
  EXPECT_EQ(priced(g, *dp.plan, pair),
            priced(g, read_plan(examples / "plans" / "mlp-data-parallel.json"), pair));
}

// tests/data/training/gpt_step.tap: `search_bench --train-tap` at 2 layers, d 32 = 4 heads of 8,
// 4 sequences of 64 tokens, f32 — the 24-layer step of docs/optimizer.md in small (the score
// tensors, 4 × 4 × 64 × 64, outweigh each layer's activations of 256 × 32).
ir::Graph gpt_step() {
  return read_graph(fs::path(TAPESTRY_TEST_DATA) / "training" / "gpt_step.tap");
}

// Megatron-LM leaves nothing whole on one device: every weight, its gradient and its optimizer
// state lie with their tensor-parallel layer. On a dp 2 × tp 2 mesh every operation of the step
// with a result of rank > 0 (all but the gradient seed) is cut, and its applications run on more
// than one device; the weight transposes and the updates are cut on the tensor axis; the new
// weights are gathered over the data axis only, the moments stay sharded.
TEST(StandardPlans, TheMegatronTrainingPlansLeaveNothingWholeOnOneDevice) {
  const ir::Graph g = gpt_step();
  const Target target = mesh_2x2();
  const GraphRoles roles = graph_roles(g);
  for (const std::string name : {"megatron-3d-full", "megatron-3d-selective"}) {
    SCOPED_TRACE(name);
    const StandardPlan s = checked_standard_plan(g, target, name);
    ASSERT_TRUE(s.plan) << s.reason;
    EXPECT_NE(s.summary.find("24 updates sharded with their tensor-parallel layer (12 also over "
                             "dp: the distributed optimizer), 9 weight transposes with their "
                             "layer's shard, 25 batch sums cut over dp"),
              std::string::npos)
        << s.summary;
    std::size_t transposes = 0, updates = 0;
    for (const OperationRoles& op : roles.operations) {
      const bool scalar = std::all_of(op.outputs.begin(), op.outputs.end(), [&](const auto& o) {
        return g.tensor(o.tensor).range().rank() == 0;
      });
      if (scalar) continue;
      const auto entry = s.plan->ops.find(op.name);
      std::int64_t shards = 1;
      if (entry != s.plan->ops.end()) {
        for (const auto& [dim, count] : entry->second.split) shards *= count;
      }
      EXPECT_GE(shards, 2) << op.name << " (" << op.kernel << ") is whole";
      const bool on_tp = entry != s.plan->ops.end() &&
                         std::any_of(entry->second.mesh.begin(), entry->second.mesh.end(),
                                     [](const auto& m) { return m.second == "tp"; });
      if (op.kernel == "transpose" && !op.batch_dim()) {
        ++transposes;
        EXPECT_TRUE(on_tp) << op.name;
      }
      if (op.kernel == "adam") {
        ++updates;
        EXPECT_TRUE(on_tp) << op.name;
      }
    }
    EXPECT_EQ(transposes, 9u);
    EXPECT_EQ(updates, 24u);
    for (const auto& [output, out] : s.plan->outputs) {
      EXPECT_NE(out.replicate, "tp") << output << " is gathered over the tensor axis";
      if (output.ends_with("m_next") || output.ends_with("v_next")) ADD_FAILURE() << output;
    }
    EXPECT_EQ(s.plan->outputs.at("Wq0n.result").replicate, "dp");
    // The placement: no operation of the lowered step with a result of rank > 0 on one device.
    const rewrite::LowerResult lowered = rewrite::lower(g, *s.plan);
    const Placement placement = place(lowered.graph, lowered.plan, target);
    for (const PlacedOperation& op : placement.operations) {
      const ir::OperationId id = *rewrite::find_operation(lowered.graph, op.name);
      bool scalar = true;
      for (const auto& out : lowered.graph.operation(id).outputs().entries())
        scalar = scalar && lowered.graph.tensor(out.value.tensor).range().rank() == 0;
      if (scalar) continue;
      std::set<std::uint32_t> devices;
      for (std::uint32_t a : op.applications) devices.insert(placement.applications[a].device);
      EXPECT_GE(devices.size(), 2u) << op.name << " runs on one device";
    }
  }
}

// Selective recomputation recomputes attention's scores and softmax, and the step's peak drops:
// none of its operations is refused (the backward pass's transpose(P), which feeds matmul with
// dC, is a later use of P and reads P's copy), and the model's peak is below the same plan's
// without recomputation, full recomputation's below that. (tests/cli/standard_plans_test.sh runs
// both plans with --verify.)
TEST(StandardPlans, SelectiveRecomputationIsAppliedAndLowersThePeak) {
  const ir::Graph g = gpt_step();
  const Target target = mesh_2x2();
  const StandardPlan selective = checked_standard_plan(g, target, "megatron-3d-selective");
  const StandardPlan full = checked_standard_plan(g, target, "megatron-3d-full");
  ASSERT_TRUE(selective.plan) << selective.reason;
  ASSERT_TRUE(full.plan) << full.reason;
  EXPECT_EQ(selective.plan->recompute,
            (std::vector<std::string>{"S0/matmul", "S0", "P0", "S1/matmul", "S1", "P1"}));
  const rewrite::LowerResult lowered = rewrite::lower(g, *selective.plan);
  std::size_t applied = 0;
  for (const rewrite::RewriteEvent& e : lowered.log) {
    if (e.pattern != "recompute") continue;
    EXPECT_TRUE(e.applied) << e.to_string();
    applied += e.applied ? 1 : 0;
  }
  EXPECT_EQ(applied, 6u);
  const std::vector<std::string> transposed = testing::reads(lowered.graph, "dWv0/transpose");
  EXPECT_TRUE(testing::contains(transposed, "P0/recompute"))
      << fmt::format("{}", fmt::join(transposed, ", "));
  rewrite::Plan kept = *selective.plan;
  kept.recompute.clear();
  Evaluator evaluator(g, target);
  const CostVector with = evaluator.evaluate(*selective.plan);
  const CostVector without = evaluator.evaluate(kept);
  const CostVector all = evaluator.evaluate(*full.plan);
  EXPECT_LT(with.peak_memory_bytes, without.peak_memory_bytes);
  EXPECT_LT(all.peak_memory_bytes, with.peak_memory_bytes);
  // P is 4 × 4 × 64 × 64 floats per layer; the tensor axis halves it on each device, the data
  // axis halves it again: 64 KiB a layer. Recomputing it saves at least one layer's.
  EXPECT_GE(without.peak_memory_bytes - with.peak_memory_bytes, 64 * 1024)
      << without.peak_memory_bytes << " vs " << with.peak_memory_bytes;
}

}  // namespace
}  // namespace tapestry::cost
