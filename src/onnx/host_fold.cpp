// N-D operations on host tensors (host_fold.h).
#include "host_fold.h"

#include <fmt/format.h>

#include <cmath>

#include "tapestry/support/error.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::onnx {

namespace {

// The flat index in a tensor of shape `in` (right-aligned against `out`, size-1 dims read at 0)
// of the element that broadcasts to flat index `k` of shape `out`.
std::size_t broadcast_source(const std::vector<std::int64_t>& out,
                             const std::vector<std::int64_t>& in, std::int64_t k) {
  const std::size_t rank = out.size();
  std::int64_t index = 0, stride = 1;
  for (std::size_t d = rank; d-- > 0;) {
    const std::int64_t coord = k % out[d];
    k /= out[d];
    if (d + in.size() < rank) continue;
    const std::int64_t extent = in[d + in.size() - rank];
    if (extent != 1) index += coord * stride;
    stride *= extent;
  }
  return static_cast<std::size_t>(index);
}

// An empty tensor of `like`'s kind (ints or floats) and dtype, shaped `shape`.
HostTensor empty_like(const HostTensor& like, std::vector<std::int64_t> shape) {
  checked_fold_size(shape);
  HostTensor r;
  r.dtype = like.dtype;
  r.shape = std::move(shape);
  return r;
}

// Appends element `k` of `from` to `to` (the same kind).
void push(HostTensor& to, const HostTensor& from, std::size_t k) {
  if (to.is_int()) {
    to.ints.push_back(from.int_at(k));
  } else {
    to.floats.push_back(from.float_at(k));
  }
}

std::int64_t product(const std::vector<std::int64_t>& v, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t k = from; k < to; ++k) p = zspace::checked_mul(p, v[k]);
  return p;
}

}  // namespace

std::int64_t checked_fold_size(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw Error(fmt::format("negative dim {}", d));
    if (d != 0 && n > kMaxFoldedCells / d)
      n = kMaxFoldedCells + 1;
    else
      n *= d;
  }
  if (n > kMaxFoldedCells)
    throw Error(
        fmt::format("a constant of shape [{}] is computed at import time, which holds at "
                    "most {} cells",
                    fmt::join(shape, ", "), kMaxFoldedCells));
  return n;
}

HostTensor fold_fill(const std::vector<std::int64_t>& shape, const HostTensor& value) {
  if (value.size() != 1) throw Error("the fill value must hold one element");
  HostTensor r = empty_like(value, shape);
  const auto n = static_cast<std::size_t>(r.size());
  if (r.is_int()) {
    r.ints.assign(n, value.ints[0]);
  } else {
    r.floats.assign(n, value.floats[0]);
  }
  return r;
}

HostTensor fold_range(const HostTensor& start, const HostTensor& limit, const HostTensor& delta) {
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1)
    throw Error("start, limit and delta must be scalars");
  HostTensor r = empty_like(start, {});
  if (start.is_int()) {
    const std::int64_t s = start.int_at(0), l = limit.int_at(0), d = delta.int_at(0);
    if (d == 0) throw Error("delta is 0");
    for (std::int64_t v = s; d > 0 ? v < l : v > l; v = zspace::checked_add(v, d)) {
      r.ints.push_back(v);
      if (std::ssize(r.ints) > kMaxFoldedCells) checked_fold_size({kMaxFoldedCells + 1});
    }
  } else {
    const double s = start.float_at(0), l = limit.float_at(0), d = delta.float_at(0);
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
      throw Error("start, limit and delta must be finite and delta nonzero");
    const double n = std::max(std::ceil((l - s) / d), 0.0);
    if (n > static_cast<double>(kMaxFoldedCells)) checked_fold_size({kMaxFoldedCells + 1});
    // ONNX defines element i as start + i·delta.
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i)
      r.floats.push_back(s + static_cast<double>(i) * d);
  }
  r.shape = {static_cast<std::int64_t>(r.is_int() ? r.ints.size() : r.floats.size())};
  return r;
}

HostTensor fold_expand(const HostTensor& x, const std::vector<std::int64_t>& shape) {
  HostTensor r = empty_like(x, broadcast_shapes(x.shape, shape));
  const std::int64_t n = r.size();
  for (std::int64_t k = 0; k < n; ++k) push(r, x, broadcast_source(r.shape, x.shape, k));
  return r;
}

HostTensor fold_compare(const HostTensor& a, const HostTensor& b, std::string_view op) {
  HostTensor r = HostTensor::of_ints({}, broadcast_shapes(a.shape, b.shape));
  checked_fold_size(r.shape);
  r.dtype = ir::DType::kBool;
  const bool ints = a.is_int() && b.is_int();
  const std::int64_t n = r.size();
  for (std::int64_t k = 0; k < n; ++k) {
    const std::size_t ia = broadcast_source(r.shape, a.shape, k);
    const std::size_t ib = broadcast_source(r.shape, b.shape, k);
    bool v = false;
    if (op == "And" || op == "Or" || op == "Xor") {
      const bool x = a.float_at(ia) != 0, y = b.float_at(ib) != 0;
      v = op == "And" ? x && y : op == "Or" ? x || y : x != y;
    } else if (ints) {
      const std::int64_t x = a.ints[ia], y = b.ints[ib];
      v = op == "Equal"         ? x == y
          : op == "Less"        ? x < y
          : op == "LessOrEqual" ? x <= y
          : op == "Greater"     ? x > y
                                : x >= y;
    } else {
      const double x = a.float_at(ia), y = b.float_at(ib);
      v = op == "Equal"         ? x == y
          : op == "Less"        ? x < y
          : op == "LessOrEqual" ? x <= y
          : op == "Greater"     ? x > y
                                : x >= y;
    }
    r.ints.push_back(v ? 1 : 0);
  }
  return r;
}

HostTensor fold_not(const HostTensor& x) {
  HostTensor r = HostTensor::of_ints({}, x.shape);
  r.dtype = ir::DType::kBool;
  const auto n = static_cast<std::size_t>(x.size());
  for (std::size_t k = 0; k < n; ++k) r.ints.push_back(x.float_at(k) == 0 ? 1 : 0);
  return r;
}

HostTensor fold_where(const HostTensor& c, const HostTensor& a, const HostTensor& b) {
  if (a.is_int() != b.is_int()) throw Error("the two branches differ in element type");
  HostTensor r = empty_like(a, broadcast_shapes(c.shape, broadcast_shapes(a.shape, b.shape)));
  const std::int64_t n = r.size();
  for (std::int64_t k = 0; k < n; ++k) {
    const bool pick_a = c.float_at(broadcast_source(r.shape, c.shape, k)) != 0;
    const HostTensor& from = pick_a ? a : b;
    push(r, from, broadcast_source(r.shape, from.shape, k));
  }
  return r;
}

HostTensor fold_concat(const std::vector<HostTensor>& parts, std::size_t axis) {
  if (parts.empty()) throw Error("no inputs");
  const HostTensor& first = parts.front();
  if (axis >= first.shape.size()) throw Error("a scalar cannot be concatenated");
  std::vector<std::int64_t> shape = first.shape;
  shape[axis] = 0;
  for (const HostTensor& p : parts) {
    if (p.is_int() != first.is_int())
      throw Error("the inputs differ in element type (integers and floats)");
    bool same = p.shape.size() == shape.size();
    for (std::size_t d = 0; same && d < shape.size(); ++d)
      same = d == axis || p.shape[d] == shape[d];
    if (!same)
      throw Error(fmt::format("input shapes [{}] and [{}] differ outside axis {}",
                              fmt::join(first.shape, ", "), fmt::join(p.shape, ", "), axis));
    shape[axis] = zspace::checked_add(shape[axis], p.shape[axis]);
  }
  HostTensor r = empty_like(first, shape);
  const std::int64_t outer = product(shape, 0, axis);
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const HostTensor& p : parts) {
      const std::int64_t run = product(p.shape, axis, p.shape.size());
      for (std::int64_t k = 0; k < run; ++k) push(r, p, static_cast<std::size_t>(o * run + k));
    }
  }
  return r;
}

HostTensor fold_gather(const HostTensor& data, const HostTensor& indices, std::size_t axis) {
  if (axis >= data.shape.size()) throw Error("Gather from a scalar");
  const std::int64_t n = data.shape[axis];
  std::vector<std::int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  HostTensor r = empty_like(data, shape);
  const std::int64_t outer = product(data.shape, 0, axis);
  const std::int64_t inner = product(data.shape, axis + 1, data.shape.size());
  const std::vector<std::int64_t> at = indices.as_ints();
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i : at) {
      if (i < -n || i >= n) throw Error(fmt::format("index {} is out of range for {}", i, n));
      const std::int64_t row = i < 0 ? i + n : i;
      for (std::int64_t k = 0; k < inner; ++k)
        push(r, data, static_cast<std::size_t>((o * n + row) * inner + k));
    }
  }
  return r;
}

HostTensor fold_trilu(const HostTensor& x, std::int64_t k, bool upper) {
  if (x.shape.size() < 2) throw Error("Trilu needs at least 2 dims");
  HostTensor r = x;
  const std::int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  const auto n = static_cast<std::size_t>(x.size());
  for (std::size_t e = 0; e < n; ++e) {
    const auto cell = static_cast<std::int64_t>(e) % (rows * cols);
    if (trilu_keeps(cell / cols, cell % cols, k, upper)) continue;
    if (r.is_int()) {
      r.ints[e] = 0;
    } else {
      r.floats[e] = 0;
    }
  }
  return r;
}

}  // namespace tapestry::onnx
