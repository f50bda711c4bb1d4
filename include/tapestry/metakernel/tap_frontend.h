// The .tap front end: a parsed program -> a validated-by-construction operation graph.
//
// Statements run in order on a builder Graph (builder.h), so .tap and C++ give the same graphs:
// a declaration adds a graph input; an assignment evaluates its expression (nested calls
// innermost first, left to right) and names the operations it created (naming.h); `output`
// marks graph outputs.
//
// Errors are collected as located diagnostics, one per failing statement, and the run goes on;
// a variable whose statement failed is remembered, so its later uses do not pile up more errors:
//
//   bad.tap:3:10: error: linear: X has 12 columns but W has 16 (its in dimension)
//     H = relu(linear(X, W, b))
//              ^
//
// The graph is returned only when there is no diagnostic.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include "tapestry/ir/dialect.h"
#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/source.h"
#include "tapestry/metakernel/tap_ast.h"
#include "tapestry/metakernel/tap_parser.h"

namespace tapestry::metakernel {

struct BuildResult {
  std::optional<ir::Graph> graph;
  std::vector<support::Diagnostic> diagnostics;
  /// Problems that do not stop the build (a grad input the loss does not read; severity
  /// warning); the graph is built. Callers print them (support::format_diagnostic).
  std::vector<support::Diagnostic> warnings;

  [[nodiscard]] bool ok() const { return diagnostics.empty() && graph.has_value(); }
};

/// Builds the graph of a parsed program.
BuildResult build_program(const tap::Program& program, const SignatureRegistry& signatures,
                          const ApplyOptions& options = {});

/// Parses and builds .tap text (syntax errors stop before building); `parse.dims` binds the
/// program's dim variables (tap_parser.h).
BuildResult build_tap(const SourceFilePtr& file, const SignatureRegistry& signatures,
                      const ApplyOptions& options = {}, const tap::ParseOptions& parse = {});

/// Reads, parses and builds a .tap file; an unreadable file is a diagnostic.
BuildResult build_tap_file(const std::filesystem::path& path, const SignatureRegistry& signatures,
                           const ApplyOptions& options = {}, const tap::ParseOptions& parse = {});

/// Validates a built graph: in the application dialect when it holds Application nodes (the
/// default ApplyOptions add one per operation), else in the operation dialect.
ir::ValidationReport validate_built_graph(const ir::Graph& graph);

/// Reads a whole file as a SourceFile; Error when it cannot be read.
SourceFilePtr read_source_file(const std::filesystem::path& path);

}  // namespace tapestry::metakernel
