// ONNX Conv, pooling, Softmax, LayerNormalization and the reductions (op_table.h).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "op_table.h"

namespace tapestry::onnx {

namespace {

// One value for both spatial dims of a 2-D attribute list (`what` names it in errors).
std::int64_t square(NodeContext& node, const std::vector<std::int64_t>& v, std::string_view what,
                    std::size_t count) {
  if (v.size() != count ||
      std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) != v.end()) {
    throw node.error(fmt::format("{}=[{}] is not supported (only {} equal values)", what,
                                 fmt::join(v, ", "), count));
  }
  return v.front();
}

void require_rank(NodeContext& node, int input, std::size_t rank, std::string_view what) {
  if (node.shape(input).size() != rank) {
    throw node.error(fmt::format("{} has rank {}; only rank {} ({}) is supported",
                                 node.node().input(input), node.shape(input).size(), rank, what));
  }
}

void refuse_used_outputs(NodeContext& node, int first) {
  for (int k = first; k < node.node().output_size(); ++k) {
    if (node.output_used(k)) {
      throw node.error(fmt::format("output {} ('{}') is read, but only output 0 is supported", k,
                                   node.node().output(k)));
    }
  }
}

}  // namespace

namespace {

// A Conv's or pool's window over its 1 or 2 spatial dims: the stride of each and the pads in
// pad2d's terms (top, bottom, left, right). A 1-D layer is a 2-D one of height 1: stride_h 1,
// pads on the width only. auto_pad SAME_UPPER / SAME_LOWER become the pads that keep
// ceil(in / stride) outputs, the odd cell at the end / the start, as ONNX defines them.
struct ConvWindow {
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t dilation = 1;  // one for every dim (Conv); pools refuse other than 1
  std::int64_t top = 0, bottom = 0, left = 0, right = 0;
  [[nodiscard]] bool even() const { return top == bottom && top == left && top == right; }
  [[nodiscard]] bool any() const { return top + bottom + left + right > 0; }
};

// Input k (a weight or a computed tensor) as a tensor of `shape`: a host weight is reshaped as
// it is written (one weight, no operation), a computed tensor by a reshape.
Tensor reshaped_input(NodeContext& node, int k, const std::vector<std::int64_t>& shape) {
  if (node.is_host(k)) {
    HostTensor b = node.host(k);
    b.shape = shape;
    return node.import().constant_input(node.node().input(k), b);
  }
  return reshape_to(node.graph(), node.tensor(k), shape);
}

// The strides and pads (ONNX order: the begins of each spatial dim, then the ends) of a Conv or
// pool over `kernel` (its size per spatial dim), from strides, pads, dilations and auto_pad
// (whose SAME pads cover the dilated window).
struct Spatial {
  std::vector<std::int64_t> strides, pads, dilations;
  [[nodiscard]] bool dilated() const {
    return std::any_of(dilations.begin(), dilations.end(), [](std::int64_t d) { return d != 1; });
  }
};

Spatial read_spatial(NodeContext& node, const std::vector<std::int64_t>& x,
                     const std::vector<std::int64_t>& kernel) {
  const std::size_t dims = x.size() - 2;
  const std::string auto_pad = node.string_attr("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    throw node.error(
        fmt::format("auto_pad={} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", auto_pad));
  }
  Spatial out;
  out.dilations = node.ints_attr("dilations").value_or(std::vector<std::int64_t>(dims, 1));
  if (out.dilations.size() != dims || std::any_of(out.dilations.begin(), out.dilations.end(),
                                                  [](std::int64_t d) { return d < 1; })) {
    throw node.error(
        fmt::format("dilations=[{}] must be {} values ≥ 1", fmt::join(out.dilations, ", "), dims));
  }
  out.strides = node.ints_attr("strides").value_or(std::vector<std::int64_t>(dims, 1));
  if (out.strides.size() != dims ||
      std::any_of(out.strides.begin(), out.strides.end(), [](std::int64_t s) { return s < 1; })) {
    throw node.error(
        fmt::format("strides=[{}] must be {} values ≥ 1", fmt::join(out.strides, ", "), dims));
  }
  out.pads.assign(2 * dims, 0);
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (std::size_t d = 0; d < dims; ++d) {
      const std::int64_t s = out.strides[d], in = x[2 + d], n = (in + s - 1) / s;
      const std::int64_t extent = (kernel[d] - 1) * out.dilations[d] + 1;
      const std::int64_t total = std::max<std::int64_t>((n - 1) * s + extent - in, 0);
      out.pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      out.pads[dims + d] = total - out.pads[d];
    }
  } else if (auto_pad == "NOTSET") {
    if (auto given = node.ints_attr("pads")) {
      if (given->size() != 2 * dims)
        throw node.error(
            fmt::format("pads=[{}] must have {} values", fmt::join(*given, ", "), 2 * dims));
      out.pads = *given;
    }
  }
  for (std::int64_t p : out.pads) {
    if (p < 0)
      throw node.error(fmt::format("pads=[{}] must not be negative", fmt::join(out.pads, ", ")));
  }
  return out;
}

// `kernel`: the window's size per spatial dim (1 or 2 values).
ConvWindow conv_window(NodeContext& node, const std::vector<std::int64_t>& x,
                       const std::vector<std::int64_t>& kernel) {
  const std::size_t dims = x.size() - 2;
  const Spatial sp = read_spatial(node, x, kernel);
  ConvWindow win;
  win.dilation = square(node, sp.dilations, "dilations", dims);
  win.stride_w = sp.strides.back();
  win.left = sp.pads[dims - 1];
  win.right = sp.pads[2 * dims - 1];
  if (dims == 2) {
    win.stride_h = sp.strides[0];
    win.top = sp.pads[0];
    win.bottom = sp.pads[2];
  }
  return win;
}

// x padded by pad3d with ONNX-ordered `pads` of 3 spatial dims (nothing when all are 0).
Tensor pad3d(metakernel::Graph& g, Tensor x, const std::vector<std::int64_t>& pads, double value) {
  if (std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; })) return x;
  return g.call("pad3d", {x},
                {{"front", pads[0]},
                 {"top", pads[1]},
                 {"left", pads[2]},
                 {"back", pads[3]},
                 {"bottom", pads[4]},
                 {"right", pads[5]},
                 {"value", value}});
}

// One convolution per group, for kernels without a group dim (conv3d, the dilated ones): x's
// channels [k·C/g, (k+1)·C/g) and w's filters [k·O/g, (k+1)·O/g) of group k sliced, each pair
// convolved by `conv`, the results concatenated along the channels. Group 1 is `conv` itself.
template <typename Conv>
Tensor per_group(NodeContext& node, Tensor x, Tensor w, std::int64_t group, Conv&& conv) {
  if (group == 1) return conv(x, w);
  metakernel::Graph& g = node.graph();
  const zspace::Point xs = x.type().shape(), ws = w.type().shape();
  if (group < 1 || xs[1] != group * ws[1] || ws[0] % group != 0)
    throw node.error(fmt::format(
        "group={}: x has {} channels and the filters [{}, {}, …] (C must be group·{}, O a "
        "multiple of group)",
        group, xs[1], ws[0], ws[1], ws[1]));
  const std::int64_t cg = ws[1], og = ws[0] / group;
  std::vector<Tensor> parts;
  for (std::int64_t k = 0; k < group; ++k) {
    Tensor xk = g.call("slice", {x}, {{"dim", 1}, {"start", k * cg}, {"end", (k + 1) * cg}});
    Tensor wk = g.call("slice", {w}, {{"dim", 0}, {"start", k * og}, {"end", (k + 1) * og}});
    parts.push_back(conv(xk, wk));
  }
  return concat_tensors(node, parts, 1);
}

// Conv of rank 5 (NCDHW): one stride for the three dims → pad3d, conv3d (dilated_conv3d), add;
// group > 1 as one conv3d per group (per_group).
void convert_conv3d(NodeContext& node, const std::vector<std::int64_t>& xs,
                    const std::vector<std::int64_t>& ws) {
  metakernel::Graph& g = node.graph();
  const std::int64_t group = node.int_attr("group", 1);
  const Spatial sp = read_spatial(node, xs, {ws.begin() + 2, ws.end()});
  const std::int64_t stride = square(node, sp.strides, "strides", 3);
  const std::int64_t dilation = square(node, sp.dilations, "dilations", 3);
  const Tensor x = pad3d(g, node.tensor(0), sp.pads, 0.0);
  Tensor y = per_group(node, x, node.tensor(1), group, [&](Tensor xk, Tensor wk) {
    return dilation == 1
               ? g.call("conv3d", {xk, wk}, {{"stride", stride}})
               : g.call("dilated_conv3d", {xk, wk}, {{"stride", stride}, {"dilation", dilation}});
  });
  if (node.has_input(2)) {
    const std::vector<std::int64_t> bshape = node.shape(2);
    if (bshape.size() != 1) throw node.error("the bias must have rank 1");
    y = g.call("add", {y, reshaped_input(node, 2, {bshape[0], 1, 1, 1})});
  }
  node.set_output(0, y);
}

// Conv and ConvTranspose end alike: the bias (input 2, one value per output channel) added, a
// 1-D result (computed as height 1) reshaped back to [N, C, L], and the node's output set.
void set_conv_output(NodeContext& node, metakernel::Graph& g, Tensor y, bool one_d) {
  if (node.has_input(2)) {
    const std::vector<std::int64_t> bshape = node.shape(2);
    if (bshape.size() != 1) throw node.error("the bias must have rank 1");
    y = g.call("add", {y, reshaped_input(node, 2, {bshape[0], 1, 1})});
  }
  if (one_d) {
    const zspace::Point ys = y.type().shape();
    y = reshape_to(g, y, {ys[0], ys[1], ys[3]});
  }
  node.set_output(0, y);
}

}  // namespace

// Conv: 2-D (NCHW) or 1-D (NCL), any group, no dilation, one stride for both dims, any pads →
// conv2d, or grouped_conv2d for group > 1 (depthwise: group = channels). Equal pads on every
// side are the kernel's `padding` (a pad operation); others an explicit pad2d first. A 1-D
// layer is a 2-D one of height 1: x [N, C, L] → [N, C, 1, L], the filters [O, C/g, K] →
// [O, C/g, 1, K], pads on the width only, the result reshaped back to [N, O, L']. The bias is
// an add of it reshaped to [O, 1, 1].

void convert_conv(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const std::vector<std::int64_t> xs = node.shape(0), ws = node.shape(1);
  if (xs.size() < 3 || xs.size() > 5) {
    throw node.error(
        fmt::format("{} has rank {}; only rank 3, 4 and 5 (1-D, 2-D and 3-D "
                    "convolution: NCL, NCHW, NCDHW) are supported",
                    node.node().input(0), xs.size()));
  }
  if (ws.size() != xs.size())
    throw node.error(fmt::format("the weights have rank {}, X rank {}", ws.size(), xs.size()));
  if (auto ks = node.ints_attr("kernel_shape")) {
    if (!std::equal(ks->begin(), ks->end(), ws.begin() + 2, ws.end()))
      throw node.error(
          fmt::format("kernel_shape=[{}] does not match the weights", fmt::join(*ks, ", ")));
  }
  if (xs.size() == 5) return convert_conv3d(node, xs, ws);
  const bool one_d = xs.size() == 3;
  const std::int64_t group = node.int_attr("group", 1);
  if (group < 1) throw node.error(fmt::format("group={} must be at least 1", group));
  const ConvWindow win = conv_window(node, xs, {ws.begin() + 2, ws.end()});
  if (!one_d && win.stride_h != win.stride_w) {
    throw node.error(fmt::format("strides=[{}, {}] are not supported (only equal strides)",
                                 win.stride_h, win.stride_w));
  }
  const std::int64_t stride = win.stride_w;  // a 1-D layer's height is 1: any stride fits it
  Tensor x = node.tensor(0);
  Tensor w = node.tensor(1);
  if (one_d) {
    x = reshape_to(g, x, {xs[0], xs[1], 1, xs[2]});
    w = reshaped_input(node, 1, {ws[0], ws[1], 1, ws[2]});
  }
  std::int64_t padding = 0;
  if (win.even() && !one_d && win.dilation == 1) {
    padding = win.top;
  } else if (win.any()) {
    x = g.call(
        "pad2d", {x},
        {{"top", win.top}, {"bottom", win.bottom}, {"left", win.left}, {"right", win.right}});
  }
  Tensor y = win.dilation != 1
                 ? per_group(node, x, w, group,
                             [&](Tensor xk, Tensor wk) {
                               return g.call("dilated_conv2d", {xk, wk},
                                             {{"stride", stride}, {"dilation", win.dilation}});
                             })
             : group == 1 ? g.call("conv2d", {x, w}, {{"stride", stride}, {"padding", padding}})
                          : g.call("grouped_conv2d", {x, w},
                                   {{"groups", group}, {"stride", stride}, {"padding", padding}});
  set_conv_output(node, g, y, one_d);
}

namespace {

// `t` with f − 1 zeros after each cell along `dim` but the last ([a b c], f = 3 →
// [a 0 0 b 0 0 c]): a new dim of extent 1 after `dim` widened to f by unslice, the two merged
// (reshape), the trailing zeros sliced off. Exact (copies and zeros); t itself when f is 1.
Tensor spread(metakernel::Graph& g, Tensor t, std::size_t dim, std::int64_t f) {
  if (f == 1) return t;
  const zspace::Point p = t.type().shape();
  std::vector<std::int64_t> shape(p.begin(), p.end());
  const std::int64_t n = shape[dim];
  std::vector<std::int64_t> split = shape;
  split.insert(split.begin() + static_cast<std::ptrdiff_t>(dim) + 1, 1);
  Tensor u = reshape_to(g, t, split);
  u = g.call("unslice", {u},
             {{"dim", static_cast<std::int64_t>(dim) + 1}, {"start", 0}, {"size", f}});
  shape[dim] = n * f;
  u = reshape_to(g, u, shape);
  return g.call("slice", {u},
                {{"dim", static_cast<std::int64_t>(dim)}, {"start", 0}, {"end", (n - 1) * f + 1}});
}

}  // namespace

// ConvTranspose: the transposed convolution is conv2d's input gradient — X plays conv2d's
// d_result, W [C_in, C_out/group, kh, kw] its filters — so conv2d_grad_input computes the full
// output [N, C_out, (H−1)·s + (kh−1)·d + 1 + output_padding, …] (the output_padding rows are no
// window's: only the bias reaches them), which slices then crop by the pads. Its first input,
// which only gives the result's shape, is a zero weight of that shape. pads come from `pads`,
// or from `output_shape` / auto_pad SAME_* as ONNX defines them (the total split evenly, the
// odd cell at the end for SAME_UPPER, at the start otherwise). 1-D as a 2-D layer of height 1.
//
// conv2d_grad_input has one stride and no dilation, so the others are zeros put in (spread):
// strides (s_h, s_w) run the kernel at g = gcd(s_h, s_w) on X spread by s_h/g along H and s_w/g
// along W (X's cell i lands at i·s, as ONNX's output index i·s + k·d has it), and dilations
// spread W's taps. The kernel then also multiplies the zeros (s_h·s_w/g² times X's work; d_h·d_w
// times the taps): exact, but slower than a kernel with those parameters would be. group > 1 is
// one transposed convolution per group — X's and W's channels of group k sliced, the results
// concatenated along the channels.
void convert_conv_transpose(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const std::vector<std::int64_t> xs = node.shape(0), ws = node.shape(1);
  if (xs.size() != 3 && xs.size() != 4) {
    throw node.error(
        fmt::format("{} has rank {}; only rank 4 (2-D, NCHW) and 3 (1-D, NCL) are supported",
                    node.node().input(0), xs.size()));
  }
  const std::size_t dims = xs.size() - 2;
  const std::int64_t group = node.int_attr("group", 1);
  if (group < 1 || xs[1] % group != 0)
    throw node.error(fmt::format("group={} does not divide X's {} channels", group, xs[1]));
  if (ws.size() != xs.size() || ws[0] != xs[1])
    throw node.error(
        fmt::format("the weights [{}] do not match X [{}] (W is [C_in, C_out/group, k…])",
                    fmt::join(ws, ", "), fmt::join(xs, ", ")));
  if (auto ks = node.ints_attr("kernel_shape")) {
    if (!std::equal(ks->begin(), ks->end(), ws.begin() + 2, ws.end()))
      throw node.error(
          fmt::format("kernel_shape=[{}] does not match the weights", fmt::join(*ks, ", ")));
  }
  auto per_dim = [&](std::string_view what) {
    const std::vector<std::int64_t> v =
        node.ints_attr(what).value_or(std::vector<std::int64_t>(dims, 1));
    if (v.size() != dims || std::any_of(v.begin(), v.end(), [](std::int64_t k) { return k < 1; }))
      throw node.error(
          fmt::format("{}=[{}] must be {} values ≥ 1", what, fmt::join(v, ", "), dims));
    return v;
  };
  const std::vector<std::int64_t> strides = per_dim("strides"), dilations = per_dim("dilations");
  std::vector<std::int64_t> out_pad =
      node.ints_attr("output_padding").value_or(std::vector<std::int64_t>(dims, 0));
  bool out_pad_ok = out_pad.size() == dims;
  for (std::size_t d = 0; out_pad_ok && d < dims; ++d)
    out_pad_ok = out_pad[d] >= 0 && out_pad[d] < std::max(strides[d], dilations[d]);
  if (!out_pad_ok) {
    throw node.error(
        fmt::format("output_padding=[{}] must be {} values in [0, max(stride, dilation))",
                    fmt::join(out_pad, ", "), dims));
  }
  const std::string auto_pad = node.string_attr("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    throw node.error(
        fmt::format("auto_pad={} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", auto_pad));
  }
  std::vector<std::int64_t> full(dims), core(dims), pads(2 * dims, 0);
  for (std::size_t d = 0; d < dims; ++d) {
    core[d] = (xs[2 + d] - 1) * strides[d] + (ws[2 + d] - 1) * dilations[d] + 1;
    full[d] = core[d] + out_pad[d];
  }
  const auto output_shape = node.ints_attr("output_shape");
  if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (output_shape && output_shape->size() != dims)
      throw node.error(fmt::format("output_shape=[{}] must have {} values",
                                   fmt::join(*output_shape, ", "), dims));
    for (std::size_t d = 0; d < dims; ++d) {
      const std::int64_t out = output_shape ? (*output_shape)[d] : xs[2 + d] * strides[d];
      std::int64_t total = full[d] - out;
      if (total < 0 && out_pad[d] - total < std::max(strides[d], dilations[d])) {
        // An output_shape past the full output by fewer cells than the stride: ONNX's
        // implicit output padding (cells no window reaches; only the bias does).
        out_pad[d] -= total;
        full[d] = out;
        total = 0;
      }
      if (total < 0) {
        throw node.error(
            fmt::format("an output of {} cells in dim {} is larger than the {} a "
                        "transposed convolution gives",
                        out, 2 + d, full[d]));
      }
      pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[dims + d] = total - pads[d];
    }
    node.ints_attr("pads");  // ignored when output_shape is given, as ONNX says
  } else if (auto_pad == "NOTSET") {
    if (auto given = node.ints_attr("pads")) {
      if (given->size() != 2 * dims)
        throw node.error(
            fmt::format("pads=[{}] must have {} values", fmt::join(*given, ", "), 2 * dims));
      pads = *given;
    }
  }
  for (std::size_t d = 0; d < dims; ++d) {
    if (pads[d] < 0 || pads[dims + d] < 0 || pads[d] + pads[dims + d] >= full[d])
      throw node.error(fmt::format("pads=[{}] must be ≥ 0 and leave cells of the {} in dim {}",
                                   fmt::join(pads, ", "), full[d], 2 + d));
  }
  const bool one_d = dims == 1;
  const std::int64_t stride = one_d ? strides[0] : std::gcd(strides[0], strides[1]);
  Tensor x = node.tensor(0);
  Tensor w = node.tensor(1);
  if (one_d) {
    x = reshape_to(g, x, {xs[0], xs[1], 1, xs[2]});
    w = reshaped_input(node, 1, {ws[0], ws[1], 1, ws[2]});
  }
  for (std::size_t d = 0; d < dims; ++d) {
    const std::size_t dim = one_d ? 3 : 2 + d;
    x = spread(g, x, dim, strides[d] / stride);
    w = spread(g, w, dim, dilations[d]);
  }
  // The kernel's output: the core, plus the output_padding cells where its stride still
  // reaches them (each fewer than the stride); the others are zeros added after.
  std::vector<std::int64_t> kernel_out(dims);
  for (std::size_t d = 0; d < dims; ++d)
    kernel_out[d] = core[d] + (out_pad[d] < stride ? out_pad[d] : 0);
  const std::int64_t out_group = ws[1], in_group = xs[1] / group;
  std::vector<std::int64_t> like_shape = {xs[0], out_group, one_d ? 1 : kernel_out[0],
                                          kernel_out.back()};
  HostTensor shape_of;
  shape_of.dtype = x.type().dtype;
  shape_of.shape = like_shape;
  shape_of.floats.assign(
      static_cast<std::size_t>(like_shape[0] * like_shape[1] * like_shape[2] * like_shape[3]), 0.0);
  Tensor like =
      node.import().constant_input(node_display_name(node.node()) + ".output_shape", shape_of);
  std::vector<Tensor> parts;
  for (std::int64_t k = 0; k < group; ++k) {
    Tensor xk = x, wk = w;
    if (group > 1) {
      xk = g.call("slice", {x}, {{"dim", 1}, {"start", k * in_group}, {"end", (k + 1) * in_group}});
      wk = g.call("slice", {w}, {{"dim", 0}, {"start", k * in_group}, {"end", (k + 1) * in_group}});
    }
    parts.push_back(g.call("conv2d_grad_input", {like, wk, xk}, {{"stride", stride}}));
  }
  Tensor y = group == 1 ? parts.front() : concat_tensors(node, parts, 1);
  for (std::size_t d = 0; d < dims; ++d) {
    const auto dim = static_cast<std::int64_t>(one_d ? 3 : 2 + d);
    if (kernel_out[d] != full[d])
      y = g.call("unslice", {y}, {{"dim", dim}, {"start", 0}, {"size", full[d]}});
    const std::int64_t begin = pads[d], end = full[d] - pads[dims + d];
    if (begin == 0 && end == full[d]) continue;
    y = g.call("slice", {y}, {{"dim", dim}, {"start", begin}, {"end", end}});
  }
  set_conv_output(node, g, y, one_d);
}

namespace {

// The extra cells past the end pad that ceil_mode=1 adds so the last window fits: ONNX's
// output size ceil((in + pads − k) / stride) + 1 against floor's. Error when the last window
// would then start past the padded input's real cells (it would hold padding only).
std::int64_t ceil_extra(NodeContext& node, std::int64_t in, std::int64_t begin, std::int64_t end,
                        std::int64_t k, std::int64_t stride) {
  const std::int64_t span = in + begin + end - k;
  if (span < 0) return 0;  // the kernel's check names the window that does not fit
  const std::int64_t out = (span + stride - 1) / stride + 1;
  if ((out - 1) * stride >= in + begin) {
    throw node.error(fmt::format(
        "ceil_mode=1 gives a last window of padding only (input {}, pads {} and {}, kernel {}, "
        "stride {}); not supported",
        in, begin, end, k, stride));
  }
  return (out - 1) * stride + k - (in + begin + end);
}

// The cells of each output of a 1-D window that count in an average: those inside
// [−begin, in + end) when the pads count (count_include_pad=1), else inside [0, in).
std::vector<std::int64_t> window_counts(std::int64_t in, std::int64_t begin, std::int64_t end,
                                        std::int64_t k, std::int64_t stride, std::int64_t out,
                                        bool pads_count) {
  const std::int64_t lo = pads_count ? -begin : 0, hi = pads_count ? in + end : in;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(out));
  for (std::int64_t o = 0; o < out; ++o) {
    const std::int64_t first = o * stride - begin;
    counts[static_cast<std::size_t>(o)] =
        std::max<std::int64_t>(0, std::min(first + k, hi) - std::max(first, lo));
  }
  return counts;
}

// MaxPool / AveragePool of rank 5 (NCDHW) → pad3d, max_pool3d / avg_pool3d: any window,
// strides and pads (MaxPool pads with the lowest finite value, as 2-D), auto_pad; ceil_mode for
// MaxPool. An AveragePool whose windows do not all count their cells (count_include_pad=0 with
// pads, ceil_mode adding cells) is refused.
void convert_pool3d(NodeContext& node, bool is_max, const std::vector<std::int64_t>& xs,
                    const std::vector<std::int64_t>& ks, double pad_value) {
  Spatial sp = read_spatial(node, xs, ks);
  if (sp.dilated())
    throw node.error(
        fmt::format("dilations=[{}] are not supported (only 1)", fmt::join(sp.dilations, ", ")));
  for (std::size_t d = 0; d < 3; ++d) {
    if (sp.pads[d] >= ks[d] || sp.pads[3 + d] >= ks[d])
      throw node.error(fmt::format("pads=[{}] must be smaller than kernel_shape=[{}]",
                                   fmt::join(sp.pads, ", "), fmt::join(ks, ", ")));
  }
  if (node.int_attr("ceil_mode", 0) != 0) {
    for (std::size_t d = 0; d < 3; ++d) {
      const std::int64_t extra =
          ceil_extra(node, xs[2 + d], sp.pads[d], sp.pads[3 + d], ks[d], sp.strides[d]);
      if (extra > 0 && !is_max)
        throw node.error("ceil_mode=1 that adds cells is not supported for 3-D AveragePool");
      sp.pads[3 + d] += extra;
    }
  }
  if (!is_max && node.int_attr("count_include_pad", 0) == 0 &&
      std::any_of(sp.pads.begin(), sp.pads.end(), [](std::int64_t p) { return p > 0; })) {
    throw node.error("pads with count_include_pad=0 are not supported for 3-D AveragePool");
  }
  metakernel::Graph& g = node.graph();
  const Tensor x = pad3d(g, node.tensor(0), sp.pads, pad_value);
  node.set_output(0, g.call(is_max ? "max_pool3d" : "avg_pool3d", {x},
                            {{"kernel_d", ks[0]},
                             {"kernel_h", ks[1]},
                             {"kernel_w", ks[2]},
                             {"stride_d", sp.strides[0]},
                             {"stride_h", sp.strides[1]},
                             {"stride_w", sp.strides[2]}}));
}

// The cells a, a + f, …, a + (c − 1)·f of `t` along `dim` (f ≥ 1, all in range): a slice when
// f is 1; else the slice from a to past the last cell, widened by zeros to c·f cells (unslice),
// split into [c, f] (reshape), the first of each f kept (slice) and the dim merged back.
Tensor strided_take(metakernel::Graph& g, Tensor t, std::size_t dim, std::int64_t a, std::int64_t f,
                    std::int64_t c) {
  const zspace::Point p = t.type().shape();
  std::vector<std::int64_t> shape(p.begin(), p.end());
  const auto d = static_cast<std::int64_t>(dim);
  const std::int64_t end = f == 1 ? a + c : std::min(a + c * f, shape[dim]);
  if (a != 0 || end != shape[dim])
    t = g.call("slice", {t}, {{"dim", d}, {"start", a}, {"end", end}});
  if (f == 1) return t;
  if (end - a != c * f) t = g.call("unslice", {t}, {{"dim", d}, {"start", 0}, {"size", c * f}});
  std::vector<std::int64_t> split = shape;
  split[dim] = c;
  split.insert(split.begin() + d + 1, f);
  t = g.call("slice", {reshape_to(g, t, split)}, {{"dim", d + 1}, {"start", 0}, {"end", 1}});
  shape[dim] = c;
  return reshape_to(g, t, shape);
}

// MaxPool with dilations (1-D and 2-D; x already [N, C, H, W], H = 1 for 1-D): windows of taps
// d apart are no box, so the pool is split into plain ones. Per spatial dim, with g = gcd(s, d),
// s = g·s′ and d = g·d′, output o reads the padded input at g·(o·s′ + k·d′); the outputs o ≡ r
// (mod d′), o = r + d′·q, read g·(r·s′ + d′·(q·s′ + k)): the cells r·s′·g, …, every g·d′-th
// (strided_take), pooled by a plain window of the same k taps at stride s′. Each of the d′_h·d′_w
// phases is such a pool, its outputs spread d′ apart and placed at r (spread, unslice), and the
// phases added (each output cell is one phase's; the others add zeros). With d | s (PyTorch's
// usual) there is one phase: the input subsampled by d, then a plain pool. Exact. Refused when
// some window would hold padding only (its maximum would be the pad value, not −∞).
Tensor dilated_max_pool(NodeContext& node, Tensor x, const ConvWindow& pads,
                        const std::array<std::int64_t, 2>& kernel,
                        const std::array<std::int64_t, 2>& strides,
                        const std::array<std::int64_t, 2>& dilations, double pad_value) {
  metakernel::Graph& g = node.graph();
  const zspace::Point p = x.type().shape();
  const std::array<std::int64_t, 2> in = {p[2], p[3]};
  const std::array<std::int64_t, 2> before = {pads.top, pads.left},
                                    after = {pads.bottom, pads.right};
  std::array<std::int64_t, 2> out{}, gg{}, sp{}, dp{};
  for (std::size_t d = 0; d < 2; ++d) {
    const std::int64_t extent = (kernel[d] - 1) * dilations[d] + 1;
    const std::int64_t span = in[d] + before[d] + after[d] - extent;
    if (span < 0)
      throw node.error(
          fmt::format("the dilated window ({} cells) is larger than the padded input ({})", extent,
                      in[d] + before[d] + after[d]));
    out[d] = span / strides[d] + 1;
    gg[d] = std::gcd(strides[d], dilations[d]);
    sp[d] = strides[d] / gg[d];
    dp[d] = dilations[d] / gg[d];
    for (std::int64_t o = 0; o < out[d]; ++o) {
      bool real = false;
      for (std::int64_t k = 0; k < kernel[d] && !real; ++k) {
        const std::int64_t at = o * strides[d] + k * dilations[d] - before[d];
        real = at >= 0 && at < in[d];
      }
      if (!real)
        throw node.error(fmt::format(
            "output {} of spatial dim {} has a window of padding only; not supported", o, d));
    }
  }
  if (pads.any()) {
    x = g.call("pad2d", {x},
               {{"top", pads.top},
                {"bottom", pads.bottom},
                {"left", pads.left},
                {"right", pads.right},
                {"value", pad_value}});
  }
  std::optional<Tensor> sum;
  for (std::int64_t rh = 0; rh < dp[0]; ++rh) {
    for (std::int64_t rw = 0; rw < dp[1]; ++rw) {
      const std::array<std::int64_t, 2> r = {rh, rw};
      std::array<std::int64_t, 2> q{};
      Tensor t = x;
      for (std::size_t d = 0; d < 2; ++d) {
        q[d] = (out[d] - r[d] + dp[d] - 1) / dp[d];
        t = strided_take(g, t, 2 + d, gg[d] * r[d] * sp[d], gg[d] * dp[d],
                         (q[d] - 1) * sp[d] + kernel[d]);
      }
      Tensor y = kernel[0] == kernel[1] && sp[0] == sp[1]
                     ? g.call("max_pool2d", {t}, {{"kernel", kernel[0]}, {"stride", sp[0]}})
                     : g.call("max_pool2d_rect", {t},
                              {{"kernel_h", kernel[0]},
                               {"kernel_w", kernel[1]},
                               {"stride_h", sp[0]},
                               {"stride_w", sp[1]}});
      for (std::size_t d = 0; d < 2; ++d) {
        y = spread(g, y, 2 + d, dp[d]);
        if (dp[d] != 1 || q[d] != out[d])
          y = g.call(
              "unslice", {y},
              {{"dim", static_cast<std::int64_t>(2 + d)}, {"start", r[d]}, {"size", out[d]}});
      }
      sum = sum ? g.call("add", {*sum, y}) : y;
    }
  }
  return *sum;
}

}  // namespace

namespace {

// MaxPool with dilations, 1-D or 2-D: ceil_mode's extra end cells, then dilated_max_pool.
void convert_dilated_max_pool(NodeContext& node, const std::vector<std::int64_t>& xs,
                              const std::vector<std::int64_t>& ks, const Spatial& sp) {
  const bool one_d = xs.size() == 3;
  if (node.int_attr("storage_order", 0) != 0)
    throw node.error("storage_order=1 is not supported (only 0)");
  refuse_used_outputs(node, 1);
  metakernel::Graph& g = node.graph();
  Tensor x = node.tensor(0);
  if (one_d) x = reshape_to(g, x, {xs[0], xs[1], 1, xs[2]});
  const std::size_t dims = xs.size() - 2;
  const std::array<std::int64_t, 2> kernel = {one_d ? 1 : ks[0], ks.back()};
  const std::array<std::int64_t, 2> strides = {one_d ? 1 : sp.strides[0], sp.strides.back()};
  const std::array<std::int64_t, 2> dilations = {one_d ? 1 : sp.dilations[0], sp.dilations.back()};
  ConvWindow pads;
  pads.left = sp.pads[dims - 1];
  pads.right = sp.pads[2 * dims - 1];
  if (!one_d) {
    pads.top = sp.pads[0];
    pads.bottom = sp.pads[2];
  }
  if (node.int_attr("ceil_mode", 0) != 0) {
    const zspace::Point p = x.type().shape();
    pads.bottom += ceil_extra(node, p[2], pads.top, pads.bottom, (kernel[0] - 1) * dilations[0] + 1,
                              strides[0]);
    pads.right += ceil_extra(node, p[3], pads.left, pads.right, (kernel[1] - 1) * dilations[1] + 1,
                             strides[1]);
  }
  const double lowest = x.type().dtype == ir::DType::kFloat64
                            ? std::numeric_limits<double>::lowest()
                            : static_cast<double>(std::numeric_limits<float>::lowest());
  Tensor y = dilated_max_pool(node, x, pads, kernel, strides, dilations, lowest);
  if (one_d) {
    const zspace::Point ys = y.type().shape();
    y = reshape_to(g, y, {ys[0], ys[1], ys[3]});
  }
  node.set_output(0, y);
}

}  // namespace

// MaxPool, AveragePool: 2-D (NCHW) and 1-D (NCL, as 2-D of height 1); any window, strides and
// pads, auto_pad, ceil_mode. Square windows and strides are max_pool2d / avg_pool2d, others
// max_pool2d_rect / avg_pool2d_rect. Pads become a pad (or pad2d, uneven) before the pool:
// MaxPool pads with the lowest finite value of the dtype (.tap and JSON parameters hold no −∞;
// every window holds a real cell, so the maximum is the same — except a window whose real cells
// are all −∞, which gives the lowest finite value instead), AveragePool with zeros.
// ceil_mode=1 pads the end further so the last window fits. An AveragePool whose windows do
// not all count kh·kw cells — count_include_pad=0 with pads, or the cells ceil_mode adds, which
// never count — is the pool of the zero-padded input times kh·kw, divided by each output's
// count of cells (a [OH, OW] weight of integers, exact): div(mul(avg_pool, kh·kw), count).
void convert_pool(NodeContext& node) {
  const bool is_max = node.node().op_type() == "MaxPool";
  const std::vector<std::int64_t> xs = node.shape(0);
  if (xs.size() < 3 || xs.size() > 5) {
    throw node.error(
        fmt::format("{} has rank {}; only rank 3, 4 and 5 (1-D, 2-D and 3-D "
                    "pooling: NCL, NCHW, NCDHW) are supported",
                    node.node().input(0), xs.size()));
  }
  const bool one_d = xs.size() == 3;
  const auto ks = node.ints_attr("kernel_shape");
  if (!ks) throw node.error("attribute 'kernel_shape' is missing");
  if (ks->size() != xs.size() - 2 ||
      std::any_of(ks->begin(), ks->end(), [](std::int64_t k) { return k < 1; })) {
    throw node.error(fmt::format("kernel_shape=[{}] must be {} values ≥ 1", fmt::join(*ks, ", "),
                                 xs.size() - 2));
  }
  if (xs.size() == 5) {
    double lowest = 0;
    if (is_max) {
      if (node.int_attr("storage_order", 0) != 0)
        throw node.error("storage_order=1 is not supported (only 0)");
      refuse_used_outputs(node, 1);
      lowest = node.tensor(0).type().dtype == ir::DType::kFloat64
                   ? std::numeric_limits<double>::lowest()
                   : static_cast<double>(std::numeric_limits<float>::lowest());
    }
    return convert_pool3d(node, is_max, xs, *ks, lowest);
  }
  const Spatial sp = read_spatial(node, xs, *ks);
  if (sp.dilated() && !is_max)
    throw node.error(fmt::format("dilations=[{}] are not supported for AveragePool (only 1)",
                                 fmt::join(sp.dilations, ", ")));
  if (sp.dilated()) return convert_dilated_max_pool(node, xs, *ks, sp);
  ConvWindow win = conv_window(node, xs, *ks);
  const std::int64_t kh = one_d ? 1 : ks->front(), kw = ks->back();
  const std::int64_t ih = one_d ? 1 : xs[2], iw = xs.back();
  if (win.top >= kh || win.bottom >= kh || win.left >= kw || win.right >= kw) {
    throw node.error(
        fmt::format("pads [{}, {}, {}, {}] (top, bottom, left, right) must be smaller "
                    "than the {}×{} window",
                    win.top, win.bottom, win.left, win.right, kh, kw));
  }
  const std::int64_t ceil = node.int_attr("ceil_mode", 0);
  std::int64_t extra_h = 0, extra_w = 0;
  if (ceil != 0) {
    extra_h = ceil_extra(node, ih, win.top, win.bottom, kh, win.stride_h);
    extra_w = ceil_extra(node, iw, win.left, win.right, kw, win.stride_w);
  }
  double pad_value = 0;
  bool pads_count = true;
  if (is_max) {
    if (node.int_attr("storage_order", 0) != 0)
      throw node.error("storage_order=1 is not supported (only 0)");
    refuse_used_outputs(node, 1);
    pad_value = node.tensor(0).type().dtype == ir::DType::kFloat64
                    ? std::numeric_limits<double>::lowest()
                    : static_cast<double>(std::numeric_limits<float>::lowest());
  } else {
    pads_count = node.int_attr("count_include_pad", 0) != 0;
  }
  metakernel::Graph& g = node.graph();
  Tensor x = node.tensor(0);
  if (one_d) x = reshape_to(g, x, {xs[0], xs[1], 1, xs[2]});
  ConvWindow padded = win;
  padded.bottom += extra_h;
  padded.right += extra_w;
  if (padded.even() && padded.any()) {
    x = g.call("pad", {x}, {{"padding", padded.top}, {"value", pad_value}});
  } else if (padded.any()) {
    x = g.call("pad2d", {x},
               {{"top", padded.top},
                {"bottom", padded.bottom},
                {"left", padded.left},
                {"right", padded.right},
                {"value", pad_value}});
  }
  const bool square_window = kh == kw && win.stride_h == win.stride_w;
  Tensor y = square_window ? g.call(is_max ? "max_pool2d" : "avg_pool2d", {x},
                                    {{"kernel", kh}, {"stride", win.stride_h}})
                           : g.call(is_max ? "max_pool2d_rect" : "avg_pool2d_rect", {x},
                                    {{"kernel_h", kh},
                                     {"kernel_w", kw},
                                     {"stride_h", win.stride_h},
                                     {"stride_w", win.stride_w}});
  if (!is_max) {
    const zspace::Point ys = y.type().shape();
    const std::vector<std::int64_t> rows =
        window_counts(ih, win.top, win.bottom, kh, win.stride_h, ys[2], pads_count);
    const std::vector<std::int64_t> cols =
        window_counts(iw, win.left, win.right, kw, win.stride_w, ys[3], pads_count);
    HostTensor count;
    count.dtype = y.type().dtype;
    count.shape = {ys[2], ys[3]};
    bool full = true;
    for (std::int64_t r : rows) {
      for (std::int64_t c : cols) {
        count.floats.push_back(static_cast<double>(r * c));
        full = full && r * c == kh * kw;
      }
    }
    if (!full) {
      const std::string name = node_display_name(node.node());
      y = g.call("mul", {y, scalar_input(node, y, "cells", static_cast<double>(kh * kw))});
      y = g.call("div", {y, node.import().constant_input(name + ".count", count)});
    }
  }
  if (one_d) {
    const zspace::Point ys = y.type().shape();
    y = reshape_to(g, y, {ys[0], ys[1], ys[3]});
  }
  node.set_output(0, y);
}

namespace {

// The input cell each output cell of one axis reads under Resize's nearest mode, as ONNX
// defines it: the output coordinate mapped back (coordinate_transformation_mode), rounded
// (nearest_mode), clamped to the input.
std::vector<std::int64_t> nearest_cells(NodeContext& node, std::int64_t in, std::int64_t out,
                                        double scale, const std::string& transform,
                                        const std::string& rounding) {
  std::vector<std::int64_t> cells(static_cast<std::size_t>(out));
  for (std::int64_t o = 0; o < out; ++o) {
    const double r = static_cast<double>(o);
    double x = 0;
    if (transform == "half_pixel") {
      x = (r + 0.5) / scale - 0.5;
    } else if (transform == "pytorch_half_pixel") {
      x = out > 1 ? (r + 0.5) / scale - 0.5 : 0.0;
    } else if (transform == "align_corners") {
      x = out > 1 ? r * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    } else if (transform == "asymmetric") {
      x = r / scale;
    } else if (transform == "tf_half_pixel_for_nn") {
      x = (r + 0.5) / scale;
    } else {
      throw node.error(fmt::format(
          "coordinate_transformation_mode='{}' is not supported (half_pixel, pytorch_half_pixel, "
          "align_corners, asymmetric, tf_half_pixel_for_nn are)",
          transform));
    }
    double i = 0;
    if (rounding == "floor") {
      i = std::floor(x);
    } else if (rounding == "ceil") {
      i = std::ceil(x);
    } else if (rounding == "round_prefer_floor" || rounding == "round_prefer_ceil") {
      const bool half = x - std::floor(x) == 0.5;
      i = half ? (rounding == "round_prefer_floor" ? std::floor(x) : std::ceil(x)) : std::round(x);
    } else {
      throw node.error(fmt::format(
          "nearest_mode='{}' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil",
          rounding));
    }
    cells[static_cast<std::size_t>(o)] =
        std::clamp<std::int64_t>(static_cast<std::int64_t>(i), 0, in - 1);
  }
  return cells;
}

// One row per output cell of one axis: the weights Resize's linear or cubic mode gives each input
// cell, ported from ONNX's reference (onnx/backend/test/case/node/resize.py,
// interpolate_1d_with_x). The output coordinate maps back through the coordinate
// transformation — with ONNX's output width scale · in, a real number when `scales` is given —
// to x; ratio = x − ⌊x⌋, or 1 for a whole x (the left neighbour preferred); the coefficients
// (linear: 1 − ratio, ratio; cubic: Keys with a = cubic_coeff_a) weigh the n nearest cells of the
// input edge-padded by ⌈n/2⌉ cells (ties to the smaller index; a cell of the padding is the
// nearest edge cell); exclude_outside zeroes the padding's weights and renormalises. Row-major
// [out, in].
std::vector<double> interpolation_matrix(NodeContext& node, std::int64_t in, std::int64_t out,
                                         double scale, const std::string& transform, bool cubic,
                                         double a, bool exclude_outside) {
  const std::size_t n = cubic ? 4 : 2;
  const std::int64_t pad = static_cast<std::int64_t>(n / 2);
  const std::int64_t limit = in + 2 * pad;
  const double width = scale * static_cast<double>(in);  // ONNX's output_width
  std::vector<double> m(static_cast<std::size_t>(out * in), 0.0);
  for (std::int64_t o = 0; o < out; ++o) {
    const double r = static_cast<double>(o);
    double x = 0;
    if (transform == "half_pixel") {
      x = (r + 0.5) / scale - 0.5;
    } else if (transform == "pytorch_half_pixel") {
      x = width == 1 ? -0.5 : (r + 0.5) / scale - 0.5;
    } else if (transform == "align_corners") {
      x = width == 1 ? 0.0 : r * static_cast<double>(in - 1) / (width - 1);
    } else if (transform == "asymmetric") {
      x = r / scale;
    } else {
      throw node.error(fmt::format(
          "coordinate_transformation_mode='{}' is not supported with mode linear or cubic "
          "(half_pixel, pytorch_half_pixel, align_corners, asymmetric are)",
          transform));
    }
    const double ratio = x == std::floor(x) ? 1.0 : x - std::floor(x);
    std::vector<double> coeffs;
    if (cubic) {
      const double s = ratio + 1, t = 1 - ratio, u = 2 - ratio;
      coeffs = {((a * s - 5 * a) * s + 8 * a) * s - 4 * a,
                ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1,
                ((a + 2) * t - (a + 3)) * t * t + 1, ((a * u - 5 * a) * u + 8 * a) * u - 4 * a};
    } else {
      coeffs = {1 - ratio, ratio};
    }
    // The n cells of [0, limit) nearest to x + pad (ties: the smaller), in ascending order: all
    // lie within n cells of the nearest one.
    const double xp = x + static_cast<double>(pad);
    const std::int64_t near = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(std::clamp(std::floor(xp), -1.0, static_cast<double>(limit))), 0,
        limit - 1);
    std::vector<std::int64_t> cand;
    for (std::int64_t p = std::max<std::int64_t>(0, near - static_cast<std::int64_t>(n));
         p <= std::min<std::int64_t>(limit - 1, near + static_cast<std::int64_t>(n)); ++p)
      cand.push_back(p);
    std::stable_sort(cand.begin(), cand.end(), [&](std::int64_t p, std::int64_t q) {
      return std::abs(xp - static_cast<double>(p)) < std::abs(xp - static_cast<double>(q));
    });
    cand.resize(n);
    std::sort(cand.begin(), cand.end());
    if (exclude_outside) {
      double sum = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const std::int64_t i = cand[k] - pad;
        if (i < 0 || i >= in) coeffs[k] = 0;
        sum += coeffs[k];
      }
      for (double& c : coeffs) c /= sum;
    }
    for (std::size_t k = 0; k < n; ++k) {
      const std::int64_t i = std::clamp<std::int64_t>(cand[k] - pad, 0, in - 1);
      m[static_cast<std::size_t>(o * in + i)] += coeffs[k];
    }
  }
  return m;
}

// `t` with each cell along `dim` repeated r times ([a b] → [a a a b b b] for r = 3): a dim of
// extent 1 after `dim`, multiplied by ones of extent r there (broadcasting), the two merged.
Tensor repeat_cells(NodeContext& node, Tensor t, std::size_t dim, std::int64_t r) {
  metakernel::Graph& g = node.graph();
  const zspace::Point p = t.type().shape();
  std::vector<std::int64_t> shape(p.begin(), p.end());
  std::vector<std::int64_t> split = shape;
  split.insert(split.begin() + static_cast<std::ptrdiff_t>(dim) + 1, 1);
  std::vector<std::int64_t> ones_shape(split.size(), 1);
  ones_shape[dim + 1] = r;
  HostTensor ones;
  ones.dtype = t.type().dtype;
  ones.shape = ones_shape;
  ones.floats.assign(static_cast<std::size_t>(r), 1.0);
  Tensor u =
      g.call("mul", {reshape_to(g, t, split),
                     node.import().constant_input(
                         fmt::format("{}.ones{}", node_display_name(node.node()), r), ones)});
  shape[dim] *= r;
  return reshape_to(g, u, shape);
}

}  // namespace

// Resize with constant scales or sizes. Mode nearest: per axis, the input cell of every output
// cell as ONNX computes it (nearest_cells) — then, exactly, nothing (the identity), a repeat of
// each cell r times (an integer upscale: reshape, multiply by ones, reshape), every k-th cell
// (an integer downscale: strided_take), or, for at most 64 output cells, the cells themselves
// (take: a slice per run). Modes linear and cubic: per resized axis, a matmul by the constant
// [out, in] interpolation matrix (interpolation_matrix; separable, so Y = A_h · X · A_wᵀ for NCHW):
// the last axis as X · Aᵀ, the one before as A · X, any other moved last by a permute.
// tf_crop_and_resize and computed scales are refused.
void convert_resize(NodeContext& node) {
  const std::vector<std::int64_t> shape = node.shape(0);
  const std::size_t rank = shape.size();
  const std::string mode = node.string_attr("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    throw node.error(fmt::format("mode='{}' is not nearest, linear or cubic", mode));
  const std::string transform = node.string_attr("coordinate_transformation_mode", "half_pixel");
  const std::string rounding = node.string_attr("nearest_mode", "round_prefer_floor");
  const double cubic_a = node.float_attr("cubic_coeff_a", -0.75);
  const bool exclude_outside = node.int_attr("exclude_outside", 0) != 0;
  node.float_attr("extrapolation_value", 0.0);  // tf_crop_and_resize only
  std::vector<double> scales(rank, 1.0);
  std::vector<std::int64_t> out = shape;
  const bool has_scales = node.has_input(2) && node.host(2).size() > 0;
  const bool has_sizes = node.has_input(3) && node.host(3).size() > 0;
  if (has_scales == has_sizes)
    throw node.error("exactly one of scales and sizes must be given (and known at import)");
  if (has_scales) {
    const HostTensor& sc = node.host(2);
    if (sc.size() != static_cast<std::int64_t>(rank))
      throw node.error(fmt::format("scales has {} values for rank {}", sc.size(), rank));
    for (std::size_t d = 0; d < rank; ++d) {
      scales[d] = sc.float_at(d);
      if (!(scales[d] > 0)) throw node.error("scales must be positive");
      out[d] = static_cast<std::int64_t>(std::floor(static_cast<double>(shape[d]) * scales[d]));
    }
  } else {
    out = node.host(3).as_ints();
    if (out.size() != rank)
      throw node.error(fmt::format("sizes has {} values for rank {}", out.size(), rank));
    for (std::size_t d = 0; d < rank; ++d) {
      if (out[d] < 1) throw node.error("sizes must be positive");
      scales[d] = static_cast<double>(out[d]) / static_cast<double>(shape[d]);
    }
  }
  Tensor y = node.tensor(0);
  if (mode != "nearest") {
    metakernel::Graph& g = node.graph();
    for (std::size_t d = 0; d < rank; ++d) {
      if (out[d] < 1) throw node.error(fmt::format("the output has no cells along dim {}", d));
      const std::int64_t n = shape[d], m = out[d];
      std::vector<double> w = interpolation_matrix(node, n, m, scales[d], transform,
                                                   mode == "cubic", cubic_a, exclude_outside);
      bool identity = m == n;
      for (std::int64_t o = 0; identity && o < m; ++o) {
        for (std::int64_t i = 0; identity && i < n; ++i)
          identity = w[static_cast<std::size_t>(o * n + i)] == (o == i ? 1.0 : 0.0);
      }
      if (identity) continue;
      const bool left = d + 2 == rank;  // A · X; otherwise X · Aᵀ (d last, or moved last)
      HostTensor a;
      a.dtype = y.type().dtype;
      a.shape = left ? std::vector<std::int64_t>{m, n} : std::vector<std::int64_t>{n, m};
      a.floats.resize(w.size());
      for (std::int64_t o = 0; o < m; ++o) {
        for (std::int64_t i = 0; i < n; ++i) {
          a.floats[static_cast<std::size_t>(left ? o * n + i : i * m + o)] =
              w[static_cast<std::size_t>(o * n + i)];
        }
      }
      const Tensor at = node.import().constant_input(
          fmt::format("{}.{}{}", node_display_name(node.node()), mode, d), a);
      if (left) {
        y = g.call("matmul", {at, y});
      } else if (d + 1 == rank) {
        y = g.call("matmul", {y, at});
      } else {  // swap d with the last axis, multiply, swap back
        std::vector<std::int64_t> perm(rank);
        std::iota(perm.begin(), perm.end(), 0);
        std::swap(perm[d], perm[rank - 1]);
        y = g.call("permute", {y}, {{"perm", perm}});
        y = g.call("matmul", {y, at});
        y = g.call("permute", {y}, {{"perm", perm}});
      }
    }
    return node.set_output(0, y);
  }
  for (std::size_t d = 0; d < rank; ++d) {
    if (out[d] < 1) throw node.error(fmt::format("the output has no cells along dim {}", d));
    const std::vector<std::int64_t> cells =
        nearest_cells(node, shape[d], out[d], scales[d], transform, rounding);
    const std::int64_t n = shape[d], m = out[d];
    auto all = [&](auto&& want) {
      for (std::int64_t o = 0; o < m; ++o) {
        if (cells[static_cast<std::size_t>(o)] != want(o)) return false;
      }
      return true;
    };
    if (m == n && all([](std::int64_t o) { return o; })) continue;
    if (m % n == 0 && all([&](std::int64_t o) { return o / (m / n); })) {
      y = repeat_cells(node, y, d, m / n);
    } else if (const std::int64_t k = n / m, first = cells[0];
               k >= 1 && all([&](std::int64_t o) { return first + o * k; })) {
      y = strided_take(node.graph(), y, d, first, k, m);
    } else if (m <= 64) {
      y = take(node, y, d, cells);
    } else {
      throw node.error(fmt::format(
          "resizing dim {} from {} to {} cells is not a repeat or a stride of cells; at most "
          "64 output cells are picked one by one",
          d, n, m));
    }
  }
  node.set_output(0, y);
}

// GlobalMaxPool: the maximum over each spatial dim (the last first), reshaped to keep them with
// extent 1 ([N, C, 1, …]); any rank ≥ 3.
void convert_global_max_pool(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const std::vector<std::int64_t> shape = node.shape(0);
  if (shape.size() < 3) throw node.error("X must have rank ≥ 3 ([N, C, D1, …])");
  Tensor y = node.tensor(0);
  for (std::size_t d = shape.size(); d-- > 2;)
    y = g.call("max", {y}, {{"dim", static_cast<std::int64_t>(d)}});
  std::vector<std::int64_t> kept(shape.size(), 1);
  kept[0] = shape[0];
  kept[1] = shape[1];
  node.set_output(0, reshape_to(g, y, kept));
}

// DepthToSpace (blocksize b, mode DCR or CRD) and SpaceToDepth: the reshape–transpose–reshape
// ONNX defines them as (reshape and permute: exact). DepthToSpace DCR: [N, C, H, W] →
// [N, b, b, C/b², H, W] → perm (0, 3, 4, 1, 5, 2) → [N, C/b², H·b, W·b]; CRD: [N, C/b², b, b, H,
// W] → perm (0, 1, 4, 2, 5, 3). SpaceToDepth: [N, C, H/b, b, W/b, b] → perm (0, 3, 5, 1, 2, 4) →
// [N, C·b², H/b, W/b].
void convert_depth_space(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const bool to_space = node.node().op_type() == "DepthToSpace";
  const std::vector<std::int64_t> s = node.shape(0);
  if (s.size() != 4) throw node.error("X must have rank 4 ([N, C, H, W])");
  const std::int64_t b = node.int_attr("blocksize", 0);
  if (b < 1) throw node.error("blocksize must be at least 1");
  const std::int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  Tensor x = node.tensor(0);
  std::vector<std::int64_t> split, perm, out;
  if (to_space) {
    const std::string mode = node.string_attr("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
      throw node.error(fmt::format("mode='{}' is not DCR or CRD", mode));
    if (c % (b * b) != 0)
      throw node.error(fmt::format("{} channels are not a multiple of blocksize² = {}", c, b * b));
    const std::int64_t cb = c / (b * b);
    split = mode == "DCR" ? std::vector<std::int64_t>{n, b, b, cb, h, w}
                          : std::vector<std::int64_t>{n, cb, b, b, h, w};
    perm = mode == "DCR" ? std::vector<std::int64_t>{0, 3, 4, 1, 5, 2}
                         : std::vector<std::int64_t>{0, 1, 4, 2, 5, 3};
    out = {n, cb, h * b, w * b};
  } else {
    if (h % b != 0 || w % b != 0)
      throw node.error(fmt::format("H {} and W {} must be multiples of blocksize {}", h, w, b));
    split = {n, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * b * b, h / b, w / b};
  }
  Tensor t = g.call("reshape", {x}, {{"shape", split}});
  t = g.call("permute", {t}, {{"perm", perm}});
  node.set_output(0, reshape_to(g, t, out));
}

// GlobalAveragePool: the mean over W, then over H (both kept with extent 1).
void convert_global_average_pool(NodeContext& node) {
  require_rank(node, 0, 4, "2-D pooling, NCHW");
  metakernel::Graph& g = node.graph();
  Tensor w = g.call("mean", {node.tensor(0)}, {{"dim", 3}});
  node.set_output(0, g.call("mean", {w}, {{"dim", 2}}));
}

// Softmax over `axis`: the kernel works on the last dim, so another axis is swapped there and
// back with permute. Before opset 13 Softmax flattens the dims from `axis` on; only the last
// axis means the same then.
void convert_softmax(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const std::size_t rank = node.shape(0).size();
  const bool old = node.opset() < 13;
  const std::int64_t axis = normalise_axis(node, node.int_attr("axis", old ? 1 : -1), rank);
  Tensor x = node.tensor(0);
  const auto last = static_cast<std::int64_t>(rank) - 1;
  if (axis == last) return node.set_output(0, g.call("softmax", {x}));
  if (old) {
    throw node.error(fmt::format(
        "axis={} is not supported before opset 13 (Softmax then flattens the dims from axis "
        "on); only the last axis is",
        axis));
  }
  std::vector<std::int64_t> perm(rank);
  for (std::size_t k = 0; k < rank; ++k) perm[k] = static_cast<std::int64_t>(k);
  std::swap(perm[static_cast<std::size_t>(axis)], perm.back());
  Tensor t = g.call("permute", {x}, {{"perm", perm}});
  t = g.call("softmax", {t});
  node.set_output(0, g.call("permute", {t}, {{"perm", perm}}));
}

// LayerNormalization over the dims from `axis` on: (x − mean) / √(variance + ε) · scale + bias,
// as the kernels mean, variance, sub, add, sqrt, div, mul, add — named `<node>/<kernel>`. The
// moments are over one dim: for an axis before the last, the normalised dims are first merged
// into one (reshape), normalised, and split back before scale and bias (which have their shape).
// The optional outputs Mean and InvStdDev (1 / √(variance + ε)) are those moments, reshaped to
// X's shape with 1 from `axis` on.
void convert_layer_norm(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const std::vector<std::int64_t> shape = node.shape(0);
  const std::size_t rank = shape.size();
  if (rank == 0) throw node.error("X must have rank ≥ 1");
  const auto axis = static_cast<std::size_t>(normalise_axis(node, node.int_attr("axis", -1), rank));
  const double epsilon = node.float_attr("epsilon", 1e-5);
  node.int_attr("stash_type", 1);  // the kernels compute the moments in float64 anyway
  std::vector<std::int64_t> merged(shape.begin(),
                                   shape.begin() + static_cast<std::ptrdiff_t>(axis));
  std::int64_t cells = 1;
  for (std::size_t k = axis; k < rank; ++k) cells *= shape[k];
  merged.push_back(cells);
  Tensor x = reshape_to(g, node.tensor(0), merged);
  Tensor mean = g.call("mean", {x});
  Tensor var = g.call("variance", {x});
  Tensor e = scalar_input(node, x, "epsilon", epsilon);
  Tensor std_dev = g.call("sqrt", {g.call("add", {var, e})});
  Tensor y = g.call("div", {g.call("sub", {x, mean}), std_dev});
  y = reshape_to(g, y, shape);
  y = g.call("mul", {y, node.tensor(1)});
  if (node.has_input(2)) y = g.call("add", {y, node.tensor(2)});
  node.set_output(0, y);
  // Mean and InvStdDev, when read: [d0, …, d(axis−1), 1, …, 1].
  std::vector<std::int64_t> kept = shape;
  std::fill(kept.begin() + static_cast<std::ptrdiff_t>(axis), kept.end(), 1);
  // (always a reshape, even to the same shape: `mean` is already named as a part of Y).
  if (node.output_used(1)) node.set_output(1, g.call("reshape", {mean}, {{"shape", kept}}));
  if (node.output_used(2)) {
    Tensor inv = g.call("div", {scalar_input(node, x, "one", 1.0), std_dev});
    node.set_output(2, reshape_to(g, inv, kept));
  }
}

// InstanceNormalization: each (n, c) plane normalised over its spatial dims, then scaled and
// shifted per channel — (x − mean) / √(variance + ε) · scale[c] + B[c], as LayerNormalization's
// kernels: x [N, C, D1, …] is reshaped to [N, C, D1·…] (nothing for one spatial dim), its
// moments taken over the last dim, and the result reshaped back; scale and B become [C, 1, …].
void convert_instance_norm(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const std::vector<std::int64_t> shape = node.shape(0);
  const std::size_t rank = shape.size();
  if (rank < 3) throw node.error("X must have rank ≥ 3 ([N, C, D1, …])");
  const std::int64_t channels = shape[1];
  for (int k = 1; k <= 2; ++k) {
    if (node.shape(k) != std::vector<std::int64_t>{channels})
      throw node.error(
          fmt::format("input {} must have shape [{}] (one value per channel)", k, channels));
  }
  const double epsilon = node.float_attr("epsilon", 1e-5);
  std::int64_t cells = 1;
  for (std::size_t k = 2; k < rank; ++k) cells *= shape[k];
  Tensor x = reshape_to(g, node.tensor(0), {shape[0], channels, cells});
  Tensor mean = g.call("mean", {x});
  Tensor var = g.call("variance", {x});
  Tensor e = scalar_input(node, x, "epsilon", epsilon);
  Tensor y = g.call("div", {g.call("sub", {x, mean}), g.call("sqrt", {g.call("add", {var, e})})});
  y = reshape_to(g, y, shape);
  std::vector<std::int64_t> per_channel(rank - 1, 1);
  per_channel[0] = channels;
  y = g.call("mul", {y, reshaped_input(node, 1, per_channel)});
  node.set_output(0, g.call("add", {y, reshaped_input(node, 2, per_channel)}));
}

// ReduceSum, ReduceMax, ReduceMean over `axes` (an attribute, or input 1 from ReduceSum opset
// 13), keepdims as ONNX: sum/max per axis (highest first), mean per axis (it keeps the dim),
// and a reshape to the kept or dropped shape.
void convert_reduce(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const std::string& op = node.node().op_type();
  const std::vector<std::int64_t> shape = node.shape(0);
  std::vector<std::int64_t> axes;
  if (auto a = node.ints_attr("axes")) axes = *a;
  if (node.has_input(1)) axes = node.host(1).as_ints();
  const bool keepdims = node.int_attr("keepdims", 1) != 0;
  const bool noop_if_empty = node.int_attr("noop_with_empty_axes", 0) != 0;
  Tensor x = node.tensor(0);
  if (axes.empty()) {
    if (noop_if_empty) return node.set_output(0, x);
    for (std::size_t k = 0; k < shape.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
  }
  std::set<std::int64_t, std::greater<>> sorted;
  for (std::int64_t a : axes) sorted.insert(normalise_axis(node, a, shape.size()));
  std::vector<std::int64_t> kept = shape, dropped;
  for (std::int64_t a : sorted) kept[static_cast<std::size_t>(a)] = 1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (!sorted.contains(static_cast<std::int64_t>(k))) dropped.push_back(shape[k]);
  }
  const std::string kernel = op == "ReduceSum" ? "sum" : op == "ReduceMax" ? "max" : "mean";
  Tensor t = x;
  for (std::int64_t a : sorted) t = g.call(kernel, {t}, {{"dim", a}});
  node.set_output(0, reshape_to(g, t, keepdims ? kept : dropped));
}

}  // namespace tapestry::onnx

namespace tapestry::onnx {

namespace {

// Pad modes reflect and edge on any dims: along each padded dim, the cells ONNX copies are
// picked from x by index (take: a slice per run of consecutive cells, concatenated), so the
// result is exact and shards like slices and concats do. For x = [a b c d] and pads (2, 1):
//   reflect  [c b | a b c d | c]    cells 2 1 0 1 2 3 2
//   edge     [a a | a b c d | d]    cells 0 0 0 1 2 3 3
// Reflect needs pads < the dim's size (the mirror holds size − 1 cells); pads are ≥ 0.
Tensor pad_by_copies(NodeContext& node, const std::vector<std::int64_t>& shape,
                     const std::vector<std::int64_t>& pads, const std::string& mode) {
  const std::size_t rank = shape.size();
  Tensor y = node.tensor(0);
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t before = pads[d], after = pads[rank + d], n = shape[d];
    if (before < 0 || after < 0)
      throw node.error(
          fmt::format("pads=[{}]: mode='{}' takes no negative pads", fmt::join(pads, ", "), mode));
    if (before == 0 && after == 0) continue;
    if (mode == "reflect" && (before >= n || after >= n))
      throw node.error(
          fmt::format("pads=[{}]: mode='reflect' needs pads below the dim's size ({} along dim {})",
                      fmt::join(pads, ", "), n, d));
    if (n == 0) throw node.error(fmt::format("mode='{}' pads an empty dim {}", mode, d));
    std::vector<std::int64_t> at;
    for (std::int64_t k = before; k > 0; --k) at.push_back(mode == "reflect" ? k : 0);
    for (std::int64_t k = 0; k < n; ++k) at.push_back(k);
    for (std::int64_t k = 1; k <= after; ++k) at.push_back(mode == "reflect" ? n - 1 - k : n - 1);
    y = take(node, y, d, at);
  }
  return y;
}

}  // namespace

// Pad (opset ≥ 11: pads and constant_value as inputs). Mode constant: nothing when every pad
// is 0 (PyTorch exports one before AveragePool), else the pad kernel when the last two dims get
// one amount on every side, or pad2d for any non-negative amounts on the last two dims. Modes
// reflect and edge: copies of x's cells (pad_by_copies).
void convert_pad(NodeContext& node) {
  const std::string mode = node.string_attr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    throw node.error(
        fmt::format("mode='{}' is not supported (only constant, reflect and edge)", mode));
  }
  const std::vector<std::int64_t> pads = node.host(1).as_ints();
  const std::vector<std::int64_t> shape = node.shape(0);
  const std::size_t rank = shape.size();
  if (pads.size() != 2 * rank) throw node.error("pads must hold 2 × rank values");
  double value = 0;
  if (node.has_input(2)) value = node.host(2).float_at(0);
  if (node.has_input(3)) throw node.error("the axes input is not supported");
  if (mode != "constant") return node.set_output(0, pad_by_copies(node, shape, pads, mode));
  if (std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; }))
    return node.set_output(0, node.input(0));
  bool even = true;
  for (std::size_t k = 0; k < 2 * rank; ++k) {
    const bool spatial = k % rank + 2 >= rank;
    even = even && (!spatial || pads[k] == pads[rank - 1]);
    if ((spatial && pads[k] < 0) || (!spatial && pads[k] != 0) || rank < 2) {
      throw node.error(
          fmt::format("pads=[{}] are not supported (only non-negative amounts on the last two "
                      "dims of a tensor of rank ≥ 2)",
                      fmt::join(pads, ", ")));
    }
  }
  metakernel::Graph& g = node.graph();
  if (even) {
    return node.set_output(
        0, g.call("pad", {node.tensor(0)}, {{"padding", pads[rank - 1]}, {"value", value}}));
  }
  node.set_output(0, g.call("pad2d", {node.tensor(0)},
                            {{"top", pads[rank - 2]},
                             {"bottom", pads[2 * rank - 2]},
                             {"left", pads[rank - 1]},
                             {"right", pads[2 * rank - 1]},
                             {"value", value}}));
}

}  // namespace tapestry::onnx
