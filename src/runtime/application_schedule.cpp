// Scheduling applications by box intersection.
//
// 1. Collect, per tensor, the boxes applications write, and index them (box_index.h: a bucket
//    grid, so the whole schedule is O(n + dependencies), not O(n²)); two intersecting writes
//    are an error.
// 2. An application depends on every writer of a box intersecting one it reads, and on every
//    writer of a tensor its operation starts after (ir/ordering.h: a recomputed operation).
// 3. Kahn's algorithm with a min-heap gives a topological order, ties in graph order; what is
//    left unordered lies on a cycle.
#include "tapestry/runtime/application_schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <queue>

#include <fmt/format.h>

#include "run_support.h"
#include "tapestry/ir/ordering.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/zspace/box_index.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

// The boxes written to one tensor, by which application, with an index over them.
struct TensorWrites {
  std::vector<std::uint32_t> application;
  std::vector<Range> box;
  std::unique_ptr<zspace::BoxIndex> index;  // built once every write is collected
};
using WritesByTensor = std::map<ir::TensorId, TensorWrites>;

WritesByTensor collect_writes(const ir::Graph& graph, const ApplicationSchedule& s) {
  WritesByTensor writes;
  for (std::uint32_t i = 0; i < s.applications.size(); ++i) {
    for (const auto& entry : graph.application(s.applications[i]).outputs().entries()) {
      const ir::TensorSelection sel = entry.value;  // SelectionMap entries are values
      if (sel.range.is_empty()) continue;
      TensorWrites& list = writes[sel.tensor];
      list.application.push_back(i);
      list.box.push_back(sel.range);
    }
  }
  for (auto& [tensor, list] : writes) {
    list.index = std::make_unique<zspace::BoxIndex>(list.box);
    if (auto clash = list.index->first_overlap()) {
      const auto [a, b] = *clash;
      throw Error(
          fmt::format("applications '{}' and '{}' both write cells of tensor '{}' ({} and {})",
                      graph.display_name(s.applications[list.application[a]]),
                      graph.display_name(s.applications[list.application[b]]),
                      tensor_name(graph, tensor), list.box[a], list.box[b]));
    }
  }
  return writes;
}

std::vector<std::uint32_t> reads_from(const ir::Graph& graph, ir::ApplicationId app,
                                      const WritesByTensor& writes,
                                      std::vector<std::uint32_t>& scratch) {
  std::vector<std::uint32_t> deps;
  for (const auto& entry : graph.application(app).inputs().entries()) {
    auto it = writes.find(entry.value.tensor);
    if (it == writes.end()) continue;
    scratch.clear();
    it->second.index->append_overlapping(entry.value.range, scratch);
    for (std::uint32_t w : scratch) deps.push_back(it->second.application[w]);
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  return deps;
}

[[noreturn]] void throw_cycle(const ir::Graph& graph, const ApplicationSchedule& s,
                              const std::vector<std::uint32_t>& waiting) {
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < s.applications.size(); ++i) {
    if (waiting[i] > 0) names.push_back(graph.display_name(s.applications[i]));
  }
  throw Error(
      fmt::format("applications depend on each other in a cycle: {}", fmt::join(names, ", ")));
}

std::vector<std::uint32_t> order_by_dependencies(const ir::Graph& graph,
                                                 const ApplicationSchedule& s) {
  const std::size_t n = s.applications.size();
  std::vector<std::uint32_t> waiting(n, 0);
  std::vector<std::vector<std::uint32_t>> dependents(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    waiting[i] = static_cast<std::uint32_t>(s.depends_on[i].size());
    for (std::uint32_t d : s.depends_on[i]) dependents[d].push_back(i);
  }
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> ready;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<std::uint32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const std::uint32_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (std::uint32_t next : dependents[i]) {
      if (--waiting[next] == 0) ready.push(next);
    }
  }
  if (order.size() != n) throw_cycle(graph, s, waiting);
  return order;
}

}  // namespace

ApplicationSchedule schedule_applications(const ir::Graph& graph) {
  ApplicationSchedule s;
  s.applications.assign(graph.applications().begin(), graph.applications().end());
  const WritesByTensor writes = collect_writes(graph, s);
  s.depends_on.reserve(s.applications.size());
  std::vector<std::uint32_t> scratch;
  std::vector<std::uint32_t> position;  // by node index: the application's place in s
  for (ir::ApplicationId app : s.applications) {
    s.depends_on.push_back(reads_from(graph, app, writes, scratch));
    // Ordering edges (ir/ordering.h): every writer of a tensor the operation starts after, and
    // the applications the application itself starts after (a pipeline schedule).
    const std::vector<ir::TensorId> after = ir::after(graph, graph.application(app).operation());
    const std::vector<ir::ApplicationId> apps_after = ir::application_after(graph, app);
    if (after.empty() && apps_after.empty()) continue;
    std::vector<std::uint32_t>& deps = s.depends_on.back();
    if (!apps_after.empty() && position.empty()) {
      position.assign(graph.size(), 0);
      for (std::uint32_t i = 0; i < s.applications.size(); ++i)
        position[s.applications[i].index()] = i;
    }
    for (ir::ApplicationId a : apps_after) deps.push_back(position[a.index()]);
    for (ir::TensorId t : after) {
      auto it = writes.find(t);
      if (it != writes.end()) {
        deps.insert(deps.end(), it->second.application.begin(), it->second.application.end());
      }
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  }
  s.order = order_by_dependencies(graph, s);
  return s;
}

}  // namespace tapestry::runtime
