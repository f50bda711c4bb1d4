#include "tapestry/rewrite/shard_grid.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/core.h>

#include "op_spec.h"
#include "tapestry/support/assert.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/grid.h"

namespace tapestry::rewrite {

namespace {

// Writes IPF(cell) into every box of `selections` (parallel to `ipfs`, entry by entry).
void project_into(ir::SelectionMap& selections, const ir::IpfMap& ipfs, const zspace::Range& cell) {
  const auto& p = ipfs.entries();
  selections.for_each_box(
      [&](std::size_t i, std::span<std::int64_t> start, std::span<std::int64_t> end) {
        const zspace::Range box = p[i].value.apply(cell);
        std::copy(box.start().coords().begin(), box.start().coords().end(), start.begin());
        std::copy(box.end().coords().begin(), box.end().coords().end(), end.begin());
      });
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
  std::size_t nonzero = 0;
  for (std::size_t c = 0; c < map.in_rank(); ++c) nonzero += map.at(row, c) != 0;
  if (nonzero < 2) return std::nullopt;  // the common case, without allocating
  std::vector<std::size_t> cols;
  for (std::size_t c = 0; c < map.in_rank(); ++c) {
    if (map.at(row, c) != 0) cols.push_back(c);
  }
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
  return match_shard_counts(graph, op, parts);
}

std::optional<std::string> match_shard_counts(const ir::Graph& graph, ir::OperationId op,
                                              std::span<const std::int64_t> parts) {
  const ir::OperationView view = graph.operation(op);
  const std::optional<zspace::Range> index = view.ipf_index();
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
  // Cells one at a time (zspace::Grid), not split_grid's vector: a million 128-byte Ranges.
  const zspace::Grid grid(index, parts);
  graph.reserve_applications(op, grid.size());

  // Every shard's selection maps have the operation's names, positions and tensors; only the
  // boxes differ. So each starts as a copy of the operation's maps (one allocation) and gets
  // its boxes written in place — no per-shard name lookups or sorting.
  ir::ApplicationBody body{.operation = op,
                           .inputs = graph.operation(op).inputs(),
                           .outputs = graph.operation(op).outputs()};
  std::vector<ir::ApplicationId> added;
  added.reserve(grid.size());
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const zspace::Range cell = grid.cell(i);
    project_into(body.inputs, signature.inputs, cell);
    project_into(body.outputs, signature.outputs, cell);
    ir::ApplicationId app = graph.add_application(body);
    graph.set_ipf_index(app, cell);
    added.push_back(app);
  }
  return added;
}

std::vector<std::int64_t> first_application_ids(const ir::Graph& graph,
                                                std::span<const std::int64_t> shards) {
  TAPESTRY_ASSERT(shards.size() == graph.operations().size(),
                  "first_application_ids: one shard count per operation");
  std::vector<std::int64_t> first;
  first.reserve(shards.size());
  std::int64_t next = static_cast<std::int64_t>(graph.size());
  for (std::int64_t n : shards) {
    first.push_back(next);
    next += n;
  }
  return first;
}

}  // namespace tapestry::rewrite
