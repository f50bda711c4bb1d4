// bfloat16 and float16 conversions (half_float.h).
//
// The float16 routines are the branch-free exact conversions of Marat Dukhan's FP16 library
// (MIT): they let float32 arithmetic do the rounding, so they need the default rounding mode
// (to nearest) and IEEE subnormals, which this project never changes.
#include "tapestry/runtime/half_float.h"

#include <cmath>

#include "tapestry/support/assert.h"

namespace tapestry::runtime {

Float16 to_float16(float value) {
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

float to_float_round_odd(double value) {
  float f = static_cast<float>(value);  // to nearest; exact, ±inf and NaN stay
  if (std::isnan(value) || static_cast<double>(f) == value) return f;
  // Inexact: truncate toward zero (one step back when rounding went away from zero; ±inf from a
  // finite value steps back to ±FLT_MAX), then set the last bit as the sticky bit.
  if (std::abs(static_cast<double>(f)) > std::abs(value)) f = std::nextafter(f, 0.0F);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1U);
}

float to_float(Float16 value) {
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

}  // namespace tapestry::runtime
