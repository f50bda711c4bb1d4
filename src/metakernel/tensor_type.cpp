#include "tapestry/metakernel/tensor_type.h"

#include <fmt/core.h>

#include <array>

namespace tapestry::metakernel {

namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::string_view long_name;
  bool is_float;
  std::int64_t bytes;
};

constexpr std::array<DTypeInfo, 6> kDTypes{{
    {DType::f32, "f32", "float32", true, 4},
    {DType::f64, "f64", "float64", true, 8},
    {DType::i32, "i32", "int32", false, 4},
    {DType::i64, "i64", "int64", false, 8},
    {DType::bf16, "bf16", "bfloat16", true, 2},
    {DType::f16, "f16", "float16", true, 2},
}};

constexpr std::array<DType, 6> kAll{DType::f32, DType::f64,  DType::i32,
                                    DType::i64, DType::bf16, DType::f16};

const DTypeInfo& info(DType dtype) {
  return kDTypes[static_cast<std::size_t>(dtype)];
}

}  // namespace

std::span<const DType> all_dtypes() {
  return kAll;
}

std::string_view dtype_name(DType dtype) {
  return info(dtype).name;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.name == name || d.long_name == name) return d.dtype;
  }
  return std::nullopt;
}

bool is_float(DType dtype) {
  return info(dtype).is_float;
}

std::int64_t dtype_bytes(DType dtype) {
  return info(dtype).bytes;
}

std::optional<std::vector<DType>> dtype_set(std::string_view name) {
  if (name == "any") return std::vector<DType>(kAll.begin(), kAll.end());
  if (name == "float") return std::vector<DType>{DType::f32, DType::f64, DType::bf16, DType::f16};
  if (name == "int") return std::vector<DType>{DType::i32, DType::i64};
  return std::nullopt;
}

std::string TensorType::to_string() const {
  const bool at_origin = range.start() == zspace::Point::zeros(range.rank());
  std::string out = fmt::format("{}[", dtype_name(dtype));
  for (std::size_t d = 0; d < range.rank(); ++d) {
    if (d > 0) out += ", ";
    if (at_origin) {
      out += fmt::format("{}", range.end()[d]);
    } else {
      out += fmt::format("{}:{}", range.start()[d], range.end()[d]);
    }
  }
  return out + "]";
}

std::string shape_string(const zspace::Point& shape) {
  std::string out = "[";
  for (std::size_t d = 0; d < shape.rank(); ++d) {
    if (d > 0) out += ", ";
    out += fmt::format("{}", shape[d]);
  }
  return out + "]";
}

}  // namespace tapestry::metakernel
