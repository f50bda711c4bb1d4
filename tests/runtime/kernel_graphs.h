// Test helpers: add one built-in operation to a GraphBuilder, with the index, IPFs and ports the
// metakernel YAML files (kernels/*.yaml) give it. IPF offsets include each tensor's start, so
// inputs may start anywhere (negative coordinates included); results start at `result_start`
// (the origin by default, as the metakernels put them).
//
//   GraphBuilder b;
//   TensorId x = b.tensor("X", "float32", Range({-40, 20}, {-36, 32}));
//   Built lin = add_linear(b, x, w, bias);       // index [batch, out, in], `in` a sum
//   b.shard(lin.op, {2, 3, 1});                  // shards along batch and out
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "graph_builder.h"

namespace tapestry::runtime::testing {

struct Built {
  OperationId op;
  TensorId result;
};

using Rows = std::vector<std::vector<std::int64_t>>;

// Index names d0 … d{n-1}, then `last`.
inline std::vector<std::string> dim_names(std::size_t n, const std::string& last) {
  std::vector<std::string> names;
  for (std::size_t k = 0; k < n; ++k) names.push_back("d" + std::to_string(k));
  names.push_back(last);
  return names;
}

// A zero matrix of `rows` × `cols`.
inline Rows zero_rows(std::size_t rows, std::size_t cols) {
  return Rows(rows, std::vector<std::int64_t>(cols, 0));
}

inline Range tensor_range(const GraphBuilder& b, TensorId t) {
  return b.graph.tensor(t).range();
}
inline std::string tensor_dtype_name(const GraphBuilder& b, TensorId t) {
  return std::string(b.graph.tensor(t).dtype().name());
}

// The result tensor, labelled after the operation count.
inline TensorId result_tensor(GraphBuilder& b, const std::string& dtype, const Point& shape,
                              const Point& start) {
  const std::string label = "R" + std::to_string(b.graph.tensors().size());
  return b.tensor(label, dtype, Range::of_start_shape(start, shape));
}

inline Point origin(std::size_t rank) {
  return Point::zeros(rank);
}

/// relu, neg, exp, tanh, sigmoid, gelu: index = x's shape.
inline Built add_unary(GraphBuilder& b, const std::string& kernel, TensorId x,
                       std::optional<Point> result_start = std::nullopt) {
  const Range xr = tensor_range(b, x);
  const std::size_t n = xr.rank();
  const TensorId r =
      result_tensor(b, tensor_dtype_name(b, x), xr.shape(), result_start.value_or(origin(n)));
  const Range index = Range::of_shape(xr.shape());
  const IndexProjection id = IndexProjection::identity(n);
  const OperationId op = b.op(kernel, index, {{"x", x, id.translate(xr.start())}},
                              {{"result", r, id.translate(tensor_range(b, r).start())}});
  return {op, r};
}

// Rows of a broadcast operand: its dim k (right-aligned to result dim j) follows index dim j
// unless it has extent 1 where the result's is larger.
inline IndexProjection broadcast_ipf(const Range& operand, const Point& out_shape) {
  const std::size_t n = out_shape.rank(), m = operand.rank();
  Rows rows = zero_rows(m, n);
  for (std::size_t k = 0; k < m; ++k) {
    const std::size_t j = n - m + k;
    if (operand.extent(k) == out_shape[j]) rows[k][j] = 1;
  }
  return ipf(rows, operand.start(), std::nullopt, n);
}

/// add, sub, mul, div, maximum with numpy broadcasting.
inline Built add_binary(GraphBuilder& b, const std::string& kernel, TensorId a, TensorId bb,
                        const Point& out_shape) {
  const TensorId r = result_tensor(b, tensor_dtype_name(b, a), out_shape, origin(out_shape.rank()));
  const OperationId op = b.op(kernel, Range::of_shape(out_shape),
                              {{"a", a, broadcast_ipf(tensor_range(b, a), out_shape)},
                               {"b", bb, broadcast_ipf(tensor_range(b, bb), out_shape)}},
                              {{"result", r, IndexProjection::identity(out_shape.rank())}});
  return {op, r};
}

/// bias_add(x [batch…, n], bias [n]).
inline Built add_bias_add(GraphBuilder& b, TensorId x, TensorId bias) {
  const Range xr = tensor_range(b, x);
  const std::size_t n = xr.rank();
  const TensorId r = result_tensor(b, tensor_dtype_name(b, x), xr.shape(), origin(n));
  Rows bias_rows = zero_rows(1, n);
  bias_rows[0][n - 1] = 1;
  const IndexProjection id = IndexProjection::identity(n);
  const OperationId op = b.op("bias_add", Range::of_shape(xr.shape()),
                              {{"x", x, id.translate(xr.start())},
                               {"bias", bias, ipf(bias_rows, tensor_range(b, bias).start())}},
                              {{"result", r, id}});
  return {op, r};
}

/// linear(x [batch…, in], w [out, in], bias [out]): index [batch…, out, in], `in` a sum.
inline Built add_linear(GraphBuilder& b, TensorId x, TensorId w, TensorId bias,
                        std::optional<Point> result_start = std::nullopt) {
  const Range xr = tensor_range(b, x), wr = tensor_range(b, w);
  const std::size_t nb = xr.rank() - 1, n = nb + 2;
  const std::int64_t out = wr.extent(0), in = wr.extent(1);
  Point index_shape = xr.shape().slice(0, nb).concat(Point{out, in});
  Point result_shape = xr.shape().slice(0, nb).concat(Point{out});
  const TensorId r = result_tensor(b, tensor_dtype_name(b, x), result_shape,
                                   result_start.value_or(origin(nb + 1)));
  Rows x_rows = zero_rows(nb + 1, n), w_rows = zero_rows(2, n), b_rows = zero_rows(1, n),
       r_rows = zero_rows(nb + 1, n);
  for (std::size_t k = 0; k < nb; ++k) x_rows[k][k] = r_rows[k][k] = 1;
  x_rows[nb][n - 1] = 1;
  w_rows[0][nb] = w_rows[1][n - 1] = 1;
  b_rows[0][nb] = 1;
  r_rows[nb][nb] = 1;
  std::vector<std::string> names;
  for (std::size_t k = 0; k < nb; ++k)
    names.push_back(nb == 1 ? "batch" : "batch" + std::to_string(k));
  names.push_back("out");
  names.push_back("in");
  const OperationId op = b.op("linear", Range::of_shape(index_shape),
                              {{"x", x, ipf(x_rows, xr.start())},
                               {"w", w, ipf(w_rows, wr.start())},
                               {"bias", bias, ipf(b_rows, tensor_range(b, bias).start())}},
                              {{"result", r, ipf(r_rows, tensor_range(b, r).start())}}, nullptr,
                              names, {{"in", ir::Monoid::kSum}});
  return {op, r};
}

inline std::vector<std::string> matmul_names(std::size_t batch_dims) {
  std::vector<std::string> names;
  for (std::size_t k = 0; k < batch_dims; ++k) names.push_back("batch" + std::to_string(k));
  for (const char* n : {"m", "n", "k"}) names.push_back(n);
  return names;
}

/// matmul(a [batch…, m, k], b [batch…, k, n]) with broadcast batch dims: index
/// [batch…, m, n, k], k a sum.
inline Built add_matmul(GraphBuilder& b, TensorId a, TensorId bb, const Point& batch_shape) {
  const Range ar = tensor_range(b, a), br = tensor_range(b, bb);
  const std::size_t nb = batch_shape.rank(), n = nb + 3;
  const std::int64_t m = ar.extent(ar.rank() - 2), k = ar.extent(ar.rank() - 1),
                     nn = br.extent(br.rank() - 1);
  const TensorId r =
      result_tensor(b, tensor_dtype_name(b, a), batch_shape.concat(Point{m, nn}), origin(nb + 2));
  auto operand_rows = [&](const Range& t, std::size_t row_col, std::size_t col_col) {
    Rows rows = zero_rows(t.rank(), n);
    const std::size_t tb = t.rank() - 2;
    for (std::size_t q = 0; q < tb; ++q) {
      const std::size_t j = nb - tb + q;
      if (t.extent(q) == batch_shape[j]) rows[q][j] = 1;
    }
    rows[tb][row_col] = 1;
    rows[tb + 1][col_col] = 1;
    return rows;
  };
  Rows r_rows = zero_rows(nb + 2, n);
  for (std::size_t q = 0; q < nb + 2; ++q) r_rows[q][q] = 1;
  const OperationId op = b.op("matmul", Range::of_shape(batch_shape.concat(Point{m, nn, k})),
                              {{"a", a, ipf(operand_rows(ar, nb, nb + 2), ar.start())},
                               {"b", bb, ipf(operand_rows(br, nb + 2, nb + 1), br.start())}},
                              {{"result", r, ipf(r_rows, origin(nb + 2))}}, nullptr,
                              matmul_names(nb), {{"k", ir::Monoid::kSum}});
  return {op, r};
}

/// sum / max over `dim` of x: index [pre…, post…, reduced].
inline Built add_reduction(GraphBuilder& b, const std::string& kernel, TensorId x,
                           std::size_t dim) {
  const Range xr = tensor_range(b, x);
  const std::size_t rank = xr.rank(), n = rank;
  Rows x_rows = zero_rows(rank, n), r_rows = zero_rows(rank - 1, n);
  std::vector<std::int64_t> index_shape, result_shape;
  for (std::size_t k = 0, col = 0; k < rank; ++k) {
    if (k == dim) continue;
    x_rows[k][col] = 1;
    r_rows[col][col] = 1;
    index_shape.push_back(xr.extent(k));
    result_shape.push_back(xr.extent(k));
    ++col;
  }
  x_rows[dim][n - 1] = 1;
  index_shape.push_back(xr.extent(dim));
  const Point rs{std::span<const std::int64_t>(result_shape)};
  const TensorId r = result_tensor(b, tensor_dtype_name(b, x), rs, origin(rs.rank()));
  const OperationId op =
      b.op(kernel, Range::of_shape(Point(std::span<const std::int64_t>(index_shape))),
           {{"x", x, ipf(x_rows, xr.start())}},
           {{"result", r, ipf(r_rows, origin(rank - 1), std::nullopt, n)}},
           nlohmann::json{{"dim", dim}}, dim_names(rank - 1, "reduced"),
           {{"reduced", kernel == "max" ? ir::Monoid::kMax : ir::Monoid::kSum}});
  return {op, r};
}

/// reduce(x [block, d…], op): index [d…, block].
inline Built add_reduce(GraphBuilder& b, TensorId x, ir::Monoid monoid) {
  const Range xr = tensor_range(b, x);
  const std::size_t n = xr.rank();
  Rows x_rows = zero_rows(n, n), r_rows = zero_rows(n - 1, n);
  x_rows[0][n - 1] = 1;
  for (std::size_t k = 1; k < n; ++k) x_rows[k][k - 1] = r_rows[k - 1][k - 1] = 1;
  const Point rs = xr.shape().slice(1, n);
  const TensorId r = result_tensor(b, tensor_dtype_name(b, x), rs, origin(n - 1));
  const OperationId op = b.op("reduce", Range::of_shape(rs.concat(Point{xr.extent(0)})),
                              {{"x", x, ipf(x_rows, xr.start())}},
                              {{"result", r, ipf(r_rows, origin(n - 1), std::nullopt, n)}},
                              nlohmann::json{{"op", std::string(ir::monoid_name(monoid))}},
                              dim_names(n - 1, "block"), {{"block", monoid}});
  return {op, r};
}

/// softmax(x [batch…, n]): index [batch…], cells a whole row.
inline Built add_softmax(GraphBuilder& b, TensorId x) {
  const Range xr = tensor_range(b, x);
  const std::size_t nb = xr.rank() - 1;
  Rows rows = zero_rows(nb + 1, nb);
  for (std::size_t k = 0; k < nb; ++k) rows[k][k] = 1;
  const Point window = Point::ones(nb).concat(Point{xr.extent(nb)});
  const TensorId r = result_tensor(b, tensor_dtype_name(b, x), xr.shape(), origin(nb + 1));
  const OperationId op = b.op("softmax", Range::of_shape(xr.shape().slice(0, nb)),
                              {{"x", x, ipf(rows, xr.start(), window, nb)}},
                              {{"result", r, ipf(rows, origin(nb + 1), window, nb)}});
  return {op, r};
}

/// conv2d(x [N, C, H, W], w [O, C, KH, KW], stride): index [n, o, oh, ow, c], c a sum.
inline Built add_conv2d(GraphBuilder& b, TensorId x, TensorId w, std::int64_t stride) {
  const Range xr = tensor_range(b, x), wr = tensor_range(b, w);
  const std::int64_t kh = wr.extent(2), kw = wr.extent(3);
  const std::int64_t oh = (xr.extent(2) - kh) / stride + 1, ow = (xr.extent(3) - kw) / stride + 1;
  const Point rs{xr.extent(0), wr.extent(0), oh, ow};
  const TensorId r = result_tensor(b, tensor_dtype_name(b, x), rs, origin(4));
  const Rows x_rows = {
      {1, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, stride, 0, 0}, {0, 0, 0, stride, 0}};
  const Rows w_rows = {{0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}};
  const Rows r_rows = {{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 1, 0}};
  const OperationId op =
      b.op("conv2d", Range::of_shape(rs.concat(Point{xr.extent(1)})),
           {{"x", x, ipf(x_rows, xr.start(), Point{1, 1, kh, kw})},
            {"w", w, ipf(w_rows, wr.start(), Point{1, 1, kh, kw})}},
           {{"result", r, ipf(r_rows, origin(4))}}, nlohmann::json{{"stride", stride}},
           {"n", "o", "oh", "ow", "c"}, {{"c", ir::Monoid::kSum}});
  return {op, r};
}

/// pad(x [lead…, h, w], padding, value): the result starts `padding` before x in the last two
/// dims; each index point reads x's whole last-two-dims plane.
inline Built add_pad(GraphBuilder& b, TensorId x, std::int64_t padding, double value) {
  const Range xr = tensor_range(b, x);
  const std::size_t n = xr.rank(), nl = n - 2;
  const Point shift = Point::zeros(nl).concat(Point{-padding, -padding});
  const Point rs = xr.shape() + Point::zeros(nl).concat(Point{2 * padding, 2 * padding});
  const TensorId r = result_tensor(b, tensor_dtype_name(b, x), rs, xr.start() + shift);
  Rows x_rows = zero_rows(n, n);
  for (std::size_t k = 0; k < nl; ++k) x_rows[k][k] = 1;
  const Point window = Point::ones(nl).concat(xr.shape().slice(nl, n));
  const OperationId op =
      b.op("pad", Range::of_shape(rs), {{"x", x, ipf(x_rows, xr.start(), window, n)}},
           {{"result", r, IndexProjection::identity(n).translate(tensor_range(b, r).start())}},
           nlohmann::json{{"padding", padding}, {"value", value}});
  return {op, r};
}

/// permute(x, perm) (transpose is perm = (…, n-1, n-2)): index = the result's dims.
inline Built add_permute(GraphBuilder& b, const std::string& kernel, TensorId x,
                         const std::vector<std::size_t>& perm) {
  const Range xr = tensor_range(b, x);
  const std::size_t n = xr.rank();
  Rows rows = zero_rows(n, n);
  for (std::size_t i = 0; i < n; ++i) rows[perm[i]][i] = 1;
  const Point rs = xr.shape().permute(perm);
  const TensorId r = result_tensor(b, tensor_dtype_name(b, x), rs, origin(n));
  std::vector<std::int64_t> perm_json(perm.begin(), perm.end());
  const OperationId op =
      b.op(kernel, Range::of_shape(rs), {{"x", x, ipf(rows, xr.start())}},
           {{"result", r, IndexProjection::identity(n)}},
           kernel == "permute" ? nlohmann::json{{"perm", perm_json}} : nlohmann::json(nullptr));
  return {op, r};
}

/// reshape with explicit IPF rows over the finer index `index_shape` (see layout.yaml).
inline Built add_reshape(GraphBuilder& b, TensorId x, const Point& result_shape,
                         const Point& index_shape, const Rows& x_rows, const Rows& r_rows) {
  const Range xr = tensor_range(b, x);
  const TensorId r =
      result_tensor(b, tensor_dtype_name(b, x), result_shape, origin(result_shape.rank()));
  std::vector<std::int64_t> shape_json(result_shape.begin(), result_shape.end());
  const OperationId op = b.op(
      "reshape", Range::of_shape(index_shape),
      {{"x", x, ipf(x_rows, xr.start(), std::nullopt, index_shape.rank())}},
      {{"result", r, ipf(r_rows, origin(result_shape.rank()), std::nullopt, index_shape.rank())}},
      nlohmann::json{{"shape", shape_json}});
  return {op, r};
}

}  // namespace tapestry::runtime::testing
