// Private building blocks of the reference kernels: element arithmetic without undefined
// behaviour, monoid folds, and the loop over an index box grouped by output cell.
//
// Integers wrap on overflow (two's complement, as NumPy does) instead of invoking undefined
// behaviour; floats follow IEEE 754 with NaN propagating through max and min.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "tapestry/ir/nodes.h"
#include "tapestry/runtime/element.h"
#include "tapestry/runtime/kernel.h"

namespace tapestry::runtime::kernels {

// ---- arithmetic -------------------------------------------------------------------------------

template <typename T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T>;

template <Element T>
T add(T a, T b) {
  if constexpr (kIsFloat<T>) {
    return a + b;
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  }
}

template <Element T>
T sub(T a, T b) {
  if constexpr (kIsFloat<T>) {
    return a - b;
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  }
}

template <Element T>
T mul(T a, T b) {
  if constexpr (kIsFloat<T>) {
    return a * b;
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  }
}

template <Element T>
T neg(T a) {
  return sub(T{0}, a);
}

/// max and min propagate NaN (NumPy's maximum/minimum).
template <Element T>
T max(T a, T b) {
  if constexpr (kIsFloat<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return a < b ? b : a;
}

template <Element T>
T min(T a, T b) {
  if constexpr (kIsFloat<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return b < a ? b : a;
}

// ---- folds ------------------------------------------------------------------------------------

/// The identity of a monoid: 0, 1, −∞ (lowest int) for max, +∞ (highest int) for min.
template <Element T>
T identity(ir::Monoid monoid) {
  using L = std::numeric_limits<T>;
  switch (monoid) {
    case ir::Monoid::kSum:
      return T{0};
    case ir::Monoid::kProd:
      return T{1};
    case ir::Monoid::kMax:
      return L::has_infinity ? -L::infinity() : L::lowest();
    case ir::Monoid::kMin:
      return L::has_infinity ? L::infinity() : L::max();
  }
  return T{0};
}

template <Element T>
T combine(ir::Monoid monoid, T a, T b) {
  switch (monoid) {
    case ir::Monoid::kSum:
      return add(a, b);
    case ir::Monoid::kProd:
      return mul(a, b);
    case ir::Monoid::kMax:
      return max(a, b);
    case ir::Monoid::kMin:
      return min(a, b);
  }
  return a;
}

/// Folds values in the order they are added. The first value is taken as is (so a sum of one
/// -0.0 stays -0.0); an empty fold gives the monoid's identity.
template <Element T>
class Fold {
 public:
  explicit Fold(ir::Monoid monoid) : monoid_(monoid) {}
  void reset() { empty_ = true; }
  void add(T value) {
    value_ = empty_ ? value : combine(monoid_, value_, value);
    empty_ = false;
  }
  [[nodiscard]] T result() const { return empty_ ? identity<T>(monoid_) : value_; }

 private:
  ir::Monoid monoid_;
  bool empty_ = true;
  T value_{};
};

// ---- loops ------------------------------------------------------------------------------------

namespace detail {

/// True when `p` equals `corner` in every dim from `first` on.
inline bool matches_from(const Point& p, const Point& corner, std::size_t first) {
  for (std::size_t k = first; k < p.rank(); ++k) {
    if (p[k] != corner[k]) return false;
  }
  return true;
}

/// True when `reduced` is exactly the last reduced.size() dims of a rank-`rank` index.
inline bool are_trailing(std::span<const std::size_t> reduced, std::size_t rank) {
  for (std::size_t k = 0; k < reduced.size(); ++k) {
    if (reduced[k] != rank - reduced.size() + k) return false;
  }
  return true;
}

}  // namespace detail

/// Visits `index` grouped by output cell. `reduced` are the reduction dims (KernelCall::
/// reduced_dims()). For every point q of the other dims, row-major: `begin(q')`, then
/// `step(p)` for each index point p = q with the reduced dims running over their range in
/// ascending row-major order, then `end(q'')`, where q' and q'' are points of that group (output
/// IPFs ignore the reduced dims, so any point of the group gives the group's output cell).
///
/// An empty `index` visits nothing (its output boxes are empty too).
///
/// This fixes the order of every reduction: a sum over `in` adds in ascending `in`, whether the
/// kernel computes a whole operation or a shard of it.
///
/// When the reduced dims are the trailing ones (as every built-in metakernel declares them),
/// plain row-major iteration of `index` is already that order; other layouts take the general
/// path, which assembles each point.
template <typename Begin, typename Step, typename End>
void for_each_output_cell(const Range& index, std::span<const std::size_t> reduced, Begin&& begin,
                          Step&& step, End&& end) {
  if (index.is_empty()) return;
  if (detail::are_trailing(reduced, index.rank())) {
    const std::size_t first = index.rank() - reduced.size();
    const Point last = index.inclusive_end();
    for (const Point& p : index.points()) {
      if (detail::matches_from(p, index.start(), first)) begin(p);
      step(p);
      if (detail::matches_from(p, last, first)) end(p);
    }
    return;
  }
  Range outer = index;
  std::vector<std::int64_t> lo, hi;
  for (std::size_t d : reduced) {
    lo.push_back(index.start()[d]);
    hi.push_back(index.end()[d]);
    outer = outer.with_dim(d, index.start()[d], index.start()[d] + 1);
  }
  const Range inner{Point(std::span<const std::int64_t>(lo)),
                    Point(std::span<const std::int64_t>(hi))};
  std::vector<std::int64_t> coords(index.rank());
  for (const Point& q : outer.points()) {
    begin(q);
    for (const Point& r : inner.points()) {
      std::copy(q.begin(), q.end(), coords.begin());
      for (std::size_t k = 0; k < reduced.size(); ++k) coords[reduced[k]] = r[k];
      step(Point(std::span<const std::int64_t>(coords)));
    }
    end(q);
  }
}

/// Calls fn(element) for every element of the window `shape` starting at `base`, row-major.
template <typename T, typename Fn>
void for_each_in_window(T* base, const Point& shape, const Point& strides, Fn&& fn) {
  const Range window = Range::of_shape(shape);  // points() refers to it: keep it alive
  for (const Point& w : window.points()) {
    std::int64_t offset = 0;
    for (std::size_t k = 0; k < w.rank(); ++k) offset += w[k] * strides[k];
    fn(base[offset]);
  }
}

/// True when every cell window of the port's IPF is a single element.
inline bool has_unit_cells(const zspace::IndexProjection& ipf) {
  for (std::int64_t s : ipf.shape()) {
    if (s != 1) return false;
  }
  return true;
}

/// Fails unless `port` (called `name` in messages) has one element per index point.
template <typename Port>
void require_unit_cells(const KernelCall& call, const Port& port, std::string_view name);

/// Fails unless all inputs and outputs of `call` have one element per index point.
void require_unit_cells(const KernelCall& call);

/// Fails unless every port of `call` has dtype `dtype`; returns it.
DType common_dtype(const KernelCall& call);

/// Fails unless `dtype` is a float type (for exp, tanh, softmax, …).
void require_float(const KernelCall& call, DType dtype);

}  // namespace tapestry::runtime::kernels
