// Graph relations: producers and consumers of tensors, applications of operations, and the
// topological order of the tensor/operation graph.
#include <algorithm>
#include <unordered_map>

#include "tapestry/ir/graph.h"
#include "tapestry/ir/ordering.h"
#include "tapestry/support/assert.h"

namespace tapestry::ir {

namespace {

// Appends `op` unless it is already the last entry (an operation that reads a tensor twice is
// one consumer; entries arrive grouped by operation because operations are indexed one by one).
void append_once(std::vector<OperationId>& list, OperationId op) {
  if (list.empty() || list.back() != op) list.push_back(op);
}

}  // namespace

void Graph::index_operation(OperationId op) {
  const OperationBody& body = operation_bodies_[record(op).slot];
  for (const auto& e : body.inputs.entries()) {
    if (!e.value.tensor.is_valid()) continue;
    append_once(consumers_[record(e.value.tensor).slot], op);
  }
  for (const auto& e : body.outputs.entries()) {
    if (!e.value.tensor.is_valid()) continue;
    append_once(producers_[record(e.value.tensor).slot], op);
  }
}

void Graph::index_application(ApplicationId app) {
  OperationId op = application_bodies_[record(app).slot].operation;
  if (!op.is_valid()) return;
  applications_by_op_[record(op).slot].push_back(app);
}

void Graph::rebuild_relations() {
  producers_.assign(tensor_bodies_.size(), {});
  consumers_.assign(tensor_bodies_.size(), {});
  applications_by_op_.assign(operation_bodies_.size(), {});
  for (OperationId op : operation_ids_) index_operation(op);
  for (ApplicationId app : application_ids_) index_application(app);
}

std::span<const OperationId> Graph::producers(TensorId tensor) const {
  return producers_[record(tensor).slot];
}

std::span<const OperationId> Graph::consumers(TensorId tensor) const {
  return consumers_[record(tensor).slot];
}

std::span<const ApplicationId> Graph::applications_of(OperationId op) const {
  return applications_by_op_[record(op).slot];
}

// Kahn's algorithm over tensors and operations (edges tensor → consumer, operation → output).
// Ready nodes are taken smallest-id first, so the order is deterministic. When nodes remain,
// a cycle is extracted by walking predecessors among the remaining nodes until one repeats.
TopologicalOrder Graph::topological_order() const {
  std::vector<std::uint32_t> indegree(nodes_.size(), 0);
  // Ordering edges (ordering.h): tensor → the operations that start after it.
  std::unordered_map<std::uint32_t, std::vector<OperationId>> started_after;
  for (OperationId op : operation_ids_) {
    const nlohmann::json& extensions = operation(op).extensions();
    if (!extensions.is_object() || !extensions.contains(kAfterField)) continue;
    for (TensorId t : after(*this, op)) started_after[t.index()].push_back(op);
  }
  auto successors = [&](NodeId n, auto&& fn) {
    if (auto t = as_tensor(n)) {
      for (OperationId op : consumers(*t)) fn(NodeId(op));
      if (started_after.empty()) return;
      if (auto it = started_after.find(t->index()); it != started_after.end()) {
        for (OperationId op : it->second) fn(NodeId(op));
      }
    } else if (auto op = as_operation(n)) {
      for (const auto& e : operation_bodies_[record(*op).slot].outputs.entries()) {
        if (e.value.tensor.is_valid()) fn(NodeId(e.value.tensor));
      }
    }
  };
  std::vector<NodeId> members;
  for (TensorId t : tensor_ids_) members.push_back(t);
  for (OperationId op : operation_ids_) members.push_back(op);
  std::sort(members.begin(), members.end());
  for (NodeId n : members) successors(n, [&](NodeId s) { ++indegree[s.index()]; });

  std::vector<NodeId> heap;  // min-heap on id
  auto push = [&](NodeId n) {
    heap.push_back(n);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (NodeId n : members) {
    if (indegree[n.index()] == 0) push(n);
  }
  TopologicalOrder result;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    NodeId n = heap.back();
    heap.pop_back();
    result.order.push_back(n);
    successors(n, [&](NodeId s) {
      if (--indegree[s.index()] == 0) push(s);
    });
  }
  if (result.order.size() == members.size()) return result;

  // Every remaining node has a remaining predecessor; follow predecessors until a repeat.
  std::vector<NodeId> preds_of(nodes_.size());
  for (NodeId n : members) {
    if (indegree[n.index()] == 0) continue;
    successors(n, [&](NodeId s) {
      if (indegree[s.index()] != 0) preds_of[s.index()] = n;
    });
  }
  NodeId start;
  for (NodeId n : members) {
    if (indegree[n.index()] != 0) {
      start = n;
      break;
    }
  }
  std::vector<std::uint32_t> seen_at(nodes_.size(), NodeId::kInvalidIndex);
  std::vector<NodeId> walk;
  NodeId cur = start;
  while (seen_at[cur.index()] == NodeId::kInvalidIndex) {
    seen_at[cur.index()] = static_cast<std::uint32_t>(walk.size());
    walk.push_back(cur);
    cur = preds_of[cur.index()];
    TAPESTRY_ASSERT(cur.is_valid(), "a remaining node must have a remaining predecessor");
  }
  // walk[seen_at[cur]..] is the cycle in predecessor order; reverse it into edge order and
  // rotate so it starts at its smallest id.
  std::vector<NodeId> cycle(walk.begin() + seen_at[cur.index()], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  result.cycle = std::move(cycle);
  return result;
}

}  // namespace tapestry::ir
