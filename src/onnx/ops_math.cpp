// ONNX elementwise maps, MatMul and Gemm (op_table.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "op_table.h"
#include "tapestry/metakernel/builder_ops.h"

namespace tapestry::onnx {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

Tensor scalar_input(NodeContext& node, const Tensor& like, std::string_view what, double value) {
  HostTensor h;
  h.dtype = like.type().dtype;
  h.floats = {value};
  return node.import().constant_input(fmt::format("{}.{}", node_display_name(node.node()), what),
                                      h);
}

// Add, Sub, Mul, Div: folded when both operands are known, else the kernel of the same name
// (numpy broadcasting, as ONNX's).
void convert_binary(NodeContext& node) {
  const std::string& op = node.node().op_type();
  if (node.is_host(0) && node.is_host(1)) {
    const char symbol = op == "Add" ? '+' : op == "Sub" ? '-' : op == "Mul" ? '*' : '/';
    node.set_output(0, fold_binary(node.host(0), node.host(1), symbol));
    return;
  }
  Tensor a = node.tensor(0);
  Tensor b = node.tensor(1);
  node.set_output(0, node.graph().call(lower(op), {a, b}));
}

// Relu, Tanh, Sigmoid, Sqrt, Exp, Neg: the kernel of the same name. Neg of an integer known at
// import (shape code: ONNX's expanded LayerNormalization negates an axis count) is folded.
void convert_unary(NodeContext& node) {
  if (node.node().op_type() == "Neg" && node.is_host(0) && node.host(0).is_int()) {
    HostTensor y = node.host(0);
    for (std::int64_t& v : y.ints) {
      if (v == std::numeric_limits<std::int64_t>::min()) throw node.error("Neg overflows int64");
      v = -v;
    }
    return node.set_output(0, y);
  }
  node.set_output(0, node.graph().call(lower(node.node().op_type()), {node.tensor(0)}));
}

// Gelu (opset 20, or a contrib domain's): exact GELU only.
void convert_gelu(NodeContext& node) {
  const std::string approximate = node.string_attr("approximate", "none");
  if (approximate != "none") {
    throw node.error(
        fmt::format("approximate='{}' is not supported (only the exact GELU, "
                    "approximate='none')",
                    approximate));
  }
  node.set_output(0, node.graph().call("gelu", {node.tensor(0)}));
}

void convert_erf(NodeContext& node) {
  throw node.error(
      "Erf is supported only inside the exact GELU pattern x·0.5·(1 + erf(x/√2)) (which becomes "
      "one gelu); this Erf is not part of one, and Tapestry has no erf kernel");
}

// Pow: a known scalar exponent 2 → mul(x, x), 1 → x, 0.5 → sqrt(x) (exact or correctly rounded,
// and cheaper); any other exponent, known or computed, the `pow` kernel with numpy broadcasting.
// A known exponent is converted to a float x's dtype (ONNX allows any numeric exponent); a
// computed one of another float dtype is cast to it; an integer x needs an exponent of its own
// dtype (Tapestry casts graph tensors between float dtypes only). Folded when both are known.
void convert_pow(NodeContext& node) {
  if (node.is_host(1) && node.host(1).size() == 1) {
    const double p = node.host(1).float_at(0);
    if (p == 1.0 || p == 2.0 || p == 0.5) {
      Tensor x = node.tensor(0);
      if (p == 1.0) return node.set_output(0, x);
      if (p == 2.0) return node.set_output(0, node.graph().call("mul", {x, x}));
      return node.set_output(0, node.graph().call("sqrt", {x}));
    }
  }
  if (node.is_host(0) && node.is_host(1) && !node.host(0).is_int()) {
    HostTensor a = node.host(0);
    const HostTensor& b = node.host(1);
    const std::vector<std::int64_t> shape = broadcast_shapes(a.shape, b.shape);
    HostTensor r{.dtype = a.dtype, .shape = shape, .ints = {}, .floats = {}};
    const std::int64_t n = r.size();
    // Row-major broadcasting: the flat index of each output cell in a and b.
    const auto source = [&](const HostTensor& t, std::int64_t flat) {
      std::int64_t at = 0, stride = 1;
      for (std::size_t d = shape.size(); d-- > 0;) {
        const std::int64_t coord = flat % shape[d];
        flat /= shape[d];
        const std::size_t lead = shape.size() - t.shape.size();
        if (d >= lead) {
          const std::int64_t extent = t.shape[d - lead];
          at += (extent == 1 ? 0 : coord) * stride;
          stride *= extent;
        }
      }
      return static_cast<std::size_t>(at);
    };
    for (std::int64_t k = 0; k < n; ++k)
      r.floats.push_back(std::pow(a.float_at(source(a, k)), b.float_at(source(b, k))));
    return node.set_output(0, r);
  }
  Tensor x = node.tensor(0);
  const ir::DType dtype = x.type().dtype;
  Tensor e;
  if (node.is_host(1) && ir::is_float(dtype)) {
    HostTensor h = node.host(1);  // ONNX allows any numeric exponent: converted to x's dtype
    if (h.is_int()) {
      for (std::int64_t v : h.ints) h.floats.push_back(static_cast<double>(v));
      h.ints.clear();
    }
    h.dtype = dtype;
    e = node.import().constant_input(node.node().input(1), h);
  } else {
    e = node.tensor(1);
    const ir::DType edtype = e.type().dtype;
    if (edtype != dtype && ir::is_float(edtype) && ir::is_float(dtype)) {
      e = metakernel::cast(e, dtype);
    } else if (edtype != dtype) {
      throw node.error(fmt::format(
          "the exponent is {} but the base {}: a computed exponent must be a float when the "
          "base is, or have the integer base's dtype (Tapestry casts between float dtypes only)",
          ir::dtype_name(edtype), ir::dtype_name(dtype)));
    }
  }
  node.set_output(0, node.graph().call("pow", {x, e}));
}

// MatMul: numpy.matmul; 1-D operands are promoted to matrices and the added dim removed.
void convert_matmul(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  Tensor a = node.tensor(0);
  Tensor b = node.tensor(1);
  std::vector<std::int64_t> sa = node.shape(0), sb = node.shape(1);
  if (sa.empty() || sb.empty()) throw node.error("MatMul of a scalar is not defined");
  const bool vec_a = sa.size() == 1, vec_b = sb.size() == 1;
  if (vec_a) a = reshape_to(g, a, {1, sa[0]});
  if (vec_b) b = reshape_to(g, b, {sb[0], 1});
  Tensor r = g.call("matmul", {a, b});
  if (vec_a || vec_b) {
    const zspace::Point rs = r.type().shape();
    std::vector<std::int64_t> shape(rs.begin(), rs.end());
    if (vec_b) shape.erase(shape.end() - 1);
    if (vec_a) shape.erase(shape.end() - 1);
    r = reshape_to(g, r, shape);
  }
  node.set_output(0, r);
}

// Gemm: Y = alpha·A'·B' + beta·C, A' = Aᵀ if transA, B' = Bᵀ if transB. The common PyTorch form
// (transB = 1, alpha = beta = 1, C of shape [N]) is one linear; everything else is matmul with
// transposes, scalar muls and a broadcasting add, named after the node.
void convert_gemm(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const double alpha = node.float_attr("alpha", 1.0);
  const double beta = node.float_attr("beta", 1.0);
  const bool trans_a = node.int_attr("transA", 0) != 0;
  const bool trans_b = node.int_attr("transB", 0) != 0;
  if (node.shape(0).size() != 2 || node.shape(1).size() != 2) {
    throw node.error("A and B must be matrices (rank 2)");
  }
  Tensor a = node.tensor(0);
  if (trans_a) a = g.call("transpose", {a});
  const bool has_c = node.has_input(2) && beta != 0.0;
  const std::int64_t n = node.shape(1)[trans_b ? 0 : 1];
  if (trans_b && alpha == 1.0 && has_c && beta == 1.0 && node.shape(2) == std::vector{n}) {
    return node.set_output(0, g.call("linear", {a, node.tensor(1), node.tensor(2)}));
  }
  Tensor b = node.tensor(1);
  if (trans_b) b = g.call("transpose", {b});
  Tensor y = g.call("matmul", {a, b});
  if (alpha != 1.0) y = g.call("mul", {y, scalar_input(node, y, "alpha", alpha)});
  if (has_c) {
    Tensor c;
    if (node.is_host(2) && beta != 1.0) {
      HostTensor scaled = node.host(2);
      for (double& v : scaled.floats) v *= beta;
      c = node.import().constant_input(  // not C's own name: the value is beta·C
          fmt::format("{}.beta_{}", node_display_name(node.node()), node.node().input(2)), scaled);
    } else {
      c = node.tensor(2);
      if (beta != 1.0) c = g.call("mul", {c, scalar_input(node, c, "beta", beta)});
    }
    y = g.call("add", {y, c});
  }
  node.set_output(0, y);
}

}  // namespace tapestry::onnx
