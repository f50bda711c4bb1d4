#include "tapestry/rewrite/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rewrite/rewrite_testing.h"
#include "support/diagnostic_testing.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr std::string_view kLinearRelu = R"(
X: f32[-40:60, 20:32]
W: f32[32, 12]
b: f32[32]
Y = relu(linear(X, W, b))
output Y
)";

TEST(Plan, ParsesTheDocumentedForm) {
  Plan plan = parse_plan(R"({"ops": {"H/linear": {"split": {"out": 2}}, "Y": {"split": {"in": 2}}},
                            "fuse": [["H/linear", "H"]]})");
  EXPECT_EQ(plan.split_of("H/linear", "out"), 2);
  EXPECT_EQ(plan.split_of("Y", "in"), 2);
  EXPECT_EQ(plan.split_of("Y", "batch"), 1);
  EXPECT_EQ(plan.split_of("nobody", "batch"), 1);
  ASSERT_EQ(plan.fuse.size(), 1u);
  EXPECT_EQ(plan.fuse[0], (std::vector<std::string>{"H/linear", "H"}));
  EXPECT_EQ(parse_plan(R"({"fuse": "auto"})").fuse_auto, true);
}

TEST(Plan, JsonRoundTrip) {
  Plan plan =
      parse_plan(R"({"ops": {"Y": {"split": {"batch": 3}, "substitute": ["decompose-linear"],
                                   "place": ["cpu:0", "cpu:1"]}},
                            "fuse": [["a", "b"]]})");
  EXPECT_EQ(plan.ops.at("Y").place, (std::vector<std::string>{"cpu:0", "cpu:1"}));
  EXPECT_EQ(parse_plan(plan.to_json().dump()), plan);
}

TEST(Plan, OutputsParseAndRoundTrip) {
  const Plan plan = parse_plan(
      R"({"ops": {"Y": {"split": {"batch": 2}}}, "outputs": {"Y": {"replicate": "all"},
                                                            "Z": {"replicate": "tp"}}})");
  EXPECT_EQ(plan.outputs.at("Y").replicate, "all");
  EXPECT_EQ(plan.outputs.at("Z").replicate, "tp");
  EXPECT_EQ(plan.to_json()["outputs"],
            nlohmann::json::parse(R"({"Y": {"replicate": "all"}, "Z": {"replicate": "tp"}})"));
  EXPECT_EQ(parse_plan(plan.to_json().dump()), plan);
  EXPECT_FALSE(parse_plan("{}").to_json().contains("outputs"));
}

// "all" names no mesh axis and runs on any target; a mesh axis belongs to the target the plan
// was written for.
TEST(Plan, WithoutPlacementKeepsReplicateAllAndDropsAMeshAxis) {
  const Plan plan =
      parse_plan(R"({"outputs": {"Y": {"replicate": "all"}, "Z": {"replicate": "tp"}}})");
  EXPECT_EQ(without_placement(plan), parse_plan(R"({"outputs": {"Y": {"replicate": "all"}}})"));
}

TEST(Plan, WithoutPlacementKeepsTheShardsAndDropsWhereTheyRun) {
  const Plan plan = parse_plan(R"({"ops": {
      "Y": {"split": {"batch": 2}, "place": ["gpu:2", "gpu:3"]},
      "Z": {"split": {"out": 4}, "mesh": {"out": "tp"}, "substitute": ["decompose-linear"]},
      "P": {"place": ["gpu:5"]}},
    "fuse": "auto"})");
  const Plan expected = parse_plan(R"({"ops": {
      "Y": {"split": {"batch": 2}},
      "Z": {"split": {"out": 4}, "substitute": ["decompose-linear"]}},
    "fuse": "auto"})");
  EXPECT_EQ(without_placement(plan), expected);  // P asked for a device only: gone
  EXPECT_EQ(without_placement(expected), expected);
}

struct BadPlan {
  std::string text;
  std::string expected;
};

TEST(Plan, BadPlansNameTheSourceAndPath) {
  const BadPlan cases[] = {
      {"{\"ops\": {\"Y\": {\"split\": {\"batch\": 0}}}}",
       "plan.json: /ops/Y/split/batch: the shard count must be an integer >= 1, got 0"},
      {"{\"ops\": {\"Y\": {\"split\": {\"batch\": 1.5}}}}",
       "/ops/Y/split/batch: the shard count must be an integer >= 1"},
      {"{\"ops\": {\"Y\": {\"splt\": {}}}}", "plan.json: /ops/Y/splt: unknown member"},
      {"{\"oops\": {}}", "plan.json: /oops: unknown member"},
      {"{\"ops\": []}", "plan.json: /ops: expected an object, got array"},
      {"{\"fuse\": [[\"a\"]]}", "/fuse/0: a fusion group needs at least two operations"},
      {"{\"fuse\": \"always\"}", "/fuse: expected \"auto\""},
      {"{\"ops\": {\"Y\": {\"place\": []}}}",
       "/ops/Y/place: a placement needs at least one device"},
      {"{\"ops\": {\"Y\": {\"place\": [\"cpu:0\", 3]}}}", "/ops/Y/place/1: expected a string"},
      {"{\"ops\": {\"Y\": {\"place\": [\"\"]}}}", "/ops/Y/place/0: a device name cannot be empty"},
      {"{\n  \"ops\": {,}\n}", "plan.json:2:11: invalid JSON"},
      {R"({"outputs": ["Y"]})", "plan.json: /outputs: expected an object, got array"},
      {R"({"outputs": {"Y": "all"}})", "plan.json: /outputs/Y: expected an object, got string"},
      {R"({"outputs": {"Y": {"replicate": 8}}})",
       "plan.json: /outputs/Y/replicate: expected a string, got number"},
      {R"({"outputs": {"Y": {"replicate": ""}}})",
       "plan.json: /outputs/Y/replicate: expected \"all\" or a mesh axis name, got \"\""},
      {R"({"outputs": {"a/b": {"gather": "all"}}})",
       "plan.json: /outputs/a~1b/gather: unknown member (expected \"replicate\")"},
      {R"({"outputs": {"Y": {}}})",
       "plan.json: /outputs/Y: expected {\"replicate\": \"all\" | AXIS}"},
      {R"({"output": {}})",
       "plan.json: /output: unknown member (expected \"ops\", \"fuse\", \"outputs\", "
       "\"recompute\", \"zero\" or \"pipeline\")"},
      // nlohmann's out_of_range, not a parse_error: it escaped as "internal error" (fuzz_plan).
      {"{\"ops\": {\"Y\": {\"split\": {\"out\": 1e999}}}}",
       "plan.json:1:33: invalid JSON: number 1e999 is out of range"},
  };
  for (const BadPlan& c : cases) {
    EXPECT_THAT([&] { (void)parse_plan(c.text, "plan.json"); },
                ThrowsMessage<Error>(HasSubstr(c.expected)))
        << c.text;
  }
}

// The reader's errors carry their place as data: file + JSON pointer for a shape error, file +
// line and column for a syntax error or a repeated key.
TEST(Plan, ReadErrorsCarryTheirLocation) {
  using support::testing::thrown_diagnostic;
  support::Diagnostic d = thrown_diagnostic(
      [] { (void)parse_plan(R"({"ops": {"Y": {"split": {"batch": 0}}}})", "plan.json"); });
  EXPECT_EQ(d.where.file, "plan.json");
  EXPECT_EQ(d.where.pointer, "/ops/Y/split/batch");
  EXPECT_EQ(d.message, "the shard count must be an integer >= 1, got 0");
  d = thrown_diagnostic([] { (void)parse_plan("[]", "plan.json"); });
  EXPECT_EQ(d.where.pointer, "/");
  d = thrown_diagnostic([] { (void)parse_plan("{\n  \"ops\": {,}\n}", "plan.json"); });
  EXPECT_EQ(d.where.file, "plan.json");
  EXPECT_EQ(d.where.pos, (support::SourcePos{2, 11}));
  d = thrown_diagnostic([] { (void)parse_plan("{\"ops\": {},\n \"ops\": {}}", "plan.json"); });
  EXPECT_EQ(d.where.pos, (support::SourcePos{2, 2}));
  EXPECT_EQ(d.message, "duplicate key \"ops\" (a JSON object names each member once)");
}

// check_plan's problems are located by their JSON pointer; lower throws them all as one Error.
TEST(Plan, CheckProblemsAreLocatedByTheirPointer) {
  ir::Graph g = testing::build(kLinearRelu);
  const Plan plan = parse_plan(R"({"ops": {"Y": {"split": {"d9": 2}}},
                                   "outputs": {"Q": {"replicate": "all"}}})");
  const std::vector<support::Diagnostic> problems = check_plan(plan, g);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].where.pointer, "/ops/Y/split/d9");
  EXPECT_THAT(problems[0].message, HasSubstr("operation 'Y' has no index dimension 'd9'"));
  EXPECT_EQ(problems[1].where.pointer, "/outputs/Q");
  EXPECT_EQ(problems[1].message, "no graph output named 'Q' (outputs: Y)");
  EXPECT_TRUE(problems[1].where.file.empty());  // the caller that knows the file names it
  EXPECT_EQ(support::testing::thrown_diagnostics([&] { (void)lower(g, plan); }), problems);
}

TEST(Plan, SplitShorthand) {
  Plan plan;
  add_split_shorthand(plan, "H/linear.out=2");
  add_split_shorthand(plan, "H/linear.2.batch=4");
  EXPECT_EQ(plan.split_of("H/linear", "out"), 2);
  EXPECT_EQ(plan.split_of("H/linear.2", "batch"), 4);
  for (const char* bad : {"Y.batch", "Y=2", "Y.batch=0", "Y.batch=x", ".batch=2", "Y.=2"}) {
    EXPECT_THAT([&] { add_split_shorthand(plan, bad); },
                ThrowsMessage<Error>(HasSubstr("expected OP.DIM=N")))
        << bad;
  }
}

TEST(Plan, CheckAgainstAGraphReportsEveryProblem) {
  ir::Graph g = testing::build(kLinearRelu);
  EXPECT_THAT(
      check_plan(parse_plan(R"({"ops": {"Y/linear": {"split": {"batch": 2, "in": 3}}}})"), g),
      ::testing::IsEmpty());
  std::vector<std::string> problems =
      testing::formatted(check_plan(parse_plan(R"({"ops": {"Z": {"split": {"batch": 2}},
                              "Y/linear": {"split": {"rows": 2, "out": 33}, "substitute": ["magic"]}},
                     "fuse": [["Y/linear", "Q"]]})"),
                                    g));
  EXPECT_THAT(
      problems,
      ::testing::UnorderedElementsAre(
          HasSubstr("/ops/Z: no operation named 'Z' (operations: Y/linear, Y; the rewrites of "
                    "this plan derive none)"),
          HasSubstr("/ops/Y~1linear/split/rows: operation 'Y/linear' has no index dimension 'rows' "
                    "(it has: batch, out, in)"),
          HasSubstr(
              "/ops/Y~1linear/split/out: cannot cut dimension 'out' of extent 32 into 33 shards"),
          HasSubstr("unknown substitution 'magic'"),
          HasSubstr("/fuse/0/1: no operation named 'Q'")));
}

// An `outputs` entry names a graph output: not an intermediate tensor, not an unknown one.
TEST(Plan, CheckRejectsOutputsTheGraphLacks) {
  ir::Graph g = testing::build(kLinearRelu);
  EXPECT_THAT(check_plan(parse_plan(R"({"outputs": {"Y": {"replicate": "all"}}})"), g),
              ::testing::IsEmpty());
  EXPECT_THAT(testing::formatted(check_plan(
                  parse_plan(R"({"outputs": {"Q": {"replicate": "all"}, "X": {"replicate": "all"},
                                            "Y": {"replicate": "tp"}}})"),
                  g)),
              ::testing::ElementsAre("/outputs/Q: no graph output named 'Q' (outputs: Y)",
                                     "/outputs/X: no graph output named 'X' (outputs: Y)"));
  EXPECT_THAT([&] { (void)lower(g, parse_plan(R"({"outputs": {"Q": {"replicate": "all"}}})")); },
              ThrowsMessage<Error>(HasSubstr("/outputs/Q: no graph output named 'Q'")));
  // Kept by the rewrites for placement.
  EXPECT_EQ(lower(g, parse_plan(R"({"outputs": {"Y": {"replicate": "all"}}})")).plan.outputs,
            (std::map<std::string, OutputPlan>{{"Y", {.replicate = "all"}}}));
}

// nlohmann::json keeps the last of two equal keys; a plan must not lose a member that way.
// The error points at the second key, at any depth.
TEST(Plan, DuplicateKeysAreAnErrorWithTheirLocation) {
  const BadPlan cases[] = {
      {R"({"ops": {"Y": {"split": {"d0": 2}, "split": {"d0": 3}}}})",
       R"(plan.json:1:36: duplicate key "split")"},
      {"{\"ops\": {\"Y\": {\"split\": {\"d0\": 2}}},\n \"ops\": {}}",
       R"(plan.json:2:2: duplicate key "ops")"},
      {"{\"ops\": {\"Y\": {\"split\": {\"d0\": 2,\n    \"d0\": 2}}}}",
       R"(plan.json:2:5: duplicate key "d0")"},
      {R"({"ops": {"Y": {}, "Y": {}}})", R"(plan.json:1:19: duplicate key "Y")"},
      // An escaped quote inside the key: the location is still the key's opening quote.
      {R"({"ops": {"a\"b": {}, "a\"b": {}}})", R"(plan.json:1:22: duplicate key "a"b")"},
      {R"({"fuse": [["a", "b"]], "fuse": "auto"})", R"(plan.json:1:24: duplicate key "fuse")"},
  };
  for (const BadPlan& c : cases) {
    EXPECT_THAT([&] { (void)parse_plan(c.text, "plan.json"); },
                ThrowsMessage<Error>(HasSubstr(c.expected)))
        << c.text;
  }
  // Equal keys in different objects are fine.
  EXPECT_EQ(
      parse_plan(R"({"ops": {"A": {"split": {"d0": 2}}, "B": {"split": {"d0": 2}}}})").ops.size(),
      2u);
}

TEST(Plan, CheckRejectsASubstitutionOfAnotherKernel) {
  ir::Graph g = testing::build(kLinearRelu);
  EXPECT_THAT(testing::formatted(check_plan(
                  parse_plan(R"({"ops": {"Y": {"substitute": ["decompose-linear"]}}})"), g)),
              ::testing::ElementsAre(HasSubstr("/ops/Y/substitute/0: decompose-linear rewrites a "
                                               "linear, but operation 'Y' is a relu")));
  EXPECT_THAT(
      check_plan(parse_plan(R"({"ops": {"Y/linear": {"substitute": ["decompose-linear"]}}})"), g),
      ::testing::IsEmpty());
}

// A plan may name an operation by its key; lowering then finds it under its label (the entry
// was silently ignored before). Two entries for one operation are an error.
TEST(Plan, AnOperationNamedByKeyIsTheSameOperation) {
  ir::Graph g = testing::build(kLinearRelu);
  const std::string key(g.key(*find_operation(g, "Y/linear")));
  const Plan by_key = parse_plan(R"({"ops": {")" + key + R"(": {"split": {"batch": 4}}}})");
  EXPECT_THAT(check_plan(by_key, g), ::testing::IsEmpty());
  EXPECT_EQ(resolve_plan_names(by_key, g).split_of("Y/linear", "batch"), 4);
  LowerResult r = lower(g, by_key);
  EXPECT_EQ(r.graph.applications_of(*find_operation(r.graph, "Y/linear")).size(), 4u);

  const Plan twice = parse_plan(R"({"ops": {"Y/linear": {"split": {"out": 2}}, ")" + key +
                                R"(": {"split": {"batch": 4}}}})");
  EXPECT_THAT(testing::formatted(check_plan(twice, g)),
              ::testing::ElementsAre(HasSubstr("names operation 'Y/linear' again")));
}

// OperationFinder (the index resolve_plan_names and check_plan use) answers as find_operation:
// a label of one operation, nothing for a label two carry, else a key.
TEST(Plan, OperationFinderAnswersAsFindOperation) {
  ir::Graph g = testing::build(kLinearRelu);
  const ir::OperationId linear = *find_operation(g, "Y/linear");
  const ir::OperationId relu = *find_operation(g, "Y");
  const std::string relu_key(g.key(relu));
  g.set_label(linear, "twin");
  g.set_label(relu, "twin");
  const OperationFinder finder(g);
  for (const std::string& name :
       std::vector<std::string>{"twin", "Y", "Y/linear", "nothing", "", relu_key}) {
    EXPECT_EQ(finder.find(name), find_operation(g, name)) << name;
  }
  EXPECT_EQ(finder.find("twin"), std::nullopt);
  EXPECT_EQ(finder.find(relu_key), relu);
  EXPECT_THAT(
      testing::formatted(check_plan(parse_plan(R"({"ops": {"twin": {"split": {"d0": 2}}}})"), g)),
      ::testing::ElementsAre(
          HasSubstr("operation name 'twin' is ambiguous (2 operations carry that label)")));
  g.set_label(linear, "Y/linear");
  const OperationFinder after(g);
  EXPECT_EQ(after.find("twin"), relu);
  EXPECT_EQ(after.find("Y/linear"), linear);
}

}  // namespace
}  // namespace tapestry::rewrite
