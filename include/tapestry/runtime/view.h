// Strided views of boxes of dense tensors, addressed in the tensor's own coordinates.
//
// A tensor lives at arbitrary coordinates (`f32[-40:60, 20:32]`), and so does every view of it: a
// view is a box of the tensor, a pointer to the element at the box's start, and one stride (in
// elements) per dimension. Indexing takes *tensor* coordinates, never offsets inside the box, so
// a kernel can address cells directly with the points an IPF gives:
//
//   Buffer x(DType::kFloat32, Range({-40, 20}, {60, 32}));   // shape (100, 12), strides (12, 1)
//   View v = x.view(Range({-2, 20}, {3, 24}));               // 5 rows, 4 columns
//   TypedView<float> t = v.typed<float>();
//   t[Point{-1, 21}] = 1.0f;                                 // element (39, 1) of the storage
//   t[Point{3, 21}]                                          // asserts: outside the view's box
//
// `View` (mutable) and `ConstView` are untyped: they carry the dtype and check it when a kernel
// asks for a typed view (`typed<T>()` throws Error on a mismatch, naming both dtypes).
// `TypedView<T>` (T possibly const) is the typed form kernels loop over. Views never own memory:
// they are valid while their Buffer lives and is not moved from. Views of disjoint boxes of one
// buffer may be written concurrently; nothing else may.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "tapestry/ir/dtype.h"
#include "tapestry/runtime/element.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/point.h"
#include "tapestry/zspace/range.h"

namespace tapestry::runtime {

using zspace::Point;
using zspace::Range;

/// Element offset of tensor point `p` from the start of `box`: Σ_k (p_k − start_k)·stride_k.
/// Asserts that `p` lies inside `box`.
std::int64_t element_offset(const Range& box, const Point& strides, const Point& p);

/// A typed strided view of a box. T is an Element type, possibly const.
template <typename T>
class TypedView {
 public:
  TypedView() = default;
  /// `origin` points at the element at `box.start()` (may be null for an empty box).
  TypedView(T* origin, Range box, Point strides)
      : origin_(origin), box_(std::move(box)), strides_(std::move(strides)) {}

  [[nodiscard]] const Range& box() const { return box_; }
  [[nodiscard]] std::size_t rank() const { return box_.rank(); }
  /// Stride of dimension `dim`, in elements.
  [[nodiscard]] std::int64_t stride(std::size_t dim) const { return strides_[dim]; }
  [[nodiscard]] const Point& strides() const { return strides_; }
  /// The element at the box's start (null for an empty box).
  [[nodiscard]] T* origin() const { return origin_; }

  /// The element at tensor point `p` (asserted inside the box).
  T& operator[](const Point& p) const { return origin_[element_offset(box_, strides_, p)]; }
  /// Pointer to the element at tensor point `p` (asserted inside the box).
  T* pointer(const Point& p) const { return origin_ + element_offset(box_, strides_, p); }

  /// Read-only form.
  operator TypedView<const T>() const {  // NOLINT: adding const is always safe
    return TypedView<const T>(origin_, box_, strides_);
  }

 private:
  T* origin_ = nullptr;
  Range box_;
  Point strides_;
};

/// An untyped view; `Byte` is std::byte (View) or const std::byte (ConstView).
template <typename Byte>
class BasicView {
  template <typename T>
  using Qualified = std::conditional_t<std::is_const_v<Byte>, const T, T>;

 public:
  BasicView() = default;
  /// `origin` points at the element at `box.start()`; strides are in elements.
  BasicView(DType dtype, Byte* origin, Range box, Point strides)
      : dtype_(dtype), origin_(origin), box_(std::move(box)), strides_(std::move(strides)) {}

  [[nodiscard]] DType dtype() const { return dtype_; }
  [[nodiscard]] const Range& box() const { return box_; }
  [[nodiscard]] std::size_t rank() const { return box_.rank(); }
  [[nodiscard]] const Point& strides() const { return strides_; }
  /// Stride of dimension `dim`, in elements.
  [[nodiscard]] std::int64_t stride(std::size_t dim) const { return strides_[dim]; }
  [[nodiscard]] Byte* origin() const { return origin_; }

  /// The view of `sub`, which must lie inside this view's box (Error otherwise).
  [[nodiscard]] BasicView sub(const Range& sub) const;

  /// The typed view; throws Error when T is not this view's dtype.
  template <StorageElement T>
  [[nodiscard]] TypedView<Qualified<T>> typed() const {
    if (dtype_ != dtype_of<T>) throw_dtype_mismatch(dtype_of<T>);
    return TypedView<Qualified<T>>(reinterpret_cast<Qualified<T>*>(origin_), box_, strides_);
  }

  /// Read-only form.
  operator BasicView<const std::byte>() const {  // NOLINT: adding const is always safe
    return BasicView<const std::byte>(dtype_, origin_, box_, strides_);
  }

 private:
  [[noreturn]] void throw_dtype_mismatch(DType wanted) const;

  DType dtype_ = DType::kFloat32;
  Byte* origin_ = nullptr;
  Range box_;
  Point strides_;
};

using View = BasicView<std::byte>;
using ConstView = BasicView<const std::byte>;

extern template class BasicView<std::byte>;
extern template class BasicView<const std::byte>;

}  // namespace tapestry::runtime
