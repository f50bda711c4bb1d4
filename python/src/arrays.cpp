#include "arrays.h"

#include <fmt/ranges.h>

#include <vector>

#include "errors.h"
#include "tapestry/runtime/element.h"

namespace tapestry::python {

namespace py = pybind11;

namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

// str(numpy.dtype): "float32", or ">f4" for a byte-swapped one.
std::string dtype_text(const py::dtype& dtype) {
  return py::str(static_cast<py::handle>(dtype)).cast<std::string>();
}

std::vector<std::int64_t> array_shape(const py::array& array) {
  return {array.shape(), array.shape() + array.ndim()};
}

}  // namespace

py::dtype numpy_dtype(ir::DType dtype, const std::string& what) {
  try {
    runtime::require_executable(dtype, what);
  } catch (const Error& e) {
    throw InputError(e.what());
  }
  // NumPy has no bfloat16: a bf16 tensor is exchanged as its bit patterns (uint16).
  if (dtype == ir::DType::kBFloat16) return py::dtype("uint16");
  if (dtype == ir::DType::kFloat16) return py::dtype("float16");
  return runtime::visit_dtype(dtype, []<typename T>() { return py::dtype::of<T>(); });
}

std::string describe_array(const py::array& array) {
  return fmt::format("{} {}", dtype_text(array.dtype()), shape_text(array_shape(array)));
}

BoundArray bind_array(const std::string& name, py::handle value, ir::DType dtype,
                      const zspace::Range& range) {
  const std::string what = fmt::format("input '{}'", name);
  const py::dtype expected = numpy_dtype(dtype, what);
  const py::module_ numpy = py::module_::import("numpy");
  py::array array = numpy.attr("asarray")(value);
  const zspace::Point extents = range.shape();
  const std::vector<std::int64_t> shape(extents.begin(), extents.end());
  if (!array.dtype().equal(expected) || array_shape(array) != shape) {
    throw InputError(fmt::format(
        "{}: expected {} {}, got {} (convert it with .astype or "
        "reshape it; Tapestry converts nothing silently)",
        what,
        dtype == ir::DType::kBFloat16 ? "uint16 (bfloat16 bit patterns)" : dtype_text(expected),
        shape_text(shape), describe_array(array)));
  }
  BoundArray bound;
  const int in_place = static_cast<int>(py::array::c_style) |
                       static_cast<int>(py::detail::npy_api::NPY_ARRAY_ALIGNED_);
  if ((array.flags() & in_place) != in_place) {
    array = numpy.attr("require")(array, expected, py::make_tuple("C", "A"));
    bound.copied = true;
  }
  // Executors never write their inputs: a read-only array is bound as well.
  auto* data = static_cast<std::byte*>(const_cast<void*>(array.data()));
  bound.buffer = runtime::Buffer::borrow(dtype, range, data);
  bound.array = std::move(array);
  return bound;
}

py::array to_numpy(runtime::Buffer buffer) {
  if (buffer.is_borrowed()) buffer = runtime::Buffer(static_cast<const runtime::Buffer&>(buffer));
  const py::dtype dtype = numpy_dtype(buffer.dtype(), "output");
  const zspace::Point shape = buffer.range().shape();
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  std::vector<py::ssize_t> strides;
  const auto item = static_cast<py::ssize_t>(ir::dtype_size_bytes(buffer.dtype()));
  for (std::int64_t s : buffer.strides()) strides.push_back(static_cast<py::ssize_t>(s) * item);
  auto* owned = new runtime::Buffer(std::move(buffer));
  const py::capsule owner(owned, [](void* p) { delete static_cast<runtime::Buffer*>(p); });
  return {dtype, std::move(dims), std::move(strides), owned->bytes(), owner};
}

}  // namespace tapestry::python
