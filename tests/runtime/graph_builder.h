// Test helpers: build small operation and application graphs by hand with the ir Graph API.
//
//   GraphBuilder b;
//   TensorId x = b.tensor("X", "float32", Range({-3, 0}, {2, 4}));
//   TensorId y = b.tensor("Y", "float32", Range({-3, 0}, {2, 4}));
//   OperationId op = b.op("relu", Range::of_shape({5, 4}),
//                         {{"x", x, ipf({{1, 0}, {0, 1}}, {-3, 0})}},
//                         {{"result", y, ipf({{1, 0}, {0, 1}}, {-3, 0})}});
//   b.shard(op, {2, 1});        // Applications over a 2×1 grid of the index
//
// Selections are always IPF(box), so the graphs satisfy the operation/application dialects.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/graph.h"
#include "tapestry/zspace/affine_map.h"
#include "tapestry/zspace/index_projection.h"
#include "tapestry/zspace/range.h"

namespace tapestry::runtime::testing {

using ir::OperationId;
using ir::TensorId;
using zspace::IndexProjection;
using zspace::Point;
using zspace::Range;

/// An IPF from matrix rows, offset and (default all-ones) cell shape.
inline IndexProjection ipf(const std::vector<std::vector<std::int64_t>>& rows, Point offset,
                           std::optional<Point> shape = std::nullopt, std::size_t in_rank = 0) {
  zspace::AffineMap map = zspace::AffineMap::from_rows(rows, std::move(offset), in_rank);
  if (!shape) return IndexProjection(std::move(map));
  return IndexProjection(std::move(map), std::move(*shape));
}

/// A named port of an operation: list name, tensor, IPF.
struct Port {
  std::string name;
  TensorId tensor;
  IndexProjection ipf;
};

/// Adds one Application of `op` over `box` to `graph`, with selections IPF(box).
inline ir::ApplicationId add_application(ir::Graph& graph, OperationId op, const Range& box) {
  const ir::OperationView view = graph.operation(op);
  const ir::IpfSignature& signature = *view.ipf_signature();
  ir::ApplicationBody body{.operation = op};
  for (const auto& e : view.inputs().entries()) {
    body.inputs.append(e.name,
                       {e.value.tensor, signature.inputs.list(e.name)[e.position].apply(box)});
  }
  for (const auto& e : view.outputs().entries()) {
    body.outputs.append(e.name,
                        {e.value.tensor, signature.outputs.list(e.name)[e.position].apply(box)});
  }
  ir::ApplicationId id = graph.add_application(std::move(body));
  graph.set_ipf_index(id, box);
  return id;
}

class GraphBuilder {
 public:
  /// A tensor whose dtype has the loom name `dtype` ("float32"; any other spelling is kept as an
  /// unknown dtype, as a loom file would); "float32" means `float32_as` when that is set.
  TensorId tensor(const std::string& label, std::string_view dtype, Range range) {
    if (dtype == "float32" && !float32_as.empty()) dtype = float32_as;
    return graph.add_tensor({.dtype = ir::LoomDType::parse(dtype), .range = std::move(range)},
                            {.label = label});
  }

  /// The dtype a graph built for float32 gets instead ("bfloat16": the same cases in bf16).
  std::string float32_as;

  /// An operation over `index`; selections are IPF(index). `index_names` / `reductions` are
  /// optional (the runtime derives reduction dims from the output IPFs).
  OperationId op(const std::string& kernel, const Range& index, const std::vector<Port>& inputs,
                 const std::vector<Port>& outputs, nlohmann::json params = nullptr,
                 std::vector<std::string> index_names = {},
                 std::vector<ir::Reduction> reductions = {}) {
    ir::OperationBody body{.kernel = kernel, .params = std::move(params)};
    ir::IpfSignature signature;
    for (const Port& p : inputs) {
      body.inputs.append(p.name, {p.tensor, p.ipf.apply(index)});
      signature.inputs.append(p.name, p.ipf);
    }
    for (const Port& p : outputs) {
      body.outputs.append(p.name, {p.tensor, p.ipf.apply(index)});
      signature.outputs.append(p.name, p.ipf);
    }
    body.index_names = std::move(index_names);
    body.reductions = std::move(reductions);
    OperationId id =
        graph.add_operation(std::move(body), {.label = kernel + "_" + std::to_string(++ops_)});
    graph.set_ipf_index(id, index);
    graph.set_ipf_signature(id, std::move(signature));
    return id;
  }

  /// One Application over `box`, selections IPF(box).
  ir::ApplicationId application(OperationId op, const Range& box) {
    return add_application(graph, op, box);
  }

  /// Applications over a grid of the operation's index: parts[d] near-equal pieces of dim d.
  void shard(OperationId op, const std::vector<std::int64_t>& parts) {
    const Range index = *graph.operation(op).ipf_index();
    for (const Range& box : index.split_grid(parts)) application(op, box);
  }

  /// Applications over explicit sizes along one dim.
  void shard_sizes(OperationId op, std::size_t dim, const std::vector<std::int64_t>& sizes) {
    const Range index = *graph.operation(op).ipf_index();
    for (const Range& box : index.split_by_sizes(dim, sizes)) application(op, box);
  }

  ir::Graph graph;

 private:
  int ops_ = 0;
};

}  // namespace tapestry::runtime::testing
