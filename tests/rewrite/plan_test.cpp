#include "tapestry/rewrite/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rewrite/rewrite_testing.h"
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
      check_plan(parse_plan(R"({"ops": {"Z": {"split": {"batch": 2}},
                              "Y/linear": {"split": {"rows": 2, "out": 33}, "substitute": ["magic"]}},
                     "fuse": [["Y/linear", "Q"]]})"),
                 g);
  EXPECT_THAT(
      problems,
      ::testing::UnorderedElementsAre(
          HasSubstr("/ops/Z: no operation named 'Z' (operations: Y/linear, Y)"),
          HasSubstr("/ops/Y~1linear/split/rows: operation 'Y/linear' has no index dimension 'rows' "
                    "(it has: batch, out, in)"),
          HasSubstr(
              "/ops/Y~1linear/split/out: cannot cut dimension 'out' of extent 32 into 33 shards"),
          HasSubstr("unknown substitution 'magic'"),
          HasSubstr("/fuse/0/1: no operation named 'Q'")));
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
  EXPECT_THAT(check_plan(parse_plan(R"({"ops": {"Y": {"substitute": ["decompose-linear"]}}})"), g),
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
  EXPECT_THAT(check_plan(twice, g),
              ::testing::ElementsAre(HasSubstr("names operation 'Y/linear' again")));
}

}  // namespace
}  // namespace tapestry::rewrite
