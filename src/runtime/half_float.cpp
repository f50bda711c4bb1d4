// bfloat16 and float16 conversions (half_float.h): the float64 narrowing's round-to-odd step.
#include "tapestry/runtime/half_float.h"

#include <cmath>

#include "tapestry/support/assert.h"

namespace tapestry::runtime {

float to_float_round_odd(double value) {
  float f = static_cast<float>(value);  // to nearest; exact, ±inf and NaN stay
  if (std::isnan(value) || static_cast<double>(f) == value) return f;
  // Inexact: truncate toward zero (one step back when rounding went away from zero; ±inf from a
  // finite value steps back to ±FLT_MAX), then set the last bit as the sticky bit.
  if (std::abs(static_cast<double>(f)) > std::abs(value)) f = std::nextafter(f, 0.0F);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1U);
}

}  // namespace tapestry::runtime
