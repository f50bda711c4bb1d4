// Element types of tensors: the one dtype type of Tapestry and its one table.
//
// Every module — loom JSON, the `.tap` language and kernel files, the runtime — names, sizes and
// classifies dtypes through the table below; nothing else spells a dtype.
//
//   dtype       loom name   .tap name  bytes  float  executable
//   kFloat32    float32     f32        4      yes    yes
//   kFloat64    float64     f64        8      yes    yes
//   kInt32      int32       i32        4      no     yes
//   kInt64      int64       i64        8      no     yes
//   kBFloat16   bfloat16    bf16       2      yes    yes   (stored in 16 bits, computed in f32)
//   kFloat16    float16     f16        2      yes    yes
//   kBool       bool        —          1      no     no    (loom files only)
//   kInt8       int8        —          1      no     no
//   kInt16      int16       —          2      no     no
//   kUInt8      uint8       —          1      no     no
//
// The order is the table's, and every list of dtypes in a message follows it: what the runtime
// executes, then what `.tap` can declare, then what only loom files name.
//
//   parse_dtype("float32") == DType::kFloat32;   parse_dtype("f32") == std::nullopt  (loom names)
//   parse_tap_dtype("f32") == parse_tap_dtype("float32") == DType::kFloat32
//   parse_tap_dtype("int8") == std::nullopt      (.tap cannot declare int8)
//   dtype_name(DType::kBFloat16) == "bfloat16";  dtype_short_name(DType::kBFloat16) == "bf16"
//   dtype_size_bytes(DType::kInt64) == 8;        is_float(DType::kFloat16);
//   is_executable(kFloat16);  !is_executable(kInt8)
//
// A loom Tensor may carry a dtype spelling Tapestry does not know: the file still loads, and the
// dialect's `tensor-dtype` constraint (not the reader) reports it. `LoomDType` is that field: a
// DType, or the unknown spelling kept verbatim so the graph writes back exactly what it read.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace tapestry::ir {

enum class DType : std::uint8_t {
  kFloat32,
  kFloat64,
  kInt32,
  kInt64,
  kBFloat16,
  kFloat16,
  kBool,
  kInt8,
  kInt16,
  kUInt8,
};

/// One row of the dtype table.
struct DTypeInfo {
  DType dtype;
  std::string_view name;        // the canonical loom name: "float32"
  std::string_view short_name;  // the .tap and kernel-file name: "f32"; "" when .tap has none
  std::size_t size_bytes;
  bool is_float;
  bool is_executable;  // the runtime has kernels for it
};

/// The table, one row per DType in declaration order (row i describes DType i).
inline constexpr std::array<DTypeInfo, 10> kDTypeTable = {{
    {DType::kFloat32, "float32", "f32", 4, true, true},
    {DType::kFloat64, "float64", "f64", 8, true, true},
    {DType::kInt32, "int32", "i32", 4, false, true},
    {DType::kInt64, "int64", "i64", 8, false, true},
    {DType::kBFloat16, "bfloat16", "bf16", 2, true, true},
    {DType::kFloat16, "float16", "f16", 2, true, true},
    {DType::kBool, "bool", "", 1, false, false},
    {DType::kInt8, "int8", "", 1, false, false},
    {DType::kInt16, "int16", "", 2, false, false},
    {DType::kUInt8, "uint8", "", 1, false, false},
}};

/// The row of `dtype`.
constexpr const DTypeInfo& dtype_info(DType dtype) {
  return kDTypeTable[static_cast<std::size_t>(dtype)];
}
/// The canonical loom name: "float32", …, "uint8".
constexpr std::string_view dtype_name(DType dtype) {
  return dtype_info(dtype).name;
}
/// The .tap name ("f32"); the loom name for a dtype .tap cannot declare ("int8").
constexpr std::string_view dtype_short_name(DType dtype) {
  const DTypeInfo& info = dtype_info(dtype);
  return info.short_name.empty() ? info.name : info.short_name;
}
/// Bytes per element (1 for bool).
constexpr std::size_t dtype_size_bytes(DType dtype) {
  return dtype_info(dtype).size_bytes;
}
/// True for float32, float64, bfloat16, float16.
constexpr bool is_float(DType dtype) {
  return dtype_info(dtype).is_float;
}
/// True for the dtypes the runtime executes: float32, float64, int32, int64, bfloat16, float16.
constexpr bool is_executable(DType dtype) {
  return dtype_info(dtype).is_executable;
}
/// True for the dtypes `.tap` and kernel files can name (those with a short name).
constexpr bool is_tap_dtype(DType dtype) {
  return !dtype_info(dtype).short_name.empty();
}

/// The DType whose canonical loom name is exactly `name`; nullopt otherwise (loom files).
std::optional<DType> parse_dtype(std::string_view name);
/// The .tap dtype named `name` by its short ("f32") or loom ("float32") name; nullopt otherwise
/// (.tap declarations, kernel files).
std::optional<DType> parse_tap_dtype(std::string_view name);
/// Every DType, in table order.
std::span<const DType> all_dtypes();

/// A loom Tensor's dtype field: a known DType, or the spelling of one Tapestry does not know.
///
///   LoomDType(DType::kInt32).known() == DType::kInt32
///   LoomDType::parse("int32") == LoomDType(DType::kInt32)
///   LoomDType::parse("boolean").known() == std::nullopt;  ….name() == "boolean"
class LoomDType {
 public:
  /// float32.
  LoomDType() = default;
  /// A known dtype (implicit: a DType is a LoomDType).
  LoomDType(DType dtype) : dtype_(dtype) {}  // NOLINT(google-explicit-constructor)
  /// The dtype a loom file spells `spelling`: known when it is a canonical loom name, else the
  /// spelling kept verbatim.
  static LoomDType parse(std::string_view spelling);

  /// The DType, or nullopt for an unknown spelling.
  [[nodiscard]] std::optional<DType> known() const { return dtype_; }
  /// The loom spelling: the canonical name of a known dtype, else the spelling as read.
  [[nodiscard]] std::string_view name() const;

  friend bool operator==(const LoomDType&, const LoomDType&) = default;

 private:
  std::optional<DType> dtype_ = DType::kFloat32;
  std::string unknown_;  // the spelling, when dtype_ is nullopt
};

inline std::ostream& operator<<(std::ostream& os, DType dtype) {
  return os << dtype_name(dtype);
}
inline std::ostream& operator<<(std::ostream& os, const LoomDType& dtype) {
  return os << dtype.name();
}

}  // namespace tapestry::ir

/// Formatting hooks: a DType prints as its loom name, a LoomDType as its spelling.
template <>
struct fmt::formatter<tapestry::ir::DType> : fmt::formatter<std::string_view> {
  auto format(tapestry::ir::DType dtype, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(tapestry::ir::dtype_name(dtype), ctx);
  }
};
template <>
struct fmt::formatter<tapestry::ir::LoomDType> : fmt::formatter<std::string_view> {
  auto format(const tapestry::ir::LoomDType& dtype, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(dtype.name(), ctx);
  }
};
