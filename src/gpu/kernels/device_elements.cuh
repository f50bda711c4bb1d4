// Device-side element access shared by the CUDA kernels (nvcc only): loading a storage element
// into its compute type (float32 for the 16-bit floats) and storing a result rounded once, with
// the CPU's rounding (runtime/half_float.h) bit for bit — NaNs included.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "pointwise.h"

namespace tapestry::gpu::kernels {

struct Bf16 {
  std::uint16_t bits;
};
struct F16 {
  std::uint16_t bits;
};

/// The type a kernel computes in for storage type T.
template <typename T>
struct ComputeOf {
  using type = T;
};
template <>
struct ComputeOf<Bf16> {
  using type = float;
};
template <>
struct ComputeOf<F16> {
  using type = float;
};
template <typename T>
using compute_t = typename ComputeOf<T>::type;

template <typename T>
inline constexpr bool kIsHalf = false;
template <>
inline constexpr bool kIsHalf<Bf16> = true;
template <>
inline constexpr bool kIsHalf<F16> = true;

__device__ inline float widen(Bf16 v) {
  return __uint_as_float(std::uint32_t{v.bits} << 16);
}
__device__ inline float widen(F16 v) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(v.bits)));
}

/// to_bfloat16(float): nearest even; a NaN keeps its sign and top fraction bits, made quiet.
__device__ inline Bf16 to_bf16(float value) {
  const std::uint32_t u = __float_as_uint(value);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return Bf16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
  const std::uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);
  return Bf16{static_cast<std::uint16_t>(rounded >> 16)};
}

/// to_float16(float): nearest even (CUDA's __float2half_rn); a NaN becomes sign | 0x7E00.
__device__ inline F16 to_f16(float value) {
  const std::uint32_t u = __float_as_uint(value);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return F16{static_cast<std::uint16_t>(((u >> 16) & 0x8000u) | 0x7E00u)};
  return F16{static_cast<std::uint16_t>(__half_as_ushort(__float2half_rn(value)))};
}

/// to_float_round_odd(double): truncated toward zero, the last bit set when inexact; so rounding
/// it again to a 16-bit float is the direct rounding of the double.
__device__ inline float round_odd(double value) {
  float f = __double2float_rz(value);
  if (value != value || static_cast<double>(f) == value) return static_cast<float>(value);
  return __uint_as_float(__float_as_uint(f) | 1u);
}

template <typename T>
__device__ inline compute_t<T> load(const T* p) {
  if constexpr (kIsHalf<T>) {
    return widen(*p);
  } else {
    return *p;
  }
}

/// Stores a compute-type value into storage type T (one rounding for the 16-bit floats).
template <typename T>
__device__ inline void store(T* p, compute_t<T> v) {
  if constexpr (std::is_same_v<T, Bf16>) {
    *p = to_bf16(v);
  } else if constexpr (std::is_same_v<T, F16>) {
    *p = to_f16(v);
  } else {
    *p = v;
  }
}

/// The exact value of a float storage element as a double.
template <typename T>
__device__ inline double to_double(const T* p) {
  return static_cast<double>(load(p));
}

/// storage_cast<T>(double): a plain conversion, the 16-bit floats rounded once from the double.
template <typename T>
__device__ inline void store_double(T* p, double v) {
  if constexpr (std::is_same_v<T, Bf16>) {
    *p = to_bf16(round_odd(v));
  } else if constexpr (std::is_same_v<T, F16>) {
    *p = to_f16(round_odd(v));
  } else {
    *p = static_cast<T>(v);
  }
}

/// Calls f.template operator()<T>() with the storage type of `t`; false for a type it does not
/// know (nothing called).
template <typename F>
bool visit_type(ElemType t, F&& f) {
  switch (t) {
    case ElemType::kF32:
      f.template operator()<float>();
      return true;
    case ElemType::kF64:
      f.template operator()<double>();
      return true;
    case ElemType::kBF16:
      f.template operator()<Bf16>();
      return true;
    case ElemType::kF16:
      f.template operator()<F16>();
      return true;
    case ElemType::kI32:
      f.template operator()<std::int32_t>();
      return true;
    case ElemType::kI64:
      f.template operator()<std::int64_t>();
      return true;
  }
  return false;
}

}  // namespace tapestry::gpu::kernels
