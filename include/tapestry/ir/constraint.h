// Constraint: one rule a graph of a dialect must satisfy.
//
// A constraint is a small class with a stable dash-case `name` — the `type` of every issue it
// reports — a one-line `description`, the names of constraints it `requires` (it is skipped when
// one of them reported an error), and a `check` that appends issues. Each built-in constraint
// lives in its own file under src/ir/constraints/ and has a factory in constraints.h.
//
//   class NoNotes final : public Constraint {
//    public:
//     std::string_view name() const override { return "no-notes"; }
//     std::string_view description() const override { return "Graphs carry no notes."; }
//     void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
//       for (NoteId n : ctx.graph.notes()) {
//         Issue issue = make_issue("Note nodes are not allowed");
//         issue.contexts.push_back(ctx.node_context(n));
//         out.push_back(std::move(issue));
//       }
//     }
//   };
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/ir/issue.h"

namespace tapestry::ir {

class Dialect;

/// What a constraint sees: the graph, the dialect, and helpers that build located issues.
struct CheckContext {
  const Graph& graph;
  const Dialect& dialect;

  /// A context naming a node: {name: kind or label, message: label, jsonpath: node path + suffix,
  /// data: the JSON of the node (only when `with_data`)}.
  [[nodiscard]] IssueContext node_context(NodeId node, std::string_view path_suffix = {},
                                          bool with_data = false) const;
  /// A context with explicit data and path.
  [[nodiscard]] IssueContext data_context(NodeId node, std::string_view name,
                                          std::string_view path_suffix, nlohmann::json data) const;
};

class Constraint {
 public:
  virtual ~Constraint() = default;

  /// Stable issue type name, e.g. "application-index-partition".
  [[nodiscard]] virtual std::string_view name() const = 0;
  /// One sentence: what the constraint demands.
  [[nodiscard]] virtual std::string_view description() const = 0;
  /// Constraints that must report no error for this one to run.
  [[nodiscard]] virtual std::span<const std::string_view> requires_passed() const { return {}; }
  /// Appends the issues found in `ctx.graph` to `out`.
  virtual void check(const CheckContext& ctx, std::vector<Issue>& out) const = 0;

 protected:
  /// An error (or warning) of this constraint's type with a summary and optional message.
  [[nodiscard]] Issue make_issue(std::string summary, std::string message = {},
                                 Severity severity = Severity::kError) const;
};

}  // namespace tapestry::ir
