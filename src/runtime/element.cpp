// Which IR dtypes the runtime executes (the table's `is_executable` column).
#include "tapestry/runtime/element.h"

#include <fmt/format.h>

#include <vector>

#include "tapestry/support/error.h"

namespace tapestry::runtime {

void require_executable(DType dtype, std::string_view what) {
  if (is_executable(dtype)) return;
  std::vector<std::string_view> runs;
  for (DType d : ir::all_dtypes()) {
    if (is_executable(d)) runs.push_back(ir::dtype_name(d));
  }
  throw Error(fmt::format("{}: dtype {} cannot be executed (the runtime runs {})", what,
                          ir::dtype_name(dtype), fmt::join(runs, ", ")));
}

DType executable_dtype(const ir::LoomDType& dtype, std::string_view what) {
  const std::optional<DType> known = dtype.known();
  if (!known) throw Error(fmt::format("{}: unknown dtype '{}'", what, dtype.name()));
  require_executable(*known, what);
  return *known;
}

}  // namespace tapestry::runtime
