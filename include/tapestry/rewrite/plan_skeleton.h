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
//
// A plan may also name the operations its rewrites derive (plan.h): `tapestry plan GRAPH --plan
// P` lists them after the graph's, each with the operation of the plan it comes from and the
// plan it gets (the plan's entry, else the rewrite's default):
//
//   derived_operations(state.derived)   // after rewrite_operations(g, megatron_plan, …)
//     // Y/matmul         linear_nobias  batch 64, out 32, in 48 (reduction: sum)   from Y …
//     // Y/matmul/reduce  reduce         d0 64, d1 32, block 2 (reduction: sum); aliases: …
//     //                                 plan: split d0 2; with Y/matmul's shards (d0 = block)
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/pattern.h"

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
  /// For a derived operation: "from Y (split-reduction)", and its plan (describe(OpPlan)),
  /// "(named)" appended when the plan has an entry for it. Empty for the graph's own.
  std::string from;
  std::string plan;
};

/// Every operation of `graph`, in graph order.
std::vector<OperationInfo> plannable_operations(const ir::Graph& graph);

/// The derived operations a rewrite run recorded, in the order they were added.
std::vector<OperationInfo> derived_operations(std::span<const DerivedOperation> derived);

/// A table, one line per operation: name, kernel, dims with extents, reductions and aliases;
/// for derived operations a second line with where they come from and their plan.
std::string format_operations(const std::vector<OperationInfo>& ops);

/// One line saying what an entry asks for: "split d0 8; mesh d0 on tp; place gpu:0, gpu:1;
/// with Y/matmul's shards (d0 = block)"; "nothing" for an empty one.
std::string describe(const OpPlan& plan);

/// The plan skeleton above (JSON text, one line per operation, ending in a newline).
std::string plan_skeleton_json(const std::vector<OperationInfo>& ops);

}  // namespace tapestry::rewrite
