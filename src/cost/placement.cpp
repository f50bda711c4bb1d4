// place(): applications onto devices, transfers from box intersections (placement.h).
//
// 1. Operations in topological order; each operation's applications get grid coordinates (the
//    rank of their box start among the distinct starts along each index dim) and a device.
// 2. Every box an application writes is listed per tensor and indexed (zspace::BoxIndex).
// 3. For every box an application reads: the writers it overlaps on the same device become local
//    producers; those on other devices become transfers of the intersection, one per (writer,
//    destination device, box). Graph inputs are resident (or loaded from the host); graph outputs
//    stay (or are gathered to the host).
#include "tapestry/cost/placement.h"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tapestry/cost/work_rule.h"
#include "tapestry/ir/type_names.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/box_index.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/json.h"

namespace tapestry::cost {

namespace {

std::string escape_pointer(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string device_list(const Target& target) {
  if (target.devices.size() <= 4) {
    std::vector<std::string_view> names;
    for (const Device& d : target.devices) names.push_back(d.name);
    return fmt::format("{}", fmt::join(names, ", "));
  }
  return fmt::format("{} … {}", target.devices.front().name, target.devices.back().name);
}

// Grid coordinates of each application of one operation, and the grid's extent per dim.
struct Grid {
  std::vector<std::vector<std::int64_t>> coordinates;  // per application, per index dim
  std::vector<std::int64_t> counts;                    // shards per index dim
};

Grid grid_of(const ir::Graph& graph, std::span<const ir::ApplicationId> apps, std::size_t rank) {
  Grid grid;
  grid.counts.assign(rank, 1);
  grid.coordinates.assign(apps.size(), std::vector<std::int64_t>(rank, 0));
  for (std::size_t d = 0; d < rank; ++d) {
    std::vector<std::int64_t> starts;
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
      grid.coordinates[i][d] =
          std::lower_bound(starts.begin(), starts.end(), corners->start[d]) - starts.begin();
    }
  }
  return grid;
}

// The device of every application of `placed`, by the plan's place/mesh or the default; fills
// its grid and mesh axes.
std::vector<std::uint32_t> devices_of(const ir::Graph& graph, PlacedOperation& placed,
                                      std::span<const ir::ApplicationId> apps,
                                      const rewrite::Plan& plan, const Target& target) {
  const std::string& name = placed.name;
  ir::OperationView view = graph.operation(placed.id);
  const std::size_t rank = view.index_rank();
  const Grid grid = grid_of(graph, apps, rank);
  placed.grid = grid.counts;
  placed.mesh_axis.assign(rank, "");
  const auto linear = [&](std::size_t i) {
    std::int64_t at = 0;
    for (std::size_t d = 0; d < rank; ++d) at = at * grid.counts[d] + grid.coordinates[i][d];
    return static_cast<std::size_t>(at);
  };
  const std::string path = "/ops/" + escape_pointer(name);
  std::vector<std::uint32_t> devices(apps.size(), 0);
  auto entry = plan.ops.find(name);
  if (entry != plan.ops.end() && !entry->second.place.empty()) {
    std::vector<std::uint32_t> listed;
    for (std::size_t k = 0; k < entry->second.place.size(); ++k) {
      const std::string& device = entry->second.place[k];
      auto d = target.find_device(device);
      if (!d) {
        throw Error(fmt::format("{}/place/{}: target '{}' has no device '{}' (it has {})", path, k,
                                target.name, device, device_list(target)));
      }
      listed.push_back(static_cast<std::uint32_t>(*d));
    }
    for (std::size_t i = 0; i < apps.size(); ++i) {
      devices[i] = listed[linear(i) % listed.size()];
    }
    return devices;
  }
  if (entry != plan.ops.end() && !entry->second.mesh.empty()) {
    const std::vector<MeshAxis> axes = target.mesh_axes();
    std::vector<std::optional<std::size_t>> dim_of_axis(axes.size());
    for (const auto& mapping : entry->second.mesh) {
      // Named, not structured bindings: clang 14 (the fuzz preset) cannot capture those.
      const std::string& dim = mapping.first;
      const std::string& axis = mapping.second;
      const std::string at = fmt::format("{}/mesh/{}", path, escape_pointer(dim));
      auto a =
          std::find_if(axes.begin(), axes.end(), [&](const MeshAxis& m) { return m.name == axis; });
      if (a == axes.end()) {
        std::vector<std::string_view> names;
        for (const MeshAxis& m : axes) names.push_back(m.name);
        throw Error(fmt::format("{}: target '{}' has no mesh axis '{}' (its mesh: {})", at,
                                target.name, axis, fmt::join(names, ", ")));
      }
      auto d = view.index_dim(dim);
      if (!d) {
        throw Error(fmt::format("{}: operation '{}' has no index dimension '{}' (it has: {})", at,
                                name, dim, fmt::join(view.index_names(), ", ")));
      }
      dim_of_axis[static_cast<std::size_t>(a - axes.begin())] = *d;
      placed.mesh_axis[*d] = axis;
    }
    std::vector<std::int64_t> coordinate(axes.size(), 0);
    for (std::size_t i = 0; i < apps.size(); ++i) {
      for (std::size_t a = 0; a < axes.size(); ++a) {
        coordinate[a] = dim_of_axis[a] ? grid.coordinates[i][*dim_of_axis[a]] % axes[a].size : 0;
      }
      devices[i] = static_cast<std::uint32_t>(target.device_at(coordinate));
    }
    return devices;
  }
  for (std::size_t i = 0; i < apps.size(); ++i) {
    devices[i] = static_cast<std::uint32_t>(linear(i) % target.devices.size());
  }
  return devices;
}

// The boxes one tensor's applications write, indexed once all are known.
struct Writers {
  std::vector<zspace::Range> boxes;
  std::vector<std::uint32_t> apps;  // positions in Placement::applications
  std::unique_ptr<zspace::BoxIndex> index;
};

// A key for deduplicating transfers and resident boxes: who, where, which tensor, which cells.
std::vector<std::int64_t> box_key(std::uint32_t a, std::uint32_t b, ir::TensorId tensor,
                                  const zspace::Range& box) {
  std::vector<std::int64_t> key = {a, b, tensor.index()};
  for (std::size_t d = 0; d < box.rank(); ++d) {
    key.push_back(box.start()[d]);
    key.push_back(box.end()[d]);
  }
  return key;
}

std::int64_t element_bytes(const ir::Graph& graph, ir::TensorId tensor) {
  const std::optional<ir::DType> dtype = graph.tensor(tensor).dtype().known();
  if (!dtype) {
    throw Error(fmt::format("tensor '{}' has dtype '{}', which the cost model does not know",
                            graph.key(tensor), graph.tensor(tensor).dtype()));
  }
  return static_cast<std::int64_t>(ir::dtype_size_bytes(*dtype));
}

}  // namespace

Placement place(const ir::Graph& graph, const rewrite::Plan& plan, const Target& target) {
  TAPESTRY_ASSERT(!target.devices.empty(), "a target has devices");
  Placement p;
  p.resident_input_bytes.assign(target.devices.size(), 0);
  const ir::TopologicalOrder topo = graph.topological_order();
  if (!topo.cycle.empty()) throw Error("the graph has a cycle; it cannot be placed");

  // 1. Operations and their applications, in topological order.
  std::unordered_map<std::uint32_t, Writers> writers;  // by tensor node index
  for (ir::NodeId node : topo.order) {
    auto op = graph.as_operation(node);
    if (!op) continue;
    const std::span<const ir::ApplicationId> apps = graph.operation(*op).applications();
    PlacedOperation placed{.id = *op,
                           .name = rewrite::operation_name(graph, *op),
                           .kernel = graph.operation(*op).kernel(),
                           .applications = {},
                           .grid = {},
                           .mesh_axis = {}};
    const WorkRule rule = work_rule(graph, *op);
    const std::vector<std::uint32_t> devices = devices_of(graph, placed, apps, plan, target);
    auto entry = plan.ops.find(placed.name);
    const bool pinned =
        entry != plan.ops.end() && (!entry->second.place.empty() || !entry->second.mesh.empty());
    const auto op_position = static_cast<std::uint32_t>(p.operations.size());
    for (std::size_t i = 0; i < apps.size(); ++i) {
      const auto position = static_cast<std::uint32_t>(p.applications.size());
      placed.applications.push_back(position);
      p.applications.push_back(PlacedApplication{.id = apps[i],
                                                 .operation = op_position,
                                                 .device = devices[i],
                                                 .work = application_work(graph, apps[i], rule),
                                                 .local_producers = {},
                                                 .incoming = {},
                                                 .writes_output = false,
                                                 .pinned = pinned});
      // 2. What it writes.
      for (const auto& out : graph.application(apps[i]).outputs().entries()) {
        Writers& w = writers[out.value.tensor.index()];
        w.boxes.push_back(out.value.range);
        w.apps.push_back(position);
      }
    }
    p.operations.push_back(std::move(placed));
  }
  for (auto& [tensor, w] : writers) w.index = std::make_unique<zspace::BoxIndex>(w.boxes);
  for (ir::TensorId tensor : metakernel::graph_outputs(graph)) {
    auto w = writers.find(tensor.index());
    if (w == writers.end()) continue;
    for (std::uint32_t a : w->second.apps) p.applications[a].writes_output = true;
  }

  // 3. What each reads, and from where.
  std::map<std::vector<std::int64_t>, std::uint32_t> transfer_of;
  std::map<std::vector<std::int64_t>, bool> resident;
  std::vector<std::uint32_t> hits;
  const auto add_transfer = [&](std::uint32_t consumer, std::uint32_t producer, std::uint32_t from,
                                ir::TensorId tensor, const zspace::Range& box) {
    const std::uint32_t to = p.applications[consumer].device;
    auto [it, added] = transfer_of.emplace(box_key(producer, to, tensor, box),
                                           static_cast<std::uint32_t>(p.transfers.size()));
    if (added) {
      p.transfers.push_back(Transfer{.tensor = tensor,
                                     .box = box,
                                     .bytes = box.size() * element_bytes(graph, tensor),
                                     .from = from,
                                     .to = to,
                                     .producer = producer,
                                     .consumers = {}});
    }
    Transfer& t = p.transfers[it->second];
    if (t.consumers.empty() || t.consumers.back() != consumer) t.consumers.push_back(consumer);
    std::vector<std::uint32_t>& incoming = p.applications[consumer].incoming;
    if (std::find(incoming.begin(), incoming.end(), it->second) == incoming.end()) {
      incoming.push_back(it->second);
    }
  };
  for (std::uint32_t a = 0; a < p.applications.size(); ++a) {
    const std::uint32_t device = p.applications[a].device;
    for (const auto& in : graph.application(p.applications[a].id).inputs().entries()) {
      const ir::TensorId tensor = in.value.tensor;
      const zspace::Range& box = in.value.range;
      if (box.is_empty()) continue;
      auto w = writers.find(tensor.index());
      if (w == writers.end()) {  // a graph input
        if (target.inputs == Residence::kHost) {
          add_transfer(a, kHost, kHost, tensor, box);
        } else if (resident.emplace(box_key(device, 0, tensor, box), true).second) {
          p.resident_input_bytes[device] += box.size() * element_bytes(graph, tensor);
        }
        continue;
      }
      hits.clear();
      w->second.index->append_overlapping(box, hits);
      std::sort(hits.begin(), hits.end());
      hits.erase(std::unique(hits.begin(), hits.end()), hits.end());
      for (std::uint32_t h : hits) {
        const std::uint32_t producer = w->second.apps[h];
        const std::uint32_t from = p.applications[producer].device;
        if (from == device) {
          p.applications[a].local_producers.push_back(producer);
        } else {
          add_transfer(a, producer, from, tensor, *box.intersect(w->second.boxes[h]));
        }
      }
    }
    std::vector<std::uint32_t>& local = p.applications[a].local_producers;
    std::sort(local.begin(), local.end());
    local.erase(std::unique(local.begin(), local.end()), local.end());
  }
  if (target.outputs == Residence::kHost) {
    for (ir::TensorId tensor : metakernel::graph_outputs(graph)) {
      auto w = writers.find(tensor.index());
      if (w == writers.end()) continue;
      for (std::size_t k = 0; k < w->second.boxes.size(); ++k) {
        const std::uint32_t producer = w->second.apps[k];
        p.transfers.push_back(
            Transfer{.tensor = tensor,
                     .box = w->second.boxes[k],
                     .bytes = w->second.boxes[k].size() * element_bytes(graph, tensor),
                     .from = p.applications[producer].device,
                     .to = kHost,
                     .producer = producer,
                     .consumers = {}});
      }
    }
  }
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
      problems.push_back(
          fmt::format("application {} is placed on {}, which target '{}' lacks "
                      "(it has {})",
                      graph.key(app), tag["device"].dump(), target.name, device_list(target)));
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
