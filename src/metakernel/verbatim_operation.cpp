// Operations given verbatim (verbatim_operation.h). Steps of add_verbatim_operation:
//   1. check the node's shape and resolve every selection's tensor name;
//   2. read a loom document of the named tensors (their real keys) and the node with the loom
//      reader, so the body and tags are checked exactly as a loom file's are;
//   3. copy the operation into the graph, its selections pointing at the graph's tensors.
#include "verbatim_operation.h"

#include <fmt/format.h>

#include <map>

#include "tapestry/ir/json_io.h"
#include "tapestry/support/error.h"

namespace tapestry::metakernel {

namespace {

// A key for the operation in the small document: one no tensor of `graph` has.
std::string free_key(const ir::Graph& graph) {
  for (int i = 0;; ++i) {
    std::string key = fmt::format("ffffffff-ffff-4fff-bfff-{:012x}", i);
    if (!graph.find(key)) return key;
  }
}

// Applies `fn` to every selection object of a body's "inputs" and "outputs".
template <typename F>
void for_each_selection(nlohmann::json& body, F&& fn) {
  for (const char* side : {"inputs", "outputs"}) {
    if (!body.contains(side) || !body[side].is_object()) continue;
    for (auto& [port, list] : body[side].items()) {
      if (!list.is_array()) continue;
      for (nlohmann::json& selection : list) {
        if (selection.is_object() && selection.contains("tensorId")) fn(selection["tensorId"]);
      }
    }
  }
}

void check_shape(const nlohmann::json& node) {
  if (!node.is_object()) throw Error("an operation statement takes a JSON object");
  for (const auto& [key, value] : node.items()) {
    if (key == "id")
      throw Error("an operation statement has no \"id\": its tensors are named by variables");
    if (key == "type") {
      if (!value.is_string() || !value.get<std::string>().ends_with("Operation"))
        throw Error("an operation statement's \"type\" must be an Operation");
      continue;
    }
    if (key != "label" && key != "body" && key != "tags")
      throw Error(
          fmt::format("an operation statement has no field \"{}\" (label, body, tags)", key));
  }
  if (!node.contains("body") || !node["body"].is_object())
    throw Error("an operation statement needs a \"body\" object");
}

std::string first_error(const std::vector<ir::Issue>& issues) {
  for (const ir::Issue& issue : issues) {
    if (!issue.is_error()) continue;
    std::string text = issue.summary;
    if (!issue.message.empty()) text += ": " + issue.message;
    for (const ir::IssueContext& c : issue.contexts) {
      if (!c.message.empty()) text += fmt::format(" ({})", c.message);
    }
    return text;
  }
  return "";
}

ir::SelectionMap remap(const ir::SelectionMap& map,
                       const std::map<ir::TensorId, ir::TensorId>& to) {
  ir::SelectionMap out;
  for (const auto& e : map.entries()) out.append(e.name, {to.at(e.value.tensor), e.value.range});
  return out;
}

}  // namespace

ir::OperationId add_verbatim_operation(ir::Graph& graph, const nlohmann::json& node,
                                       const TensorLookup& lookup, bool add_application) {
  // 1. Shape and names.
  check_shape(node);
  nlohmann::json op = node;
  std::map<std::string, ir::TensorId> named;
  for_each_selection(op["body"], [&](nlohmann::json& ref) {
    if (!ref.is_string()) throw Error("a selection's \"tensorId\" must name a tensor (a string)");
    const std::string name = ref.get<std::string>();
    const std::optional<ir::TensorId> tensor = lookup(name);
    if (!tensor) throw Error(fmt::format("unknown variable '{}'", name));
    named.emplace(name, *tensor);
    ref = std::string(graph.key(*tensor));
  });
  // 2. Read it as loom JSON, with copies of the tensors it names.
  nlohmann::json document = {{"nodes", nlohmann::json::array()}};
  for (const auto& [name, tensor] : named)
    document["nodes"].push_back(ir::node_to_json(graph, tensor));
  const std::string op_key = free_key(graph);
  op["id"] = op_key;
  op["type"] = "loom:Operation";
  document["nodes"].push_back(op);
  ir::ReadResult read = ir::read_graph_json(document.dump(), "operation");
  if (const std::string error = read.graph ? first_error(read.issues) : "bad document";
      !error.empty())
    throw Error(error);
  const ir::Graph& small = *read.graph;
  if (small.operations().size() != 1) {
    const std::optional<ir::NodeId> kept = small.find(op_key);
    throw Error(kept ? small.opaque(*kept).problem : "the operation could not be read");
  }
  // 3. Copy it.
  std::map<ir::TensorId, ir::TensorId> to;
  for (const auto& [name, tensor] : named)
    to.emplace(*small.as_tensor(*small.find(graph.key(tensor))), tensor);
  const ir::OperationView view = small.operation(small.operations().front());
  ir::OperationBody body = view.body();
  body.inputs = remap(view.inputs(), to);
  body.outputs = remap(view.outputs(), to);
  const ir::SelectionMap app_inputs = body.inputs;
  const ir::SelectionMap app_outputs = body.outputs;
  const ir::OperationId id = graph.add_operation(std::move(body), {.label = view.label()});
  if (const std::optional<zspace::Range> index = view.ipf_index()) graph.set_ipf_index(id, *index);
  if (const ir::IpfSignature* sig = view.ipf_signature()) graph.set_ipf_signature(id, *sig);
  graph.set_io_sequence_point(id, view.has_io_sequence_point());
  if (view.other_tags().is_object()) {
    for (const auto& [url, value] : view.other_tags().items()) graph.set_other_tag(id, url, value);
  }
  if (!view.extensions().is_null()) graph.set_extensions(id, view.extensions());
  if (add_application && view.ipf_index() && view.ipf_signature()) {
    const ir::ApplicationId app =
        graph.add_application(ir::ApplicationBody{id, app_inputs, app_outputs});
    graph.set_ipf_index(app, *view.ipf_index());
  }
  return id;
}

nlohmann::json verbatim_operation_json(const ir::Graph& graph, ir::OperationId op,
                                       const std::function<std::string(ir::TensorId)>& name) {
  nlohmann::json node = ir::node_to_json(graph, op, {.short_type_names = true});
  node.erase("id");
  node.erase("type");
  for_each_selection(node["body"], [&](nlohmann::json& ref) {
    // An unresolved reference (only in a graph read from a broken file) keeps its key.
    const std::optional<ir::NodeId> found = graph.find(ref.get<std::string>());
    const std::optional<ir::TensorId> tensor = found ? graph.as_tensor(*found) : std::nullopt;
    if (tensor) ref = name(*tensor);
  });
  return node;
}

}  // namespace tapestry::metakernel
