// WorkRule: the per-operation part of work.h's rules, computed once per operation so that the
// work of each of its applications is a few multiplications (placement computes thousands).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tapestry/cost/placement.h"
#include "tapestry/ir/graph.h"
#include "tapestry/zspace/index_projection.h"

namespace tapestry::cost {

struct WorkRule {
  struct Stage {
    std::string kernel;  // the operation's kernel, or the fused stage's
    double flops_per_point = 1;
    bool gemm = false;  // a GEMM kernel (target.h, is_gemm_kernel): Work::gemm_flops counts it
    /// Fused stages: the map from the operation's index box to the stage's (nullopt: the box).
    std::optional<zspace::IndexProjection> index_map;
    /// When every row of index_map has at most one non-zero coefficient, ±1 (a projection or
    /// permutation of the operation's dims, as fusion makes them): per stage dim, the operation
    /// dim it follows (-1: none) and its tile, so points() needs no Range. Empty otherwise.
    std::vector<std::pair<int, std::int64_t>> projection;

    /// The stage's index points over the operation's index box `box`.
    [[nodiscard]] std::int64_t points(const zspace::Range& box) const;
  };
  std::vector<Stage> stages;  // one, or one per fused stage
  ir::DType dtype = ir::DType::kFloat32;
};

/// Adds a stage's FLOPs over `points` index points to `work` (flops, and gemm_flops for a GEMM).
void add_stage_flops(const WorkRule::Stage& stage, std::int64_t points, Work& work);

/// A fused stage of `flops` per point over `index_map` (its projection filled in when it is one).
WorkRule::Stage fused_stage(std::string kernel, double flops, zspace::IndexProjection index_map);

/// The rule of operation `op` (Error when a tensor's dtype is unknown or a fused operation's
/// stages are malformed).
WorkRule work_rule(const ir::Graph& graph, ir::OperationId op);
/// The work of `app`, an application of the operation `rule` was made for.
Work application_work(const ir::Graph& graph, ir::ApplicationId app, const WorkRule& rule);
/// Each stage's kernel and part of the FLOPs over index box `box` (PlacedOperation::kernels).
std::vector<KernelShare> kernel_shares(const WorkRule& rule, const zspace::Range& box);
/// The same into `out`, reusing its storage (the Evaluator's loop).
void kernel_shares(const WorkRule& rule, const zspace::Range& box, std::vector<KernelShare>& out);

}  // namespace tapestry::cost
