// Which IR dtypes the runtime executes.
#include "tapestry/runtime/element.h"

#include <fmt/format.h>

#include "tapestry/support/error.h"

namespace tapestry::runtime {

bool is_executable(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kInt32 ||
         dtype == DType::kInt64;
}

void require_executable(DType dtype, std::string_view what) {
  if (is_executable(dtype)) return;
  throw Error(fmt::format(
      "{}: dtype {} cannot be executed (the runtime runs float32, float64, int32, int64)", what,
      ir::dtype_name(dtype)));
}

DType parse_executable_dtype(std::string_view name, std::string_view what) {
  std::optional<DType> dtype = ir::parse_dtype(name);
  if (!dtype) throw Error(fmt::format("{}: unknown dtype '{}'", what, name));
  require_executable(*dtype, what);
  return *dtype;
}

}  // namespace tapestry::runtime
