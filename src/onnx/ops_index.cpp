// ONNX indexing, masks and the integer shape code around them (op_table.h): ConstantOfShape,
// Range, comparisons and boolean logic, Where, Expand, Tile, Trilu, Gather, Concat.
//
// On values known at import time each is folded (host_fold.h; Expand only on integers: an
// expanded float weight stays one weight) — PyTorch's `x.expand(n, -1, -1)`
// exports ConstantOfShape → Mul → Equal → Where → Expand over a shape, which becomes a number.
// On float graph tensors each is a rewrite into built-in kernels, all of them with IPFs:
//
//   Concat(a, b; axis)    add(unslice(a, start=0, size=n), unslice(b, start=nₐ, size=n))
//   Gather(x, i; axis)    slice(x, i, i+1) (+ reshape dropping the axis) for a constant index;
//                         Concat of such slices (one slice per run of consecutive indices)
//   Expand(x, shape)      mul(x, ones) with the ones shaped as the dims x broadcasts along
//   Tile(x, r)            Concat of r copies along each axis
//   Trilu(x, k)           mul(x, mask) with the constant 0/1 mask of the kept cells
//
// Comparisons, And/Or/Xor/Not and Where on graph tensors are the mask kernels
// (kernels/masks.yaml): a Tapestry graph holds no boolean tensors, so a mask is 0/1 in the dtype
// of the values it compares (an ONNX bool input: the import's float dtype), and Where selects —
// with a computed or a constant condition — by the `where` kernel.
//
// Concat, Gather, Expand and Tile are exact (adding zeros changes only the sign of a −0 cell).
// Trilu multiplies the dropped cells by 0, which is exact for finite values; an ±inf or NaN in a
// dropped cell gives NaN where ONNX gives 0.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "host_fold.h"
#include "op_table.h"

namespace tapestry::onnx {

namespace {

// Runs a host fold, locating its Error at the node.
template <typename F>
HostTensor folded(NodeContext& node, F&& fold) {
  try {
    return fold();
  } catch (const NodeError&) {
    throw;
  } catch (const Error& e) {
    throw node.error(e.what());
  }
}

// A weight the converter builds (ones, a mask) of `shape`: at most kMaxFoldedCells cells.
void check_cells(NodeContext& node, const std::vector<std::int64_t>& shape) {
  try {
    checked_fold_size(shape);
  } catch (const Error& e) {
    throw node.error(e.what());
  }
}

std::vector<std::int64_t> shape_of(const Tensor& t) {
  const zspace::Point p = t.type().shape();
  return {p.begin(), p.end()};
}

// A float host tensor of `dtype`, shaped `shape`, from doubles.
HostTensor float_host(ir::DType dtype, std::vector<std::int64_t> shape, std::vector<double> v) {
  HostTensor h;
  h.dtype = dtype;
  h.shape = std::move(shape);
  h.floats = std::move(v);
  return h;
}

// A host tensor as floats of `dtype` (a boolean mask as 0/1).
HostTensor as_float(const HostTensor& h, ir::DType dtype) {
  std::vector<double> v;
  const auto n = static_cast<std::size_t>(h.size());
  v.reserve(n);
  for (std::size_t k = 0; k < n; ++k) v.push_back(h.float_at(k));
  return float_host(dtype, h.shape, std::move(v));
}

// The dtype of the node's float graph inputs among `ks` (the first one found).
ir::DType graph_dtype(NodeContext& node, std::initializer_list<int> ks) {
  for (int k : ks) {
    if (node.has_input(k) && !node.is_host(k)) return node.tensor(k).type().dtype;
  }
  return ir::DType::kFloat32;
}

std::string op_name(NodeContext& node) {
  return node_display_name(node.node());
}

// x broadcast against `shape` (Expand): x itself when that changes nothing, else x times ones
// shaped as the dims x broadcasts along (1 elsewhere) — exact.
Tensor expand_tensor(NodeContext& node, const Tensor& x, const std::vector<std::int64_t>& shape) {
  const std::vector<std::int64_t> in = shape_of(x);
  std::vector<std::int64_t> out;
  try {
    out = broadcast_shapes(in, shape);
  } catch (const Error& e) {
    throw node.error(e.what());
  }
  if (out == in) return x;
  std::vector<std::int64_t> ones_shape(out.size(), 1);
  const std::size_t lead = out.size() - in.size();
  for (std::size_t d = 0; d < out.size(); ++d) {
    if (d < lead || in[d - lead] != out[d]) ones_shape[d] = out[d];
  }
  check_cells(node, ones_shape);
  HostTensor ones = float_host(x.type().dtype, ones_shape, {});
  ones.floats.assign(static_cast<std::size_t>(ones.size()), 1.0);
  return node.graph().call("mul", {x, node.import().constant_input(op_name(node) + ".ones", ones)});
}

}  // namespace

Tensor concat_tensors(NodeContext& node, const std::vector<Tensor>& parts, std::size_t axis) {
  std::vector<std::int64_t> shape = shape_of(parts.front());
  std::int64_t total = 0;
  for (const Tensor& p : parts) {
    const std::vector<std::int64_t> s = shape_of(p);
    bool same = s.size() == shape.size();
    for (std::size_t d = 0; same && d < s.size(); ++d) same = d == axis || s[d] == shape[d];
    if (!same)
      throw node.error(fmt::format("input shapes [{}] and [{}] differ outside axis {}",
                                   fmt::join(shape, ", "), fmt::join(s, ", "), axis));
    total += s[axis];
  }
  std::optional<Tensor> sum;
  std::int64_t start = 0;
  for (const Tensor& p : parts) {
    const std::int64_t m = shape_of(p)[axis];
    if (m == 0 && total != 0) continue;
    Tensor placed =
        m == total
            ? p
            : node.graph().call(
                  "unslice", {p},
                  {{"dim", static_cast<std::int64_t>(axis)}, {"start", start}, {"size", total}});
    sum = sum ? node.graph().call("add", {*sum, placed}) : placed;
    start += m;
  }
  return *sum;
}

Tensor take(NodeContext& node, const Tensor& x, std::size_t axis,
            const std::vector<std::int64_t>& at) {
  TAPESTRY_ASSERT(!at.empty(), "take: no cells");
  const std::int64_t n = shape_of(x)[axis];
  std::vector<Tensor> runs;
  for (std::size_t k = 0; k < at.size();) {
    std::size_t e = k + 1;
    while (e < at.size() && at[e] == at[e - 1] + 1) ++e;
    const std::int64_t s = at[k], end = at[e - 1] + 1;
    runs.push_back(s == 0 && end == n ? x
                                      : node.graph().call("slice", {x},
                                                          {{"dim", static_cast<std::int64_t>(axis)},
                                                           {"start", s},
                                                           {"end", end}}));
    k = e;
  }
  return runs.size() == 1 ? runs.front() : concat_tensors(node, runs, axis);
}

// ConstantOfShape: the shape filled with `value` (default float32 0).
void convert_constant_of_shape(NodeContext& node) {
  HostTensor value = float_host(ir::DType::kFloat32, {1}, {0.0});
  if (node.has_attr("value")) value = node.tensor_attr("value");
  const std::vector<std::int64_t> shape = node.host(0).as_ints();
  node.set_output(0, folded(node, [&] { return fold_fill(shape, value); }));
}

void convert_range(NodeContext& node) {
  node.set_output(
      0, folded(node, [&] { return fold_range(node.host(0), node.host(1), node.host(2)); }));
}

// ---- masks: comparisons, boolean logic, Where (kernels/masks.yaml) -------------------------

namespace {

// The kernel of a comparison or logical ONNX op.
std::string_view mask_kernel(std::string_view op) {
  if (op == "Equal") return "equal";
  if (op == "Less") return "less";
  if (op == "LessOrEqual") return "less_equal";
  if (op == "Greater") return "greater";
  if (op == "GreaterOrEqual") return "greater_equal";
  if (op == "And") return "logical_and";
  if (op == "Or") return "logical_or";
  return "logical_xor";
}

// A scalar constant of `dtype` (a float) holding `value`, named `<node>.<what>`.
Tensor float_constant(NodeContext& node, ir::DType dtype, std::string_view what, double value) {
  return node.import().constant_input(fmt::format("{}.{}", op_name(node), what),
                                      float_host(dtype, {}, {value}));
}

// Mask `t` (0/1, or any values: true where ≠ 0) as a 0/1 mask of float `dtype`:
// where(t, 1, 0) — t itself when it has that dtype.
Tensor mask_as(NodeContext& node, const Tensor& t, ir::DType dtype, std::string_view what) {
  if (t.type().dtype == dtype) return t;
  return node.graph().call("where", {t, float_constant(node, dtype, fmt::format("{}_one", what), 1),
                                     float_constant(node, dtype, fmt::format("{}_zero", what), 0)});
}

// Inputs `ks` of the node as graph tensors of one dtype, for a kernel whose operands share it:
// the first float graph input's dtype (`logical`: else the import's float dtype, as a Tapestry
// mask of a boolean input is). A host operand becomes a constant of that dtype (a boolean one
// 0/1); a graph operand of another dtype — a mask computed from integers — is mask_as'd to it.
// Integer operands all alike (a comparison of integer tensors) stay as they are.
std::vector<Tensor> alike_operands(NodeContext& node, std::initializer_list<int> ks, bool logical) {
  std::optional<ir::DType> dtype;
  for (int k : ks) {
    if (node.is_host(k)) continue;
    const ir::DType d = node.tensor(k).type().dtype;
    if (ir::is_float(d) && !dtype) dtype = d;
  }
  if (!dtype && logical) dtype = node.import().graph_dtype(ir::DType::kFloat32);
  std::vector<Tensor> out;
  for (int k : ks) {
    const std::string what = fmt::format("in{}", k);
    if (!dtype) {  // integer graph operands: integer constants are not graph data yet
      out.push_back(node.tensor(k));
    } else if (node.is_host(k)) {
      out.push_back(node.import().constant_input(fmt::format("{}.{}", op_name(node), what),
                                                 as_float(node.host(k), *dtype)));
    } else {
      out.push_back(mask_as(node, node.tensor(k), *dtype, what));
    }
  }
  return out;
}

}  // namespace

// Equal, Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor: folded when both operands are
// known at import time, else the kernel (kernels/masks.yaml): a 0/1 mask in the operands' dtype.
void convert_compare(NodeContext& node) {
  const std::string& op = node.node().op_type();
  if (node.is_host(0) && node.is_host(1)) {
    node.set_output(0, folded(node, [&] { return fold_compare(node.host(0), node.host(1), op); }));
    return;
  }
  const bool logical = op == "And" || op == "Or" || op == "Xor";
  const std::vector<Tensor> ab = alike_operands(node, {0, 1}, logical);
  node.set_output(0, node.graph().call(std::string(mask_kernel(op)), {ab[0], ab[1]}));
  node.import().mark_mask(node.node().output(0));
}

// Not: folded on a known mask, else logical_not.
void convert_not(NodeContext& node) {
  if (node.is_host(0)) return node.set_output(0, fold_not(node.host(0)));
  node.set_output(0, node.graph().call("logical_not", {node.tensor(0)}));
  node.import().mark_mask(node.node().output(0));
}

// Where(c, a, b): folded when all three are known; one branch everywhere when c is a constant
// that picks one; else the where kernel, a select — exact also where the branch not taken holds
// ±inf or NaN (the mask product a·c + b·(1 − c) it replaced gave NaN there). c may be computed
// (any dtype: a mask of floats or of integers) or a constant (a 0/1 weight of the branches'
// dtype); a known branch becomes a constant of the other's dtype.
void convert_where(NodeContext& node) {
  if (node.is_host(0) && node.is_host(1) && node.is_host(2)) {
    return node.set_output(
        0, folded(node, [&] { return fold_where(node.host(0), node.host(1), node.host(2)); }));
  }
  const std::vector<std::int64_t> out =
      folded(node, [&] {
        HostTensor shape;
        shape.shape =
            broadcast_shapes(node.shape(0), broadcast_shapes(node.shape(1), node.shape(2)));
        return shape;
      }).shape;
  if (node.is_host(0)) {
    // One branch everywhere: that branch, broadcast to the result's shape.
    const HostTensor& c = node.host(0);
    const auto n = static_cast<std::size_t>(c.size());
    std::size_t taken = 0;
    for (std::size_t k = 0; k < n; ++k) taken += c.float_at(k) != 0 ? 1 : 0;
    if ((taken == n || taken == 0) && !node.is_host(taken == n ? 1 : 2))
      return node.set_output(0, expand_tensor(node, node.tensor(taken == n ? 1 : 2), out));
  }
  // The branches' dtype: a graph branch's, else the known branches' (floats).
  ir::DType dtype = graph_dtype(node, {1, 2});
  if (node.is_host(1) && node.is_host(2)) {
    if (node.host(1).is_int() || node.host(2).is_int()) {
      throw node.error(
          "Where choosing between integer constants by a computed condition is not supported "
          "(a Tapestry graph computes on float tensors; cast the branches to float)");
    }
    dtype = node.import().graph_dtype(node.host(1).dtype);
  }
  const auto branch = [&](int k) {
    if (!node.is_host(k)) return node.tensor(k);
    return node.import().constant_input(op_name(node) + (k == 1 ? ".then" : ".else"),
                                        as_float(node.host(k), dtype));
  };
  const Tensor cond = node.is_host(0) ? node.import().constant_input(op_name(node) + ".mask",
                                                                     as_float(node.host(0), dtype))
                                      : node.tensor(0);
  node.set_output(0, node.graph().call("where", {cond, branch(1), branch(2)}));
}

// Expand: numpy broadcasting of x against the shape.
void convert_expand(NodeContext& node) {
  const std::vector<std::int64_t> shape = node.host(1).as_ints();
  // Integers (shape code) fold; a float weight stays one weight, under its own name, and the
  // graph repeats it.
  if (node.is_host(0) && node.host(0).is_int())
    return node.set_output(0, folded(node, [&] { return fold_expand(node.host(0), shape); }));
  node.set_output(0, expand_tensor(node, node.tensor(0), shape));
}

// Tile: repeats[d] copies along each dim d.
void convert_tile(NodeContext& node) {
  const std::vector<std::int64_t> repeats = node.host(1).as_ints();
  const std::vector<std::int64_t> in = node.shape(0);
  if (repeats.size() != in.size())
    throw node.error(fmt::format("{} repeats for rank {}", repeats.size(), in.size()));
  for (std::int64_t r : repeats) {
    if (r < 0) throw node.error(fmt::format("repeat {} is negative", r));
  }
  if (node.is_host(0)) {
    HostTensor h = node.host(0);
    for (std::size_t d = 0; d < repeats.size(); ++d) {
      if (repeats[d] == 1) continue;
      h = folded(node, [&] {
        return fold_concat(std::vector<HostTensor>(static_cast<std::size_t>(repeats[d]), h), d);
      });
      h.shape[d] = in[d] * repeats[d];
    }
    return node.set_output(0, h);
  }
  Tensor x = node.tensor(0);
  for (std::size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] == 1) continue;
    if (repeats[d] == 0) throw node.error("repeat 0 of a computed tensor is not supported");
    x = concat_tensors(node, std::vector<Tensor>(static_cast<std::size_t>(repeats[d]), x), d);
  }
  node.set_output(0, x);
}

// Trilu: the upper (default) or lower triangle from diagonal k of the last two dims.
void convert_trilu(NodeContext& node) {
  const bool upper = node.int_attr("upper", 1) != 0;
  const std::int64_t k = node.has_input(1) ? node.host(1).int_at(0) : 0;
  if (node.is_host(0))
    return node.set_output(0, folded(node, [&] { return fold_trilu(node.host(0), k, upper); }));
  const Tensor x = node.tensor(0);
  const std::vector<std::int64_t> in = shape_of(x);
  if (in.size() < 2) throw node.error("Trilu needs at least 2 dims");
  const std::int64_t rows = in[in.size() - 2], cols = in.back();
  check_cells(node, {rows, cols});
  HostTensor mask = float_host(x.type().dtype, {rows, cols}, {});
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c)
      mask.floats.push_back(trilu_keeps(r, c, k, upper) ? 1.0 : 0.0);
  }
  node.set_output(0, node.graph().call(
                         "mul", {x, node.import().constant_input(op_name(node) + ".mask", mask)}));
}

namespace {

// Gather of indices that are graph data (a model input, or computed): the gather kernel, which
// reads the whole axis and wraps negative indices as ONNX does; an index out of range is an error
// of the run, naming the operation and the index.
void convert_gather_at_run_time(NodeContext& node, std::size_t axis) {
  Tensor indices = node.tensor(1);
  const ir::DType dtype = indices.type().dtype;
  if (dtype != ir::DType::kInt64 && dtype != ir::DType::kInt32)
    throw node.error(fmt::format("the indices are {}, not int32 or int64", ir::dtype_name(dtype)));
  const nlohmann::json params = {{"axis", static_cast<std::int64_t>(axis)}};
  node.set_output(0, node.graph().call("gather", {node.tensor(0), indices}, params));
}

}  // namespace

// Gather along `axis`: indices known at import time are folded when the data is known too, else
// slices of the graph tensor, one per run of consecutive indices, concatenated and reshaped to
// data[:axis] + indices.shape + data[axis+1:]; other indices: convert_gather_at_run_time.
void convert_gather(NodeContext& node) {
  const std::vector<std::int64_t> in = node.shape(0);
  if (in.empty()) throw node.error("Gather from a scalar");
  const auto axis =
      static_cast<std::size_t>(normalise_axis(node, node.int_attr("axis", 0), in.size()));
  if (!node.is_host(1)) return convert_gather_at_run_time(node, axis);
  const HostTensor& indices = node.host(1);
  if (node.is_host(0))
    return node.set_output(0,
                           folded(node, [&] { return fold_gather(node.host(0), indices, axis); }));
  const std::int64_t n = in[axis];
  std::vector<std::int64_t> at = indices.as_ints();
  for (std::int64_t& i : at) {
    if (i < -n || i >= n) throw node.error(fmt::format("index {} is out of range for {}", i, n));
    if (i < 0) i += n;
  }
  if (at.empty()) throw node.error("Gather with no indices (an empty result) is not supported");
  const Tensor picked = take(node, node.tensor(0), axis, at);
  std::vector<std::int64_t> out(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), indices.shape.begin(), indices.shape.end());
  out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(axis) + 1, in.end());
  node.set_output(0, reshape_to(node.graph(), picked, out));
}

// Concat along `axis`: folded when every input is known, else unslices added up.
void convert_concat(NodeContext& node) {
  std::vector<std::int64_t> first = node.shape(0);
  const auto axis =
      static_cast<std::size_t>(normalise_axis(node, node.int_attr("axis", 0), first.size()));
  bool host = true;
  for (int k = 0; k < node.input_count(); ++k) host = host && node.is_host(k);
  if (host) {
    std::vector<HostTensor> parts;
    for (int k = 0; k < node.input_count(); ++k) parts.push_back(node.host(k));
    return node.set_output(0, folded(node, [&] { return fold_concat(parts, axis); }));
  }
  std::vector<Tensor> parts;
  for (int k = 0; k < node.input_count(); ++k) {
    if (node.is_host(k) && node.host(k).is_int())
      throw node.error("Concat of integer constants and computed float tensors");
    parts.push_back(node.tensor(k));
  }
  node.set_output(0, concat_tensors(node, parts, axis));
}

}  // namespace tapestry::onnx
