// Reading and writing graphs as loom JSON (Tapestry's canonical format; docs/ir.md).
//
//   {"id": "<graph uuid>"?, "nodes": [{"id", "type", "label"?, "body", "tags"?}, …]}
//
// Reading never throws and never crashes on bad input. It returns the graph it could build and
// the issues it found:
//
//   * a JSON syntax error (or a document that is not an object) → no graph; one `json-syntax`
//     issue with line and column;
//   * a node that is not an object, lacks a string "id"/"type" or a "body", or repeats an id →
//     the node is skipped; an issue (`graph-structure`, `duplicate-node-id`) names the node id
//     (when known) and the JSON path `$.nodes[3]`;
//   * an unknown type URL, or a body that does not match its type's schema (wrong types, missing
//     fields, integers beyond int64, …) → the node is kept as an Opaque node, verbatim; the
//     dialect's constraints (`node-type`, `body-schema`) report it with precise JSON paths;
//   * references (tensorId, operationId) are resolved after all nodes are read, so nodes may
//     appear in any order; the ones that do not resolve are kept in
//     Graph::unresolved_references() for the `node-reference` constraint.
//
// Type URLs may be given in full or as `loom:Tensor` aliases. Body fields unknown to the schema
// are kept (NodeView::extensions()) and written back.
//
// Writing is deterministic: nodes in graph order, object keys in a fixed order (id, type, label,
// body, tags; body fields in schema order, then extensions sorted), integers only. With the
// default options the output is indented by two spaces with short integer arrays on one line,
// so graphs diff well; `indent = -1` gives compact one-line JSON.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/ir/issue.h"

namespace tapestry::ir {

struct ReadResult {
  /// The graph, unless the text is not JSON or not a loom graph object at all.
  std::optional<Graph> graph;
  /// Problems found while reading (the graph may still be usable: see the file comment).
  std::vector<Issue> issues;

  [[nodiscard]] bool has_graph() const { return graph.has_value(); }
};

/// Parses loom JSON text. `source_name` is used in issue contexts (e.g. the file name).
ReadResult read_graph_json(std::string_view text, std::string_view source_name = "<input>");
/// Reads a file; an unreadable file gives no graph and an `io-error` issue.
ReadResult read_graph_file(const std::filesystem::path& path);

/// Reads loom JSON text and throws tapestry::Error (naming the first error issue) when it is not
/// readable or has any reading error. For tests and trusted, generated input.
Graph read_graph_json_or_throw(std::string_view text);

struct WriteOptions {
  /// Spaces per level; -1 writes compact JSON on one line.
  int indent = 2;
  /// Write `loom:Tensor` / `loom:IPFIndex` aliases instead of full URLs.
  bool short_type_names = false;
};

/// The graph as loom JSON text (ends with a newline when indented).
std::string write_graph_json(const Graph& graph, const WriteOptions& options = {});
/// Writes to `path` atomically (a temporary file in the same folder, then rename); throws Error
/// when the file cannot be written.
void write_graph_file(const Graph& graph, const std::filesystem::path& path,
                      const WriteOptions& options = {});

/// One node as loom JSON (for issue data and tools).
nlohmann::json node_to_json(const Graph& graph, NodeId node, const WriteOptions& options = {});

/// The JSON path of a node: `$.nodes[?(@.id=='<key>')]`.
std::string node_json_path(std::string_view key);

}  // namespace tapestry::ir
