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

GraphCopy copy_graph(const ir::Graph& source, std::span<const ir::NodeId> drop) {
  GraphCopy copy;
  copy.graph.set_graph_key(source.graph_key());
  copy.map.assign(source.size(), ir::NodeId());
  std::vector<bool> dropped(source.size(), false);
  for (ir::NodeId id : drop) dropped[id.index()] = true;

  for (ir::NodeId id : source.node_ids()) {
    if (dropped[id.index()]) continue;
    const ir::NodeView node = source.node(id);
    ir::NodeId added;
    switch (node.kind()) {
      case ir::NodeKind::kTensor:
        added =
            copy.graph.add_tensor(source.tensor(*source.as_tensor(id)).body(), options_of(node));
        break;
      case ir::NodeKind::kNote:
        added = copy.graph.add_note(source.note(*source.as_note(id)).message(), options_of(node));
        break;
      case ir::NodeKind::kOpaque:
        added = copy.graph.add_opaque(source.opaque(id), options_of(node));
        break;
      case ir::NodeKind::kOperation:
      case ir::NodeKind::kApplication:
        continue;  // operations second (they need the tensor map); applications never
    }
    copy.map[id.index()] = added;
    copy_annotations(node, copy.graph, added);
  }
  for (ir::OperationId op : source.operations()) {
    if (dropped[op.index()]) continue;
    const ir::OperationView view = source.operation(op);
    ir::OperationBody body = view.body();
    body.inputs = remap_selections(body.inputs, copy);
    body.outputs = remap_selections(body.outputs, copy);
    ir::OperationId added = copy.graph.add_operation(std::move(body), options_of(view));
    copy.map[op.index()] = added;
    copy_annotations(view, copy.graph, added);
    if (const ir::IpfSignature* signature = view.ipf_signature()) {
      copy.graph.set_ipf_signature(added, *signature);
    }
  }
  return copy;
}

}  // namespace tapestry::rewrite
