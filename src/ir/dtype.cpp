// The dtype table's lookups by name (the table itself is in the header).
#include "tapestry/ir/dtype.h"

namespace tapestry::ir {

namespace {

// Row i of the table describes DType i: dtype_info indexes by the enum's value.
constexpr bool rows_in_declaration_order() {
  for (std::size_t i = 0; i < kDTypeTable.size(); ++i) {
    if (static_cast<std::size_t>(kDTypeTable[i].dtype) != i) return false;
  }
  return true;
}
static_assert(rows_in_declaration_order(), "kDTypeTable rows must follow DType's order");

constexpr std::array<DType, kDTypeTable.size()> all_of_table() {
  std::array<DType, kDTypeTable.size()> out{};
  for (std::size_t i = 0; i < kDTypeTable.size(); ++i) out[i] = kDTypeTable[i].dtype;
  return out;
}

constexpr std::array<DType, kDTypeTable.size()> kAll = all_of_table();

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  for (const DTypeInfo& info : kDTypeTable) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

std::optional<DType> parse_tap_dtype(std::string_view name) {
  for (const DTypeInfo& info : kDTypeTable) {
    if (info.short_name.empty()) continue;
    if (info.short_name == name || info.name == name) return info.dtype;
  }
  return std::nullopt;
}

std::span<const DType> all_dtypes() {
  return kAll;
}

LoomDType LoomDType::parse(std::string_view spelling) {
  if (std::optional<DType> dtype = parse_dtype(spelling)) return LoomDType(*dtype);
  LoomDType out;
  out.dtype_ = std::nullopt;
  out.unknown_ = std::string(spelling);
  return out;
}

std::string_view LoomDType::name() const {
  return dtype_ ? dtype_name(*dtype_) : std::string_view(unknown_);
}

}  // namespace tapestry::ir
