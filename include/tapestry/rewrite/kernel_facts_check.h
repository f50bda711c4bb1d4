// The kernels of a graph that declare no facts (metakernel/kernel_facts.h): cost prices each at
// 1 FLOP per index point, run metrics count the same and the verifier bounds it by its fallback
// rule — stated defaults, reported as one warning per kernel, never silently:
//
//   warning[kernel-facts-missing]: Kernel swish declares no facts
//     priced at 1 FLOP per index point, verified by the fallback rule (not exact); declare them
//     in its YAML's facts: section (docs/metakernels.md, "Kernel facts")
//     - Operation: Y/swish
//
// The CLI's graph loading prints these warnings (`tapestry cost`, `run`, `verify`, …).
#pragma once

#include <string_view>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/ir/issue.h"

namespace tapestry::rewrite {

inline constexpr std::string_view kKernelFactsMissing = "kernel-facts-missing";

/// One warning per kernel of `graph` (the stages of fused operations included) without facts,
/// naming the first operation that uses it.
std::vector<ir::Issue> missing_kernel_facts(const ir::Graph& graph);

}  // namespace tapestry::rewrite
