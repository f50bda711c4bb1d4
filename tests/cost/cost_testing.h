// Helpers for the cost tests: targets written in code (so each test states the constants it
// relies on), and lowering a .tap program under a plan.
#pragma once

#include <string>
#include <string_view>

#include <rapidcheck.h>

#include <memory>
#include <optional>

#include "rewrite/random_plans.h"
#include "rewrite/rewrite_testing.h"
#include "tapestry/cost/placement.h"
#include "tapestry/cost/target.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/support/file.h"

namespace tapestry::cost::testing {

/// examples/NAME.tap, built.
inline ir::Graph example(std::string_view name) {
  return rewrite::testing::build(
      tapestry::read_file(std::string(TAPESTRY_EXAMPLES) + "/" + std::string(name) + ".tap"));
}

/// `nodes` nodes of `per_node` identical devices "gpu:i": 100 GFLOP/s f32 at efficiency 1, 1 GB/s
/// memory, no launch floor, 1 GiB each, 10 W idle and 110 W busy; links of 1 GB/s inside a node
/// and 0.1 GB/s between nodes, no latency unless given.
inline Target toy_target(std::size_t nodes = 1, std::size_t per_node = 2, double latency = 0) {
  Target t;
  t.name = "toy";
  DeviceType gpu;
  gpu.name = "toy-gpu";
  gpu.kind = "gpu";
  gpu.peak_flops = {{ir::DType::kFloat32, 100e9}};
  gpu.memory_bandwidth_Bps = 1e9;
  gpu.memory_bytes = std::int64_t{1} << 30;
  gpu.idle_w = 10;
  gpu.busy_w = 110;
  t.device_types = {gpu};
  for (std::size_t n = 0; n < nodes; ++n) {
    for (std::size_t i = 0; i < per_node; ++i) {
      const std::size_t index = t.devices.size();
      t.devices.push_back(Device{"gpu:" + std::to_string(index), 0, n, index});
    }
  }
  t.node_count = nodes;
  t.intra_node = Link{1e9, latency, false};
  if (nodes > 1) t.inter_node = Link{0.1e9, latency, false};
  t.host = Link{0.5e9, latency, false};
  return t;
}

/// Builds `tap`, lowers it under `plan_json` (validation on) and returns the result.
inline rewrite::LowerResult lower_tap(std::string_view tap, std::string_view plan_json) {
  ir::Graph g = rewrite::testing::build(tap);
  const rewrite::LowerOptions options;
  return rewrite::lower(g, rewrite::parse_plan(plan_json), options);
}

/// Places `tap` lowered under `plan_json` on `target`.
inline Placement place_tap(std::string_view tap, std::string_view plan_json, const Target& target,
                           rewrite::LowerResult* lowered = nullptr) {
  rewrite::LowerResult r = lower_tap(tap, plan_json);
  Placement p = place(r.graph, r.plan, target);
  if (lowered != nullptr) *lowered = std::move(r);
  return p;
}

/// A random program (at most `max_ops` operations) lowered under a random plan, for the property
/// tests; discards the case when the program does not build or the plan is refused.
inline rewrite::LowerResult random_lowered(int max_ops) {
  const std::string tap = *rewrite::testing::gen_tap_program(max_ops);
  std::optional<ir::Graph> built = rewrite::testing::try_build(tap);
  RC_PRE(built.has_value());
  // The plan generator outlives this call (rapidcheck re-runs it to shrink): it owns the graph.
  const auto g = std::make_shared<const ir::Graph>(std::move(*built));
  const std::string plan_text = *rc::gen::exec([g] { return rewrite::testing::random_plan(*g); });
  try {
    const rewrite::LowerOptions options;
    return rewrite::lower(*g, rewrite::parse_plan(plan_text), options);
  } catch (const Error&) {
    RC_DISCARD("a plan lowering refuses");
  }
}

}  // namespace tapestry::cost::testing
