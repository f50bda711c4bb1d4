// OpSpec: an operation as plain values — what rewrites read, edit and add back.
//
// Rewrites replace operations (ir::Graph::remove), so they first take a snapshot of the
// operations they replace; `add_op` adds an edited snapshot back, with selections = IPF(index)
// for every port and the IPFIndex / IPFSignature tags, and no Application (lowering adds those).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/zspace/index_projection.h"

namespace tapestry::rewrite::detail {

struct Port {
  std::string name;  // the kernel's input/output list name ("x", "result")
  ir::TensorId tensor;
  zspace::IndexProjection ipf;
};

struct OpSpec {
  std::string label;
  std::string kernel;
  nlohmann::json params;
  zspace::Range index;
  std::vector<std::string> index_names;  // explicit, one per index dim
  std::vector<ir::Reduction> reductions;
  std::vector<Port> inputs;  // in (name, position) order
  std::vector<Port> outputs;

  [[nodiscard]] std::optional<std::size_t> dim(std::string_view name) const;
  [[nodiscard]] const ir::Reduction* reduction(std::string_view dim) const;
};

/// Why `op` cannot be rewritten (no IPFIndex, no IPFSignature parallel to its selections).
std::optional<std::string> why_not_rewritable(const ir::Graph& graph, ir::OperationId op);
/// The snapshot of `op` (precondition: why_not_rewritable is nullopt). Index names are made
/// explicit (d0, d1, … when the operation has none). `with_params` false leaves `params` null: a
/// fused operation's params hold every stage, and a match that reads only the ports need not
/// copy them.
OpSpec spec_of(const ir::Graph& graph, ir::OperationId op, bool with_params = true);
/// Adds the operation (no Application). By value: a spec the caller is done with moves its
/// params (all the stages of a fused operation) instead of copying them.
ir::OperationId add_op(ir::Graph& graph, OpSpec spec);

/// The index dim that tensor dim `row` of `ipf` follows: the one column with a non-zero
/// coefficient in that row; nullopt when the row is constant or mixes several dims.
std::optional<std::size_t> followed_dim(const zspace::IndexProjection& ipf, std::size_t row);

/// Carries plan splits across a rewrite through one tensor both operations see: tensor dim t
/// follows old dim followed_dim(old_ipf, t) and new dim followed_dim(new_ipf, t), so a split of
/// the first becomes a split of the second. Adds to `out` (names from `new_names`).
void transfer_splits(const OpSpec& old, const OpPlan& old_plan,
                     const zspace::IndexProjection& old_ipf, const zspace::IndexProjection& new_ipf,
                     const std::vector<std::string>& new_names,
                     std::map<std::string, std::int64_t>& out);

/// transfer_splits for mesh axes: a mesh entry of the old dim that tensor dim t follows becomes
/// one of the new dim that follows it. Adds to `out` (names from `new_names`).
void transfer_mesh(const OpSpec& old, const OpPlan& old_plan,
                   const zspace::IndexProjection& old_ipf, const zspace::IndexProjection& new_ipf,
                   const std::vector<std::string>& new_names,
                   std::map<std::string, std::string>& out);

/// A fresh index dim name: `base`, else base1, base2, … not in `names`.
std::string fresh_name(const std::vector<std::string>& names, const std::string& base);

}  // namespace tapestry::rewrite::detail
