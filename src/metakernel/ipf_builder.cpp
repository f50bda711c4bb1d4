// IPF construction from a kernel's IPF list. Each list entry yields one or more tensor
// dimensions, i.e. rows of the affine map:
//   `$g...`           one identity row per dimension of the group in this tensor, right-aligned
//                     against the index's group columns; a broadcast dimension of size 1
//                     (where the broadcast size is not 1) gets a zero row — it always reads 0;
//   `*`               a zero row whose window is the whole tensor dimension;
//   `expr [: window]` the affine form of expr over the index coordinates; window default 1.
// Finally the tensor's start is added to the offset: IPFs map into tensor coordinates.
#include <fmt/core.h>

#include "bindings.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::metakernel::detail {

namespace {

struct Rows {
  std::vector<std::vector<std::int64_t>> matrix;
  std::vector<std::int64_t> offset;
  std::vector<std::int64_t> window;

  void add(std::vector<std::int64_t> row, std::int64_t off, std::int64_t win) {
    matrix.push_back(std::move(row));
    offset.push_back(off);
    window.push_back(win);
  }
};

// The sizes of group `g` as tensor `input` has it (an output has the unified sizes).
const std::vector<std::int64_t>& group_sizes_in(const Bindings& b, const std::string& g,
                                                std::size_t input) {
  const GroupBinding& group = b.groups.at(g);
  if (const GroupOccurrence* o = group.in_input(input)) return o->sizes;
  return group.sizes;
}

void add_group(const Bindings& b, const IndexLayout& layout, const std::string& port,
               const std::string& g, std::size_t input, Rows& rows) {
  const auto entry = layout.entries.find(g);
  if (entry == layout.entries.end() || !b.groups.count(g)) {
    b.fail("kernel definition error: the IPF of {} uses ${}... but the index has no such group",
           port, g);
  }
  const auto [first, count] = entry->second;
  const std::vector<std::int64_t>& mine = group_sizes_in(b, g, input);
  const std::vector<std::int64_t>& unified = b.groups.at(g).sizes;
  if (mine.size() > count) {
    b.fail("kernel definition error: {} has more ${}... dims than the index", port, g);
  }
  const std::size_t pad = count - mine.size();
  for (std::size_t k = 0; k < mine.size(); ++k) {
    std::vector<std::int64_t> row(layout.dims.size(), 0);
    const bool broadcast_one = b.kernel.is_broadcast(g) && mine[k] == 1 && unified[pad + k] != 1;
    if (!broadcast_one) row[first + pad + k] = 1;
    rows.add(std::move(row), 0, 1);
  }
}

void add_expr(const Bindings& b, const ListEntry& e, const ExprEnv& env, const std::string& port,
              Rows& rows) {
  AffineForm form;
  std::int64_t window = 1;
  try {
    form = e.expr->evaluate_affine(env);
    if (e.window) window = e.window->evaluate(env);
  } catch (const Error& error) {
    b.fail("IPF of {}: {}", port, error.what());
  }
  if (window < 0)
    b.fail("IPF of {}: window {} is negative ({})", port, window, e.window->to_string());
  rows.add(std::move(form.coeffs), form.constant, window);
}

}  // namespace

zspace::IndexProjection build_ipf(const Bindings& b, const IndexLayout& layout,
                                  const std::string& port, const TensorType& type,
                                  std::size_t input) {
  ExprEnv env = b.scalar_env();
  env.index_rank = layout.dims.size();
  env.coord = [&](std::string_view name) -> std::optional<std::size_t> {
    const auto it = layout.entries.find(std::string(name));
    if (it == layout.entries.end() || b.groups.count(it->first)) return std::nullopt;
    return it->second.first;
  };
  Rows rows;
  for (const ListEntry& e : b.kernel.ipfs.at(port)) {
    const std::size_t dim = rows.matrix.size();
    switch (e.kind) {
      case ListEntry::Kind::kGroup:
        add_group(b, layout, port, e.group, input, rows);
        break;
      case ListEntry::Kind::kWhole:
        rows.add(std::vector<std::int64_t>(layout.dims.size(), 0), 0,
                 dim < type.rank() ? type.extent(dim) : 1);
        break;
      case ListEntry::Kind::kExpr:
        add_expr(b, e, env, port, rows);
        break;
    }
  }
  if (rows.matrix.size() != type.rank()) {
    b.fail("kernel definition error: the IPF of {} gives {} dims but {} has rank {}", port,
           rows.matrix.size(), port, type.rank());
  }
  for (std::size_t d = 0; d < type.rank(); ++d) {
    rows.offset[d] = zspace::checked_add(rows.offset[d], type.range.start()[d]);
  }
  const zspace::AffineMap map =
      zspace::AffineMap::from_rows(rows.matrix, zspace::Point(rows.offset), layout.dims.size());
  return zspace::IndexProjection(map, zspace::Point(rows.window));
}

}  // namespace tapestry::metakernel::detail
