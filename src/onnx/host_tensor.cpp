// Host tensors: decoding TensorProtos and folding the shape arithmetic (host_tensor.h).
#include "host_tensor.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "tapestry/support/error.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::onnx {

namespace {

// Raw little-endian data (this machine is little-endian, as ONNX's raw_data is).
template <typename T>
std::vector<T> raw_values(const std::string& raw, std::int64_t count, const std::string& what) {
  if (raw.size() != static_cast<std::size_t>(count) * sizeof(T)) {
    throw Error(fmt::format("{}: raw data holds {} bytes, but {} elements of {} bytes need {}",
                            what, raw.size(), count, sizeof(T),
                            static_cast<std::size_t>(count) * sizeof(T)));
  }
  std::vector<T> out(static_cast<std::size_t>(count));
  if (count > 0) std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

template <typename Repeated>
void check_count(const Repeated& values, std::int64_t count, const std::string& what) {
  if (values.size() != count) {
    throw Error(
        fmt::format("{}: holds {} values, but its dims need {}", what, values.size(), count));
  }
}

}  // namespace

std::int64_t HostTensor::size() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n = zspace::checked_mul(n, d);
  return n;
}

std::int64_t HostTensor::int_at(std::size_t k) const {
  if (is_int()) return ints.at(k);
  const double v = floats.at(k);
  if (v != std::trunc(v) || std::abs(v) > 0x1p62) {
    throw Error(fmt::format("{} is not a whole number", v));
  }
  return static_cast<std::int64_t>(v);
}

double HostTensor::float_at(std::size_t k) const {
  return is_int() ? static_cast<double>(ints.at(k)) : floats.at(k);
}

std::vector<std::int64_t> HostTensor::as_ints() const {
  std::vector<std::int64_t> out;
  const auto n = static_cast<std::size_t>(size());
  out.reserve(n);
  for (std::size_t k = 0; k < n; ++k) out.push_back(int_at(k));
  return out;
}

HostTensor HostTensor::of_ints(std::vector<std::int64_t> values, std::vector<std::int64_t> shape) {
  HostTensor t;
  t.dtype = ir::DType::kInt64;
  t.ints = std::move(values);
  t.shape = std::move(shape);
  return t;
}

HostTensor decode_tensor(const ::onnx::TensorProto& proto, const std::string& what) {
  HostTensor t;
  for (std::int64_t d : proto.dims()) {
    if (d < 0) throw Error(fmt::format("{}: negative dim {}", what, d));
    t.shape.push_back(d);
  }
  if (proto.data_location() == ::onnx::TensorProto::EXTERNAL) {
    throw Error(fmt::format("{}: external data (a separate weights file) is not supported", what));
  }
  const std::int64_t count = t.size();
  const bool raw = proto.has_raw_data();
  switch (proto.data_type()) {
    case ::onnx::TensorProto::FLOAT: {
      t.dtype = ir::DType::kFloat32;
      if (raw) {
        for (float v : raw_values<float>(proto.raw_data(), count, what)) t.floats.push_back(v);
      } else {
        check_count(proto.float_data(), count, what);
        t.floats.assign(proto.float_data().begin(), proto.float_data().end());
      }
      break;
    }
    case ::onnx::TensorProto::DOUBLE: {
      t.dtype = ir::DType::kFloat64;
      if (raw) {
        t.floats = raw_values<double>(proto.raw_data(), count, what);
      } else {
        check_count(proto.double_data(), count, what);
        t.floats.assign(proto.double_data().begin(), proto.double_data().end());
      }
      break;
    }
    case ::onnx::TensorProto::INT64: {
      t.dtype = ir::DType::kInt64;
      if (raw) {
        t.ints = raw_values<std::int64_t>(proto.raw_data(), count, what);
      } else {
        check_count(proto.int64_data(), count, what);
        t.ints.assign(proto.int64_data().begin(), proto.int64_data().end());
      }
      break;
    }
    case ::onnx::TensorProto::INT32: {
      t.dtype = ir::DType::kInt32;
      if (raw) {
        for (std::int32_t v : raw_values<std::int32_t>(proto.raw_data(), count, what))
          t.ints.push_back(v);
      } else {
        check_count(proto.int32_data(), count, what);
        t.ints.assign(proto.int32_data().begin(), proto.int32_data().end());
      }
      break;
    }
    case ::onnx::TensorProto::BOOL: {
      t.dtype = ir::DType::kBool;
      if (raw) {
        for (std::uint8_t v : raw_values<std::uint8_t>(proto.raw_data(), count, what))
          t.ints.push_back(v != 0 ? 1 : 0);
      } else {
        check_count(proto.int32_data(), count, what);
        for (std::int32_t v : proto.int32_data()) t.ints.push_back(v != 0 ? 1 : 0);
      }
      break;
    }
    default:
      throw Error(fmt::format(
          "{}: element type {} ({}) is not supported (float, double, int32, int64, bool are)", what,
          ::onnx::TensorProto::DataType_Name(
              static_cast<::onnx::TensorProto::DataType>(proto.data_type())),
          proto.data_type()));
  }
  return t;
}

std::vector<std::int64_t> broadcast_shapes(const std::vector<std::int64_t>& a,
                                           const std::vector<std::int64_t>& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> out(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    const std::int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    const std::int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw Error(fmt::format("shapes [{}] and [{}] do not broadcast", fmt::join(a, ", "),
                              fmt::join(b, ", ")));
    }
    out[k] = da == 1 ? db : da;
  }
  return out;
}

HostTensor fold_binary(const HostTensor& a, const HostTensor& b, char op) {
  HostTensor r;
  r.shape = broadcast_shapes(a.shape, b.shape);
  r.dtype = a.is_int() && b.is_int() ? ir::DType::kInt64 : (a.is_int() ? b.dtype : a.dtype);
  const std::int64_t n = r.size();
  const std::size_t rank = r.shape.size();
  // The flat index of output element `k` in an operand of shape `s` (right-aligned, size-1
  // dims read at 0).
  const auto source = [&](const std::vector<std::int64_t>& s, std::int64_t k) {
    std::int64_t index = 0, stride = 1;
    for (std::size_t d = rank; d-- > 0;) {
      const std::int64_t coord = k % r.shape[d];
      k /= r.shape[d];
      const std::size_t sd = d + s.size();
      if (sd < rank) continue;
      const std::int64_t extent = s[sd - rank];
      if (extent != 1) index += coord * stride;
      stride *= extent;
    }
    return static_cast<std::size_t>(index);
  };
  for (std::int64_t k = 0; k < n; ++k) {
    const std::size_t ia = source(a.shape, k), ib = source(b.shape, k);
    if (!r.is_int()) {
      const double x = a.float_at(ia), y = b.float_at(ib);
      r.floats.push_back(op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : x / y);
      continue;
    }
    const std::int64_t x = a.ints[ia], y = b.ints[ib];
    if (op == '/' && y == 0) throw Error("integer division by zero");
    r.ints.push_back(op == '+'   ? zspace::checked_add(x, y)
                     : op == '-' ? zspace::checked_sub(x, y)
                     : op == '*' ? zspace::checked_mul(x, y)
                                 : (y == -1 ? zspace::checked_sub(0, x) : x / y));
  }
  return r;
}

}  // namespace tapestry::onnx
