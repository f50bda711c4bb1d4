#include "tapestry/metakernel/tensor_type.h"

#include <fmt/core.h>

namespace tapestry::metakernel {

std::optional<std::vector<DType>> dtype_set(std::string_view name) {
  bool (*member)(DType) = nullptr;
  if (name == "any") member = [](DType) { return true; };
  if (name == "float") member = [](DType d) { return ir::is_float(d); };
  if (name == "int") member = [](DType d) { return !ir::is_float(d); };
  if (member == nullptr) return std::nullopt;
  std::vector<DType> out;
  for (DType d : ir::all_dtypes()) {
    if (ir::is_tap_dtype(d) && member(d)) out.push_back(d);
  }
  return out;
}

std::string tap_dtype_names(std::string_view separator) {
  std::string out;
  for (DType d : ir::all_dtypes()) {
    if (!ir::is_tap_dtype(d)) continue;
    if (!out.empty()) out += separator;
    out += ir::dtype_short_name(d);
  }
  return out;
}

std::string TensorType::to_string() const {
  const bool at_origin = range.start() == zspace::Point::zeros(range.rank());
  std::string out = fmt::format("{}[", ir::dtype_short_name(dtype));
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
