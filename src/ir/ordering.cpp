#include "tapestry/ir/ordering.h"

#include <fmt/format.h>

#include "tapestry/support/error.h"

namespace tapestry::ir {

std::vector<TensorId> after(const Graph& graph, OperationId op) {
  const nlohmann::json& extensions = graph.operation(op).extensions();
  if (!extensions.is_object()) return {};
  const auto field = extensions.find(kAfterField);
  if (field == extensions.end()) return {};
  const auto bad = [&](const std::string& why) {
    return Error(fmt::format("operation '{}': body field \"{}\": {}", graph.display_name(op),
                             kAfterField, why));
  };
  if (!field->is_array()) throw bad("expected an array of tensor keys");
  std::vector<TensorId> tensors;
  for (const nlohmann::json& key : *field) {
    if (!key.is_string()) throw bad(fmt::format("expected a tensor key, got {}", key.dump()));
    const std::optional<NodeId> node = graph.find(key.get<std::string>());
    const std::optional<TensorId> tensor = node ? graph.as_tensor(*node) : std::nullopt;
    if (!tensor) throw bad(fmt::format("'{}' is not the key of a tensor", key.get<std::string>()));
    tensors.push_back(*tensor);
  }
  return tensors;
}

void set_after(Graph& graph, OperationId op, std::span<const TensorId> tensors) {
  nlohmann::json extensions = graph.operation(op).extensions();
  if (!extensions.is_object()) extensions = nlohmann::json::object();
  if (tensors.empty()) {
    extensions.erase(kAfterField);
  } else {
    nlohmann::json keys = nlohmann::json::array();
    for (TensorId t : tensors) keys.push_back(std::string(graph.key(t)));
    extensions[kAfterField] = std::move(keys);
  }
  graph.set_extensions(op, extensions.empty() ? nlohmann::json() : std::move(extensions));
}

std::vector<ApplicationId> application_after(const Graph& graph, ApplicationId app) {
  const nlohmann::json& extensions = graph.application(app).extensions();
  if (!extensions.is_object()) return {};
  const auto field = extensions.find(kAfterField);
  if (field == extensions.end()) return {};
  const auto bad = [&](const std::string& why) {
    return Error(fmt::format("application '{}': body field \"{}\": {}", graph.display_name(app),
                             kAfterField, why));
  };
  if (!field->is_array()) throw bad("expected an array of application keys");
  std::vector<ApplicationId> applications;
  for (const nlohmann::json& key : *field) {
    if (!key.is_string()) throw bad(fmt::format("expected an application key, got {}", key.dump()));
    const std::optional<NodeId> node = graph.find(key.get<std::string>());
    const std::optional<ApplicationId> other = node ? graph.as_application(*node) : std::nullopt;
    if (!other) {
      throw bad(fmt::format("'{}' is not the key of an application", key.get<std::string>()));
    }
    applications.push_back(*other);
  }
  return applications;
}

void set_application_after(Graph& graph, ApplicationId app,
                           std::span<const ApplicationId> applications) {
  nlohmann::json extensions = graph.application(app).extensions();
  if (!extensions.is_object()) extensions = nlohmann::json::object();
  if (applications.empty()) {
    extensions.erase(kAfterField);
  } else {
    nlohmann::json keys = nlohmann::json::array();
    for (ApplicationId a : applications) keys.push_back(std::string(graph.key(a)));
    extensions[kAfterField] = std::move(keys);
  }
  graph.set_extensions(app, extensions.empty() ? nlohmann::json() : std::move(extensions));
}

}  // namespace tapestry::ir
