// Dialects: which node and tag types a graph may hold, and which constraints it must satisfy.
//
// A dialect (Tapestry's "environment") is a name, the node kinds and tag kinds it admits, the
// dtypes it knows, and an ordered list of constraints. Three are built in:
//
//   operation    Tensor, Operation, Note; tags IPFIndex, IPFSignature, IOSequencePoint
//   application  operation + Application, with the sharding constraints (a Placement tag is
//                admitted, not required)
//   placement    application + a Placement tag on every Application (its device and the
//                transfers it receives), with application-placement
//
// `validate` runs every constraint in order and collects all issues. A constraint may name
// others it `requires`: when one of those reported an error, it is skipped (its checks would only
// repeat the same fault in other words) — e.g. `operation-ipf-agreement` requires
// `body-schema` and `node-reference`.
//
//   ValidationReport report = validate(graph, Dialect::application());
//   if (!report.is_valid()) fmt::print("{}", format_issues_text(report.issues));
//
// The constraint list of each dialect, with an example of each issue, is in docs/ir.md.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tapestry/ir/constraint.h"
#include "tapestry/ir/dtype.h"
#include "tapestry/ir/graph.h"
#include "tapestry/ir/issue.h"
#include "tapestry/ir/type_names.h"

namespace tapestry::ir {

class Dialect {
 public:
  Dialect(std::string name, std::vector<NodeKind> node_kinds, std::vector<TagKind> tag_kinds,
          std::vector<DType> dtypes, std::vector<std::shared_ptr<const Constraint>> constraints);

  /// Tensor, Operation and Note nodes; the operation-graph constraints.
  static const Dialect& operation();
  /// The operation dialect plus Application nodes and the sharding constraints.
  static const Dialect& application();
  /// The application dialect plus Tapestry's Placement tag on every Application and the
  /// application-placement constraint (every cross-device read has its transfer).
  static const Dialect& placement();
  /// The dialect called `name` ("operation", "application", "placement"), or nullptr.
  static const Dialect* find(std::string_view name);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] bool admits(NodeKind kind) const;
  [[nodiscard]] bool admits(TagKind kind) const;
  [[nodiscard]] bool knows_dtype(const LoomDType& dtype) const;
  [[nodiscard]] std::span<const NodeKind> node_kinds() const { return node_kinds_; }
  [[nodiscard]] std::span<const TagKind> tag_kinds() const { return tag_kinds_; }
  [[nodiscard]] std::span<const DType> dtypes() const { return dtypes_; }
  [[nodiscard]] std::span<const std::shared_ptr<const Constraint>> constraints() const {
    return constraints_;
  }
  /// The constraint called `name`, or nullptr.
  [[nodiscard]] const Constraint* constraint(std::string_view name) const;

 private:
  std::string name_;
  std::vector<NodeKind> node_kinds_;
  std::vector<TagKind> tag_kinds_;
  std::vector<DType> dtypes_;
  std::vector<std::shared_ptr<const Constraint>> constraints_;
};

struct ValidationReport {
  std::vector<Issue> issues;
  /// Constraints that did not run because a constraint they require reported an error.
  std::vector<std::string> skipped;
  /// Wall time of each constraint that ran, in seconds, in order.
  std::vector<std::pair<std::string, double>> timings;

  /// No error (warnings allowed).
  [[nodiscard]] bool is_valid() const { return !has_errors(issues); }
};

/// Runs every constraint of `dialect` on `graph`; collects all issues.
ValidationReport validate(const Graph& graph, const Dialect& dialect);

}  // namespace tapestry::ir
