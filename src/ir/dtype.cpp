// The dtypes Tapestry's dialects know.
#include "tapestry/ir/dtype.h"

#include <array>

namespace tapestry::ir {

namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {DType::kBool, "bool", 1},
    {DType::kInt8, "int8", 1},
    {DType::kInt16, "int16", 2},
    {DType::kInt32, "int32", 4},
    {DType::kInt64, "int64", 8},
    {DType::kUInt8, "uint8", 1},
    {DType::kFloat16, "float16", 2},
    {DType::kBFloat16, "bfloat16", 2},
    {DType::kFloat32, "float32", 4},
    {DType::kFloat64, "float64", 8},
}};

constexpr std::array<DType, 10> kAll = {
    DType::kBool,  DType::kInt8,    DType::kInt16,    DType::kInt32,   DType::kInt64,
    DType::kUInt8, DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64};

}  // namespace

std::string_view dtype_name(DType dtype) {
  return kDTypes[static_cast<std::size_t>(dtype)].name;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

std::size_t dtype_size_bytes(DType dtype) {
  return kDTypes[static_cast<std::size_t>(dtype)].size;
}

std::span<const DType> all_dtypes() {
  return kAll;
}

}  // namespace tapestry::ir
