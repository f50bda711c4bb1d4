// The 16-bit float storage types, bfloat16 and float16, and their conversions to and from float32.
//
// The runtime stores bf16 and f16 tensors in 16 bits a cell and computes on them in float32
// (kernels widen their inputs and round their outputs once: executable_kernels.h). These types are
// the cells: a struct around the bit pattern, converted explicitly, never computed with.
//
//   bfloat16  1 sign, 8 exponent, 7 fraction bits: float32's upper half (unit roundoff 2^-8)
//   float16   1 sign, 5 exponent, 10 fraction bits, IEEE binary16 (unit roundoff 2^-11)
//
// Widening is exact. Narrowing rounds to nearest, ties to even (from float64 too, directly); values
// beyond the largest finite value round to infinity as IEEE prescribes; a NaN stays a NaN, quiet
// (bf16 keeps the sign and the top fraction bits and sets the quiet bit; f16 gives the sign and
// 0x7E00). f16 narrowing is a portable exact routine (float arithmetic in the default rounding
// mode), not F16C, so the result is the same on every CPU.
//
//   to_bfloat16(1.0F).bits == 0x3F80;       to_float(BFloat16{0x3F80}) == 1.0F
//   to_bfloat16(1.00390625F).bits == 0x3F80  (1 + 2^-8 is a tie: rounds to the even 1.0)
//   to_float16(65520.0F).bits == 0x7C00      (rounds past 65504: +inf)
//   to_float(Float16{0x0001}) == 0x1p-24F    (the smallest subnormal)
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace tapestry::runtime {

/// A bfloat16 cell: the bit pattern. Construct from a float with to_bfloat16 (rounds).
struct BFloat16 {
  std::uint16_t bits = 0;
  /// The value, widened exactly (so `static_cast<double>(cell)` works in generic code).
  explicit operator float() const { return std::bit_cast<float>(std::uint32_t{bits} << 16); }
  explicit operator double() const { return static_cast<double>(static_cast<float>(*this)); }
  friend bool operator==(BFloat16, BFloat16) = default;
};

/// A float16 (IEEE binary16) cell: the bit pattern. Construct with to_float16 (rounds).
struct Float16 {
  std::uint16_t bits = 0;
  explicit operator float() const;
  explicit operator double() const { return static_cast<double>(static_cast<float>(*this)); }
  friend bool operator==(Float16, Float16) = default;
};

/// `value` rounded to bfloat16 (nearest, ties to even; NaN kept, quiet).
constexpr BFloat16 to_bfloat16(float value) {
  const auto u = std::bit_cast<std::uint32_t>(value);
  if ((u & 0x7FFF'FFFFU) > 0x7F80'0000U) {
    return BFloat16{static_cast<std::uint16_t>((u >> 16) | 0x0040U)};
  }
  const std::uint32_t rounded = u + 0x7FFFU + ((u >> 16) & 1U);
  return BFloat16{static_cast<std::uint16_t>(rounded >> 16)};
}

/// `value` rounded to float16 (nearest, ties to even; NaN kept, quiet). Inline and branch-free
/// (Marat Dukhan's FP16 library, MIT: float32 arithmetic does the rounding, so it needs the
/// default rounding mode and IEEE subnormals, which this project never changes), so a kernel's
/// loop over 16-bit cells vectorises with the conversion in registers.
inline Float16 to_float16(float value) {
  // Scale |value| so that float32's own rounding at the addition below rounds the fraction to
  // binary16's 10 bits (or to the subnormal grid), then read the result's bits.
  constexpr float kScaleToInf = 0x1.0p+112F;
  constexpr float kScaleToZero = 0x1.0p-110F;
  const auto w = std::bit_cast<std::uint32_t>(value);
  const float magnitude = std::bit_cast<float>(w & 0x7FFF'FFFFU);
  float base = (magnitude * kScaleToInf) * kScaleToZero;
  const std::uint32_t shl1_w = w + w;
  const std::uint32_t sign = w & 0x8000'0000U;
  std::uint32_t bias = shl1_w & 0xFF00'0000U;
  if (bias < 0x7100'0000U) bias = 0x7100'0000U;
  base = std::bit_cast<float>((bias >> 1) + 0x0780'0000U) + base;
  const auto bits = std::bit_cast<std::uint32_t>(base);
  const std::uint32_t exp_bits = (bits >> 13) & 0x0000'7C00U;
  const std::uint32_t mantissa_bits = bits & 0x0000'0FFFU;
  const std::uint32_t nonsign = exp_bits + mantissa_bits;
  return Float16{
      static_cast<std::uint16_t>((sign >> 16) | (shl1_w > 0xFF00'0000U ? 0x7E00U : nonsign))};
}

/// `value` narrowed to float32 rounding to odd (truncated toward zero, the last bit set when
/// inexact; ±inf and NaN kept; beyond float32's range: ±FLT_MAX, odd). float32 has more than two
/// bits beyond a 16-bit significand, so rounding this again to bfloat16 or float16 gives the
/// direct round-to-nearest-even of `value`: no double rounding.
///   to_float_round_odd(1.0 + 0x1p-30) == 1.0F + 0x1p-23F   (to_bfloat16 then gives 1.0)
float to_float_round_odd(double value);

/// `value` rounded to bfloat16 / float16 directly (nearest, ties to even; NaN kept, quiet).
///   to_bfloat16(1.0 + 0x1p-8 + 0x1p-40).bits == 0x3F81   (above the tie: up; through a
///   float32 rounded to nearest it would be the tie 1 + 2^-8, and round down to even 0x3F80)
inline BFloat16 to_bfloat16(double value) {
  return to_bfloat16(to_float_round_odd(value));
}
inline Float16 to_float16(double value) {
  return to_float16(to_float_round_odd(value));
}

/// The value of a float16 cell, widened exactly (inline and branch-free, as to_float16).
inline float to_float(Float16 value) {
  const std::uint32_t w = std::uint32_t{value.bits} << 16;
  const std::uint32_t sign = w & 0x8000'0000U;
  const std::uint32_t two_w = w + w;
  // Normal (and inf/NaN): move the exponent and fraction into place, rebias by multiplying.
  constexpr std::uint32_t kExpOffset = 0xE0U << 23;
  constexpr float kExpScale = 0x1.0p-112F;
  const float normalized = std::bit_cast<float>((two_w >> 4) + kExpOffset) * kExpScale;
  // Subnormal: the fraction as the low bits of 0.5's fraction, minus 0.5.
  constexpr std::uint32_t kMagicMask = 126U << 23;
  constexpr float kMagicBias = 0.5F;
  const float denormalized = std::bit_cast<float>((two_w >> 17) | kMagicMask) - kMagicBias;
  constexpr std::uint32_t kDenormalizedCutoff = 1U << 27;
  const std::uint32_t result =
      sign | (two_w < kDenormalizedCutoff ? std::bit_cast<std::uint32_t>(denormalized)
                                          : std::bit_cast<std::uint32_t>(normalized));
  return std::bit_cast<float>(result);
}
inline float to_float(BFloat16 value) {
  return static_cast<float>(value);
}
inline Float16::operator float() const {
  return to_float(*this);
}

}  // namespace tapestry::runtime
