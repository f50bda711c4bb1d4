// ONNX layout ops and the import-time shape arithmetic (op_table.h).
//
// Integer tensors — shapes, axes, indices — are folded here, never computed in the graph: the
// Shape → Gather → Mul → Slice chains PyTorch exports for `x.size(-1) // 3` become numbers.
// Float host tensors read by a layout op become weights and the op a kernel call.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "op_table.h"

namespace tapestry::onnx {

namespace {

// a × b, or the node's error when it does not fit in 64 bits (a model's shape may be anything).
std::int64_t times(const NodeContext& node, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw node.error(fmt::format("shape arithmetic overflows: {} × {}", a, b));
  }
  return r;
}

std::int64_t product(const NodeContext& node, const std::vector<std::int64_t>& v, std::size_t from,
                     std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t k = from; k < to; ++k) p = times(node, p, v[k]);
  return p;
}

HostTensor with_shape(HostTensor t, std::vector<std::int64_t> shape) {
  t.shape = std::move(shape);
  return t;
}

// Binds output 0 to input 0 reshaped to `shape` (host tensors keep their data).
void set_reshaped(NodeContext& node, const std::vector<std::int64_t>& shape) {
  if (node.is_host(0)) return node.set_output(0, with_shape(node.host(0), shape));
  node.set_output(0, reshape_to(node.graph(), node.tensor(0), shape));
}

// The axes of Squeeze/Unsqueeze: an attribute before opset 13, input 1 from it.
std::optional<std::vector<std::int64_t>> axes_of(NodeContext& node) {
  if (auto a = node.ints_attr("axes")) return a;
  if (node.has_input(1)) return node.host(1).as_ints();
  return std::nullopt;
}

}  // namespace

Tensor reshape_to(metakernel::Graph& g, Tensor x, const std::vector<std::int64_t>& shape) {
  const zspace::Point from = x.type().shape();
  if (std::vector<std::int64_t>(from.begin(), from.end()) == shape) return x;
  try {
    return g.call("reshape", {x}, {{"shape", shape}});
  } catch (const Error&) {
    // Not a run of splits and merges (e.g. [2, 3, 4] → [3, 8]): merge all, then split.
    const std::int64_t n =
        std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
    Tensor flat = g.call("reshape", {x}, {{"shape", std::vector<std::int64_t>{n}}});
    return g.call("reshape", {flat}, {{"shape", shape}});
  }
}

std::int64_t normalise_axis(NodeContext& node, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw node.error(fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  return axis < 0 ? axis + r : axis;
}

void convert_identity(NodeContext& node) {
  node.set_output(0, node.input(0));
}

// Constant: `value` (a tensor) or value_float(s) / value_int(s).
void convert_constant(NodeContext& node) {
  if (node.has_attr("value")) return node.set_output(0, node.tensor_attr("value"));
  HostTensor t;
  if (node.has_attr("value_float")) {
    t.floats = {node.float_attr("value_float", 0)};
  } else if (node.has_attr("value_int")) {
    t = HostTensor::of_ints({node.int_attr("value_int", 0)}, {});
  } else if (auto ints = node.ints_attr("value_ints")) {
    t = HostTensor::of_ints(*ints, {static_cast<std::int64_t>(ints->size())});
  } else {
    throw node.error(
        "only the attributes value, value_float, value_int and value_ints are "
        "supported");
  }
  node.set_output(0, t);
}

// Reshape: 0 copies the input's dim (unless allowzero), −1 is inferred.
void convert_reshape(NodeContext& node) {
  const std::vector<std::int64_t> in = node.shape(0);
  std::vector<std::int64_t> shape = node.host(1).as_ints();
  const bool allow_zero = node.int_attr("allowzero", 0) != 0;
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0 && !allow_zero) {
      if (k >= in.size()) throw node.error(fmt::format("shape entry {} copies a missing dim", k));
      shape[k] = in[k];
    }
    if (shape[k] == -1) {
      if (infer >= 0) throw node.error("more than one -1 in the shape");
      infer = static_cast<int>(k);
    } else if (shape[k] < 0) {
      throw node.error(fmt::format("negative dim {} in the shape", shape[k]));
    } else {
      known = times(node, known, shape[k]);
    }
  }
  const std::int64_t total = product(node, in, 0, in.size());
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      throw node.error(
          fmt::format("cannot infer -1 in [{}] from {} elements", fmt::join(shape, ", "), total));
    shape[static_cast<std::size_t>(infer)] = total / known;
  } else if (known != total) {
    throw node.error(fmt::format("shape [{}] holds {} elements, the input {}",
                                 fmt::join(shape, ", "), known, total));
  }
  set_reshaped(node, shape);
}

// Flatten at `axis`: [Π dims before, Π dims from axis on].
void convert_flatten(NodeContext& node) {
  const std::vector<std::int64_t> in = node.shape(0);
  std::int64_t axis = node.int_attr("axis", 1);
  if (axis != static_cast<std::int64_t>(in.size())) axis = normalise_axis(node, axis, in.size());
  const auto a = static_cast<std::size_t>(axis);
  set_reshaped(node, {product(node, in, 0, a), product(node, in, a, in.size())});
}

// Transpose: permute (the default perm reverses the dims).
void convert_transpose(NodeContext& node) {
  const std::size_t rank = node.shape(0).size();
  std::vector<std::int64_t> perm(rank);
  for (std::size_t k = 0; k < rank; ++k) perm[k] = static_cast<std::int64_t>(rank - 1 - k);
  if (auto p = node.ints_attr("perm")) perm = *p;
  std::vector<std::int64_t> identity(rank);
  std::iota(identity.begin(), identity.end(), 0);
  if (perm == identity) return node.set_output(0, node.input(0));
  node.set_output(0, node.graph().call("permute", {node.tensor(0)}, {{"perm", perm}}));
}

void convert_squeeze(NodeContext& node) {
  const std::vector<std::int64_t> in = node.shape(0);
  std::vector<bool> drop(in.size(), false);
  if (auto axes = axes_of(node)) {
    for (std::int64_t a : *axes) {
      const auto k = static_cast<std::size_t>(normalise_axis(node, a, in.size()));
      if (in[k] != 1) throw node.error(fmt::format("axis {} has extent {}, not 1", a, in[k]));
      drop[k] = true;
    }
  } else {
    for (std::size_t k = 0; k < in.size(); ++k) drop[k] = in[k] == 1;
  }
  std::vector<std::int64_t> shape;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (!drop[k]) shape.push_back(in[k]);
  }
  set_reshaped(node, shape);
}

void convert_unsqueeze(NodeContext& node) {
  const std::vector<std::int64_t> in = node.shape(0);
  const auto axes = axes_of(node);
  if (!axes) throw node.error("the axes are missing");
  const std::size_t rank = in.size() + axes->size();
  std::vector<bool> added(rank, false);
  for (std::int64_t a : *axes)
    added[static_cast<std::size_t>(normalise_axis(node, a, rank))] = true;
  std::vector<std::int64_t> shape;
  std::size_t next = 0;
  for (std::size_t k = 0; k < rank; ++k) shape.push_back(added[k] ? 1 : in.at(next++));
  set_reshaped(node, shape);
}

// Slice (opset ≥ 10: starts, ends, axes, steps as inputs): one slice operation per axis that is
// actually cut with step 1; with another step (negative included: x[::-1]) the cells it picks,
// one slice per cell, concatenated (take), for at most kMaxSteppedCells cells. A 1-D integer
// host tensor is sliced at import time.
void convert_slice(NodeContext& node) {
  constexpr std::int64_t kMaxSteppedCells = 64;
  const std::vector<std::int64_t> in = node.shape(0);
  const std::vector<std::int64_t> starts = node.host(1).as_ints();
  const std::vector<std::int64_t> ends = node.host(2).as_ints();
  std::vector<std::int64_t> axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (node.has_input(3)) axes = node.host(3).as_ints();
  std::vector<std::int64_t> steps(starts.size(), 1);
  if (node.has_input(4)) steps = node.host(4).as_ints();
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw node.error("starts, ends, axes and steps differ in length");
  const bool host = node.is_host(0) && in.size() == 1 && node.host(0).is_int();
  Value v = host ? Value(node.host(0)) : Value(node.tensor(0));
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const auto axis = static_cast<std::size_t>(normalise_axis(node, axes[k], in.size()));
    const std::int64_t dim = in[axis];
    const std::int64_t step = steps[k];
    if (step == 0) throw node.error("step 0");
    const auto from_end = [dim](std::int64_t i) { return i < 0 ? i + dim : i; };
    // ONNX's clamping: start and end to [0, dim] for a positive step; start to [0, dim − 1] and
    // end to [−1, dim − 1] for a negative one.
    std::int64_t s = 0, e = 0;
    if (step > 0) {
      s = std::clamp<std::int64_t>(from_end(starts[k]), 0, dim);
      e = std::clamp<std::int64_t>(from_end(ends[k]), 0, dim);
    } else if (dim > 0) {
      s = std::clamp<std::int64_t>(from_end(starts[k]), 0, dim - 1);
      e = std::clamp<std::int64_t>(from_end(ends[k]), -1, dim - 1);
    }
    // The cells picked, s + j·step for j < count (no overflow: |step| may be anything).
    const std::int64_t stride =
        step > 0 ? step : (step == std::numeric_limits<std::int64_t>::min() ? -(step + 1) : -step);
    const std::int64_t count =
        step > 0 ? (e > s ? (e - s - 1) / stride + 1 : 0) : (s > e ? (s - e - 1) / stride + 1 : 0);
    if (step == 1 || count <= 1) {
      if (s == 0 && count == dim) continue;
      if (HostTensor* h = std::get_if<HostTensor>(&v)) {
        h->ints = std::vector<std::int64_t>(h->ints.begin() + s, h->ints.begin() + s + count);
        h->shape = {count};
      } else {
        v = node.graph().call(
            "slice", {std::get<Tensor>(v)},
            {{"dim", static_cast<std::int64_t>(axis)}, {"start", s}, {"end", s + count}});
      }
      continue;
    }
    if (count > kMaxSteppedCells && !std::holds_alternative<HostTensor>(v))
      throw node.error(fmt::format(
          "step {} picks {} cells of dim {} ({}); a stepped slice is supported up to {} cells "
          "(one slice operation each)",
          step, count, axis, dim, kMaxSteppedCells));
    std::vector<std::int64_t> at;
    for (std::int64_t j = 0; j < count; ++j) at.push_back(s + j * step);
    if (HostTensor* h = std::get_if<HostTensor>(&v)) {
      std::vector<std::int64_t> picked;
      for (std::int64_t i : at) picked.push_back(h->ints[static_cast<std::size_t>(i)]);
      h->ints = std::move(picked);
      h->shape = {count};
    } else {
      v = take(node, std::get<Tensor>(v), axis, at);
    }
  }
  node.set_output(0, v);
}

// Split along `axis` into the node's outputs: sizes from input 1 (opset ≥ 13) or the `split`
// attribute, else equal parts (which must divide the dim, as opsets up to 17 require). Each
// output is one slice operation (none for a part that is the whole dim); a 1-D host tensor (a
// shape) is split at import time.
void convert_split(NodeContext& node) {
  const std::vector<std::int64_t> in = node.shape(0);
  const auto axis =
      static_cast<std::size_t>(normalise_axis(node, node.int_attr("axis", 0), in.size()));
  const auto parts = static_cast<std::int64_t>(node.node().output_size());
  const std::int64_t dim = in[axis];
  std::vector<std::int64_t> sizes;
  if (node.has_input(1)) {
    sizes = node.host(1).as_ints();
  } else if (auto attr = node.ints_attr("split")) {
    sizes = *attr;
  } else {
    if (parts == 0 || dim % parts != 0)
      throw node.error(
          fmt::format("dim {} ({}) does not split into {} equal parts", axis, dim, parts));
    sizes.assign(static_cast<std::size_t>(parts), dim / parts);
  }
  if (std::ssize(sizes) != parts)
    throw node.error(fmt::format("{} split sizes for {} outputs", sizes.size(), parts));
  std::int64_t total = 0;
  for (std::int64_t size : sizes) {
    if (size < 0) throw node.error(fmt::format("split size {} is negative", size));
    total += size;
  }
  if (total != dim)
    throw node.error(
        fmt::format("the split sizes add up to {}, but dim {} is {}", total, axis, dim));
  const bool host = node.is_host(0) && in.size() == 1 && node.host(0).is_int();
  std::int64_t start = 0;
  for (int k = 0; k < static_cast<int>(parts); ++k) {
    const std::int64_t end = start + sizes[static_cast<std::size_t>(k)];
    if (host) {
      HostTensor h = node.host(0);
      h.ints = std::vector<std::int64_t>(h.ints.begin() + start, h.ints.begin() + end);
      h.shape = {end - start};
      node.set_output(k, h);
    } else if (start == 0 && end == dim) {
      node.set_output(k, node.tensor(0));
    } else {
      node.set_output(
          k, node.graph().call(
                 "slice", {node.tensor(0)},
                 {{"dim", static_cast<std::int64_t>(axis)}, {"start", start}, {"end", end}}));
    }
    start = end;
  }
}

// Shape: the input's static shape (opset 15: from `start` to `end`).
void convert_shape(NodeContext& node) {
  const std::vector<std::int64_t> in = node.shape(0);
  const auto rank = static_cast<std::int64_t>(in.size());
  const auto clamp = [rank](std::int64_t i) {
    return std::clamp<std::int64_t>(i < 0 ? i + rank : i, 0, rank);
  };
  const std::int64_t s = clamp(node.int_attr("start", 0));
  const std::int64_t e = std::max(s, clamp(node.int_attr("end", rank)));
  std::vector<std::int64_t> v(in.begin() + s, in.begin() + e);
  node.set_output(0, HostTensor::of_ints(v, {e - s}));
}

// Size: the input's cell count, an int64 scalar folded at import time (static shapes), as Shape.
void convert_size(NodeContext& node) {
  std::int64_t cells = 1;
  for (std::int64_t d : node.shape(0)) cells *= d;
  node.set_output(0, HostTensor::of_ints({cells}, {}));
}

}  // namespace tapestry::onnx
