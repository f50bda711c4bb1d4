// Element types the runtime executes, and the one place that maps a runtime DType to a C++ type.
//
// The IR knows ten dtypes (ir/dtype.h); the runtime executes the six its table marks executable.
// Four are computed with, and kernels are written for them (`Element`):
//
//   DType::kFloat32 -> float     DType::kFloat64 -> double
//   DType::kInt32   -> int32_t   DType::kInt64   -> int64_t
//
// and two are storage only (`StorageElement` adds them; half_float.h):
//
//   DType::kBFloat16 -> BFloat16   DType::kFloat16 -> Float16
//
// A bf16 or f16 tensor is held in 16 bits a cell; a kernel over it computes in float32 (its
// inputs widened, its outputs rounded once: executable_kernels.h). Code that works for every
// computed dtype is written once, as a generic lambda, and dispatched on the runtime value;
// storage-level code (copies, fills, comparisons, I/O) dispatches over the six:
//
//   visit_dtype(buffer.dtype(), [&]<typename T>() { fill<T>(buffer, T{0}); });
//   visit_storage_dtype(buffer.dtype(), [&]<typename T>() { copy<T>(from, to); });
//
//   is_executable(DType::kInt8) == false
//   require_executable(DType::kInt8, "tensor X")
//       -> Error: tensor X: dtype int8 cannot be executed (the runtime runs float32, float64,
//          int32, int64, bfloat16, float16)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tapestry/ir/dtype.h"
#include "tapestry/runtime/half_float.h"
#include "tapestry/support/assert.h"

namespace tapestry::runtime {

using ir::DType;
using ir::is_executable;

/// The C++ element types the runtime executes, as a concept for kernels' templates.
template <typename T>
concept Element = std::is_same_v<T, float> || std::is_same_v<T, double> ||
    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

/// Every C++ type a buffer holds: the computed ones and the 16-bit float storage types.
template <typename T>
concept StorageElement = Element<T> || std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>;

/// True for the 16-bit float storage types.
template <typename T>
inline constexpr bool is_half_float_v = std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>;
/// True for the float element types, 16-bit storage ones included.
template <typename T>
inline constexpr bool is_float_element_v = std::is_floating_point_v<T> || is_half_float_v<T>;

/// The DType of element type T: dtype_of<float> == DType::kFloat32.
template <StorageElement T>
inline constexpr DType dtype_of = std::is_same_v<T, float>          ? DType::kFloat32
                                  : std::is_same_v<T, double>       ? DType::kFloat64
                                  : std::is_same_v<T, std::int32_t> ? DType::kInt32
                                  : std::is_same_v<T, std::int64_t> ? DType::kInt64
                                  : std::is_same_v<T, BFloat16>     ? DType::kBFloat16
                                                                    : DType::kFloat16;

/// True for bfloat16 and float16.
constexpr bool is_half_float(DType dtype) {
  return dtype == DType::kBFloat16 || dtype == DType::kFloat16;
}

/// `value` in storage type T: a plain conversion, rounded to nearest even for the 16-bit types.
template <StorageElement T>
T storage_cast(double value) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return to_bfloat16(value);  // directly from float64 (half_float.h)
  } else if constexpr (std::is_same_v<T, Float16>) {
    return to_float16(value);
  } else {
    return static_cast<T>(value);
  }
}

/// A float32 value in storage type T: itself for float, rounded once to nearest even for the
/// 16-bit types (half_float.h, inline: a loop over 16-bit cells keeps it in registers) — what a
/// kernel computing in float32 stores into a bf16/f16 output.
///   narrow_float<BFloat16>(1.00390625F).bits == 0x3F80   (a tie: to the even 1.0)
template <typename T>
[[gnu::always_inline]] inline T narrow_float(float value) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return to_bfloat16(value);
  } else if constexpr (std::is_same_v<T, Float16>) {
    return to_float16(value);
  } else {
    return value;
  }
}

/// Throws Error `<what>: dtype <name> cannot be executed (...)` unless `dtype` is executable.
void require_executable(DType dtype, std::string_view what);
/// The executable DType of a loom dtype field; Error naming `what` otherwise (an unknown
/// spelling, or a known dtype that is not executable).
DType executable_dtype(const ir::LoomDType& dtype, std::string_view what);

/// Calls `fn.template operator()<T>()` with T the element type of `dtype`, which must be a
/// computed dtype (asserted: check with require_executable at the boundary; 16-bit floats reach
/// kernels widened).
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
      TAPESTRY_ASSERT(false, "visit_dtype: dtype is not a computed dtype");
      return fn.template operator()<float>();
  }
}

/// Like visit_dtype, over every executable dtype: T may also be BFloat16 or Float16.
template <typename Fn>
decltype(auto) visit_storage_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kBFloat16:
      return fn.template operator()<BFloat16>();
    case DType::kFloat16:
      return fn.template operator()<Float16>();
    default:
      return visit_dtype(dtype, std::forward<Fn>(fn));
  }
}

}  // namespace tapestry::runtime
