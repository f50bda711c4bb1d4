#include "py_graph.h"

#include <fmt/core.h>

#include <filesystem>

#include "errors.h"
#include "tapestry/ir/dialect.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/kernel_agreement.h"
#include "tapestry/support/file.h"
#include "tapestry/workflow/run.h"

namespace tapestry::python {

namespace {

// A graph's issues as the diagnostics a GraphError carries (its message keeps their loom text).
std::vector<support::Diagnostic> issue_diagnostics(const std::vector<ir::Issue>& issues) {
  std::vector<support::Diagnostic> diagnostics;
  for (const ir::Issue& issue : issues) diagnostics.push_back(ir::to_diagnostic(issue));
  return diagnostics;
}

// Validates as `tapestry run` does: the graph's dialect plus operation-kernel-agreement.
void check_valid(const ir::Graph& graph, const metakernel::SignatureRegistry& signatures,
                 const std::string& source) {
  const ir::Dialect& dialect =
      graph.applications().empty() ? ir::Dialect::operation() : ir::Dialect::application();
  const ir::ValidationReport report =
      ir::validate(graph, rewrite::with_kernel_agreement(dialect, signatures));
  if (!report.is_valid()) {
    throw GraphError(
        fmt::format("{}: the graph is invalid:\n{}", source, ir::format_issues_text(report.issues)),
        issue_diagnostics(report.issues));
  }
}

ir::Graph take_built(metakernel::BuildResult built) {
  if (!built.ok()) throw GraphError(std::move(built.diagnostics));
  return std::move(*built.graph);
}

}  // namespace

Signatures builtin_signatures_ptr() {
  // The registry is a process-wide static: shared without ownership.
  static const Signatures builtins(&metakernel::builtin_signatures(),
                                   [](const metakernel::SignatureRegistry*) {});
  return builtins;
}

Signatures load_signatures(const std::vector<std::string>& dirs) {
  if (dirs.empty()) return builtin_signatures_ptr();
  auto signatures = std::make_shared<metakernel::SignatureRegistry>(
      metakernel::SignatureRegistry::with_builtins());
  for (const std::string& dir : dirs) signatures->load_directory(dir);
  return signatures;
}

ir::Graph load_graph_file(const std::string& path, const metakernel::SignatureRegistry& signatures,
                          const metakernel::tap::DimBindings& dims) {
  check_readable_file(path);  // "cannot read PATH: no such file", as the CLI says it
  ir::Graph graph;
  if (!dims.empty() && !path.ends_with(".tap")) {
    throw GraphError(
        fmt::format("{}: dims bind the dim variables of a .tap program; a loom JSON "
                    "graph's sizes are fixed",
                    path));
  }
  if (path.ends_with(".tap")) {
    graph = take_built(metakernel::build_tap_file(path, signatures, {}, {dims}));
  } else {
    ir::ReadResult read = ir::read_graph_file(path);
    if (!read.has_graph() || ir::has_errors(read.issues)) {
      throw GraphError(
          fmt::format("{}: cannot read the graph:\n{}", path, ir::format_issues_text(read.issues)),
          issue_diagnostics(read.issues));
    }
    graph = std::move(*read.graph);
  }
  check_valid(graph, signatures, path);
  return graph;
}

ir::Graph parse_tap_text(const std::string& text, const std::string& source_name,
                         const metakernel::SignatureRegistry& signatures,
                         const metakernel::tap::DimBindings& dims) {
  auto file = std::make_shared<const metakernel::SourceFile>(source_name, text);
  ir::Graph graph = take_built(metakernel::build_tap(file, signatures, {}, {dims}));
  check_valid(graph, signatures, source_name);
  return graph;
}

PyGraph::PyGraph(Signatures signatures)
    : signatures_(std::move(signatures)),
      source_("<builder>"),
      builder_(std::make_unique<metakernel::Graph>(*signatures_)) {}

PyGraph::PyGraph(ir::Graph graph, Signatures signatures, std::string source)
    : signatures_(std::move(signatures)),
      source_(std::move(source)),
      loaded_(std::make_shared<const ir::Graph>(std::move(graph))),
      validated_(loaded_) {}

metakernel::Tensor PyGraph::input(const std::string& name, ir::DType dtype,
                                  const zspace::Range& range) {
  metakernel::Tensor t = rethrow_as<GraphError>([&] {
    return handle_builder().input(name, metakernel::TensorType{dtype, range});
  });
  changed();
  return t;
}

metakernel::Tensor PyGraph::call(std::string_view kernel,
                                 const std::vector<metakernel::Tensor>& inputs,
                                 const nlohmann::json& params) {
  metakernel::Tensor t =
      rethrow_as<GraphError>([&] { return handle_builder().call(kernel, inputs, params); });
  changed();
  return t;
}

metakernel::Tensor PyGraph::assign(const std::string& name, metakernel::Tensor value) {
  metakernel::Tensor t =
      rethrow_as<GraphError>([&] { return handle_builder().assign(name, value); });
  changed();
  return t;
}

std::vector<metakernel::Tensor> PyGraph::grad(metakernel::Tensor loss,
                                              const std::vector<metakernel::Tensor>& wrt,
                                              const metakernel::GradOptions& options) {
  std::vector<metakernel::Tensor> grads =
      rethrow_as<GraphError>([&] { return handle_builder().grad(loss, wrt, options); });
  changed();
  return grads;
}

void PyGraph::update(metakernel::Tensor state, metakernel::Tensor next) {
  rethrow_as<GraphError>([&] {
    handle_builder().update(state, next);
    handle_builder().output(next);  // the step's results must hold it
  });
  changed();
}

void PyGraph::output(metakernel::Tensor value) {
  rethrow_as<GraphError>([&] { handle_builder().output(value); });
  changed();
}

metakernel::Graph& PyGraph::handle_builder() {
  if (!builder_) {
    throw GraphError(fmt::format(
        "{}: a loaded graph cannot be extended (build a new tapestry.Graph() instead)", source_));
  }
  return *builder_;
}

std::optional<metakernel::Tensor> PyGraph::handle(ir::TensorId id) {
  if (!builder_) return std::nullopt;
  std::optional<metakernel::Tensor> found = builder_->find(builder_->ir().tensor(id).label());
  if (!found || found->id() != id) return std::nullopt;
  return found;
}

const ir::Graph& PyGraph::current() const {
  return builder_ ? builder_->ir() : *loaded_;
}

std::shared_ptr<const ir::Graph> PyGraph::validated() {
  if (!validated_) {
    auto snapshot = std::make_shared<const ir::Graph>(builder_->ir());
    check_valid(*snapshot, *signatures_, source_);
    validated_ = std::move(snapshot);
  }
  return validated_;
}

CompiledRun& PyGraph::compiled_run(const std::shared_ptr<const ir::Graph>& snapshot,
                                   const rewrite::Plan& plan, int threads, bool reference_kernels,
                                   bool cuda) {
  const std::string plan_key = plan.to_json().dump();
  if (compiled_ && compiled_->source == snapshot && compiled_->plan_key == plan_key &&
      compiled_->threads == threads && compiled_->reference_kernels == reference_kernels &&
      compiled_->cuda == cuda) {
    return *compiled_;
  }
  compiled_.reset();  // its buffers go before the new program allocates
  auto run = std::make_unique<CompiledRun>();
  run->source = snapshot;
  run->plan_key = plan_key;
  run->threads = threads;
  run->reference_kernels = reference_kernels;
  run->cuda = cuda;
  run->lowered = workflow::lower_for_run(*snapshot, plan, {.signatures = signatures_.get()});
  if (cuda) {
    run->gpu_executor = std::make_unique<gpu::CudaExecutor>(
        run->lowered.graph,
        gpu::CudaExecutorOptions{.host_kernels = reference_kernels
                                                     ? &runtime::ExecutableKernels::reference()
                                                     : nullptr});
    compiled_ = std::move(run);
    return *compiled_;
  }
  run->executor = std::make_unique<runtime::BlockExecutor>(
      run->lowered.graph,
      runtime::BlockExecutorOptions{
          .threads = threads,
          .kernels = reference_kernels ? &runtime::ExecutableKernels::reference() : nullptr});
  compiled_ = std::move(run);
  return *compiled_;
}

cost::Evaluator& PyGraph::evaluator(const std::shared_ptr<const ir::Graph>& snapshot,
                                    const std::string& target_key, const cost::Target& target) {
  if (!evaluator_ || evaluator_->source != snapshot || evaluator_->target_key != target_key) {
    evaluator_.reset();
    evaluator_ = std::make_unique<KeptEvaluator>(KeptEvaluator{
        snapshot, target_key,
        std::make_unique<cost::Evaluator>(*snapshot, target,
                                          rewrite::LowerOptions{.signatures = signatures_.get()})});
  }
  return *evaluator_->evaluator;
}

void PyGraph::release() {
  const std::lock_guard lock(work_mutex_);
  compiled_.reset();
  evaluator_.reset();
}

}  // namespace tapestry::python
