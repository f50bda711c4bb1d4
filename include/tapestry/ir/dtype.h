// Element types of tensors.
//
// A loom Tensor body carries its dtype as a string ("float32"); which strings are allowed is a
// property of the dialect (constraint `tensor-dtype`), so the graph stores the string as read and
// this header names the set Tapestry's dialects know, with their sizes:
//
//   parse_dtype("float32") == DType::kFloat32
//   parse_dtype("boolean") == std::nullopt          (Tapestry spells it "bool")
//   dtype_name(DType::kBFloat16) == "bfloat16";  dtype_size_bytes(DType::kInt64) == 8
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tapestry::ir {

enum class DType : std::uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};

/// The canonical loom name: "bool", "int8", …, "float64".
std::string_view dtype_name(DType dtype);
/// The DType named exactly `name` (canonical names only); nullopt otherwise.
std::optional<DType> parse_dtype(std::string_view name);
/// Bytes per element (1 for bool).
std::size_t dtype_size_bytes(DType dtype);
/// Every DType, in declaration order.
std::span<const DType> all_dtypes();

}  // namespace tapestry::ir
