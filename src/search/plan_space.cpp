#include "tapestry/search/plan_space.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "tapestry/cost/graph_roles.h"
#include "tapestry/cost/standard_plans.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/support/assert.h"

namespace tapestry::search {

namespace {

// The ports with the index dim each tensor dim follows, as the standard plans read them.
std::vector<PortDims> ports_of(const ir::SelectionMap& selections, const ir::IpfMap& ipfs) {
  std::vector<PortDims> ports;
  for (cost::PortRoles& port : cost::port_roles(selections, ipfs)) {
    ports.push_back({.tensor = port.tensor, .follows = std::move(port.follows)});
  }
  return ports;
}

bool is_graph_input(const ir::Graph& graph, ir::TensorId t) {
  return graph.producers(t).empty();
}

OperationInfo info_of(const ir::Graph& graph, ir::OperationId id) {
  const ir::OperationView view = graph.operation(id);
  OperationInfo info;
  info.name = rewrite::operation_name(graph, id);
  info.kernel = view.kernel();
  const std::optional<zspace::Range> index = view.ipf_index();
  const std::vector<std::string> names = view.index_names();
  for (std::size_t d = 0; d < view.index_rank(); ++d) {
    info.dims.push_back({.name = names[d],
                         .extent = index ? index->extent(d) : 1,
                         .reduction = view.reduction(d).has_value()});
  }
  if (const ir::IpfSignature* sig = view.ipf_signature()) {
    info.inputs = ports_of(view.inputs(), sig->inputs);
    info.outputs = ports_of(view.outputs(), sig->outputs);
  }
  if (!info.outputs.empty() && !info.outputs[0].follows.empty()) {
    const auto d = info.outputs[0].follows[0];
    if (d && !info.dims[*d].reduction) info.batch_dim = d;
  }
  // A weight: a graph input of rank >= 2 that does not depend on the batch dim.
  for (const PortDims& port : info.inputs) {
    if (port.follows.size() < 2 || !is_graph_input(graph, port.tensor)) continue;
    if (info.batch_dim &&
        std::find(port.follows.begin(), port.follows.end(), info.batch_dim) != port.follows.end()) {
      continue;
    }
    for (const auto& d : port.follows) {
      if (d && !info.dims[*d].reduction && !info.weight_dim) info.weight_dim = d;
    }
  }
  // Every linear, a vector x included (decompose-linear reshapes it to one row).
  info.decomposable = info.kernel == "linear" && !view.inputs().list("x").empty();
  return info;
}

// What operations of one kind share, besides their name pattern.
std::string kind_key(const ir::Graph& graph, ir::OperationId id, const OperationInfo& info) {
  std::string dims;
  for (const DimInfo& d : info.dims) {
    dims += fmt::format("{}:{}{},", d.name, d.extent, d.reduction ? "r" : "");
  }
  return fmt::format("{}|{}|{}|{}", name_pattern(info.name), info.kernel, dims,
                     graph.operation(id).params().dump());
}

}  // namespace

std::string name_pattern(std::string_view name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(name[i]))) {
      out += '#';
      while (i + 1 < name.size() && std::isdigit(static_cast<unsigned char>(name[i + 1]))) ++i;
    } else {
      out += name[i];
    }
  }
  return out;
}

PlanSpace::PlanSpace(const ir::Graph& graph, const cost::Target& target, bool tie_layers)
    : device_count_(static_cast<std::int64_t>(target.devices.size())),
      mesh_axes_(target.mesh_axes()),
      tie_layers_(tie_layers) {
  for (const cost::Device& d : target.devices) device_names_.push_back(d.name);
  const ir::TopologicalOrder order = graph.topological_order();
  TAPESTRY_ASSERT(order.cycle.empty(), "the search needs an acyclic graph");
  std::map<ir::OperationId, std::size_t> position;
  std::map<std::string, std::size_t> kind_of_key;
  for (ir::NodeId node : order.order) {
    const std::optional<ir::OperationId> op = graph.as_operation(node);
    if (!op) continue;
    OperationInfo info = info_of(graph, *op);
    const std::string key = tie_layers ? kind_key(graph, *op, info) : info.name;
    auto [it, added] = kind_of_key.emplace(key, kinds_.size());
    if (added) {
      kinds_.emplace_back();
      representatives_.push_back(operations_.size());
    }
    info.kind = it->second;
    kinds_[info.kind].push_back(operations_.size());
    position.emplace(*op, operations_.size());
    operations_.push_back(std::move(info));
  }
  out_edges_.resize(operations_.size());
  in_edges_.resize(operations_.size());
  for (std::size_t c = 0; c < operations_.size(); ++c) {
    for (std::size_t i = 0; i < operations_[c].inputs.size(); ++i) {
      const ir::TensorId t = operations_[c].inputs[i].tensor;
      for (ir::OperationId producer : graph.producers(t)) {
        const std::size_t p = position.at(producer);
        for (std::size_t o = 0; o < operations_[p].outputs.size(); ++o) {
          if (operations_[p].outputs[o].tensor != t) continue;
          out_edges_[p].push_back(edges_.size());
          in_edges_[c].push_back(edges_.size());
          edges_.push_back({.producer = p, .output = o, .consumer = c, .input = i});
        }
      }
    }
  }
  build_training(graph, target);
}

void PlanSpace::build_training(const ir::Graph& graph, const cost::Target& target) {
  const cost::TrainingRoles roles = cost::training_roles(graph);
  if (roles.parameters.empty()) return;
  TrainingSpace& t = training_;
  t.parameters = roles.parameters;
  std::int64_t rows = 0;
  for (std::int64_t r : roles.parameter_rows) rows = std::gcd(rows, r);
  std::set<std::int64_t> shards;
  for (std::int64_t c = 2; c <= device_count_; c *= 2) shards.insert(c);
  shards.insert(device_count_);
  for (const cost::MeshAxis& axis : mesh_axes_) shards.insert(axis.size);
  for (std::int64_t c : shards) {
    if (c >= 2 && c <= device_count_ && rows % c == 0) t.zero_shards.push_back(c);
  }
  // Representatives, by name.
  const auto representatives_of = [&](const std::vector<std::string>& names) {
    std::vector<std::string> out;
    std::set<std::size_t> taken;
    for (const std::string& name : names) {
      const std::optional<std::size_t> op = find(name);
      if (op && taken.insert(representative(*op)).second) {
        out.push_back(operations_[representative(*op)].name);
      }
    }
    return out;
  };
  t.full = representatives_of(roles.full);
  t.selective = representatives_of(roles.selective);
  for (const std::string& name : t.full) t.recomputable.push_back(*find(name));
  // Layers: the forward operations grouped by kind (always tied here), member i of a kind of the
  // largest size in layer i.
  std::set<std::string> forward(roles.forward.begin(), roles.forward.end());
  std::map<std::string, std::vector<std::size_t>> by_key;
  std::vector<std::string> keys;  // in the order of first members
  std::map<std::string, ir::OperationId> id_of;
  for (ir::OperationId id : graph.operations())
    id_of.emplace(rewrite::operation_name(graph, id), id);
  std::vector<std::string> key_of(operations_.size());
  for (std::size_t i = 0; i < operations_.size(); ++i) {
    if (!forward.contains(operations_[i].name)) continue;
    key_of[i] = kind_key(graph, id_of.at(operations_[i].name), operations_[i]);
    by_key[key_of[i]].push_back(i);
  }
  std::size_t depth = 0;
  for (const auto& [key, members] : by_key) depth = std::max(depth, members.size());
  if (depth >= 2) {
    t.layers.resize(depth);
    std::map<std::string, std::size_t> seen;
    for (std::size_t i = 0; i < operations_.size(); ++i) {
      if (key_of[i].empty()) continue;
      const std::size_t size = by_key[key_of[i]].size();
      const std::size_t member = seen[key_of[i]]++;
      if (size % depth == 0) t.layers[member / (size / depth)].push_back(operations_[i].name);
    }
  }
  std::int64_t batch = 0;
  for (std::size_t i = 0; i < operations_.size(); ++i) {
    const OperationInfo& info = operations_[i];
    if (key_of[i].empty() || !info.batch_dim) continue;
    batch = std::gcd(batch, info.dims[*info.batch_dim].extent);
  }
  for (std::int64_t m = 2; m <= std::min<std::int64_t>(batch, 64); ++m) {
    if (batch % m == 0) t.microbatches.push_back(m);
  }
  (void)target;
}

std::optional<std::size_t> PlanSpace::find(std::string_view name) const {
  for (std::size_t i = 0; i < operations_.size(); ++i) {
    if (operations_[i].name == name) return i;
  }
  return std::nullopt;
}

rewrite::Plan PlanSpace::expand(const rewrite::Plan& genome) const {
  if (!tie_layers_) return genome;
  rewrite::Plan plan = genome;
  if (!genome.recompute.empty()) {
    const std::set<std::string> named(genome.recompute.begin(), genome.recompute.end());
    plan.recompute.clear();
    for (const std::string& entry : genome.recompute) {
      if (entry.find('*') != std::string::npos) plan.recompute.push_back(entry);
    }
    for (std::size_t i = 0; i < operations_.size(); ++i) {
      if (named.contains(operations_[i].name) ||
          named.contains(operations_[representative(i)].name)) {
        plan.recompute.push_back(operations_[i].name);
      }
    }
  }
  for (const std::vector<std::size_t>& members : kinds_) {
    auto entry = genome.ops.find(operations_[members.front()].name);
    if (entry == genome.ops.end()) continue;
    for (std::size_t m = 1; m < members.size(); ++m) {
      plan.ops[operations_[members[m]].name] = entry->second;
    }
  }
  // Fusion pairs: the j-th member of the producer's kind with the j-th of the consumer's, when
  // the j-th consumer reads the j-th producer.
  plan.fuse.clear();
  for (const std::vector<std::string>& group : genome.fuse) {
    plan.fuse.push_back(group);
    if (group.size() != 2) continue;
    const auto p = find(group[0]);
    const auto c = find(group[1]);
    if (!p || !c) continue;
    const auto& producers = kinds_[operations_[*p].kind];
    const auto& consumers = kinds_[operations_[*c].kind];
    for (std::size_t j = 1; j < producers.size() && j < consumers.size(); ++j) {
      const bool linked =
          std::any_of(out_edges_[producers[j]].begin(), out_edges_[producers[j]].end(),
                      [&](std::size_t e) { return edges_[e].consumer == consumers[j]; });
      if (linked) {
        plan.fuse.push_back({operations_[producers[j]].name, operations_[consumers[j]].name});
      }
    }
  }
  return plan;
}

std::optional<ir::Graph> layer_prefix(const ir::Graph& graph, const PlanSpace& space, int layers) {
  TAPESTRY_ASSERT(space.tie_layers() && layers > 0, "layer_prefix needs tied layers");
  std::size_t depth = 0;
  for (const auto& kind : space.kinds()) depth = std::max(depth, kind.size());
  if (depth < 2 * static_cast<std::size_t>(layers)) return std::nullopt;
  std::map<std::string, ir::OperationId> by_name;
  for (ir::OperationId op : graph.operations()) {
    by_name.emplace(rewrite::operation_name(graph, op), op);
  }
  const auto& ops = space.operations();
  std::vector<bool> drop(ops.size(), false);
  std::vector<std::size_t> member(ops.size(), 0);
  for (const auto& kind : space.kinds()) {
    for (std::size_t i = 0; i < kind.size(); ++i) member[kind[i]] = i;
  }
  std::set<std::string> dropped;  // node keys
  std::set<ir::TensorId> kept_tensors;
  for (std::size_t op = 0; op < ops.size(); ++op) {  // topological order
    const std::size_t size = space.kinds()[ops[op].kind].size();
    if (size % depth == 0 && member[op] / (size / depth) >= static_cast<std::size_t>(layers)) {
      drop[op] = true;
    }
    for (std::size_t e : space.edges_into(op)) {
      drop[op] = drop[op] || drop[space.edges()[e].producer];
    }
    const auto id = by_name.find(ops[op].name);
    TAPESTRY_ASSERT(id != by_name.end(), "an operation the plan space names is in the graph");
    if (drop[op]) {
      dropped.emplace(graph.node(id->second).key());
      for (ir::ApplicationId a : graph.applications_of(id->second)) {
        dropped.emplace(graph.node(a).key());
      }
      continue;
    }
    for (const PortDims& p : ops[op].inputs) kept_tensors.insert(p.tensor);
    for (const PortDims& p : ops[op].outputs) kept_tensors.insert(p.tensor);
  }
  // The tensors no kept operation touches go; those a kept one writes and only dropped ones
  // read become outputs.
  std::set<std::string> outputs;
  for (ir::TensorId t : graph.tensors()) {
    if (!kept_tensors.contains(t)) {
      dropped.emplace(graph.node(t).key());
      continue;
    }
    const auto consumers = graph.consumers(t);
    const bool read = std::any_of(consumers.begin(), consumers.end(), [&](ir::OperationId c) {
      return !dropped.contains(std::string(graph.node(c).key()));
    });
    if (!read) outputs.emplace(graph.node(t).key());
  }
  nlohmann::json doc = nlohmann::json::parse(ir::write_graph_json(graph));
  nlohmann::json kept = nlohmann::json::array();
  for (nlohmann::json& node : doc.at("nodes")) {
    const std::string key = node.value("id", "");
    if (dropped.contains(key)) continue;
    if (outputs.contains(key)) node["body"]["graphOutput"] = true;
    kept.push_back(std::move(node));
  }
  doc["nodes"] = std::move(kept);
  // A training step's state updates name the optimizer updates' results, which the prefix drops
  // (what they read is in later layers): the prefix is priced, never trained.
  doc.erase("updates");
  return ir::read_graph_json_or_throw(doc.dump());
}

}  // namespace tapestry::search
