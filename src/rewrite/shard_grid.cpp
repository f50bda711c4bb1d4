#include "tapestry/rewrite/shard_grid.h"

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
