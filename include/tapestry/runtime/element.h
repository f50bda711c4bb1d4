// Element types the runtime executes, and the one place that maps a runtime DType to a C++ type.
//
// The IR knows ten dtypes (ir/dtype.h); the runtime executes the four its table marks executable:
//
//   DType::kFloat32 -> float     DType::kFloat64 -> double
//   DType::kInt32   -> int32_t   DType::kInt64   -> int64_t
//
// bf16 and f16 graphs are for the cost model only; asking the runtime to hold or run them is a
// tapestry::Error that names the dtype. Code that works for every executable dtype is written
// once, as a generic lambda, and dispatched on the runtime value:
//
//   visit_dtype(buffer.dtype(), [&]<typename T>() { fill<T>(buffer, T{0}); });
//
//   is_executable(DType::kBFloat16) == false
//   require_executable(DType::kBFloat16, "tensor X")
//       -> Error: tensor X: dtype bfloat16 cannot be executed (the runtime runs float32, float64,
//          int32, int64)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "tapestry/ir/dtype.h"
#include "tapestry/support/assert.h"

namespace tapestry::runtime {

using ir::DType;
using ir::is_executable;

/// The C++ element types the runtime executes, as a concept for kernels' templates.
template <typename T>
concept Element = std::is_same_v<T, float> || std::is_same_v<T, double> ||
    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

/// The DType of element type T: dtype_of<float> == DType::kFloat32.
template <Element T>
inline constexpr DType dtype_of = std::is_same_v<T, float>          ? DType::kFloat32
                                  : std::is_same_v<T, double>       ? DType::kFloat64
                                  : std::is_same_v<T, std::int32_t> ? DType::kInt32
                                                                    : DType::kInt64;

/// Throws Error `<what>: dtype <name> cannot be executed (...)` unless `dtype` is executable.
void require_executable(DType dtype, std::string_view what);
/// The executable DType of a loom dtype field; Error naming `what` otherwise (an unknown
/// spelling, or a known dtype that is not executable).
DType executable_dtype(const ir::LoomDType& dtype, std::string_view what);

/// Calls `fn.template operator()<T>()` with T the element type of `dtype`, which must be
/// executable (asserted: check with require_executable at the boundary).
template <typename Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn.template operator()<float>();
    case DType::kFloat64:
      return fn.template operator()<double>();
    case DType::kInt32:
      return fn.template operator()<std::int32_t>();
    case DType::kInt64:
      return fn.template operator()<std::int64_t>();
    default:
      TAPESTRY_ASSERT(false, "visit_dtype: dtype is not executable");
      return fn.template operator()<float>();
  }
}

}  // namespace tapestry::runtime
