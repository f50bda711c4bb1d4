// The C++ hooks (see hooks.h for why each exists): reshape, permute, sum_to and arg_extreme.
#include "tapestry/metakernel/hooks.h"

#include <fmt/format.h>

#include "tapestry/support/error.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::metakernel {

namespace {

template <typename... Args>
[[noreturn]] void fail(const HookInput& in, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(in.kernel.name + ": " + fmt::format(format, std::forward<Args>(args)...));
}

std::string label(const HookInput& in) {
  return in.args[0].label.empty() ? in.kernel.inputs[0].name : in.args[0].label;
}

DType output_dtype(const HookInput& in) {
  const DTypeSpec& spec = in.kernel.outputs.at(0).dtype;
  return spec.fixed ? *spec.fixed : in.types.at(spec.var);
}

std::vector<std::int64_t> ints_param(const HookInput& in, const char* name) {
  return in.params.at(name).get<std::vector<std::int64_t>>();
}

// A unit-window IPF from dense rows over `index_rank` index columns, offset `start`.
zspace::IndexProjection selection_ipf(std::size_t index_rank,
                                      const std::vector<std::vector<std::int64_t>>& rows,
                                      const zspace::Point& start) {
  return zspace::IndexProjection(zspace::AffineMap::from_rows(rows, start, index_rank));
}

// Infers a single -1 entry of the target shape from the element count.
zspace::Point resolve_target(const HookInput& in, std::vector<std::int64_t> target,
                             std::int64_t elements) {
  std::optional<std::size_t> infer;
  std::int64_t known = 1;
  for (std::size_t d = 0; d < target.size(); ++d) {
    if (target[d] == -1 && !infer) {
      infer = d;
      continue;
    }
    if (target[d] < 0) fail(in, "shape entries must be >= 0 (one may be -1), got {}", target[d]);
    known = zspace::checked_mul(known, target[d]);
  }
  if (infer) {
    if (known == 0 || elements % known != 0) {
      fail(in, "cannot infer the -1 in shape {} for {} elements",
           shape_string(zspace::Point(target)), elements);
    }
    target[*infer] = elements / known;
  }
  return zspace::Point(target);
}

// One reshape group with its finer side chosen and its first index column.
struct GroupPlan {
  ReshapeGroup group;
  bool out_finer = true;
  std::size_t col0 = 0;
};

std::size_t count_non_unit(const zspace::Point& shape, std::size_t first, std::size_t count) {
  std::size_t n = 0;
  for (std::size_t d = first; d < first + count; ++d) n += shape[d] != 1;
  return n;
}

// Fills the rows of one group: the finer side's dims are index dims (identity rows); the coarser
// side's one non-unit dim is their row-major linearisation; its unit dims always read 0.
void fill_group_rows(const GroupPlan& plan, const zspace::Point& in_shape,
                     const zspace::Point& out_shape,
                     std::vector<std::vector<std::int64_t>>& in_rows,
                     std::vector<std::vector<std::int64_t>>& out_rows) {
  const ReshapeGroup& g = plan.group;
  const zspace::Point& fine = plan.out_finer ? out_shape : in_shape;
  const zspace::Point& coarse = plan.out_finer ? in_shape : out_shape;
  auto& fine_rows = plan.out_finer ? out_rows : in_rows;
  auto& coarse_rows = plan.out_finer ? in_rows : out_rows;
  const std::size_t fine_first = plan.out_finer ? g.out_first : g.in_first;
  const std::size_t fine_count = plan.out_finer ? g.out_count : g.in_count;
  const std::size_t coarse_first = plan.out_finer ? g.in_first : g.out_first;
  const std::size_t coarse_count = plan.out_finer ? g.in_count : g.out_count;
  std::vector<std::int64_t> strides(fine_count, 1);
  for (std::size_t k = fine_count; k-- > 1;) {
    strides[k - 1] = zspace::checked_mul(strides[k], fine[fine_first + k]);
  }
  for (std::size_t k = 0; k < fine_count; ++k) fine_rows[fine_first + k][plan.col0 + k] = 1;
  for (std::size_t k = 0; k < coarse_count; ++k) {
    if (coarse[coarse_first + k] == 1) continue;
    for (std::size_t f = 0; f < fine_count; ++f)
      coarse_rows[coarse_first + k][plan.col0 + f] = strides[f];
  }
}

// Checks that each group is a split or a merge, picks its finer side and appends that side's
// dims to `dims` (the index).
std::vector<GroupPlan> plan_groups(const HookInput& in, const zspace::Point& in_shape,
                                   const zspace::Point& out_shape, std::vector<IndexDim>& dims) {
  const TensorType& x = in.args[0].type;
  std::vector<ReshapeGroup> groups;
  try {
    groups = reshape_groups(in_shape, out_shape);
  } catch (const Error& e) {
    fail(in, "{} {} to {}: {}", label(in), x.to_string(), shape_string(out_shape), e.what());
  }
  std::vector<GroupPlan> plans;
  for (const ReshapeGroup& g : groups) {
    const std::size_t nu_in = count_non_unit(in_shape, g.in_first, g.in_count);
    const std::size_t nu_out = count_non_unit(out_shape, g.out_first, g.out_count);
    if (nu_in > 1 && nu_out > 1) {
      fail(in,
           "{} {} to {}: dims {} become {}, which is neither a split nor a merge of adjacent "
           "dims",
           label(in), x.to_string(), shape_string(out_shape),
           shape_string(in_shape.slice(g.in_first, g.in_first + g.in_count)),
           shape_string(out_shape.slice(g.out_first, g.out_first + g.out_count)));
    }
    const GroupPlan plan{g, nu_out >= nu_in, dims.size()};
    const zspace::Point& fine = plan.out_finer ? out_shape : in_shape;
    const std::size_t first = plan.out_finer ? g.out_first : g.in_first;
    const std::size_t count = plan.out_finer ? g.out_count : g.in_count;
    for (std::size_t k = 0; k < count; ++k) {
      dims.push_back(IndexDim{fmt::format("d{}", dims.size()), fine[first + k], std::nullopt});
    }
    plans.push_back(plan);
  }
  return plans;
}

// A reshape of a tensor with no cells ([0, 3, 4] → [3, 4, 0]): any target of 0 elements is
// allowed, grouped or not. The index is the output's (empty); the input is read whole (a
// constant IPF over its empty range), so every box of either side is empty.
Signature empty_reshape(const HookInput& in, const zspace::Point& out_shape) {
  const TensorType& x = in.args[0].type;
  Signature sig;
  for (std::size_t d = 0; d < out_shape.rank(); ++d) {
    sig.index_dims.push_back(IndexDim{fmt::format("d{}", d), out_shape[d], std::nullopt});
  }
  const std::size_t n = out_shape.rank();
  const std::vector<std::vector<std::int64_t>> none(x.shape().rank(),
                                                    std::vector<std::int64_t>(n, 0));
  const TensorType out_type{output_dtype(in), zspace::Range::of_shape(out_shape)};
  sig.inputs.push_back(Port{
      in.kernel.inputs[0].name, x,
      zspace::IndexProjection(zspace::AffineMap::from_rows(none, x.range.start(), n), x.shape())});
  sig.outputs.push_back(
      Port{in.kernel.outputs.at(0).name, out_type,
           zspace::IndexProjection::identity(n).translate(out_type.range.start())});
  return sig;
}

Signature reshape_hook(const HookInput& in) {
  const TensorType& x = in.args[0].type;
  const zspace::Point in_shape = x.shape();
  const zspace::Point out_shape = resolve_target(in, ints_param(in, "shape"), in_shape.product());
  if (out_shape.product() != in_shape.product()) {
    fail(in, "cannot reshape {} {} ({} elements) to {} ({} elements)", label(in), x.to_string(),
         in_shape.product(), shape_string(out_shape), out_shape.product());
  }
  if (in_shape.product() == 0) return empty_reshape(in, out_shape);
  Signature sig;
  const std::vector<GroupPlan> plans = plan_groups(in, in_shape, out_shape, sig.index_dims);
  const std::size_t n = sig.index_dims.size();
  std::vector<std::vector<std::int64_t>> in_rows(in_shape.rank(), std::vector<std::int64_t>(n, 0));
  std::vector<std::vector<std::int64_t>> out_rows(out_shape.rank(),
                                                  std::vector<std::int64_t>(n, 0));
  for (const GroupPlan& plan : plans) fill_group_rows(plan, in_shape, out_shape, in_rows, out_rows);
  const TensorType out_type{output_dtype(in), zspace::Range::of_shape(out_shape)};
  sig.inputs.push_back(
      Port{in.kernel.inputs[0].name, x, selection_ipf(n, in_rows, x.range.start())});
  sig.outputs.push_back(Port{in.kernel.outputs.at(0).name, out_type,
                             selection_ipf(n, out_rows, out_type.range.start())});
  return sig;
}

Signature permute_hook(const HookInput& in) {
  const TensorType& x = in.args[0].type;
  const std::vector<std::int64_t> raw = ints_param(in, "perm");
  std::vector<std::size_t> perm;
  for (std::int64_t p : raw) {
    if (p < 0)
      fail(in, "perm {} is not a permutation of 0..{}", shape_string(zspace::Point(raw)),
           x.rank() - 1);
    perm.push_back(static_cast<std::size_t>(p));
  }
  try {
    zspace::check_permutation(perm, x.rank());
  } catch (const Error& e) {
    fail(in, "perm {} for {} {}: {}", shape_string(zspace::Point(raw)), label(in), x.to_string(),
         e.what());
  }
  const std::size_t n = x.rank();
  const zspace::Point out_shape = x.shape().permute(perm);
  Signature sig;
  std::vector<std::vector<std::int64_t>> x_rows(n, std::vector<std::int64_t>(n, 0));
  for (std::size_t i = 0; i < n; ++i) {
    sig.index_dims.push_back(IndexDim{fmt::format("d{}", i), out_shape[i], std::nullopt});
    x_rows[perm[i]][i] = 1;  // output dim i (index col i) reads input dim perm[i]
  }
  const TensorType out_type{output_dtype(in), zspace::Range::of_shape(out_shape)};
  sig.inputs.push_back(
      Port{in.kernel.inputs[0].name, x, selection_ipf(n, x_rows, x.range.start())});
  sig.outputs.push_back(
      Port{in.kernel.outputs.at(0).name, out_type, zspace::IndexProjection::identity(n)});
  return sig;
}

// sum_to(x, shape): x summed over the dims numpy broadcasting stretched from `shape` (right-
// aligned: x's leading dims beyond shape's rank, and dims where shape has 1 and x more). The
// index is x's dims, d0 …; those become sum reductions, and the result's IPF has a zero row for
// each dim of extent 1 that a reduction feeds.
Signature sum_to_hook(const HookInput& in) {
  const TensorType& x = in.args[0].type;
  const std::vector<std::int64_t> target = ints_param(in, "shape");
  const std::size_t n = x.rank();
  if (target.size() > n) {
    fail(in, "shape {} has more dims than {} {}", shape_string(zspace::Point(target)), label(in),
         x.to_string());
  }
  const std::size_t lead = n - target.size();
  Signature sig;
  std::vector<std::vector<std::int64_t>> x_rows(n, std::vector<std::int64_t>(n, 0));
  std::vector<std::vector<std::int64_t>> out_rows(target.size(), std::vector<std::int64_t>(n, 0));
  for (std::size_t i = 0; i < n; ++i) {
    x_rows[i][i] = 1;
    const std::int64_t extent = x.shape()[i];
    bool reduced = i < lead;
    if (!reduced) {
      const std::int64_t want = target[i - lead];
      if (want == extent) {
        out_rows[i - lead][i] = 1;
      } else if (want == 1) {
        reduced = true;
      } else {
        fail(in, "{} {} does not broadcast from shape {} (dim {}: {} vs {})", label(in),
             x.to_string(), shape_string(zspace::Point(target)), i, extent, want);
      }
    }
    sig.index_dims.push_back(IndexDim{fmt::format("d{}", i), extent,
                                      reduced ? std::optional(Monoid::kSum) : std::nullopt});
  }
  const TensorType out_type{output_dtype(in), zspace::Range::of_shape(zspace::Point(target))};
  sig.inputs.push_back(
      Port{in.kernel.inputs[0].name, x, selection_ipf(n, x_rows, x.range.start())});
  sig.outputs.push_back(Port{in.kernel.outputs.at(0).name, out_type,
                             selection_ipf(n, out_rows, zspace::Point::zeros(target.size()))});
  return sig;
}

// argmax / argmin(x, axis, keepdims): one index point per cell of x with `axis` removed, reading
// the whole axis (window `*`: the search is never split), writing one int64 cell. Which dim of
// the result the point writes depends on `keepdims` (the axis kept with extent 1, or dropped); a
// template fixes an output's rank statically. Index dims as for mean: pre (or pre0, pre1, …)
// before the axis, post (or post0, …) after it.
Signature arg_extreme_hook(const HookInput& in) {
  const TensorType& x = in.args[0].type;
  const std::size_t n = x.rank();
  if (n == 0) fail(in, "{} {} is a scalar: there is no axis to search", label(in), x.to_string());
  const auto axis = static_cast<std::size_t>(in.params.at("axis").get<std::int64_t>());
  const bool keep = in.params.at("keepdims").get<bool>();
  const std::int64_t extent = x.shape()[axis];
  if (extent == 0)
    fail(in, "axis {} of {} {} is empty: there is no element to pick", axis, label(in),
         x.to_string());
  const std::size_t m = n - 1;  // index dims
  const auto dim_name = [&](std::size_t d) {
    const bool before = d < axis;
    const std::size_t count = before ? axis : n - axis - 1;
    const std::size_t pos = before ? d : d - axis - 1;
    const char* group = before ? "pre" : "post";
    return count == 1 ? std::string(group) : fmt::format("{}{}", group, pos);
  };
  Signature sig;
  std::vector<std::vector<std::int64_t>> x_rows(n, std::vector<std::int64_t>(m, 0));
  std::vector<std::vector<std::int64_t>> out_rows;
  std::vector<std::int64_t> out_shape;
  std::vector<std::int64_t> window(n, 1);
  window[axis] = extent;
  for (std::size_t d = 0, col = 0; d < n; ++d) {
    if (d == axis) {
      if (keep) {
        out_rows.emplace_back(m, 0);
        out_shape.push_back(1);
      }
      continue;
    }
    sig.index_dims.push_back(IndexDim{dim_name(d), x.shape()[d], std::nullopt});
    x_rows[d][col] = 1;
    out_rows.emplace_back(m, 0);
    out_rows.back()[col] = 1;
    out_shape.push_back(x.shape()[d]);
    ++col;
  }
  const TensorType out_type{output_dtype(in), zspace::Range::of_shape(zspace::Point(out_shape))};
  sig.inputs.push_back(
      Port{in.kernel.inputs[0].name, x,
           zspace::IndexProjection(zspace::AffineMap::from_rows(x_rows, x.range.start(), m),
                                   zspace::Point(window))});
  sig.outputs.push_back(Port{in.kernel.outputs.at(0).name, out_type,
                             selection_ipf(m, out_rows, zspace::Point::zeros(out_shape.size()))});
  return sig;
}

struct NamedHook {
  std::string_view name;
  Hook hook;
};

constexpr NamedHook kHooks[] = {{"reshape", &reshape_hook},
                                {"permute", &permute_hook},
                                {"sum_to", &sum_to_hook},
                                {"arg_extreme", &arg_extreme_hook}};

}  // namespace

const Hook* find_hook(std::string_view name) {
  for (const NamedHook& h : kHooks) {
    if (h.name == name) return &h.hook;
  }
  return nullptr;
}

std::vector<std::string> hook_names() {
  std::vector<std::string> names;
  for (const NamedHook& h : kHooks) names.emplace_back(h.name);
  return names;
}

std::vector<ReshapeGroup> reshape_groups(const zspace::Point& in, const zspace::Point& out) {
  std::vector<ReshapeGroup> groups;
  std::size_t i = 0, j = 0;
  while (i < in.rank() && j < out.rank()) {
    ReshapeGroup g{i, 1, j, 1};
    std::int64_t pin = in[i++], pout = out[j++];
    while (pin != pout) {
      if (pin < pout && i < in.rank()) {
        pin = zspace::checked_mul(pin, in[i++]);
        ++g.in_count;
      } else if (pout < pin && j < out.rank()) {
        pout = zspace::checked_mul(pout, out[j++]);
        ++g.out_count;
      } else {
        throw Error(fmt::format("shapes {} and {} do not group into runs of equal size",
                                shape_string(in), shape_string(out)));
      }
    }
    groups.push_back(g);
  }
  // Leftover dims (all of size 1 when the products agree) join the last group.
  if (groups.empty() && (i < in.rank() || j < out.rank()))
    groups.push_back(ReshapeGroup{0, 0, 0, 0});
  if (!groups.empty()) {
    groups.back().in_count += in.rank() - i;
    groups.back().out_count += out.rank() - j;
  }
  return groups;
}

}  // namespace tapestry::metakernel
