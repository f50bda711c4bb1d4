// sum, max, reduce, mean, variance and softmax on the GPU (rows.h): host-side checks and launches.
#include <algorithm>
#include <atomic>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "pointwise_kernels.h"
#include "port_layout.h"
#include "rows.h"
#include "rows_kernels.h"

namespace tapestry::gpu::kernels {

namespace {

using runtime::InputPort;
using runtime::KernelCall;
using runtime::OutputPort;

std::atomic<RowsHook> g_rows_hook{nullptr};

constexpr std::string_view kX = "x";
constexpr std::string_view kResult = "result";

struct Ports {
  const InputPort* x = nullptr;
  const OutputPort* result = nullptr;
  ElemType type = ElemType::kF32;
};

std::optional<Ports> ports_of(const KernelCall& call) {
  Ports p;
  p.x = call.find_input(kX);
  if (p.x == nullptr || call.outputs.size() != 1 || !call.outputs.has(kResult)) return std::nullopt;
  p.result = &call.output(kResult);
  if (p.x->view.dtype() != p.result->view.dtype()) return std::nullopt;
  const auto t = elem_type(p.x->view.dtype());
  if (!t) return std::nullopt;
  p.type = *t;
  return p;
}

// The outer loop over `dims` of the index (collapsed), for x and the result.
bool set_outer(const KernelCall& call, const std::vector<std::size_t>& dims, const PortLayout& lx,
               const PortLayout& lr, RowsLaunch& l) {
  std::vector<std::int64_t> lo, hi;
  std::vector<PortLayout> layouts(2);
  for (std::size_t d : dims) {
    lo.push_back(call.index.start()[d]);
    hi.push_back(call.index.end()[d]);
    layouts[0].coef.push_back(lx.coef[d]);
    layouts[1].coef.push_back(lr.coef[d]);
  }
  const runtime::Range outer{runtime::Point(std::span<const std::int64_t>(lo)),
                             runtime::Point(std::span<const std::int64_t>(hi))};
  const LoopNest nest = collapse(outer, layouts);
  if (nest.extent.size() > static_cast<std::size_t>(kMaxRank)) return false;
  l.outer_rank = static_cast<int>(nest.extent.size());
  for (std::size_t j = 0; j < nest.extent.size(); ++j) {
    l.outer_extent[j] = nest.extent[j];
    l.x_outer[j] = nest.coef[0][j];
    l.out_outer[j] = nest.coef[1][j];
  }
  return true;
}

std::vector<std::size_t> all_dims_but(std::size_t rank, const std::vector<std::size_t>& skip) {
  std::vector<std::size_t> out;
  for (std::size_t d = 0; d < rank; ++d) {
    if (std::find(skip.begin(), skip.end(), d) == skip.end()) out.push_back(d);
  }
  return out;
}

// ---- folds ------------------------------------------------------------------------------------

// `fixed`, or (reduce) the monoid of the `op` param.
std::optional<RowOp> fold_op(const KernelCall& call, std::optional<RowOp> fixed) {
  if (fixed) return fixed;
  try {
    switch (call.monoid("op", ir::Monoid::kSum)) {
      case ir::Monoid::kSum:
        return RowOp::kSum;
      case ir::Monoid::kProd:
        return RowOp::kProd;
      case ir::Monoid::kMax:
        return RowOp::kMax;
      case ir::Monoid::kMin:
        return RowOp::kMin;
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The fold launch: outer = the index dims the result moves along, inner = the reduced index
// dims, then x's cell window (row-major), as the CPU's for_each_output_cell visits them.
std::optional<RowsLaunch> fold_launch(const KernelCall& call, std::optional<RowOp> fixed) {
  const std::optional<Ports> p = ports_of(call);
  const std::optional<RowOp> op = fold_op(call, fixed);
  if (!p || !op || !has_unit_cells(*p->result->ipf) || !rows_supports(*op, p->type)) {
    return std::nullopt;
  }
  RowsLaunch l;
  l.op = *op;
  l.type = p->type;
  const PortLayout lx = port_layout(*p->x, call.index);
  const PortLayout lr = port_layout(*p->result, call.index);
  const std::vector<std::size_t> reduced = call.reduced_dims();
  if (!set_outer(call, all_dims_but(call.index.rank(), reduced), lx, lr, l)) return std::nullopt;
  std::vector<std::int64_t> extent, step;
  for (std::size_t d : reduced) {
    if (call.index.extent(d) == 1) continue;
    extent.push_back(call.index.extent(d));
    step.push_back(lx.coef[d]);
  }
  const zspace::Point& window = p->x->ipf->shape();
  for (std::size_t k = 0; k < window.rank(); ++k) {
    if (window[k] == 1) continue;
    extent.push_back(window[k]);
    step.push_back(p->x->view.stride(k));
  }
  if (extent.size() > static_cast<std::size_t>(kMaxInner)) return std::nullopt;
  l.inner_rank = static_cast<int>(extent.size());
  for (std::size_t j = 0; j < extent.size(); ++j) {
    l.inner_extent[j] = extent[j];
    l.x_inner[j] = step[j];
  }
  return l;
}

// ---- rows: mean, variance, softmax ------------------------------------------------------------

// x's cells are rows along `axis` (window n there, 1 elsewhere); the result's are single elements
// (mean, variance) or the same rows (softmax).
std::optional<RowsLaunch> row_launch(const KernelCall& call, RowOp op) {
  const std::optional<Ports> p = ports_of(call);
  if (!p || !rows_supports(op, p->type) || p->x->view.rank() == 0) return std::nullopt;
  std::size_t axis = p->x->view.rank() - 1;
  if (op != RowOp::kSoftmax) {
    if (call.params == nullptr || !call.params->is_object() || !call.params->contains("dim") ||
        !call.params->at("dim").is_number_integer()) {
      return std::nullopt;
    }
    const std::int64_t dim = call.params->at("dim").get<std::int64_t>();
    if (dim < 0 || static_cast<std::size_t>(dim) >= p->x->view.rank()) return std::nullopt;
    axis = static_cast<std::size_t>(dim);
  }
  const zspace::Point& xw = p->x->ipf->shape();
  const zspace::Point& rw = p->result->ipf->shape();
  if (xw.rank() != rw.rank()) return std::nullopt;
  for (std::size_t k = 0; k < xw.rank(); ++k) {
    if (k != axis && (xw[k] != 1 || rw[k] != 1)) return std::nullopt;
  }
  const std::int64_t n = xw[axis];
  if (n == 0 || rw[axis] != (op == RowOp::kSoftmax ? n : 1)) return std::nullopt;
  RowsLaunch l;
  l.op = op;
  l.type = p->type;
  const PortLayout lx = port_layout(*p->x, call.index);
  const PortLayout lr = port_layout(*p->result, call.index);
  if (!set_outer(call, all_dims_but(call.index.rank(), {}), lx, lr, l)) return std::nullopt;
  l.inner_rank = 1;
  l.inner_extent[0] = n;
  l.x_inner[0] = p->x->view.stride(axis);
  l.out_inner = p->result->view.stride(axis);
  return l;
}

void run(const KernelCall& call, const DeviceContext& ctx, std::optional<RowsLaunch> l,
         const std::optional<Ports>& p) {
  if (!l || !p) call.fail("the GPU cannot run this call (supports() said no)");
  if (call.index.is_empty()) return;
  const PortLayout lx = port_layout(*p->x, call.index);
  const PortLayout lr = port_layout(*p->result, call.index);
  l->x = device_address(*p->x, lx);
  l->out = device_address(*p->result, lr);
  const RowsHook hook = g_rows_hook.load();
  check_cuda(call, hook != nullptr ? hook(*l) : launch_rows(*l, ctx.stream), "row kernel launch");
}

template <RowOp kOp>
bool fold_supports(const KernelCall& call) {
  return fold_launch(call, kOp).has_value();
}

template <RowOp kOp>
void fold(const KernelCall& call, const DeviceContext& ctx) {
  run(call, ctx, fold_launch(call, kOp), ports_of(call));
}

// sum_to: the result's cells start at 0 and every index point adds its x cell, in ascending
// order (runtime/kernels/autodiff.cpp): the sum fold from the identity.
std::optional<RowsLaunch> sum_to_launch(const KernelCall& call) {
  std::optional<RowsLaunch> l = fold_launch(call, RowOp::kSum);
  if (l) l->from_identity = true;
  return l;
}

bool sum_to_supports(const KernelCall& call) {
  return sum_to_launch(call).has_value();
}

void sum_to(const KernelCall& call, const DeviceContext& ctx) {
  run(call, ctx, sum_to_launch(call), ports_of(call));
}

bool reduce_supports(const KernelCall& call) {
  return fold_launch(call, std::nullopt).has_value();
}

void reduce(const KernelCall& call, const DeviceContext& ctx) {
  run(call, ctx, fold_launch(call, std::nullopt), ports_of(call));
}

template <RowOp kOp>
bool row_supports(const KernelCall& call) {
  return row_launch(call, kOp).has_value();
}

template <RowOp kOp>
void row(const KernelCall& call, const DeviceContext& ctx) {
  run(call, ctx, row_launch(call, kOp), ports_of(call));
}

}  // namespace

void set_rows_hook(RowsHook hook) {
  g_rows_hook = hook;
}

void register_row_kernels(DeviceKernels& kernels) {
  kernels.add("sum", {&fold_supports<RowOp::kSum>, &fold<RowOp::kSum>});
  kernels.add("max", {&fold_supports<RowOp::kMax>, &fold<RowOp::kMax>});
  kernels.add("reduce", {&reduce_supports, &reduce});
  kernels.add("sum_to", {&sum_to_supports, &sum_to});
  // Pools: the max (average) fold over each index point's window (pool.cpp's order and formula).
  for (const char* name : {"max_pool2d", "max_pool2d_rect", "max_pool3d"}) {
    kernels.add(name, {&fold_supports<RowOp::kMax>, &fold<RowOp::kMax>});
  }
  for (const char* name : {"avg_pool2d", "avg_pool2d_rect", "avg_pool3d"}) {
    kernels.add(name, {&fold_supports<RowOp::kAverage>, &fold<RowOp::kAverage>});
  }
  kernels.add("mean", {&row_supports<RowOp::kMean>, &row<RowOp::kMean>});
  kernels.add("variance", {&row_supports<RowOp::kVariance>, &row<RowOp::kVariance>});
  kernels.add("softmax", {&row_supports<RowOp::kSoftmax>, &row<RowOp::kSoftmax>});
}

}  // namespace tapestry::gpu::kernels
