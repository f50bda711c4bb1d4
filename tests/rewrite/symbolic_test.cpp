// Symbolic plans (symbolic.h) and the obligation pattern.h states for every pattern: it reads of
// a non-reduction count only whether it is 1 and which counts are equal, and of a place list
// only whether there is one. Checked the way cost::Evaluator relies on it: rewriting the
// symbolic plan and substituting the counts and place lists back gives what rewriting the plan
// itself gives — the same graph (loom JSON, byte for byte), plan, derived operations and applied
// rewrites — for every pattern of default_patterns() alone and all together, over random graphs
// and plans (random_graphs.h, random_plans.h, with place lists added). Patterns that read a
// count's size or a place list's devices fail the same check (the last tests), so a new pattern
// that breaks the obligation fails here, not in a search that prices its plans wrong.
#include "tapestry/rewrite/symbolic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <fmt/core.h>
#include <fmt/format.h>

#include "rewrite/random_graphs.h"
#include "rewrite/random_plans.h"
#include "rewrite/rewrite_testing.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/rewrite/graph_copy.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/pattern.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

const char* const kLinearRelu = R"(
X: f32[-40:60, 20:32]
W: f32[32, 12]
b: f32[32]
Y = relu(linear(X, W, b))
output Y
)";

// The header's example: Y/linear (batch, out, in — `in` a sum) and Y (relu: d0, d1).
TEST(SymbolicPlans, WorkedExampleOfTheHeader) {
  const ir::Graph g = testing::build(kLinearRelu);
  SymbolicPlans plans(g);
  const Plan a = parse_plan(R"({"ops": {"Y/linear": {"split": {"batch": 4, "in": 2}},
                                        "Y": {"split": {"d0": 4, "d1": 8},
                                              "place": ["gpu:0", "gpu:1"]}}})");
  ASSERT_TRUE(plans.abstract(a));
  EXPECT_THAT(plans.values(), ElementsAre(4, 8));
  const std::string key = plans.key();
  const Plan s = plans.symbolic(a);
  EXPECT_EQ(s.split_of("Y/linear", "batch"), kSymbol);
  EXPECT_EQ(s.split_of("Y/linear", "in"), 2);  // a reduction count: exact
  EXPECT_EQ(s.split_of("Y", "d0"), kSymbol);
  EXPECT_EQ(s.split_of("Y", "d1"), kSymbol + 1);
  EXPECT_THAT(s.ops.at("Y").place, ElementsAre(std::string(kPlaceMarker) + "Y"));
  EXPECT_THAT(place_source(s.ops.at("Y").place), Optional(std::string_view("Y")));
  EXPECT_THAT(plans.concrete(kSymbol + 1), Optional(8));
  EXPECT_THAT(plans.concrete(3), Optional(3));
  EXPECT_EQ(plans.concrete(kSymbol + 2), std::nullopt);

  // Other values, the same equalities, other devices: the same key.
  const Plan b = parse_plan(R"({"ops": {"Y/linear": {"split": {"batch": 16, "in": 2}},
                                        "Y": {"split": {"d0": 16, "d1": 4},
                                              "place": ["gpu:3"]}}})");
  ASSERT_TRUE(plans.abstract(b));
  EXPECT_EQ(plans.key(), key);
  EXPECT_THAT(plans.values(), ElementsAre(16, 4));
  EXPECT_THAT(substitute(s, b, plans), Optional(b));

  // d1 = 2 equals the reduction count `in`: kept exactly ("=2"), so another key.
  ASSERT_TRUE(plans.abstract(parse_plan(R"({"ops": {"Y/linear": {"split": {"batch": 16, "in": 2}},
                                                    "Y": {"split": {"d0": 16, "d1": 2},
                                                          "place": ["gpu:3"]}}})")));
  EXPECT_NE(plans.key(), key);
  EXPECT_THAT(plans.values(), ElementsAre(16));
}

TEST(SymbolicPlans, KeysSeparateWhatPatternsMayRead) {
  const ir::Graph g = testing::build(kLinearRelu);
  SymbolicPlans plans(g);
  const auto key_of = [&](const char* text) {
    EXPECT_TRUE(plans.abstract(parse_plan(text))) << text;
    return plans.key();
  };
  const std::string equal = key_of(R"({"ops": {"Y/linear": {"split": {"batch": 4}},
                                               "Y": {"split": {"d0": 4}}}})");
  // Unequal counts, a count of 1, another reduction count, a count equal to the reduction's.
  EXPECT_NE(key_of(R"({"ops": {"Y/linear": {"split": {"batch": 4}}, "Y": {"split": {"d0": 2}}}})"),
            equal);
  EXPECT_NE(key_of(R"({"ops": {"Y/linear": {"split": {"batch": 1}}, "Y": {"split": {"d0": 4}}}})"),
            equal);
  EXPECT_NE(key_of(R"({"ops": {"Y/linear": {"split": {"in": 2}}}})"),
            key_of(R"({"ops": {"Y/linear": {"split": {"in": 3}}}})"));
  const std::string with_reduction =
      key_of(R"({"ops": {"Y/linear": {"split": {"batch": 3, "in": 3}}}})");
  EXPECT_NE(with_reduction, key_of(R"({"ops": {"Y/linear": {"split": {"batch": 4, "in": 3}}}})"));
  EXPECT_EQ(plans.symbolic(parse_plan(R"({"ops": {"Y/linear": {"split": {"batch": 3, "in": 3}}}})"))
                .split_of("Y/linear", "batch"),
            3);  // equal to a reduction count: exact
  // Whether an entry places, its substitutions and the fusion: in the key.
  EXPECT_NE(key_of(R"({"ops": {"Y": {"split": {"d0": 4}, "place": ["gpu:0"]}}})"),
            key_of(R"({"ops": {"Y": {"split": {"d0": 4}}}})"));
  EXPECT_NE(key_of(R"({"ops": {"Y": {"split": {"d0": 4}}}, "fuse": "auto"})"),
            key_of(R"({"ops": {"Y": {"split": {"d0": 4}}}})"));
  // What check_plan refuses of counts: no key.
  EXPECT_FALSE(plans.abstract(parse_plan(R"({"ops": {"Y": {"split": {"d0": 101}}}})")));
  EXPECT_FALSE(plans.abstract(parse_plan(R"({"ops": {"Y": {"split": {"nope": 2}}}})")));
}

TEST(SymbolicPlans, SubstituteRefusesMadeUpCountsAndPlaces) {
  const ir::Graph g = testing::build(kLinearRelu);
  SymbolicPlans plans(g);
  const Plan p = parse_plan(R"({"ops": {"Y": {"split": {"d0": 4}, "place": ["gpu:0"]}}})");
  ASSERT_TRUE(plans.abstract(p));
  Plan s = plans.symbolic(p);
  s.ops["Y"].split["d1"] = kSymbol + 7;  // no such class
  EXPECT_EQ(substitute(s, p, plans), std::nullopt);
  s = plans.symbolic(p);
  s.ops["Y"].place = {"gpu:0"};  // a device, not a marker
  EXPECT_EQ(substitute(s, p, plans), std::nullopt);
}

// What running `patterns` leaves that the obligation covers.
struct Outcome {
  std::string graph;  // loom JSON
  Plan plan;
  std::vector<OpPlan> derived;
  std::vector<std::string> applied;                          // applied rewrites, in full
  std::vector<std::pair<std::string, std::string>> refused;  // (pattern, target)
  std::string error;
};

Outcome run(const ir::Graph& g, const Plan& plan,
            std::span<const OperationPattern* const> patterns) {
  RewriteState state{.graph = copy_graph(g).graph,
                     .plan = resolve_plan_names(plan, g),
                     .origins = {},
                     .derived_entries = {},
                     .derived = {},
                     .problems = {}};
  Outcome out;
  try {
    for (const RewriteEvent& e : run_patterns(state, patterns, {})) {
      if (e.applied) {
        out.applied.push_back(e.to_string());
      } else {
        out.refused.emplace_back(e.pattern, e.target);  // a reason may show a symbol
      }
    }
  } catch (const Error& e) {
    out.error = e.what();
    return out;
  }
  out.graph = ir::write_graph_json(state.graph);
  out.plan = std::move(state.plan);
  for (const DerivedOperation& d : state.derived) out.derived.push_back(d.plan);
  return out;
}

// Where rewriting `plan` symbolically, then substituting, differs from rewriting it; nullopt when
// it does not (or when `plan` has no key: cost::Evaluator does not rewrite it symbolically).
std::optional<std::string> breaks_obligation(const ir::Graph& g, const Plan& plan,
                                             std::span<const OperationPattern* const> patterns) {
  if (!check_plan(plan, g).empty()) return std::nullopt;
  SymbolicPlans plans(g);
  if (!plans.abstract(plan)) return std::nullopt;
  const Outcome concrete = run(g, plan, patterns);
  Outcome symbolic = run(g, plans.symbolic(plan), patterns);
  if (concrete.error.empty() != symbolic.error.empty()) {
    return fmt::format("errors differ: '{}' vs '{}' symbolically", concrete.error, symbolic.error);
  }
  if (!concrete.error.empty()) return std::nullopt;
  if (symbolic.applied != concrete.applied) {
    return fmt::format("applied rewrites differ:\n  {}\nsymbolically:\n  {}",
                       fmt::join(concrete.applied, "\n  "), fmt::join(symbolic.applied, "\n  "));
  }
  if (symbolic.refused != concrete.refused) return "refusals differ";
  if (symbolic.graph != concrete.graph) return "the rewritten graphs differ";
  const std::optional<Plan> back = substitute(symbolic.plan, plan, plans);
  if (!back) return "the symbolic plan's counts or place lists do not resolve";
  if (*back != concrete.plan) {
    return fmt::format("the plans differ:\n  {}\nsymbolically, substituted:\n  {}",
                       concrete.plan.to_json().dump(), back->to_json().dump());
  }
  if (symbolic.derived.size() != concrete.derived.size()) return "derived operations differ";
  for (std::size_t i = 0; i < concrete.derived.size(); ++i) {
    if (substitute(symbolic.derived[i], plan, plans) != concrete.derived[i]) {
      return "the plan of derived operation " + std::to_string(i) + " differs";
    }
  }
  return std::nullopt;
}

// random_plan with place lists on some entries (it has none).
std::string with_places(const std::string& plan_text) {
  nlohmann::json plan = nlohmann::json::parse(plan_text);
  int device = 0;
  for (auto& [name, entry] : plan["ops"].items()) {
    if (!testing::chance(40)) continue;
    entry["place"] = nlohmann::json::array();
    for (std::int64_t i = testing::pick(1, 3); i-- > 0;) {
      entry["place"].push_back(fmt::format("gpu:{}", device++ % 4));
    }
  }
  return plan.dump();
}

// Each pattern alone (index i of default_patterns()), then all of them (index size).
void check_every_pattern(const ir::Graph& g, const Plan& plan, const std::string& reproducer) {
  const std::span<const OperationPattern* const> all = default_patterns();
  for (std::size_t i = 0; i <= all.size(); ++i) {
    const std::span<const OperationPattern* const> patterns =
        i < all.size() ? all.subspan(i, 1) : all;
    if (auto broken = breaks_obligation(g, plan, patterns)) {
      RC_FAIL(fmt::format("{}: {}\n{}", i < all.size() ? all[i]->name() : "all patterns", *broken,
                          reproducer));
    }
  }
}

RC_GTEST_PROP(PatternObligation, SymbolicThenSubstitutedEqualsConcrete, ()) {
  const std::string tap = *testing::gen_tap_program(8);
  std::optional<ir::Graph> built = testing::try_build(tap);
  if (!built) RC_FAIL("the generator made a program that does not build:\n" + tap);
  const auto g = std::make_shared<const ir::Graph>(std::move(*built));
  const std::string plan_text =
      *rc::gen::exec([g] { return with_places(testing::random_plan(*g)); });
  const Plan plan = parse_plan(plan_text);
  if (check_plan(plan, *g).empty()) {
    const Outcome all = run(*g, plan, default_patterns());
    RC_CLASSIFY(!all.applied.empty(), "rewrites applied");
  }
  check_every_pattern(*g, plan, fmt::format("--- graph.tap\n{}--- plan.json\n{}", tap, plan_text));
}

// The examples the documentation uses, with their plans and with counts all equal or all
// different.
TEST(PatternObligation, HoldsOnTheExamplePlans) {
  const auto check = [](const ir::Graph& g, const char* text) {
    const std::span<const OperationPattern* const> all = default_patterns();
    for (std::size_t i = 0; i <= all.size(); ++i) {
      EXPECT_EQ(breaks_obligation(g, parse_plan(text), i < all.size() ? all.subspan(i, 1) : all),
                std::nullopt)
          << text << " with pattern " << i;
    }
  };
  const ir::Graph lr = testing::build(kLinearRelu);
  check(lr, R"({"ops": {"Y/linear": {"split": {"in": 3, "batch": 2}}}, "fuse": "auto"})");
  check(lr, R"({"ops": {"Y/linear": {"split": {"batch": 4, "out": 2}},
                        "Y": {"split": {"d0": 4, "d1": 2}}}, "fuse": "auto"})");
  check(lr, R"({"ops": {"Y/linear": {"split": {"batch": 4, "out": 2}},
                        "Y": {"split": {"d0": 2, "d1": 4}}}, "fuse": [["Y/linear", "Y"]]})");
  check(lr, R"({"ops": {"Y/linear": {"split": {"in": 5, "out": 5}, "place": ["gpu:1"]},
                        "Y": {"split": {"d1": 5}, "place": ["gpu:2", "gpu:3"]}}})");
  check(lr, R"({"ops": {"Y/linear": {"split": {"in": 2, "batch": 3},
                                     "substitute": ["decompose-linear"]},
                        "Y": {"split": {"d0": 3}}}})");
}

// Rewrites Y's plan when a count of it is above 4 — it reads a count's size.
class SplitsAboveFour final : public OperationPattern {
 public:
  explicit SplitsAboveFour(std::int64_t above) : above_(above) {}
  [[nodiscard]] std::string_view name() const override { return "test-count-reader"; }
  [[nodiscard]] MatchResult match(const RewriteState& state, ir::OperationId op) const override {
    auto entry = state.plan.ops.find(operation_name(state.graph, op));
    if (entry == state.plan.ops.end()) return MatchResult::skip("no entry");
    for (const auto& [dim, count] : entry->second.split) {
      if (count > above_) return MatchResult::success();
    }
    return MatchResult::skip("no count above");
  }
  std::string apply(RewriteState& state, ir::OperationId op) const override {
    for (auto& [dim, count] : state.plan.ops[operation_name(state.graph, op)].split) {
      if (count > above_) count = 1;
    }
    return "uncut";
  }

  [[nodiscard]] bool may_act_across(const ir::Graph& /*graph*/, ir::OperationId /*producer*/,
                                    ir::TensorId /*t*/,
                                    ir::OperationId /*consumer*/) const override {
    return false;
  }

 private:
  std::int64_t above_;
};

// Drops an entry's place list when it starts on gpu:0 — it reads a place list's devices.
class PlacedOnGpu0 final : public OperationPattern {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-place-reader"; }
  [[nodiscard]] MatchResult match(const RewriteState& state, ir::OperationId op) const override {
    auto entry = state.plan.ops.find(operation_name(state.graph, op));
    if (entry == state.plan.ops.end() || entry->second.place.empty() ||
        entry->second.place[0] != "gpu:0") {
      return MatchResult::skip("not on gpu:0");
    }
    return MatchResult::success();
  }
  std::string apply(RewriteState& state, ir::OperationId op) const override {
    state.plan.ops[operation_name(state.graph, op)].place.clear();
    return "unplaced";
  }
  [[nodiscard]] bool may_act_across(const ir::Graph& /*graph*/, ir::OperationId /*producer*/,
                                    ir::TensorId /*t*/,
                                    ir::OperationId /*consumer*/) const override {
    return false;
  }
};

TEST(PatternObligation, APatternReadingACountsSizeFails) {
  const ir::Graph g = testing::build(kLinearRelu);
  const SplitsAboveFour reader(4);
  const OperationPattern* const patterns[] = {&reader};
  // Concretely 2 is not above 4; symbolically it is 2^40.
  EXPECT_THAT(breaks_obligation(g, parse_plan(R"({"ops": {"Y": {"split": {"d0": 2}}}})"), patterns),
              Optional(HasSubstr("applied rewrites differ")));
  // Comparing with 1 is allowed: the same pattern reading "above 1" keeps the obligation.
  const SplitsAboveFour above_one(1);
  const OperationPattern* const allowed[] = {&above_one};
  EXPECT_EQ(breaks_obligation(g, parse_plan(R"({"ops": {"Y": {"split": {"d0": 2}}}})"), allowed),
            std::nullopt);
}

TEST(PatternObligation, APatternReadingAPlaceListsDevicesFails) {
  const ir::Graph g = testing::build(kLinearRelu);
  const PlacedOnGpu0 reader;
  const OperationPattern* const patterns[] = {&reader};
  EXPECT_THAT(
      breaks_obligation(
          g, parse_plan(R"({"ops": {"Y": {"split": {"d0": 2}, "place": ["gpu:0"]}}})"), patterns),
      Optional(HasSubstr("applied rewrites differ")));
}

// The random check finds such a pattern too. rapidcheck prints the counterexample it shrinks and
// "Some of your RapidCheck properties had failures": that is this test passing.
TEST(PatternObligation, TheRandomCheckFindsACountReader) {
  const SplitsAboveFour reader(4);
  const OperationPattern* const patterns[] = {&reader};
  const bool held = rc::check("a count reader keeps the obligation", [&] {
    const std::string tap = *testing::gen_tap_program(4);
    std::optional<ir::Graph> built = testing::try_build(tap);
    RC_PRE(built.has_value());
    const auto g = std::make_shared<const ir::Graph>(std::move(*built));
    const std::string plan_text = *rc::gen::exec([g] { return testing::random_plan(*g); });
    RC_ASSERT(breaks_obligation(*g, parse_plan(plan_text), patterns) == std::nullopt);
  });
  EXPECT_FALSE(held);
}

}  // namespace
}  // namespace tapestry::rewrite
