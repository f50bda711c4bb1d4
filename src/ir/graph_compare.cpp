// Operation-graph comparison (graph_compare.h): nodes as canonical JSON lines, compared as
// multisets.
#include "tapestry/ir/graph_compare.h"

#include <algorithm>
#include <iterator>

#include "tapestry/ir/json_io.h"

namespace tapestry::ir {

namespace {

// Replaces every selection's "tensorId" key by the label of the tensor it names.
void label_selections(const Graph& graph, nlohmann::json& ports) {
  if (!ports.is_object()) return;
  for (auto& [port, list] : ports.items()) {
    if (!list.is_array()) continue;
    for (nlohmann::json& selection : list) {
      if (!selection.is_object() || !selection.contains("tensorId")) continue;
      const nlohmann::json& key = selection["tensorId"];
      const std::optional<NodeId> node =
          key.is_string() ? graph.find(key.get<std::string>()) : std::nullopt;
      selection["tensorId"] = node ? "label:" + graph.node(*node).label() : "unresolved";
    }
  }
}

}  // namespace

std::string operation_graph_line(const Graph& graph, NodeId node) {
  nlohmann::json json = node_to_json(graph, node);
  json.erase("id");
  if (json.contains("body") && graph.kind(node) == NodeKind::kOperation) {
    label_selections(graph, json["body"]["inputs"]);
    label_selections(graph, json["body"]["outputs"]);
  }
  return json.dump();
}

std::vector<std::string> operation_graph_lines(const Graph& graph) {
  std::vector<std::string> lines;
  for (TensorId t : graph.tensors()) lines.push_back(operation_graph_line(graph, t));
  for (OperationId op : graph.operations()) lines.push_back(operation_graph_line(graph, op));
  for (const StateUpdate& u : graph.updates()) {
    lines.push_back(nlohmann::json{
        {"update", {"label:" + graph.node(u.state).label(), "label:" + graph.node(u.next).label()}}}
                        .dump());
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

OperationGraphDifference compare_operation_graphs(const Graph& first, const Graph& second) {
  const std::vector<std::string> a = operation_graph_lines(first);
  const std::vector<std::string> b = operation_graph_lines(second);
  OperationGraphDifference d;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(d.only_in_first));
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(d.only_in_second));
  return d;
}

std::string OperationGraphDifference::to_string() const {
  std::string out;
  for (const std::string& line : only_in_first) out += "- " + line + "\n";
  for (const std::string& line : only_in_second) out += "+ " + line + "\n";
  return out;
}

}  // namespace tapestry::ir
