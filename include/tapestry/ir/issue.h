// Validation issues: problems in a graph (or its file), as data.
//
// Every problem the reader or a constraint finds is an Issue, never an exception:
//
//   {"type": "application-index-partition", "severity": "error",
//    "summary": "Application index boxes do not partition the operation index",
//    "message": "index point (5, 0) is covered by 2 applications",
//    "params": {"point": [5, 0], "count": 2},
//    "contexts": [{"name": "Operation", "jsonpath": "$.nodes[?(@.id=='26434d32-…')]",
//                  "data": {...}}]}
//
// `type` is a stable, dash-case name (the name of the constraint or reader rule that found it);
// tests and tools match on it. `summary` is one line; `message` adds detail; `params` are
// machine-readable values; each context names a node (or a file location) and may carry the
// JSON path and the offending JSON data.
//
// An Issue is the loom tool's validation record, and its JSON form is that tool's schema; the
// project's one located diagnostic type is support::Diagnostic (support/diagnostic.h). One
// concept, two forms: a context's place is a typed support::Location (`where`: the file and the
// line and column the reader found it at, the node by its display name), from which the schema's
// text is written ("jsonpath": "line 3, column 7" for a file position — never built by hand), and
// to_diagnostic(issue) is the issue as a Diagnostic (code = type). `jsonpath` keeps loom's
// JSONPath of a node ("$.nodes[?(@.id=='…')].body"), a syntax a JSON pointer cannot hold.
// Text form (format_issues_text):
//
//   error[application-index-partition]: Application index boxes do not partition the …
//     index point (5, 0) is covered by 2 applications
//     params:
//       count: 2
//       point: [5, 0]
//     - Operation: op:add
//       jsonpath: $.nodes[?(@.id=='26434d32-…')]
//       data: {
//         …
//       }
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/support/diagnostic.h"

namespace tapestry::ir {

using support::Severity;
using support::severity_name;

struct IssueContext {
  std::string name;      // what this context is: "Operation", "Tensor", "File", …
  std::string message;   // optional
  std::string jsonpath;  // optional: loom's JSONPath, "$.nodes[?(@.id=='…')].body.inputs.x[0]"
  nlohmann::json data;   // optional (null when absent)
  /// Where, typed: the file and line/column (a reader's context), the node's display name (a
  /// constraint's). A position with no jsonpath is written "jsonpath": "line 3, column 7".
  support::Location where;

  friend bool operator==(const IssueContext&, const IssueContext&) = default;
};

struct Issue {
  std::string type;
  Severity severity = Severity::kError;
  std::string summary;
  std::string message;    // optional
  nlohmann::json params;  // optional: an object, or null
  std::vector<IssueContext> contexts;

  [[nodiscard]] bool is_error() const { return severity == Severity::kError; }
  friend bool operator==(const Issue&, const Issue&) = default;
};

/// True when any issue is an error.
bool has_errors(std::span<const Issue> issues);
/// Number of issues of the given type.
std::size_t count_type(std::span<const Issue> issues, std::string_view type);

/// `{"type", "severity", "summary", "message"?, "params"?, "contexts": [...]}`.
nlohmann::json to_json(const Issue& issue);
/// `{"valid": bool, "errors": n, "warnings": n, "issues": [...]}`.
nlohmann::json issues_to_json(std::span<const Issue> issues);
/// issues_to_json as indented text, with each object's fields in the documented order (type,
/// severity, summary, message, params, contexts) rather than sorted; ends with a newline.
std::string format_issues_json(std::span<const Issue> issues);
/// Parses the JSON form back (for tests and tools); throws Error on a malformed issue. A
/// "line 3, column 7" jsonpath becomes the context's where.pos again (the schema has no field for
/// the rest of a Location).
Issue issue_from_json(const nlohmann::json& json);

/// The issue as the one located diagnostic: code = type, message = the message (the summary when
/// there is none), where = the first context's Location that is set.
support::Diagnostic to_diagnostic(const Issue& issue);

/// The readable form of one issue (see the file comment); ends with a newline.
std::string format_issue_text(const Issue& issue);
/// All issues, then a summary line ("2 errors, 1 warning" or "valid").
std::string format_issues_text(std::span<const Issue> issues);

}  // namespace tapestry::ir
