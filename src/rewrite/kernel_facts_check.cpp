// kernel-facts-missing: the graph's kernels without facts (kernel_facts_check.h).
#include "tapestry/rewrite/kernel_facts_check.h"

#include <fmt/format.h>

#include <set>
#include <string>

#include "tapestry/metakernel/kernel_facts.h"
#include "tapestry/rewrite/fused.h"

namespace tapestry::rewrite {

namespace {

ir::Issue missing(std::string_view kernel, const std::string& operation) {
  return ir::Issue{
      .type = std::string(kKernelFactsMissing),
      .severity = ir::Severity::kWarning,
      .summary = fmt::format("Kernel {} declares no facts", kernel),
      .message =
          "priced at 1 FLOP per index point, verified by the fallback rule (not exact); "
          "declare them in its YAML's facts: section (docs/metakernels.md, \"Kernel "
          "facts\")",
      .contexts = {ir::IssueContext{.name = "Operation", .message = operation}}};
}

}  // namespace

std::vector<ir::Issue> missing_kernel_facts(const ir::Graph& graph) {
  std::vector<ir::Issue> out;
  std::set<std::string, std::less<>> reported;
  // A fused kernel has no facts of its own: its stages (fused again, perhaps) are checked.
  const auto check = [&](const auto& self, std::string_view kernel, const nlohmann::json& params,
                         ir::OperationId op) -> void {
    if (kernel == kFusedKernel) {
      for (const FusedStage& stage : fused_stages(params))
        self(self, stage.kernel, stage.params, op);
      return;
    }
    if (metakernel::find_kernel_facts(kernel) != nullptr) return;
    if (!reported.emplace(kernel).second) return;
    out.push_back(missing(kernel, graph.display_name(op)));
  };
  for (const ir::OperationId op : graph.operations()) {
    const ir::OperationView view = graph.operation(op);
    check(check, view.kernel(), view.params(), op);
  }
  return out;
}

}  // namespace tapestry::rewrite
