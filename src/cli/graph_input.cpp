#include "graph_input.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>

#include "tapestry/ir/dialect.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/kernel_agreement.h"
#include "tapestry/rewrite/kernel_facts_check.h"
#include "tapestry/support/diagnostic.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"

namespace tapestry::cli {

namespace {

// The parse options of `--dim` texts; loom JSON has no dim variables.
metakernel::tap::ParseOptions parse_options(const std::string& path,
                                            const std::vector<std::string>& dims) {
  metakernel::tap::ParseOptions options;
  for (const std::string& d : dims) metakernel::tap::add_dim_binding(options.dims, d);
  if (!dims.empty() && !path.ends_with(".tap")) {
    throw Error(
        fmt::format("{}: --dim binds the dim variables of a .tap program; a loom JSON "
                    "graph's sizes are fixed",
                    path));
  }
  return options;
}

}  // namespace

void add_dim_option(CLI::App& cmd, std::vector<std::string>& dims) {
  cmd.add_option("--dim", dims,
                 "the size of the program's `dim NAME` (e.g. batch=32; repeatable): one "
                 ".tap program at any size, as `tapestry import` writes a model's dynamic axes")
      ->allow_extra_args(false)
      ->type_name("NAME=N");
}

ir::ReadResult read_graph_input(const std::string& path,
                                const metakernel::SignatureRegistry& signatures,
                                const std::vector<std::string>& dims) {
  check_readable_file(path);  // one message for a missing file, a directory, …
  const metakernel::tap::ParseOptions parse = parse_options(path, dims);
  if (!path.ends_with(".tap")) return ir::read_graph_file(path);
  metakernel::BuildResult built = metakernel::build_tap_file(path, signatures, {}, parse);
  if (!built.ok()) throw support::DiagnosticError(built.diagnostics);
  for (const support::Diagnostic& w : built.warnings) {
    fmt::print(stderr, "{}\n", support::format_diagnostic(w));
  }
  ir::ReadResult read;
  read.graph = std::move(*built.graph);
  return read;
}

ir::Graph load_graph(const std::string& path, const metakernel::SignatureRegistry& signatures,
                     bool trust_ipfs, const std::vector<std::string>& dims) {
  check_readable_file(path);  // one message for a missing file, a directory, …
  const metakernel::tap::ParseOptions parse = parse_options(path, dims);
  ir::Graph graph;
  if (path.ends_with(".tap")) {
    metakernel::BuildResult built = metakernel::build_tap_file(path, signatures, {}, parse);
    if (!built.ok()) throw support::DiagnosticError(built.diagnostics);
    for (const support::Diagnostic& w : built.warnings) {
      fmt::print(stderr, "{}\n", support::format_diagnostic(w));
    }
    graph = std::move(*built.graph);
  } else {
    ir::ReadResult read = ir::read_graph_file(path);
    if (!read.has_graph() || ir::has_errors(read.issues)) {
      throw Error(
          fmt::format("{}: cannot read the graph:\n{}", path, ir::format_issues_text(read.issues)));
    }
    graph = std::move(*read.graph);
  }
  const ir::Dialect& dialect =
      graph.applications().empty() ? ir::Dialect::operation() : ir::Dialect::application();
  const ir::ValidationReport report = ir::validate(
      graph, trust_ipfs ? dialect : rewrite::with_kernel_agreement(dialect, signatures));
  if (!report.is_valid()) {
    throw Error(
        fmt::format("{}: the graph is invalid:\n{}", path, ir::format_issues_text(report.issues)));
  }
  // Kernels without facts are priced and verified by stated defaults: said, never silent.
  for (const ir::Issue& issue : rewrite::missing_kernel_facts(graph)) {
    fmt::print(stderr, "{}: {}", path, ir::format_issue_text(issue));
  }
  return graph;
}

rewrite::Plan load_plan(const ir::Graph& graph, const std::string& plan_file,
                        const std::vector<std::string>& splits, bool ignore_placement) {
  rewrite::Plan plan = plan_file.empty() ? rewrite::Plan{} : rewrite::read_plan_file(plan_file);
  for (const std::string& s : splits) rewrite::add_split_shorthand(plan, s);
  // Checked here, where the file is known, so the problems are located in it (lower checks again
  // for callers that build plans in code); entries naming derived operations run the rewrites.
  if (std::vector<support::Diagnostic> problems = rewrite::check_plan(plan, graph);
      !problems.empty()) {
    const std::string source = plan_file.empty() ? std::string("--split")
                               : splits.empty()  ? plan_file
                                                 : plan_file + " with --split";
    for (support::Diagnostic& p : problems) p.where.file = source;
    throw support::DiagnosticError(source + ": the plan does not fit the graph",
                                   std::move(problems));
  }
  return ignore_placement ? rewrite::without_placement(std::move(plan)) : plan;
}

}  // namespace tapestry::cli
