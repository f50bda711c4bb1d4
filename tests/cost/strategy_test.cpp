// explain()'s strategy line and gains (explain.h): the standard plans on the H100 presets, an
// unsharded plan, a mixed one; the pending sums of a fused combine; the gains against one device
// and against data parallelism, in text and JSON.

#include <gtest/gtest.h>

#include "cost/cost_testing.h"
#include "tapestry/cost/explain.h"
#include "tapestry/cost/standard_plans.h"
#include "tapestry/support/file.h"

namespace tapestry::cost {
namespace {

namespace fs = std::filesystem;
using testing::example;

struct Explained {
  Explanation e;
  double makespan_s = 0;
};

Explained explain_plan(const ir::Graph& g, const rewrite::Plan& plan, const Target& t) {
  const rewrite::LowerResult r = rewrite::lower(g, plan);
  const Placement p = place(r.graph, r.plan, t);
  Schedule s;
  const CostVector c = simulate(p, t, &s);
  return {explain(r.graph, p, t, c, s), c.makespan_s};
}

Explained explain_standard(const ir::Graph& g, std::string_view name, const Target& t) {
  const StandardPlan s = standard_plan(g, t, name);
  EXPECT_TRUE(s.plan) << s.reason;
  return explain_plan(g, s.plan ? *s.plan : rewrite::Plan{}, t);
}

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The four standard plans read back as what they are, from the placement alone.
TEST(Strategy, TheStandardPlansOnTheH100Presets) {
  const Target h100x8 = *preset_target("h100x8");
  const Target h100x64 = *preset_target("h100x64");
  const ir::Graph mlp = example("mlp");

  const Strategy dp = explain_standard(mlp, "data-parallel", h100x8).e.strategy;
  EXPECT_EQ(dp.summary, "data parallel ×8");
  EXPECT_EQ(dp.kind, "data parallel");
  EXPECT_EQ(dp.data, 8);
  EXPECT_EQ(dp.tensor, 1);
  EXPECT_FALSE(dp.megatron);
  EXPECT_EQ(explain_standard(mlp, "data-parallel", h100x64).e.strategy.summary,
            "data parallel ×64");

  // One combine per pair: the 4096 × 1024 f32 partial sums reduce-scattered, the output
  // all-gathered (replicated): NCCL's all-reduce.
  const Strategy tp = explain_standard(mlp, "megatron", h100x8).e.strategy;
  EXPECT_EQ(tp.summary, "tensor parallel ×8 (Megatron), one all-reduce of 16.0 MiB per MLP");
  EXPECT_EQ(tp.kind, "tensor parallel");
  EXPECT_EQ(tp.tensor, 8);
  EXPECT_TRUE(tp.megatron);

  const Strategy two = explain_standard(mlp, "2d", h100x64).e.strategy;
  EXPECT_TRUE(starts_with(two.summary, "2-D: data 8 × tensor 8 (Megatron), ")) << two.summary;
  EXPECT_EQ(two.kind, "2-D");
  EXPECT_EQ(two.data, 8);
  EXPECT_EQ(two.tensor, 8);
  // The combines run within each data group.
  EXPECT_NE(two.summary.find("per MLP in each of 8 groups"), std::string::npos) << two.summary;

  // The transformer block: attention cut by heads and the MLP by its hidden dim, two pairs; the
  // sequence-parallel form cuts the residual adds by rows.
  const ir::Graph block = example("transformer_block");
  const Strategy bt = explain_standard(block, "megatron", h100x8).e.strategy;
  EXPECT_TRUE(starts_with(bt.summary,
                          "tensor parallel ×8 (Megatron), one all-reduce of 1.0 MiB per "
                          "attention block and MLP"))
      << bt.summary;
  // The sequence-parallel form: the attention block's reduce-scatter and the MLP's all-gather
  // of the residual read as one all-reduce (the same devices, nothing but elementwise work
  // between them); the MLP's output stays reduce-scattered.
  const Strategy rs = explain_standard(block, "megatron-rs", h100x8).e.strategy;
  EXPECT_EQ(rs.summary,
            "tensor parallel ×8 (Megatron), one all-reduce of 1.0 MiB, one reduce-scatter of "
            "1.0 MiB");
  EXPECT_EQ(explain_standard(block, "data-parallel", h100x8).e.strategy.summary,
            "data parallel ×4");
}

// An attention block alone is one pair, and called so.
TEST(Strategy, AnAttentionPairIsCalledOne) {
  const ir::Graph g = rewrite::testing::build(
      read_file(fs::path(TAPESTRY_TEST_DATA) / "search" / "attention_bf16.tap"));
  const Strategy s = explain_standard(g, "megatron", *preset_target("h100x8")).e.strategy;
  EXPECT_TRUE(starts_with(s.summary,
                          "tensor parallel ×8 (Megatron), one all-reduce of 64.0 MiB per "
                          "attention block"))
      << s.summary;
}

TEST(Strategy, UnshardedNamesItsDevice) {
  const ir::Graph mlp = example("mlp");
  const Target t = testing::toy_target(1, 4);
  const Strategy s = explain_plan(mlp, {}, t).e.strategy;
  EXPECT_EQ(s.summary, "unsharded on gpu:0");
  EXPECT_EQ(s.kind, "unsharded");
  const Strategy there =
      explain_plan(mlp, rewrite::parse_plan(R"({"ops": {"H/linear": {"place": ["gpu:3"]},
                                              "H": {"place": ["gpu:3"]}, "Y": {"place": ["gpu:3"]}}})"),
                   t)
          .e.strategy;
  EXPECT_EQ(there.summary, "unsharded on gpu:3");
}

// Issue 31: a pipeline's microbatch splits are not data parallelism. Each stage's contractions
// are cut ×4 along the batch with every shard on the stage's device: the strategy names the
// stages and the microbatches; the same splits on one device are gradient accumulation; a batch
// split over two devices is still data parallel (the forward contractions; the backward ones
// whole).
TEST(Strategy, APipelinesMicrobatchesAreNotDataParallel) {
  const ir::Graph pipe = rewrite::testing::build(
      read_file(fs::path(TAPESTRY_TEST_DATA) / "training" / "pipe_mlp.tap"));
  const Target h100 = *preset_target("h100x8");
  const Strategy s = explain_plan(pipe,
                                  rewrite::parse_plan(read_file(fs::path(TAPESTRY_TEST_DATA) /
                                                                "training" / "pipe_mlp_1f1b.json")),
                                  h100)
                         .e.strategy;
  EXPECT_EQ(s.kind, "pipeline");
  EXPECT_TRUE(starts_with(s.summary, "pipeline: 2 stages (gpu:0, gpu:1) × 4 microbatches, "))
      << s.summary;
  EXPECT_EQ(s.summary.find("data parallel"), std::string::npos) << s.summary;
  const Strategy one = explain_plan(pipe, rewrite::parse_plan(R"({"pipeline": {"stages":
      [["L0*", "L1*"], ["L2*", "Y"]], "microbatches": 4, "schedule": "1f1b", "devices": ["#0", "#0"]}})"),
                                    h100)
                           .e.strategy;
  EXPECT_EQ(one.kind, "microbatches");
  EXPECT_TRUE(starts_with(one.summary, "4 microbatches on gpu:0 (gradient accumulation)"))
      << one.summary;
  const Strategy dp = explain_plan(pipe, rewrite::parse_plan(R"({"ops": {
      "L0/linear": {"split": {"batch": 2}}, "L1/linear": {"split": {"batch": 2}},
      "L2/linear": {"split": {"batch": 2}}, "Y": {"split": {"batch": 2}}}})"),
                                   h100)
                          .e.strategy;
  EXPECT_TRUE(starts_with(dp.summary, "mixed: 4 contractions data parallel ×2, ")) << dp.summary;
}

// A plan that cuts its contractions in different ways says how many go which way.
TEST(Strategy, AMixedPlanCountsItsContractions) {
  const ir::Graph block = example("transformer_block");
  const Strategy s =
      explain_plan(block,
                   rewrite::parse_plan(read_file(fs::path(TAPESTRY_EXAMPLES) / "plans" /
                                                 "transformer_block-heads.json")),
                   *preset_target("h100x8"))
          .e.strategy;
  EXPECT_EQ(s.kind, "mixed");
  // Q, K, V by out, the two attention matmuls by heads, M by its reduction: 6 × 2; M/linear's
  // out × 4; Attn whole.
  EXPECT_TRUE(starts_with(s.summary,
                          "mixed: 6 contractions tensor parallel ×2, 1 unsharded on "
                          "gpu:0, 1 tensor parallel ×4, "))
      << s.summary;
  // The MLP's first linear data parallel, its second tensor parallel.
  const ir::Graph mlp = example("mlp");
  const Strategy m =
      explain_plan(mlp, rewrite::parse_plan(R"({"ops": {"H/linear": {"split": {"batch": 4}},
                                                  "Y": {"split": {"out": 2}}}})"),
                   testing::toy_target(1, 4))
          .e.strategy;
  EXPECT_TRUE(starts_with(m.summary, "mixed: 1 contraction data parallel ×4, 1 tensor parallel ×2"))
      << m.summary;
}

// A graph without contractions (elementwise only) counts its operations, not "contractions".
TEST(Strategy, AMixedPlanWithoutContractionsCountsOperations) {
  const ir::Graph g = rewrite::testing::build("X: f32[8, 4]\nM = exp(X)\nY = relu(M)\noutput Y\n");
  const Strategy s = explain_plan(g, rewrite::parse_plan(R"({"ops": {"Y": {"split": {"d0": 2}}}})"),
                                  testing::toy_target(1, 2))
                         .e.strategy;
  EXPECT_EQ(s.kind, "mixed");
  EXPECT_TRUE(starts_with(s.summary, "mixed: 1 operation unsharded on gpu:0, 1 data parallel ×2"))
      << s.summary;
}

// Issue 26 item 7: with "fuse": "auto" the combine of Y's split reduction is fused with the bias
// add. Its input is still a pending sum (Partial(sum)), and the transfers into it are a
// reduce-scatter (the combine's default: nothing reads Y), not a redistribution.
TEST(Strategy, AFusedCombineReadsAPendingSum) {
  const ir::Graph mlp = example("mlp");
  const Explained x =
      explain_plan(mlp, rewrite::parse_plan(R"({"ops": {"H/linear": {"split": {"out": 4}},
                                       "H": {"split": {"d1": 4}}, "Y": {"split": {"in": 4}}},
                                       "fuse": "auto"})"),
                   testing::toy_target(1, 4));
  bool fused_combine = false;
  for (const OperationSharding& op : x.e.operations) {
    if (op.name != "Y") continue;
    fused_combine = op.kernel == "fused";
  }
  EXPECT_TRUE(fused_combine);
  bool partial = false;
  for (const OperationSharding& op : x.e.operations) {
    if (op.name != "Y/matmul") continue;
    for (const TensorSharding& t : op.tensors) {
      if (t.port == "result") partial = t.placements == std::vector<std::string>{"Partial(sum)"};
    }
  }
  EXPECT_TRUE(partial);
  ASSERT_FALSE(x.e.communication.empty());
  for (const Communication& c : x.e.communication) {
    if (c.consumer == "Y") EXPECT_EQ(c.pattern, "reduce-scatter");
  }
  EXPECT_EQ(x.e.strategy.summary,
            "tensor parallel ×4 (Megatron), one reduce-scatter of 16.0 MiB per MLP");
}

// The gains: each baseline's makespan over the plan's, the baselines priced as plans of their own.
TEST(Strategy, GainsAgainstOneDeviceAndDataParallel) {
  const ir::Graph mlp = example("mlp");
  const Target h100x8 = *preset_target("h100x8");
  const Explained tp = explain_standard(mlp, "megatron", h100x8);
  const std::vector<Gain> gains = gains_against_baselines(mlp, h100x8, tp.makespan_s);
  ASSERT_EQ(gains.size(), 2u);
  rewrite::Plan one;
  one.fuse_auto = true;
  const double one_s = explain_plan(mlp, one, h100x8).makespan_s;
  const double dp_s = explain_standard(mlp, "data-parallel", h100x8).makespan_s;
  EXPECT_EQ(gains[0].baseline, "one device");
  EXPECT_DOUBLE_EQ(gains[0].baseline_s, one_s);
  EXPECT_DOUBLE_EQ(gains[0].ratio, one_s / tp.makespan_s);
  EXPECT_EQ(gains[1].baseline, "data parallel ×8");
  EXPECT_DOUBLE_EQ(gains[1].baseline_s, dp_s);
  EXPECT_DOUBLE_EQ(gains[1].ratio, dp_s / tp.makespan_s);
  EXPECT_GT(gains[0].ratio, 1);  // 8 GPUs beat one
  EXPECT_LT(gains[1].ratio, 1);  // and data parallelism beats Megatron on this MLP (no combine)
  // Data parallelism against itself: 1.
  EXPECT_DOUBLE_EQ(gains_against_baselines(mlp, h100x8, dp_s)[1].ratio, 1.0);

  Explanation e = tp.e;
  e.gains = gains;
  const std::string text = to_text(e);
  EXPECT_TRUE(starts_with(text,
                          "Strategy  tensor parallel ×8 (Megatron), one all-reduce of 16.0 MiB "
                          "per MLP\nGain      "))
      << text;
  EXPECT_NE(text.find(fmt::format("{:.2f}× against one device (", gains[0].ratio)),
            std::string::npos)
      << text;
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j.at("strategy").at("summary"), e.strategy.summary);
  EXPECT_EQ(j.at("strategy").at("kind"), "tensor parallel");
  EXPECT_EQ(j.at("strategy").at("tensor"), 8);
  EXPECT_EQ(j.at("strategy").at("megatron"), true);
  EXPECT_EQ(j.at("gains").at(1).at("baseline"), "data parallel ×8");
  EXPECT_DOUBLE_EQ(j.at("gains").at(1).at("ratio").get<double>(), gains[1].ratio);

  // One device: data parallelism does not apply, and the gain says why.
  const std::vector<Gain> alone =
      gains_against_baselines(mlp, testing::toy_target(1, 1), tp.makespan_s);
  ASSERT_EQ(alone.size(), 2u);
  EXPECT_EQ(alone[1].reason, "does not apply: the target has one device");
  e.gains = alone;
  EXPECT_NE(to_text(e).find("data parallel: does not apply: the target has one device"),
            std::string::npos);
  EXPECT_EQ(to_json(e).at("gains").at(1).at("reason"), "does not apply: the target has one device");
}

}  // namespace
}  // namespace tapestry::cost
