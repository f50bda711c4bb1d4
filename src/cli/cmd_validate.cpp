// `tapestry validate`: read a loom JSON graph and check it against a dialect and its kernels.
//
//   tapestry validate graph.json [--dialect operation|application|placement] [--format text|json]
//                                [--kernels DIR] [--target T]
//
// The placement dialect checks a graph written by `tapestry shard --target`: every application
// placed, every cross-device read received; with --target, every device named exists there.
//
// Prints every issue (reading and validation) and exits 0 when there is no error (warnings
// allowed), 1 when the graph is invalid, 2 when the file cannot be read as a graph or the
// arguments are bad. Without --dialect, graphs holding Application nodes are checked in the
// application dialect, others in the operation dialect. Either way every operation is also
// checked against its kernel (operation-kernel-agreement: the built-ins plus --kernels DIR).
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <vector>

#include "command.h"
#include "common_options.h"
#include "graph_input.h"
#include "tapestry/cost/placement.h"
#include "tapestry/ir/dialect.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/rewrite/kernel_agreement.h"
#include "tapestry/support/error.h"

namespace tapestry::cli {

namespace {

struct ValidateOptions {
  std::string file;
  std::vector<std::string> dims;  // --dim NAME=N
  std::string dialect = "auto";
  std::string target;
  std::string format = "text";
  KernelSources kernel_sources;
};

void print_issues(const std::vector<ir::Issue>& issues, const std::string& format) {
  if (format == "json") {
    fmt::print("{}", ir::format_issues_json(issues));
  } else {
    fmt::print("{}", ir::format_issues_text(issues));
  }
}

int run_validate(const ValidateOptions& options) {
  const metakernel::SignatureRegistry signatures = load_signatures(options.kernel_sources);
  ir::ReadResult read = read_graph_input(options.file, signatures, options.dims);
  if (!read.graph) {
    print_issues(read.issues, options.format);
    return kExitBadInput;
  }
  const ir::Dialect* dialect =
      options.dialect == "auto" ? (read.graph->applications().empty() ? &ir::Dialect::operation()
                                                                      : &ir::Dialect::application())
                                : ir::Dialect::find(options.dialect);
  if (dialect == nullptr) throw Error(fmt::format("unknown dialect \"{}\"", options.dialect));
  ir::ValidationReport report =
      ir::validate(*read.graph, rewrite::with_kernel_agreement(*dialect, signatures));
  std::vector<ir::Issue> issues = std::move(read.issues);
  for (ir::Issue& issue : report.issues) issues.push_back(std::move(issue));
  if (!options.target.empty()) {
    const cost::Target target = cost::resolve_target(options.target);
    for (std::string& problem : cost::check_devices(*read.graph, target)) {
      issues.push_back(ir::Issue{.type = "placement-device",
                                 .severity = ir::Severity::kError,
                                 .summary = "Device not in the target",
                                 .message = std::move(problem),
                                 .params = nullptr,
                                 .contexts = {}});
    }
  }
  print_issues(issues, options.format);
  return ir::has_errors(issues) ? kExitFailed : kExitOk;
}

}  // namespace

void register_validate(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Check a graph (loom JSON or .tap) against a dialect and its kernels; print the issues");
  cmd->add_option("file", options->file, "the graph: loom JSON or a .tap program")->required();
  cmd->add_option("--dialect", options->dialect,
                  "operation | application | placement (default: application when the graph "
                  "has Application nodes, else operation)")
      ->check(CLI::IsMember({"auto", "operation", "application", "placement"}));
  cmd->add_option("--target", options->target,
                  "also check that every device a Placement tag names exists in this target "
                  "(preset or file)");
  cmd->add_option("--format", options->format, "text | json")
      ->check(CLI::IsMember({"text", "json"}));
  add_kernel_source_options(*cmd, options->kernel_sources);
  add_dim_option(*cmd, options->dims);
  cmd->footer(exit_codes_footer("the graph is invalid (issues printed)"));
  cmd->callback([&dispatch, options] {
    dispatch.name = "validate";
    dispatch.run = [options] { return run_validate(*options); };
  });
}

}  // namespace tapestry::cli
