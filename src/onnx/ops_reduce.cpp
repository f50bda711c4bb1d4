// ONNX reductions beyond ReduceSum/Max/Mean, LogSoftmax, Log and Softplus (op_table.h): each an
// import-time rewrite into built-in kernels.
//
//   ReduceMin / ReduceProd   permute the axis to the front, reduce(op=min / prod), per axis
//   ReduceL1                 sum(maximum(x, −x))
//   ReduceL2                 sqrt(sum(x·x))
//   ReduceSumSquare          sum(x·x)
//   ReduceLogSumExp          log(sum(exp(x − m))) + m, m = max(x) over the axes (no overflow)
//   ReduceLogSum             log(sum(x))
//   LogSoftmax               x − m − log(sum(exp(x − m))) over the axis, m its max
//   Log                      log
//   Softplus                 relu(x) + log(1 + exp(−|x|)), |x| = maximum(x, −x)
//
// Every reduction takes its axes from the attribute or (opset 18's form, and ReduceSum's from
// 13) input 1, keepdims and noop_with_empty_axes as ONNX. Softplus never overflows; for x ≪ 0,
// where the result is below float's epsilon, 1 + exp(x) rounds to 1 and the result to 0 (an
// absolute error below 2⁻²⁴ in float32: the graph has no log1p). ReduceLogSumExp and
// LogSoftmax of a row that is −inf everywhere give NaN where ONNX's naive formula gives −inf.
#include <fmt/format.h>

#include <numeric>
#include <set>

#include "op_table.h"

namespace tapestry::onnx {

namespace {

// The axes a reduction reduces (descending: each reduction drops its dim and leaves the lower
// axes' numbers as they are) and the result's shape with the dims kept (extent 1) or dropped.
struct Axes {
  std::vector<std::int64_t> descending;
  std::vector<std::int64_t> kept, dropped;
  bool keepdims = true;
  bool noop = false;  // no axes and noop_with_empty_axes: the identity
  [[nodiscard]] const std::vector<std::int64_t>& result() const {
    return keepdims ? kept : dropped;
  }
};

Axes reduction_axes(NodeContext& node) {
  const std::vector<std::int64_t> shape = node.shape(0);
  std::vector<std::int64_t> axes;
  if (auto a = node.ints_attr("axes")) axes = *a;
  if (node.has_input(1)) axes = node.host(1).as_ints();
  Axes out;
  out.keepdims = node.int_attr("keepdims", 1) != 0;
  if (axes.empty()) {
    if (node.int_attr("noop_with_empty_axes", 0) != 0) {
      out.noop = true;
      return out;
    }
    for (std::size_t k = 0; k < shape.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
  }
  std::set<std::int64_t, std::greater<>> sorted;
  for (std::int64_t a : axes) sorted.insert(normalise_axis(node, a, shape.size()));
  out.descending.assign(sorted.begin(), sorted.end());
  out.kept = shape;
  for (std::int64_t a : sorted) out.kept[static_cast<std::size_t>(a)] = 1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (!sorted.contains(static_cast<std::int64_t>(k))) out.dropped.push_back(shape[k]);
  }
  return out;
}

// `kernel` (sum or max: they drop the dim) over every axis.
Tensor over_axes(metakernel::Graph& g, Tensor t, const Axes& axes, const std::string& kernel) {
  for (std::int64_t a : axes.descending) t = g.call(kernel, {t}, {{"dim", a}});
  return t;
}

// reduce(op) over every axis: the axis permuted to the front first.
Tensor reduce_axes(metakernel::Graph& g, Tensor t, const Axes& axes, const std::string& op) {
  for (std::int64_t a : axes.descending) {
    const std::size_t rank = t.type().shape().rank();
    std::vector<std::int64_t> perm{a};
    for (std::size_t k = 0; k < rank; ++k) {
      if (static_cast<std::int64_t>(k) != a) perm.push_back(static_cast<std::int64_t>(k));
    }
    if (a != 0) t = g.call("permute", {t}, {{"perm", perm}});
    t = g.call("reduce", {t}, {{"op", op}});
  }
  return t;
}

}  // namespace

void convert_reduce_more(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const std::string& op = node.node().op_type();
  const Axes axes = reduction_axes(node);
  Tensor x = node.tensor(0);
  if (axes.noop) {
    if (op == "ReduceL1") return node.set_output(0, g.call("maximum", {x, g.call("neg", {x})}));
    if (op == "ReduceL2" || op == "ReduceSumSquare") {
      Tensor sq = g.call("mul", {x, x});
      return node.set_output(0, op == "ReduceL2" ? g.call("sqrt", {sq}) : sq);
    }
    if (op == "ReduceLogSum") return node.set_output(0, g.call("log", {x}));
    return node.set_output(0, x);
  }
  Tensor t = x;
  if (op == "ReduceMin" || op == "ReduceProd") {
    t = reduce_axes(g, x, axes, op == "ReduceMin" ? "min" : "prod");
  } else if (op == "ReduceL1") {
    t = over_axes(g, g.call("maximum", {x, g.call("neg", {x})}), axes, "sum");
  } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
    t = over_axes(g, g.call("mul", {x, x}), axes, "sum");
    if (op == "ReduceL2") t = g.call("sqrt", {t});
  } else if (op == "ReduceLogSum") {
    t = g.call("log", {over_axes(g, x, axes, "sum")});
  } else if (op == "ReduceLogSumExp") {
    const Tensor m = over_axes(g, x, axes, "max");
    const Tensor shifted = g.call("sub", {x, reshape_to(g, m, axes.kept)});
    t = g.call("add", {g.call("log", {over_axes(g, g.call("exp", {shifted}), axes, "sum")}), m});
  } else {
    TAPESTRY_ASSERT(false, "convert_reduce_more: unexpected op");
  }
  node.set_output(0, reshape_to(g, t, axes.result()));
}

// LogSoftmax over `axis` (opset ≥ 13: any axis; before, Softmax's flattening rule, so the last
// axis only): x − m − log Σ exp(x − m), m the axis' maximum.
void convert_log_softmax(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  std::vector<std::int64_t> shape = node.shape(0);
  const bool old = node.opset() < 13;
  const std::int64_t axis = normalise_axis(node, node.int_attr("axis", old ? 1 : -1), shape.size());
  if (old && axis != static_cast<std::int64_t>(shape.size()) - 1) {
    throw node.error(fmt::format(
        "axis={} is not supported before opset 13 (LogSoftmax then flattens the dims from "
        "axis on); only the last axis is",
        axis));
  }
  Tensor x = node.tensor(0);
  std::vector<std::int64_t> kept = shape;
  kept[static_cast<std::size_t>(axis)] = 1;
  const Tensor m = reshape_to(g, g.call("max", {x}, {{"dim", axis}}), kept);
  const Tensor shifted = g.call("sub", {x, m});
  const Tensor s = g.call("sum", {g.call("exp", {shifted})}, {{"dim", axis}});
  node.set_output(0, g.call("sub", {shifted, reshape_to(g, g.call("log", {s}), kept)}));
}

// Softplus: relu(x) + log(1 + exp(−|x|)).
void convert_softplus(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  Tensor x = node.tensor(0);
  const Tensor minus_abs = g.call("neg", {g.call("maximum", {x, g.call("neg", {x})})});
  const Tensor tail = g.call(
      "log", {g.call("add", {g.call("exp", {minus_abs}), scalar_input(node, x, "one", 1.0)})});
  node.set_output(0, g.call("add", {g.call("relu", {x}), tail}));
}

// ArgMax, ArgMin: the kernels of the same name (int64 positions; axis, keepdims and, from
// opset 12, select_last_index as ONNX; NaN wins, as numpy's). Folded when x is known.
void convert_arg_extreme(NodeContext& node) {
  const std::vector<std::int64_t> shape = node.shape(0);
  if (shape.empty()) throw node.error("the input is a scalar: there is no axis to search");
  const std::int64_t axis = normalise_axis(node, node.int_attr("axis", 0), shape.size());
  const bool keepdims = node.int_attr("keepdims", 1) != 0;
  const bool last = node.int_attr("select_last_index", 0) != 0;
  const bool is_min = node.node().op_type() == "ArgMin";
  if (shape[static_cast<std::size_t>(axis)] == 0)
    throw node.error(fmt::format("axis {} is empty: there is no element to pick", axis));
  const nlohmann::json params = {
      {"axis", axis}, {"keepdims", keepdims}, {"select_last_index", last}};
  node.set_output(0, node.graph().call(is_min ? "argmin" : "argmax", {node.tensor(0)}, params));
}

}  // namespace tapestry::onnx
