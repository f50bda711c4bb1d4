// Tensor types, as metakernels see them.
//
// A `TensorType` is what a metakernel checks and produces: an element type and a range. The
// range carries both the shape and the start, because Tapestry tensors live at arbitrary
// coordinates (`f32[-40:60, 20:32]` has shape (100, 12) and starts at (-40, 20)).
//
//   TensorType t{DType::kFloat32, zspace::Range({-40, 20}, {60, 32})};
//   t.to_string() == "f32[-40:60, 20:32]";      // .tap declaration syntax
//   TensorType{DType::kFloat32, Range::of_shape({4, 8})}.to_string() == "f32[4, 8]";
//
// The element type is the one dtype type, `ir::DType` (ir/dtype.h, whose table gives the names):
// metakernels know the dtypes `.tap` can declare — f32 f64 i32 i64 (executable) and bf16 f16
// (for cost-only graphs: the runtime has no kernels for them) — by their short names, or the long
// forms float32, float64, int32, int64, bfloat16, float16 (`ir::parse_tap_dtype`).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/dtype.h"
#include "tapestry/zspace/range.h"

namespace tapestry::metakernel {

using ir::DType;

/// The named dtype sets usable in kernel files, in table order: `any` (every .tap dtype),
/// `float` (f32 f64 bf16 f16), `int` (i32 i64). Nullopt for other names.
std::optional<std::vector<DType>> dtype_set(std::string_view name);
/// The .tap dtypes' short names joined by `separator`: "f32 f64 i32 i64 bf16 f16" (messages).
std::string tap_dtype_names(std::string_view separator);

struct TensorType {
  DType dtype = DType::kFloat32;
  zspace::Range range;

  [[nodiscard]] std::size_t rank() const { return range.rank(); }
  [[nodiscard]] zspace::Point shape() const { return range.shape(); }
  [[nodiscard]] std::int64_t extent(std::size_t dim) const { return range.extent(dim); }
  /// .tap syntax: `f32[4, 8]` when the range starts at the origin, else `f32[-40:60, 20:32]`.
  [[nodiscard]] std::string to_string() const;

  friend bool operator==(const TensorType&, const TensorType&) = default;
};

/// `[4, 8]` — a shape in the bracket form used by messages.
std::string shape_string(const zspace::Point& shape);

}  // namespace tapestry::metakernel
