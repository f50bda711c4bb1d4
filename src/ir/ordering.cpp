#include "tapestry/ir/ordering.h"

#include <fmt/format.h>

#include "tapestry/support/error.h"

namespace tapestry::ir {

namespace {

// The nodes the `after` field of `node` lists by key, each checked by `as` (a Graph::as_* member):
// `what` names the node in errors ("operation"), `kind` what the keys name ("tensor").
template <typename Id, typename As>
std::vector<Id> read_after(const Graph& graph, NodeId node, std::string_view what,
                           std::string_view kind, As as) {
  const nlohmann::json& extensions = graph.node(node).extensions();
  if (!extensions.is_object()) return {};
  const auto field = extensions.find(kAfterField);
  if (field == extensions.end()) return {};
  const auto bad = [&](const std::string& why) {
    return Error(fmt::format("{} '{}': body field \"{}\": {}", what, graph.display_name(node),
                             kAfterField, why));
  };
  if (!field->is_array()) throw bad(fmt::format("expected an array of {} keys", kind));
  std::vector<Id> ids;
  for (const nlohmann::json& key : *field) {
    if (!key.is_string()) throw bad(fmt::format("expected a {} key, got {}", kind, key.dump()));
    const std::optional<NodeId> found = graph.find(key.get<std::string>());
    const std::optional<Id> id = found ? (graph.*as)(*found) : std::nullopt;
    if (!id) throw bad(fmt::format("'{}' is not the key of a {}", key.get<std::string>(), kind));
    ids.push_back(*id);
  }
  return ids;
}

template <typename Id>
void write_after(Graph& graph, NodeId node, std::span<const Id> ids) {
  nlohmann::json extensions = graph.node(node).extensions();
  if (!extensions.is_object()) extensions = nlohmann::json::object();
  if (ids.empty()) {
    extensions.erase(kAfterField);
  } else {
    nlohmann::json keys = nlohmann::json::array();
    for (Id id : ids) keys.push_back(std::string(graph.key(id)));
    extensions[kAfterField] = std::move(keys);
  }
  graph.set_extensions(node, extensions.empty() ? nlohmann::json() : std::move(extensions));
}

}  // namespace

std::vector<TensorId> after(const Graph& graph, OperationId op) {
  return read_after<TensorId>(graph, op, "operation", "tensor", &Graph::as_tensor);
}

void set_after(Graph& graph, OperationId op, std::span<const TensorId> tensors) {
  write_after(graph, op, tensors);
}

std::vector<ApplicationId> application_after(const Graph& graph, ApplicationId app) {
  return read_after<ApplicationId>(graph, app, "application", "application",
                                   &Graph::as_application);
}

void set_application_after(Graph& graph, ApplicationId app,
                           std::span<const ApplicationId> applications) {
  write_after(graph, app, applications);
}

}  // namespace tapestry::ir
