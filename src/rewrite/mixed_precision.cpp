// Float32 intermediates in 16-bit graphs (mixed_precision.h).
#include "mixed_precision.h"

namespace tapestry::rewrite::detail {

namespace {

bool is_half(ir::DType d) {
  return d == ir::DType::kBFloat16 || d == ir::DType::kFloat16;
}

}  // namespace

std::optional<ir::DType> half_float_of(std::span<const metakernel::Argument> args) {
  for (const metakernel::Argument& a : args) {
    if (is_half(a.type.dtype)) return a.type.dtype;
  }
  return std::nullopt;
}

void read_as_one_precision(std::span<metakernel::Argument> args) {
  const std::optional<ir::DType> half = half_float_of(args);
  if (!half) return;
  for (metakernel::Argument& a : args) {
    if (a.type.dtype == ir::DType::kFloat32) a.type.dtype = *half;
  }
}

bool stores_as(ir::DType stored, ir::DType derived) {
  if (stored == derived) return true;
  return (stored == ir::DType::kFloat32 && is_half(derived)) ||
         (is_half(stored) && derived == ir::DType::kFloat32);
}

ir::DType accumulation_dtype(ir::DType derived) {
  return is_half(derived) ? ir::DType::kFloat32 : derived;
}

}  // namespace tapestry::rewrite::detail
