// Property: for random graphs built from the built-ins and random plans (splits on every dim,
// reduction dims included, uneven counts, random fusion), the lowered graph validates and
// computes what the naive executor computes — bitwise without a reduction split, within the
// documented bound with one. A failure prints the .tap program and the plan JSON.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <fmt/core.h>

#include "rewrite/rewrite_testing.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/support/error.h"

namespace tapestry::rewrite {
namespace {

struct Case {
  std::string tap;
  std::string plan;
};

// A random chain: Y = act2(add?(act1(linear(X, W, b)), R)) over small odd shapes; X may start at
// negative coordinates.
rc::Gen<Case> gen_case() {
  return rc::gen::exec([] {
    const int batch = *rc::gen::inRange(1, 7);
    const int in = *rc::gen::inRange(1, 9);
    const int out = *rc::gen::inRange(1, 7);
    const int x0 = *rc::gen::inRange(-5, 3);
    const int x1 = *rc::gen::inRange(-3, 4);
    const std::string act1 = *rc::gen::element<std::string>("relu", "neg", "tanh", "exp");
    const std::string act2 = *rc::gen::element<std::string>("relu", "sigmoid", "neg");
    const bool residual = *rc::gen::arbitrary<bool>();
    std::string tap = fmt::format("X: f32[{}:{}, {}:{}]\nW: f32[{}, {}]\nb: f32[{}]\n", x0,
                                  x0 + batch, x1, x1 + in, out, in, out);
    if (residual) tap += fmt::format("R: f32[{}, {}]\n", batch, out);
    tap += fmt::format("H = {}(linear(X, W, b))\n", act1);
    tap += residual ? fmt::format("Y = {}(add(H, R))\n", act2) : fmt::format("Y = {}(H)\n", act2);
    tap += "output Y\n";

    const auto count = [](int extent) { return *rc::gen::inRange(1, extent + 1); };
    std::string plan =
        fmt::format(R"({{"ops": {{"H/linear": {{"split": {{"batch": {}, "out": {}, "in": {}}}}},
                                       "H": {{"split": {{"d0": {}}}}}, "Y": {{"split": {{"d1": {}}}}}}}}})",
                    count(batch), count(out), count(in), count(batch), count(out));
    const int fuse = *rc::gen::inRange(0, 3);
    if (fuse == 1) plan.insert(plan.size() - 1, R"(, "fuse": "auto")");
    if (fuse == 2) plan.insert(plan.size() - 1, R"(, "fuse": [["H/linear", "H"]])");
    return Case{tap, plan};
  });
}

RC_GTEST_PROP(LowerProperties, ShardedEqualsNaive, ()) {
  const Case c = *gen_case();
  RC_TAG(c.plan.find("\"in\": 1") == std::string::npos ? "reduction split" : "no reduction split");
  const auto reproducer = [&](const std::string& what) {
    return fmt::format("reproducer:\n--- graph.tap\n{}--- plan.json\n{}\n--- {}", c.tap, c.plan,
                       what);
  };
  try {
    ir::Graph g = testing::build(c.tap);
    LowerResult r = lower(g, parse_plan(c.plan));
    bool reduction_split = false;
    for (const RewriteEvent& e : r.log)
      reduction_split |= e.applied && e.pattern == "split-reduction";
    runtime::TensorsComparison cmp = testing::run_both(g, r.graph);
    const bool ok = reduction_split ? cmp.all_within(1e-5, 1e-4) : cmp.all_bitwise_equal();
    if (!ok) RC_FAIL(reproducer("result\n" + cmp.summary()));
  } catch (const Error& e) {
    RC_FAIL(reproducer(std::string("error\n") + e.what()));
  }
}

}  // namespace
}  // namespace tapestry::rewrite
