// What a plan can name: every operation of a graph with its kernel and index dimensions, and a
// plan skeleton to edit (`tapestry plan GRAPH [--json]`).
//
// For `Y = relu(linear(X, W, b))` with X: f32[-40:60, 20:32], W: f32[32, 12]:
//
//   plannable_operations(g)
//     // Y/linear  linear  batch 100, out 32, in 12 (reduction: sum)
//     // Y         relu    d0 100, d1 32             (aliases: batch = d0, out = d1)
//   plan_skeleton_json(ops)
//     // {
//     //   "ops": {
//     //     "Y/linear": {"split": {"batch": 1, "out": 1, "in": 1}},
//     //     "Y": {"split": {"d0": 1, "d1": 1}}
//     //   },
//     //   "fuse": []
//     // }
//
// The skeleton is a valid plan that cuts nothing (every count 1): change a count to shard, add
// "substitute", "fuse" or "place" (docs/rewrites.md). Operations are in graph order, dims in
// index order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"

namespace tapestry::rewrite {

/// One index dimension of an operation.
struct IndexDimInfo {
  std::string name;
  std::int64_t extent = 0;
  std::optional<ir::Monoid> reduction;  // set for a reduction dim
  std::vector<std::string> aliases;     // other names a plan may use (dim_aliases.h)
};

/// One operation, named as plans name it (plan.h, operation_name).
struct OperationInfo {
  std::string name;
  std::string kernel;
  std::vector<IndexDimInfo> dims;
};

/// Every operation of `graph`, in graph order.
std::vector<OperationInfo> plannable_operations(const ir::Graph& graph);

/// A table, one line per operation: name, kernel, dims with extents, reductions and aliases.
std::string format_operations(const std::vector<OperationInfo>& ops);

/// The plan skeleton above (JSON text, one line per operation, ending in a newline).
std::string plan_skeleton_json(const std::vector<OperationInfo>& ops);

}  // namespace tapestry::rewrite
