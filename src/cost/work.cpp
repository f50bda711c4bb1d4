// Work of an application: FLOPs from its kernel and index box, bytes from its boxes (work.h).
#include "tapestry/cost/work.h"

#include <optional>
#include <utility>

#include <fmt/format.h>

#include "tapestry/cost/target.h"
#include "tapestry/cost/work_rule.h"
#include "tapestry/metakernel/kernel_facts.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/range.h"

namespace tapestry::cost {

namespace {

// The port whose box for one index point holds several elements, each costing the kernel's
// `flops`: conv2d's window (w: kh × kw per point), softmax's row (result: the softmax axis).
std::string_view per_point_port(std::string_view kernel) {
  return metakernel::kernel_facts(kernel).per_point;
}

// The elements of `ipf`'s box for one index point (the unit box at the origin).
double elements_per_point(const zspace::IndexProjection& ipf, std::size_t rank) {
  const std::vector<std::int64_t> zeros(rank, 0), ones(rank, 1);
  return static_cast<double>(
      ipf.apply(zspace::Range(zspace::Point(zeros), zspace::Point(ones))).size());
}

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
  return metakernel::kernel_facts(kernel).flops;
}

namespace {

std::vector<std::pair<int, std::int64_t>> projection_of(const zspace::IndexProjection& ipf) {
  std::vector<std::pair<int, std::int64_t>> rule;
  const zspace::AffineMap& map = ipf.map();
  for (std::size_t r = 0; r < map.out_rank(); ++r) {
    int col = -1;
    for (std::size_t c = 0; c < map.in_rank(); ++c) {
      const std::int64_t a = map.at(r, c);
      if (a == 0) continue;
      if ((a != 1 && a != -1) || col >= 0) return {};
      col = static_cast<int>(c);
    }
    rule.emplace_back(col, ipf.shape()[r]);
  }
  return rule;
}

}  // namespace

std::int64_t WorkRule::Stage::points(const zspace::Range& box) const {
  if (!index_map) return box.size();
  if (projection.empty() || box.is_empty()) return index_map->apply(box).size();
  std::int64_t n = 1;
  for (const auto& [col, tile] : projection) {
    n *= col < 0 ? tile : box.extent(static_cast<std::size_t>(col)) - 1 + tile;
  }
  return n;
}

WorkRule::Stage fused_stage(std::string kernel, double flops, zspace::IndexProjection index_map) {
  std::vector<std::pair<int, std::int64_t>> projection = projection_of(index_map);
  const bool gemm = is_gemm_kernel(kernel);
  return {std::move(kernel), flops, gemm, std::move(index_map), std::move(projection)};
}

void add_stage_flops(const WorkRule::Stage& stage, std::int64_t points, Work& work) {
  const double flops = stage.flops_per_point * static_cast<double>(points);
  work.flops += flops;
  if (stage.gemm) work.gemm_flops += flops;
}

WorkRule work_rule(const ir::Graph& graph, ir::OperationId op) {
  ir::OperationView view = graph.operation(op);
  WorkRule rule;
  if (view.kernel() == rewrite::kFusedKernel) {
    const auto stages = rewrite::shared_fused_stages(view.params());
    for (const rewrite::FusedStage& stage : *stages) {
      double flops = flops_per_point(stage.kernel);
      const std::string_view port = per_point_port(stage.kernel);
      for (const auto* ports : {&stage.inputs, &stage.outputs}) {
        for (const rewrite::FusedPort& p : *ports) {
          if (!port.empty() && p.name == port) {
            flops *= elements_per_point(p.ipf, stage.index_names.size());
          }
        }
      }
      rule.stages.push_back(
          fused_stage(stage.kernel, flops, zspace::IndexProjection(stage.index_map)));
    }
  } else {
    double flops = flops_per_point(view.kernel());
    const std::string_view port = per_point_port(view.kernel());
    if (const ir::IpfSignature* signature = view.ipf_signature(); signature && !port.empty()) {
      for (const ir::IpfMap* map : {&signature->inputs, &signature->outputs}) {
        const auto list = map->list(port);
        if (!list.empty()) flops *= elements_per_point(list[0], view.index_rank());
      }
    }
    rule.stages.push_back(
        {std::string(view.kernel()), flops, is_gemm_kernel(view.kernel()), std::nullopt, {}});
  }
  // The rate is the operands': a 16-bit GEMM that writes float32 partial sums (a split
  // reduction of a bf16 graph keeps them in f32: rewrite/mixed_precision.h) runs at bf16's rate.
  // The narrowest float input, else the first output's dtype.
  std::optional<ir::DType> narrowest;
  for (const auto& entry : view.inputs().entries()) {
    const ir::DType d = dtype_of(graph, entry.value.tensor);
    if (ir::is_float(d) &&
        (!narrowest || ir::dtype_size_bytes(d) < ir::dtype_size_bytes(*narrowest)))
      narrowest = d;
  }
  const auto& outputs = view.outputs().entries();
  rule.dtype = narrowest ? *narrowest
               : outputs.begin() == outputs.end()
                   ? ir::DType::kFloat32
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
    add_stage_flops(stage, stage.points(*box), work);
  }
  work.bytes_read = selection_bytes(graph, view.inputs());
  work.bytes_written = selection_bytes(graph, view.outputs());
  return work;
}

void kernel_shares(const WorkRule& rule, const zspace::Range& box, std::vector<KernelShare>& out) {
  std::size_t n = 0;
  double total = 0;
  for (const WorkRule::Stage& stage : rule.stages) {
    if (stage.flops_per_point == 0) continue;
    const std::int64_t points = stage.points(box);
    const double flops = stage.flops_per_point * static_cast<double>(points);
    if (flops == 0) continue;
    if (out.size() <= n) out.emplace_back();
    out[n].kernel.assign(stage.kernel);
    out[n].share = flops;
    total += flops;
    ++n;
  }
  out.resize(n);
  for (KernelShare& s : out) s.share /= total;
}

std::vector<KernelShare> kernel_shares(const WorkRule& rule, const zspace::Range& box) {
  std::vector<KernelShare> shares;
  kernel_shares(rule, box, shares);
  return shares;
}

Work application_work(const ir::Graph& graph, ir::ApplicationId app) {
  return application_work(graph, app, work_rule(graph, graph.application(app).operation()));
}

}  // namespace tapestry::cost
