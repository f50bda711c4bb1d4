// Work of an application: FLOPs from its kernel and index box, bytes from its boxes (work.h).
#include "tapestry/cost/work.h"

#include <array>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "tapestry/cost/work_rule.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/support/error.h"

namespace tapestry::cost {

namespace {

struct Factor {
  std::string_view kernel;
  double flops;
};

constexpr std::array kFactors = {
    Factor{"matmul", 2},  Factor{"linear", 2},  Factor{"conv2d", 2},   Factor{"add", 1},
    Factor{"sub", 1},     Factor{"mul", 1},     Factor{"div", 1},      Factor{"maximum", 1},
    Factor{"relu", 1},    Factor{"neg", 1},     Factor{"bias_add", 1}, Factor{"sum", 1},
    Factor{"max", 1},     Factor{"reduce", 1},  Factor{"exp", 4},      Factor{"tanh", 4},
    Factor{"sigmoid", 4}, Factor{"gelu", 8},    Factor{"softmax", 5},  Factor{"transpose", 0},
    Factor{"permute", 0}, Factor{"reshape", 0}, Factor{"pad", 0},
};

ir::DType dtype_of(const ir::Graph& graph, ir::TensorId tensor) {
  const ir::LoomDType& dtype = graph.tensor(tensor).dtype();
  if (const std::optional<ir::DType> known = dtype.known()) return *known;
  throw Error(fmt::format("tensor '{}' has dtype '{}', which the cost model does not know",
                          graph.key(tensor), dtype));
}

std::int64_t selection_bytes(const ir::Graph& graph, const ir::SelectionMap& map) {
  std::int64_t bytes = 0;
  for (const auto& entry : map.entries()) {
    const auto size =
        static_cast<std::int64_t>(ir::dtype_size_bytes(dtype_of(graph, entry.value.tensor)));
    bytes += entry.value.range.size() * size;
  }
  return bytes;
}

}  // namespace

double flops_per_point(std::string_view kernel) {
  for (const Factor& f : kFactors) {
    if (f.kernel == kernel) return f.flops;
  }
  return 1;
}

WorkRule work_rule(const ir::Graph& graph, ir::OperationId op) {
  ir::OperationView view = graph.operation(op);
  WorkRule rule;
  if (view.kernel() == rewrite::kFusedKernel) {
    for (const rewrite::FusedStage& stage : rewrite::fused_stages(view.params())) {
      rule.stages.push_back(
          {flops_per_point(stage.kernel), zspace::IndexProjection(stage.index_map)});
    }
  } else {
    rule.stages.push_back({flops_per_point(view.kernel()), std::nullopt});
  }
  const auto& outputs = view.outputs().entries();
  rule.dtype = outputs.begin() == outputs.end() ? ir::DType::kFloat32
                                                : dtype_of(graph, (*outputs.begin()).value.tensor);
  return rule;
}

Work application_work(const ir::Graph& graph, ir::ApplicationId app, const WorkRule& rule) {
  ir::ApplicationView view = graph.application(app);
  const std::optional<zspace::Range> box = view.ipf_index();
  Work work;
  work.dtype = rule.dtype;
  for (const WorkRule::Stage& stage : rule.stages) {
    if (!box || stage.flops_per_point == 0) continue;
    const std::int64_t points = stage.index_map ? stage.index_map->apply(*box).size() : box->size();
    work.flops += stage.flops_per_point * static_cast<double>(points);
  }
  work.bytes_read = selection_bytes(graph, view.inputs());
  work.bytes_written = selection_bytes(graph, view.outputs());
  return work;
}

Work application_work(const ir::Graph& graph, ir::ApplicationId app) {
  return application_work(graph, app, work_rule(graph, graph.application(app).operation()));
}

}  // namespace tapestry::cost
