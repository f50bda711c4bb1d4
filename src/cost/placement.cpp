// place(): applications onto devices, transfers from box intersections (placement.h).
//
// 1. Operations in topological order; each operation's applications get grid coordinates (the
//    rank of their box start among the distinct starts along each index dim) and a device.
// 2. Every box an application reads and writes goes to the PlacementBuilder (placement_builder.h),
//    which derives local producers, transfers and resident inputs — the part place() shares with
//    Evaluator, which computes the same boxes without building Applications.
// annotate_placement and check_devices: the placement as Placement tags on the Applications.
#include "tapestry/cost/placement.h"

#include <algorithm>

#include <fmt/format.h>

#include "placement_builder.h"
#include "tapestry/cost/work_rule.h"
#include "tapestry/ir/type_names.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/json.h"

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
  const std::vector<detail::ReplicatedOutput> replicated =
      detail::replicated_outputs(plan, graph, target);
  builder.start(p, replicated);
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
    std::optional<detail::Colocated> colocated;
    std::vector<std::string> with_index_names;
    if (op_plan != nullptr && op_plan->colocate) {
      if (const auto with = rewrite::find_operation(graph, op_plan->colocate->with)) {
        with_index_names = graph.operation(*with).index_names();
        colocated = builder.colocated(*op_plan->colocate, with_index_names);
      }
    }
    detail::assign_devices(
        builder.operation(), view.index_names(), grid,
        op_plan ? std::span<const std::string>(op_plan->place) : std::span<const std::string>(),
        op_plan ? &op_plan->mesh : nullptr, colocated ? &*colocated : nullptr, target, devices);
    const bool pinned = op_plan != nullptr && (!op_plan->place.empty() || !op_plan->mesh.empty());
    for (std::size_t i = 0; i < apps.size(); ++i) {
      const ir::ApplicationView app = graph.application(apps[i]);
      for (const auto& e : app.inputs().entries())
        builder.add_input(e.value.tensor.index(), e.value.range);
      for (const auto& e : app.outputs().entries())
        builder.add_output(e.value.tensor.index(), e.value.range);
      if (i == 0) {
        if (const std::optional<zspace::Range> box = app.ipf_index()) {
          builder.operation().kernels = kernel_shares(rule, *box);
        }
      }
      builder.add_application(apps[i], devices[i], application_work(graph, apps[i], rule), pinned);
    }
  }
  builder.connect();
  return p;
}

void annotate_placement(ir::Graph& graph, const Placement& placement, const Target& target) {
  const auto name = [&](std::uint32_t d) {
    return d == kHost ? std::string("host") : target.devices[d].name;
  };
  for (const PlacedApplication& app : placement.applications) {
    nlohmann::json receives = nlohmann::json::array();
    for (std::uint32_t t : app.incoming) {
      const Transfer& tr = placement.transfers[t];
      receives.push_back({{"tensorId", std::string(graph.key(tr.tensor))},
                          {"range", zspace::to_json(tr.box)},
                          {"from", name(tr.from)}});
    }
    nlohmann::json tag = {{"device", name(app.device)}};
    if (!receives.empty()) tag["receives"] = std::move(receives);
    graph.set_other_tag(app.id, std::string(ir::kPlacementTagUrl), std::move(tag));
  }
}

std::vector<std::string> check_devices(const ir::Graph& graph, const Target& target) {
  std::vector<std::string> problems;
  const auto known = [&](const nlohmann::json& device) {
    return device.is_string() && target.find_device(device.get<std::string>()).has_value();
  };
  for (ir::ApplicationId app : graph.applications()) {
    const nlohmann::json& tags = graph.node(app).other_tags();
    if (!tags.is_object() || !tags.contains(std::string(ir::kPlacementTagUrl))) continue;
    const nlohmann::json& tag = tags[std::string(ir::kPlacementTagUrl)];
    if (!tag.is_object()) continue;
    if (tag.contains("device") && !known(tag["device"])) {
      problems.push_back(fmt::format(
          "application {} is placed on {}, which target '{}' lacks "
          "(it has {})",
          graph.key(app), tag["device"].dump(), target.name, detail::device_list(target)));
    }
    if (!tag.contains("receives") || !tag["receives"].is_array()) continue;
    for (const nlohmann::json& r : tag["receives"]) {
      if (!r.is_object() || !r.contains("from")) continue;
      if (r["from"] == "host" ? !target.host.has_value() : !known(r["from"])) {
        problems.push_back(fmt::format("application {} receives from {}, which target '{}' lacks",
                                       graph.key(app), r["from"].dump(), target.name));
      }
    }
  }
  return problems;
}

}  // namespace tapestry::cost
