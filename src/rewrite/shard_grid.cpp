#include "tapestry/rewrite/shard_grid.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/core.h>

#include "op_spec.h"
#include "tapestry/support/assert.h"
#include "tapestry/zspace/format.h"

namespace tapestry::rewrite {

namespace {

ir::SelectionMap project(const ir::SelectionMap& selections, const ir::IpfMap& ipfs,
                         const zspace::Range& cell) {
  ir::SelectionMap out;
  auto p = ipfs.entries();
  std::size_t i = 0;
  for (const auto& s : selections.entries())
    out.append(s.name, {s.value.tensor, p[i++].value.apply(cell)});
  return out;
}

// An output row that linearises several index dims (reshape merging dims: result[2·d0 + d1])
// writes a box — a contiguous run — per grid cell only when, from the largest coefficient to
// the smallest, its dims are cut into single points, then at most one dim is cut any way, then
// the rest are left whole. Otherwise a shard's selection (the bounding box of what it writes)
// holds cells its neighbours write: [0:2, 0:2] ↦ 2·d0 + d1 cut on d1 writes {0, 2} and {1, 3},
// boxes [0:3] and [1:4]. The index dim breaking the rule, if any.
std::optional<std::size_t> scattering_dim(const zspace::AffineMap& map, std::size_t row,
                                          const zspace::Range& index,
                                          std::span<const std::int64_t> parts) {
  std::vector<std::size_t> cols;
  for (std::size_t c = 0; c < map.in_rank(); ++c) {
    if (map.at(row, c) != 0) cols.push_back(c);
  }
  if (cols.size() < 2) return std::nullopt;
  std::stable_sort(cols.begin(), cols.end(), [&](std::size_t a, std::size_t b) {
    return std::abs(map.at(row, a)) > std::abs(map.at(row, b));
  });
  bool cut_seen = false;  // past the one dim that may be cut any way
  for (std::size_t c : cols) {
    if (!cut_seen) {
      cut_seen = parts[c] != index.extent(c);  // cut into single points: still a prefix
    } else if (parts[c] != 1) {
      return c;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> match_shard_grid(const ir::Graph& graph, ir::OperationId op,
                                            std::span<const std::int64_t> parts) {
  if (auto why = detail::why_not_rewritable(graph, op)) return why;
  const ir::OperationView view = graph.operation(op);
  const zspace::Range* index = view.ipf_index();
  if (parts.size() != index->rank()) {
    return fmt::format("{} shard counts given for an index of rank {}", parts.size(),
                       index->rank());
  }
  for (std::size_t d = 0; d < parts.size(); ++d) {
    if (parts[d] < 1 || parts[d] > std::max<std::int64_t>(index->extent(d), 1)) {
      return fmt::format("cannot cut dimension '{}' of extent {} into {} shards",
                         view.index_name(d), index->extent(d), parts[d]);
    }
    if (parts[d] > 1 && view.reduction(d)) {
      return fmt::format("dimension '{}' is a reduction; cutting it needs split-reduction",
                         view.index_name(d));
    }
  }
  for (const auto& out : view.ipf_signature()->outputs.entries()) {
    const zspace::AffineMap& map = out.value.map();
    for (std::size_t row = 0; row < map.out_rank(); ++row) {
      if (auto d = scattering_dim(map, row, *index, parts)) {
        return fmt::format(
            "cutting dimension '{}' would make a shard write scattered cells of its output "
            "'{}' (dim {} linearises several index dims): cut only the outer ones",
            view.index_name(*d), out.name, row);
      }
    }
  }
  return std::nullopt;
}

std::vector<ir::ApplicationId> apply_shard_grid(ir::Graph& graph, ir::OperationId op,
                                                std::span<const std::int64_t> parts) {
  TAPESTRY_ASSERT(!match_shard_grid(graph, op, parts), "apply_shard_grid without a match");
  // Copy what the loop needs: adding applications invalidates references into the graph.
  const zspace::Range index = *graph.operation(op).ipf_index();
  const ir::IpfSignature signature = *graph.operation(op).ipf_signature();
  const ir::SelectionMap inputs = graph.operation(op).inputs();
  const ir::SelectionMap outputs = graph.operation(op).outputs();

  std::vector<ir::ApplicationId> added;
  for (const zspace::Range& cell : index.split_grid(parts)) {
    ir::ApplicationBody body{.operation = op,
                             .inputs = project(inputs, signature.inputs, cell),
                             .outputs = project(outputs, signature.outputs, cell)};
    ir::ApplicationId app = graph.add_application(std::move(body));
    graph.set_ipf_index(app, cell);
    added.push_back(app);
  }
  return added;
}

}  // namespace tapestry::rewrite
