#include "tapestry/rewrite/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rewrite/rewrite_testing.h"
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

}  // namespace
}  // namespace tapestry::rewrite
