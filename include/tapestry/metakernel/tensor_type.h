// Element types and tensor types, as metakernels see them.
//
// A `TensorType` is what a metakernel checks and produces: an element type and a range. The
// range carries both the shape and the start, because Tapestry tensors live at arbitrary
// coordinates (`f32[-40:60, 20:32]` has shape (100, 12) and starts at (-40, 20)).
//
//   TensorType t{DType::f32, zspace::Range({-40, 20}, {60, 32})};
//   t.to_string() == "f32[-40:60, 20:32]";      // .tap declaration syntax
//   TensorType{DType::f32, Range::of_shape({4, 8})}.to_string() == "f32[4, 8]";
//
// dtypes: f32 f64 i32 i64 (executable) and bf16 f16 (for cost-only graphs: the runtime has no
// kernels for them). Their names are the .tap spellings; `dtype_from_name` also accepts the
// long forms float32, float64, int32, int64, bfloat16, float16.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/zspace/range.h"

namespace tapestry::metakernel {

enum class DType { f32, f64, i32, i64, bf16, f16 };

/// Every dtype, in declaration order.
std::span<const DType> all_dtypes();
/// `f32`, `f64`, `i32`, `i64`, `bf16`, `f16`.
std::string_view dtype_name(DType dtype);
/// Parses a short or long dtype name; nullopt when unknown.
std::optional<DType> dtype_from_name(std::string_view name);
[[nodiscard]] bool is_float(DType dtype);
/// Size of one element in bytes.
[[nodiscard]] std::int64_t dtype_bytes(DType dtype);

/// The named dtype sets usable in kernel files: `any`, `float` (f32 f64 bf16 f16), `int`
/// (i32 i64). Nullopt for other names.
std::optional<std::vector<DType>> dtype_set(std::string_view name);

struct TensorType {
  DType dtype = DType::f32;
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
