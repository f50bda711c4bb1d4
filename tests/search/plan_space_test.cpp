// The plan space (roles, edges, tied layers), the seeds, and the mutations' invariants.
#include "tapestry/search/plan_space.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <set>

#include "cost/cost_testing.h"
#include "search_testing.h"
#include "tapestry/cost/evaluator.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/search/mutate.h"

namespace tapestry::search {
namespace {

using testing::example_graph;
using testing::h100x8;

const char* kMlp = R"(
X: f32[64, 32]
W1: f32[48, 32]
b1: f32[48]
W2: f32[16, 48]
b2: f32[16]
H = relu(linear(X, W1, b1))
Y = linear(H, W2, b2)
output Y
)";

// Three identical layers, named L0…L2, and a head that is not repeated.
const char* kLayers = R"(
X: f32[64, 32]
W0: f32[32, 32]
b0: f32[32]
W1: f32[32, 32]
b1: f32[32]
W2: f32[32, 32]
b2: f32[32]
L0 = relu(linear(X, W0, b0))
L1 = relu(linear(L0, W1, b1))
L2 = relu(linear(L1, W2, b2))
Out = sigmoid(L2)
output Out
)";

const OperationInfo& op(const PlanSpace& s, std::string_view name) {
  const auto i = s.find(name);
  EXPECT_TRUE(i.has_value()) << name;
  return s.operations()[*i];
}

std::string dim_name(const OperationInfo& info, std::optional<std::size_t> d) {
  return d ? info.dims[*d].name : "-";
}

TEST(PlanSpace, RolesAndEdgesOfTheMlp) {
  const ir::Graph g = rewrite::testing::build(kMlp);
  const PlanSpace s(g, h100x8(), false);
  ASSERT_EQ(s.operations().size(), 3u);
  EXPECT_EQ(s.operations()[0].name, "H/linear");  // topological order
  EXPECT_EQ(s.operations()[2].name, "Y");
  EXPECT_EQ(dim_name(op(s, "H/linear"), op(s, "H/linear").batch_dim), "batch");
  EXPECT_EQ(dim_name(op(s, "H/linear"), op(s, "H/linear").weight_dim), "out");
  EXPECT_EQ(dim_name(op(s, "H"), op(s, "H").batch_dim), "d0");
  EXPECT_EQ(dim_name(op(s, "H"), op(s, "H").weight_dim), "-");  // no weight: relu
  EXPECT_TRUE(op(s, "Y").decomposable);
  EXPECT_FALSE(op(s, "H").decomposable);
  EXPECT_EQ(s.edges().size(), 2u);  // H/linear → H → Y
  EXPECT_EQ(s.device_count(), 8);
  EXPECT_EQ(s.kinds().size(), 3u);  // untied: each its own kind
}

// Issue 25: a linear of a vector ([in], no batch dim) was not decomposable, so the search never
// split its `in` (decompose-linear refused it); it now is, and such splits price.
TEST(PlanSpace, ALinearOfAVectorIsDecomposableAndItsInSplitPrices) {
  const ir::Graph g = rewrite::testing::build(
      "X: f32[64]\nW: f32[16, 64]\nb: f32[16]\nY = linear(X, W, b)\noutput Y\n");
  const PlanSpace s(g, h100x8(), false);
  EXPECT_TRUE(op(s, "Y").decomposable);
  cost::Evaluator ev(g, h100x8());
  EXPECT_NO_THROW(
      (void)ev.evaluate(rewrite::parse_plan(R"({"ops": {"Y": {"split": {"in": 8}}}})")));
}

TEST(PlanSpace, NamePattern) {
  EXPECT_EQ(name_pattern("L17/Q/linear"), "L#/Q/linear");
  EXPECT_EQ(name_pattern("H/linear.2"), "H/linear.#");
  EXPECT_EQ(name_pattern("Y"), "Y");
}

TEST(PlanSpace, TiedLayersShareOneEntry) {
  const ir::Graph g = rewrite::testing::build(kLayers);
  const PlanSpace s(g, h100x8(), true);
  // L#/linear and L# of three layers, and Out: three kinds.
  ASSERT_EQ(s.kinds().size(), 3u);
  EXPECT_EQ(s.representatives().size(), 3u);
  EXPECT_EQ(s.kinds()[op(s, "L2/linear").kind].size(), 3u);
  EXPECT_EQ(s.operations()[s.representative(*s.find("L2"))].name, "L0");

  rewrite::Plan genome;
  genome.ops["L0/linear"].split["out"] = 4;
  genome.ops["L0"].split["d1"] = 4;
  genome.fuse = {{"L0/linear", "L0"}};
  const rewrite::Plan plan = s.expand(genome);
  EXPECT_EQ(plan.split_of("L2/linear", "out"), 4);
  EXPECT_EQ(plan.split_of("L1", "d1"), 4);
  EXPECT_EQ(plan.split_of("Out", "d0"), 1);
  EXPECT_EQ(plan.fuse, (std::vector<std::vector<std::string>>{
                           {"L0/linear", "L0"}, {"L1/linear", "L1"}, {"L2/linear", "L2"}}));
  EXPECT_TRUE(rewrite::check_plan(plan, g).empty());
  // Untied, expand is the identity.
  EXPECT_EQ(PlanSpace(g, h100x8(), false).expand(genome), genome);
}

TEST(PlanSpace, StructurallyIdenticalLayersOfOtherNamesAreNotTied) {
  // Enc0/Enc1 differ only in their digits: one kind. Dec0 is the same computation under another
  // name: its own kind (tying goes by name pattern and structure, both).
  const ir::Graph g = rewrite::testing::build(R"(
X: f32[64, 32]
W0: f32[32, 32]
b0: f32[32]
W1: f32[32, 32]
b1: f32[32]
W2: f32[32, 32]
b2: f32[32]
Enc0 = linear(X, W0, b0)
Enc1 = linear(Enc0, W1, b1)
Dec0 = linear(Enc1, W2, b2)
output Dec0
)");
  const PlanSpace s(g, h100x8(), true);
  EXPECT_EQ(s.kinds().size(), 2u);
  EXPECT_EQ(op(s, "Enc0").kind, op(s, "Enc1").kind);
  EXPECT_NE(op(s, "Enc0").kind, op(s, "Dec0").kind);
  rewrite::Plan genome;
  genome.ops["Enc0"].split["out"] = 4;
  const rewrite::Plan plan = s.expand(genome);
  EXPECT_EQ(plan.split_of("Enc1", "out"), 4);
  EXPECT_EQ(plan.split_of("Dec0", "out"), 1);
}

TEST(PlanSpace, OperationsOfAnotherShapeAreNotTied) {
  const ir::Graph g = rewrite::testing::build(R"(
X: f32[64, 32]
W0: f32[32, 32]
b0: f32[32]
W1: f32[16, 32]
b1: f32[16]
L0 = linear(X, W0, b0)
L1 = linear(L0, W1, b1)
output L1
)");
  EXPECT_EQ(PlanSpace(g, h100x8(), true).kinds().size(), 2u);
}

// Six identical layers between a stem and a head.
std::string six_layers() {
  std::string tap = "X: f32[64, 32]\n";
  for (int l = 0; l < 6; ++l) tap += fmt::format("W{0}: f32[32, 32]\nb{0}: f32[32]\n", l);
  tap += "Stem = sigmoid(X)\n";
  std::string prev = "Stem";
  for (int l = 0; l < 6; ++l) {
    tap += fmt::format("L{0} = relu(linear({1}, W{0}, b{0}))\n", l, prev);
    prev = fmt::format("L{}", l);
  }
  return tap + "Out = sigmoid(L5)\noutput Out\n";
}

TEST(LayerPrefix, KeepsTheFirstLayersUnderTheirNames) {
  const ir::Graph g = rewrite::testing::build(six_layers());
  const PlanSpace s(g, h100x8(), true);
  const std::optional<ir::Graph> prefix = layer_prefix(g, s, 2);
  ASSERT_TRUE(prefix.has_value());
  const PlanSpace p(*prefix, h100x8(), true);
  std::vector<std::string> names;
  for (const OperationInfo& info : p.operations()) names.push_back(info.name);
  // The stem and two layers; the head read a dropped layer and went with it.
  EXPECT_EQ(names, (std::vector<std::string>{"Stem", "L0/linear", "L0", "L1/linear", "L1"}));
  std::size_t inputs = 0;
  std::size_t outputs = 0;
  for (ir::TensorId t : prefix->tensors()) {
    if (prefix->producers(t).empty()) ++inputs;
    if (metakernel::is_graph_output(*prefix, t)) {
      ++outputs;
      EXPECT_EQ(prefix->tensor(t).label(), "L1");
    }
  }
  EXPECT_EQ(inputs, 5u);  // X, W0, b0, W1, b1: the later layers' weights are gone
  EXPECT_EQ(outputs, 1u);
  // A genome of the whole graph's space applies to the prefix and prices there.
  rewrite::Plan genome;
  genome.ops["L0/linear"].split["out"] = 4;
  genome.ops["L0"].split["d1"] = 4;
  genome.fuse_auto = true;
  const rewrite::Plan plan = p.expand(genome);
  EXPECT_TRUE(rewrite::check_plan(plan, *prefix).empty());
  EXPECT_EQ(plan.split_of("L1/linear", "out"), 4);
  cost::Evaluator ev(*prefix, h100x8());
  const cost::CostVector small = ev.evaluate(plan);
  cost::Evaluator whole(g, h100x8());
  EXPECT_LT(small.makespan_s, whole.evaluate(s.expand(genome)).makespan_s);
}

TEST(LayerPrefix, RefusesAGraphWithoutEnoughLayers) {
  const ir::Graph g = rewrite::testing::build(kLayers);  // three layers
  EXPECT_FALSE(layer_prefix(g, PlanSpace(g, h100x8(), true), 2).has_value());
  EXPECT_TRUE(layer_prefix(g, PlanSpace(g, h100x8(), true), 1).has_value());
  const ir::Graph mlp = rewrite::testing::build(kMlp);  // nothing repeated
  EXPECT_FALSE(layer_prefix(mlp, PlanSpace(mlp, h100x8(), true), 1).has_value());
}

TEST(Seeds, TheObviousPlansOfTheMlp) {
  const ir::Graph g = rewrite::testing::build(kMlp);
  const PlanSpace s(g, h100x8(), false);
  const std::vector<SeedPlan> seeds = seed_plans(s);
  ASSERT_EQ(seeds.size(), 4u);
  EXPECT_EQ(seeds[0].name, "unsharded");
  EXPECT_TRUE(seeds[0].genome.ops.empty());
  EXPECT_EQ(seeds[1].genome.to_json().dump(),
            R"({"fuse":"auto","ops":{"H":{"split":{"d0":8}},"H/linear":{"split":{"batch":8}},)"
            R"("Y":{"split":{"batch":8}}}})");
  EXPECT_EQ(seeds[2].name, "weights-out");  // both weights cut on `out`, relu follows the first
  EXPECT_EQ(seeds[2].genome.to_json().dump(),
            R"({"fuse":"auto","ops":{"H":{"split":{"d1":8}},"H/linear":{"split":{"out":8}},)"
            R"("Y":{"split":{"out":8}}}})");
  EXPECT_EQ(seeds[3].name, "megatron");  // column then row parallel
  EXPECT_EQ(seeds[3].genome.to_json().dump(),
            R"({"fuse":"auto","ops":{"H":{"split":{"d1":8}},"H/linear":{"split":{"out":8}},)"
            R"("Y":{"split":{"in":8}}}})");
  for (const SeedPlan& seed : seeds) EXPECT_TRUE(rewrite::check_plan(seed.genome, g).empty());
}

TEST(Seeds, CutsNeverExceedAnExtent) {
  // 3 rows on 8 devices: data parallelism cuts 3 ways.
  const ir::Graph g = rewrite::testing::build("X: f32[3, 4]\nY = relu(X)\noutput Y\n");
  const std::vector<SeedPlan> seeds = seed_plans(PlanSpace(g, h100x8(), false));
  EXPECT_EQ(seeds[1].genome.split_of("Y", "d0"), 3);
}

TEST(Rng, SlotStreamsAreFixedAndDistinct) {
  Rng a = Rng::for_slot(1, 2, 3);
  Rng b = Rng::for_slot(1, 2, 3);
  Rng c = Rng::for_slot(1, 2, 4);
  const std::uint64_t first = a.next();
  EXPECT_EQ(first, b.next());
  EXPECT_NE(first, c.next());
  Rng r(7);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(r.below(3), 3u);
}

// Every mutation keeps the genome well-formed, and what it names exists in the graph.
void check_invariants(const PlanSpace& s, const rewrite::Plan& genome, const ir::Graph& g) {
  for (const auto& [name, op] : genome.ops) {
    RC_ASSERT(!rewrite::is_empty(op));
    RC_ASSERT(op.place.empty() || op.mesh.empty());
    std::int64_t shards = 1;
    for (const auto& [dim, count] : op.split) {
      RC_ASSERT(count >= 2);
      shards *= count;
    }
    RC_ASSERT(shards <= 8 * s.device_count());
    for (const auto& [dim, axis] : op.mesh) RC_ASSERT(op.split.contains(dim));
  }
  const std::vector<support::Diagnostic> problems = rewrite::check_plan(s.expand(genome), g);
  RC_ASSERT(problems.empty());
}

RC_GTEST_PROP(MutationProperties, KeepTheGenomeWellFormedOnTheTransformer, ()) {
  static const ir::Graph g = example_graph("transformer_block.tap");
  static const PlanSpace s(g, *cost::preset_target("h100x64"), false);
  static const std::vector<SeedPlan> seeds = seed_plans(s);
  Rng rng(*rc::gen::arbitrary<std::uint64_t>());
  rewrite::Plan genome = seeds[rng.below(seeds.size())].genome;
  const auto steps = *rc::gen::inRange(1, 30);
  for (int i = 0; i < steps; ++i) {
    const auto kind = static_cast<Mutation>(rng.below(kMutationCount));
    mutate_once(s, kind, genome, rng);
    check_invariants(s, genome, g);
  }
}

TEST(Mutations, EachKindChangesSomethingAndMostPlansPrice) {
  const ir::Graph g = example_graph("transformer_block.tap");
  const PlanSpace s(g, h100x8(), false);
  cost::Evaluator ev(g, h100x8());
  const rewrite::Plan start = seed_plans(s)[2].genome;  // weights-out: neighbours disagree
  for (int k = 0; k < kCutMutationCount; ++k) {         // a training step's: training_search_test
    int changed = 0, priced = 0;
    for (std::uint64_t i = 0; i < 40; ++i) {
      Rng rng = Rng::for_slot(5, static_cast<std::uint64_t>(k), i);
      rewrite::Plan genome = start;
      if (!mutate_once(s, static_cast<Mutation>(k), genome, rng)) continue;
      ++changed;
      EXPECT_FALSE(genome == start) << mutation_name(static_cast<Mutation>(k));
      try {
        (void)ev.evaluate(genome);
        ++priced;
      } catch (const Error&) {
      }
    }
    EXPECT_GE(changed, 12) << mutation_name(static_cast<Mutation>(k));
    EXPECT_GE(priced * 2, changed) << mutation_name(static_cast<Mutation>(k));
  }
}

TEST(Mutations, AResplitSometimesCarriesItsCutAlongTheAxis) {
  // transformer_block: a cut of the heads made on one attention operation reaches the others
  // (and stops at the output projection's reduction, which a linear cannot split).
  const ir::Graph g = example_graph("transformer_block.tap");
  const PlanSpace s(g, h100x8(), false);
  int carried = 0;
  for (std::uint64_t i = 0; i < 400; ++i) {
    Rng rng = Rng::for_slot(9, 0, i);
    rewrite::Plan genome;
    if (!mutate_once(s, Mutation::kResplit, genome, rng)) continue;
    EXPECT_TRUE(rewrite::check_plan(genome, g).empty());
    for (const auto& [name, op] : genome.ops) {
      std::int64_t shards = 1;
      for (const auto& [dim, count] : op.split) shards *= count;
      EXPECT_LE(shards, 8 * 8) << name;
    }
    if (genome.ops.size() < 2) continue;
    ++carried;
    // Every operation the cut reached has it: one count everywhere.
    std::set<std::int64_t> counts;
    for (const auto& [name, op] : genome.ops) {
      for (const auto& [dim, count] : op.split) counts.insert(count);
    }
    EXPECT_EQ(counts.size(), 1u);
  }
  EXPECT_GE(carried, 40);  // about 30% of the resplits
  EXPECT_LE(carried, 200);
}

TEST(Mutations, APlaceMovesAWholeBranchOntoDevicesOfItsOwn) {
  // transformer_block's branches between forks and joins: a place mutation moves one operation,
  // or one of these whole, onto one run of devices — never across a fork or a join.
  const ir::Graph g = example_graph("transformer_block.tap");
  const PlanSpace s(g, h100x8(), false);
  const std::vector<std::set<std::string>> branches = {
      {"Q/linear", "Q/reshape", "Q"},
      {"K/linear", "K/reshape", "K", "Scores/transpose"},
      {"V/linear", "V/reshape", "V"},
      {"Scores/matmul", "Scores", "P"},
      {"Ctx", "Attn/permute", "Attn/reshape", "Attn", "R1"},
      {"M/linear", "M/gelu", "M"},
  };
  rewrite::Plan start;
  for (const OperationInfo& info : s.operations()) {
    const auto rows = std::find_if(info.dims.begin(), info.dims.end(),
                                   [](const DimInfo& d) { return !d.reduction && d.extent >= 4; });
    if (rows != info.dims.end()) start.ops[info.name].split[rows->name] = 2;
  }
  std::vector<int> seen(branches.size(), 0);
  for (std::uint64_t i = 0; i < 600; ++i) {
    Rng rng = Rng::for_slot(11, 3, i);
    rewrite::Plan genome = start;
    if (!mutate_once(s, Mutation::kPlace, genome, rng)) continue;
    std::set<std::string> moved;
    for (const auto& [name, op] : genome.ops) {
      const auto before = start.ops.find(name);
      if (before == start.ops.end() ? !op.place.empty() : !(op == before->second))
        moved.insert(name);
    }
    if (moved.size() < 2) continue;
    // One whole branch, every operation on the same run: two devices (the shards) from an
    // even one.
    const auto b = std::find(branches.begin(), branches.end(), moved);
    ASSERT_NE(b, branches.end()) << fmt::format("{}", fmt::join(moved, ", "));
    ++seen[static_cast<std::size_t>(b - branches.begin())];
    const std::vector<std::string>& run = genome.ops.at(*moved.begin()).place;
    ASSERT_EQ(run.size(), 2u);
    const auto first = std::find(s.device_names().begin(), s.device_names().end(), run[0]);
    ASSERT_NE(first, s.device_names().end());
    EXPECT_EQ((first - s.device_names().begin()) % 2, 0);
    EXPECT_EQ(*(first + 1), run[1]);
    for (const std::string& name : moved) EXPECT_EQ(genome.ops.at(name).place, run) << name;
  }
  for (std::size_t b = 0; b < branches.size(); ++b)
    EXPECT_GE(seen[b], 3) << fmt::format("{}", fmt::join(branches[b], ", "));
}

}  // namespace
}  // namespace tapestry::search
