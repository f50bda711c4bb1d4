// place(): applications onto devices, transfers from box intersections (placement.h).
//
// 1. Operations in topological order; each operation's applications get grid coordinates (the
//    rank of their box start among the distinct starts along each index dim) and a device.
// 2. Every box an application reads and writes goes to the PlacementBuilder (placement_builder.h),
//    which derives local producers, transfers and resident inputs — the part place() shares with
//    Evaluator, which computes the same boxes without building Applications.
#include "tapestry/cost/placement.h"

#include <algorithm>

#include "placement_builder.h"
#include "tapestry/cost/work_rule.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"

namespace tapestry::cost {

namespace {

using detail::PlacementBuilder;
using detail::ShardGrid;
using detail::TensorFacts;

// The grid of an operation's applications: along each index dim, the rank of an application's
// box start among the distinct starts.
ShardGrid grid_of(const ir::Graph& graph, std::span<const ir::ApplicationId> apps,
                  std::size_t rank) {
  ShardGrid grid;
  grid.rank = rank;
  grid.shards = apps.size();
  grid.counts.assign(rank, 1);
  grid.coordinates.assign(apps.size() * rank, 0);
  std::vector<std::int64_t> starts;
  for (std::size_t d = 0; d < rank; ++d) {
    starts.clear();
    for (ir::ApplicationId app : apps) {
      if (const auto corners = graph.application(app).ipf_index_corners()) {
        starts.push_back(corners->start[d]);
      }
    }
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    grid.counts[d] = std::max<std::int64_t>(1, static_cast<std::int64_t>(starts.size()));
    const bool pinned = op_plan != nullptr && (!op_plan->place.empty() || !op_plan->mesh.empty());
    for (std::size_t i = 0; i < apps.size(); ++i) {
      const auto corners = graph.application(apps[i]).ipf_index_corners();
      if (!corners) continue;
      grid.coordinates[i * rank + d] =
          std::lower_bound(starts.begin(), starts.end(), corners->start[d]) - starts.begin();
    }
  }
  return grid;
}

}  // namespace

Placement place(const ir::Graph& graph, const rewrite::Plan& plan, const Target& target) {
  TAPESTRY_ASSERT(!target.devices.empty(), "a target has devices");
  const ir::TopologicalOrder topo = graph.topological_order();
  if (!topo.cycle.empty()) throw Error("the graph has a cycle; it cannot be placed");
  const TensorFacts facts = TensorFacts::of(graph);
  Placement p;
  PlacementBuilder builder(facts, target);
  builder.start(p);
  std::vector<std::uint32_t> devices;
  for (ir::NodeId node : topo.order) {
    auto op = graph.as_operation(node);
    if (!op) continue;
    const ir::OperationView view = graph.operation(*op);
    const std::span<const ir::ApplicationId> apps = view.applications();
    const std::string name = rewrite::operation_name(graph, *op);
    builder.add_operation(*op, name, view.kernel());
    const WorkRule rule = work_rule(graph, *op);
    const ShardGrid grid = grid_of(graph, apps, view.index_rank());
    auto entry = plan.ops.find(name);
    const rewrite::OpPlan* op_plan = entry == plan.ops.end() ? nullptr : &entry->second;
    detail::assign_devices(
        builder.operation(), view.index_names(), grid,
        op_plan ? std::span<const std::string>(op_plan->place) : std::span<const std::string>(),
        op_plan ? &op_plan->mesh : nullptr, target, devices);
    const bool pinned = op_plan != nullptr && (!op_plan->place.empty() || !op_plan->mesh.empty());
    for (std::size_t i = 0; i < apps.size(); ++i) {
      const ir::ApplicationView app = graph.application(apps[i]);
      for (const auto& e : app.inputs().entries())
        builder.add_input(e.value.tensor.index(), e.value.range);
      for (const auto& e : app.outputs().entries())
        builder.add_output(e.value.tensor.index(), e.value.range);
      builder.add_application(apps[i], devices[i], application_work(graph, apps[i], rule), pinned);
    }
  }
  builder.connect();
  return p;
}

}  // namespace tapestry::cost
