// Constraint helpers: issue construction and located contexts.
#include "tapestry/ir/constraint.h"

#include "tapestry/ir/json_io.h"

namespace tapestry::ir {

Issue Constraint::make_issue(std::string summary, std::string message, Severity severity) const {
  return Issue{.type = std::string(name()),
               .severity = severity,
               .summary = std::move(summary),
               .message = std::move(message)};
}

IssueContext CheckContext::node_context(NodeId node, std::string_view path_suffix,
                                        bool with_data) const {
  NodeView view = graph.node(node);
  IssueContext ctx;
  ctx.name = std::string(kind_name(view.kind()));
  ctx.message = view.display_name();
  ctx.where.node = ctx.message;
  ctx.jsonpath = node_json_path(view.key());
  ctx.jsonpath += path_suffix;
  if (with_data) ctx.data = node_to_json(graph, node);
  return ctx;
}

IssueContext CheckContext::data_context(NodeId node, std::string_view name,
                                        std::string_view path_suffix, nlohmann::json data) const {
  IssueContext ctx = node_context(node, path_suffix, false);
  ctx.name = std::string(name);
  ctx.data = std::move(data);
  return ctx;
}

}  // namespace tapestry::ir
