// Reference layout kernels: transpose, permute, reshape, slice (kernels/layout.yaml), pad
// (kernels/conv.yaml) and cast (kernels/cast.yaml), a copy that converts the dtype.
//
// Transpose, permute, reshape and slice move elements without computing anything, and their IPFs
// say exactly where: for each index point i the result cell IPF_r(i) receives the x cell IPF_x(i).
// (A reshape merging dims (a, b) into m has the index (a, b) and the result row m = B·a + b; a
// split is the mirror image. See metakernel/hooks.h.) So all four are one copy kernel.
//
// Pad's result range extends past x's in x's own coordinates (x = f32[0:4, 0:4] padded by 2
// gives f32[-2:6, -2:6]); each index point reads x's whole last-two-dims plane (`*, *`: an IPF
// cannot clip), and its result cell takes x's element at the same coordinates when x holds
// them, and the `value` param otherwise.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kernel_support.h"
#include "reference_kernels.h"
#include "tapestry/runtime/element.h"
#include "tapestry/zspace/format.h"

namespace tapestry::runtime {

namespace {

constexpr std::string_view kX = "x";
constexpr std::string_view kResult = "result";
constexpr std::string_view kValueParam = "value";

// Element offset of window point w: Σ_k w_k · strides_k.
std::int64_t offset(const Point& w, const Point& strides) {
  std::int64_t o = 0;
  for (std::size_t k = 0; k < w.rank(); ++k) o += w[k] * strides[k];
  return o;
}

template <typename T>
void copy(const KernelCall& call) {
  if (call.index.is_empty()) return;  // e.g. a reshape of a tensor with no cells
  const Operand<const T> x(call.input(kX));
  const Operand<T> result(call.output(kResult));
  const Range from_window = Range::of_shape(x.window());
  const Range to_window = Range::of_shape(result.window());
  if (from_window.size() != to_window.size()) {
    call.fail(fmt::format("x cells {} and result cells {} hold different numbers of elements",
                          x.window(), result.window()));
  }
  // Both windows are walked row-major in lockstep (usually both are single elements).
  for (const Point& p : call.index.points()) {
    const T* from = x.cell(p);
    T* to = result.cell(p);
    auto w_to = to_window.points().begin();
    for (const Point& w_from : from_window.points()) {
      to[offset(*w_to, result.view().strides())] = from[offset(w_from, x.view().strides())];
      ++w_to;
    }
  }
}

void copy_kernel(const KernelCall& call) {
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() { copy<T>(call); });
}

// The `value` param (a float in the metakernel; default 0) converted to T. For integer tensors
// it must be a whole number within T's range.
template <typename T>
T pad_value(const KernelCall& call) {
  if (call.params == nullptr || !call.params->is_object() || !call.params->contains(kValueParam)) {
    return T{0};
  }
  const nlohmann::json& v = call.params->at(kValueParam);
  if (!v.is_number()) call.fail("param 'value' must be a number");
  if constexpr (kernels::kIsFloat<T>) {
    return static_cast<T>(v.get<double>());
  } else {
    if (v.is_number_integer()) {
      const std::int64_t i = v.get<std::int64_t>();
      if (i >= std::numeric_limits<T>::lowest() && i <= std::numeric_limits<T>::max()) {
        return static_cast<T>(i);
      }
    } else {
      const double d = v.get<double>();
      if (d == std::trunc(d) && d >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
          d < static_cast<double>(std::numeric_limits<T>::max()) + 1.0) {
        return static_cast<T>(d);
      }
    }
    call.fail(fmt::format("param 'value' {} is not a whole number an {} can hold", v.dump(),
                          ir::dtype_name(dtype_of<T>)));
  }
}

template <typename T>
void pad(const KernelCall& call) {
  const InputPort& xp = call.input(kX);
  const OutputPort& rp = call.output(kResult);
  kernels::require_unit_cells(call, rp, kResult);
  const TypedView<const T> x = xp.view.typed<T>();
  const Operand<T> result(rp);
  const T value = pad_value<T>(call);
  for (const Point& p : call.index.points()) {
    const Point cell = rp.ipf->map().apply(p);
    *result.cell(p) = x.box().contains(cell) ? x[cell] : value;
  }
}

void pad_kernel(const KernelCall& call) {
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() { pad<T>(call); });
}

// cast (kernels/cast.yaml): each result cell is its x cell converted to the result's dtype —
// storage_cast from the exact float64 value, so widening is exact and narrowing rounds once to
// nearest even (element.h). Registered native: it reads and writes 16-bit cells itself.
template <typename From, typename To>
void cast(const KernelCall& call) {
  const Operand<const From> x(call.input(kX));
  const Operand<To> result(call.output(kResult));
  for (const Point& p : call.index.points()) {
    *result.cell(p) = storage_cast<To>(static_cast<double>(*x.cell(p)));
  }
}

void cast_kernel(const KernelCall& call) {
  const InputPort& x = call.input(kX);
  const OutputPort& r = call.output(kResult);
  kernels::require_unit_cells(call, x, kX);
  kernels::require_unit_cells(call, r, kResult);
  if (!ir::is_float(x.view.dtype()) || !ir::is_float(r.view.dtype())) {
    call.fail(fmt::format("cast converts float dtypes, not {} to {}",
                          ir::dtype_name(x.view.dtype()), ir::dtype_name(r.view.dtype())));
  }
  visit_storage_dtype(x.view.dtype(), [&]<typename From>() {
    if constexpr (is_float_element_v<From>) {
      visit_storage_dtype(r.view.dtype(), [&]<typename To>() {
        if constexpr (is_float_element_v<To>) cast<From, To>(call);
      });
    }
  });
}

}  // namespace

void register_layout_kernels(ExecutableKernels& registry) {
  registry.add_native("cast", &cast_kernel);
  registry.add("transpose", &copy_kernel);
  registry.add("permute", &copy_kernel);
  registry.add("reshape", &copy_kernel);
  registry.add("slice", &copy_kernel);
  registry.add("pad", &pad_kernel);
  registry.add("pad2d", &pad_kernel);  // pad with an amount per side: the same cells rule
  registry.add("pad3d", &pad_kernel);
}

}  // namespace tapestry::runtime
