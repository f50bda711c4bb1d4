#include "tapestry/rewrite/graph_copy.h"

#include <algorithm>

#include "tapestry/support/assert.h"

namespace tapestry::rewrite {

namespace {

ir::NodeOptions options_of(const ir::NodeView& node) {
  return ir::NodeOptions{.label = node.label(), .key = std::string(node.key())};
}

// Copies the tags and extension fields every node kind may carry.
void copy_annotations(const ir::NodeView& from, ir::Graph& to, ir::NodeId id) {
  if (const std::optional<zspace::Range> index = from.ipf_index()) to.set_ipf_index(id, *index);
  if (from.has_io_sequence_point()) to.set_io_sequence_point(id, true);
  if (!from.extensions().is_null()) to.set_extensions(id, from.extensions());
  if (from.other_tags().is_object()) {
    for (const auto& [url, value] : from.other_tags().items()) to.set_other_tag(id, url, value);
  }
}

}  // namespace

ir::SelectionMap remap_selections(const ir::SelectionMap& selections, const GraphCopy& copy) {
  ir::SelectionMap out = selections;
  out.for_each_tensor(
      [&](const std::string& /*name*/, std::uint32_t /*position*/, ir::TensorId& id) {
        TAPESTRY_ASSERT(copy.has(id), "selection names a tensor left out of the copy");
        id = copy.tensor(id);
      });
  return out;
}

namespace {

void copy_node(const ir::Graph& source, ir::NodeId id, GraphCopy& copy) {
  const ir::NodeView node = source.node(id);
  ir::NodeId added;
  switch (node.kind()) {
    case ir::NodeKind::kTensor:
      added = copy.graph.add_tensor(source.tensor(*source.as_tensor(id)).body(), options_of(node));
      break;
    case ir::NodeKind::kNote:
      added = copy.graph.add_note(source.note(*source.as_note(id)).message(), options_of(node));
      break;
    case ir::NodeKind::kOpaque:
      added = copy.graph.add_opaque(source.opaque(id), options_of(node));
      break;
    case ir::NodeKind::kOperation: {
      const ir::OperationView view = source.operation(*source.as_operation(id));
      ir::OperationBody body = view.body();
      body.inputs = remap_selections(body.inputs, copy);
      body.outputs = remap_selections(body.outputs, copy);
      const ir::OperationId op = copy.graph.add_operation(std::move(body), options_of(view));
      if (const ir::IpfSignature* signature = view.ipf_signature()) {
        copy.graph.set_ipf_signature(op, *signature);
      }
      added = op;
      break;
    }
    case ir::NodeKind::kApplication:
      return;  // never copied: lowering regenerates them
  }
  copy.map[id.index()] = added;
  copy_annotations(node, copy.graph, added);
}

}  // namespace

void copy_node_into(const ir::Graph& source, ir::NodeId id, GraphCopy& copy) {
  copy_node(source, id, copy);
}

GraphCopy copy_graph(const ir::Graph& source, std::span<const ir::NodeId> drop) {
  std::vector<bool> dropped(source.size(), false);
  for (ir::NodeId id : drop) dropped[id.index()] = true;
  const std::vector<ir::NodeId> ids = source.node_ids();  // without the removed nodes
  std::vector<ir::NodeId> order;
  // Operations second: they need the tensor map.
  for (ir::NodeId id : ids) {
    const ir::NodeKind kind = source.kind(id);
    if (!dropped[id.index()] && kind != ir::NodeKind::kOperation &&
        kind != ir::NodeKind::kApplication) {
      order.push_back(id);
    }
  }
  for (ir::NodeId id : ids) {
    if (!dropped[id.index()] && source.kind(id) == ir::NodeKind::kOperation) order.push_back(id);
  }
  return copy_graph_nodes(source, order);
}

GraphCopy copy_graph_in_order(const ir::Graph& source,
                              std::span<const ir::OperationId> operations) {
  GraphCopy copy;
  copy.graph.set_graph_key(source.graph_key());
  copy.map.assign(source.size(), ir::NodeId());
  for (ir::NodeId id : source.node_ids()) {
    if (source.kind(id) != ir::NodeKind::kOperation) copy_node(source, id, copy);
  }
  for (ir::OperationId op : operations) copy_node(source, op, copy);
  TAPESTRY_ASSERT(copy.graph.operations().size() == source.operations().size(),
                  "copy_graph_in_order: the order lists every operation once");
  for (const ir::StateUpdate& u : source.updates()) {
    copy.graph.add_update({copy.tensor(u.state), copy.tensor(u.next)});
  }
  return copy;
}

GraphCopy copy_graph_nodes(const ir::Graph& source, std::span<const ir::NodeId> nodes) {
  GraphCopy copy;
  copy.graph.set_graph_key(source.graph_key());
  copy.map.assign(source.size(), ir::NodeId());
  for (ir::NodeId id : nodes) copy_node(source, id, copy);
  for (const ir::StateUpdate& u : source.updates()) {  // those whose two tensors are kept
    if (copy.has(u.state) && copy.has(u.next)) {
      copy.graph.add_update({copy.tensor(u.state), copy.tensor(u.next)});
    }
  }
  return copy;
}

}  // namespace tapestry::rewrite
