// NumPy arrays in and out of runs.
//
// In: an array that is C-contiguous, aligned and of the tensor's dtype is bound as is — the run
// reads the caller's memory through a borrowing runtime::Buffer (buffer.h); any other layout
// (Fortran order, a strided slice, a misaligned view) is copied once into a C-contiguous array
// first. A wrong dtype or shape is an InputError naming the input: nothing is converted silently.
//
// Out: a runtime::Buffer becomes an array without a copy; the array owns it (its `base` is a
// capsule that frees the buffer with the array).
#pragma once

#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "tapestry/ir/dtype.h"
#include "tapestry/runtime/buffer.h"

namespace tapestry::python {

/// The NumPy dtype of an executable dtype (InputError naming `what` for bf16, f16, …).
pybind11::dtype numpy_dtype(ir::DType dtype, const std::string& what);

/// A graph input bound to a NumPy array.
struct BoundArray {
  runtime::Buffer buffer;  // borrows `array`'s memory
  pybind11::array array;   // keeps the memory alive for the run
  bool copied = false;     // the caller's array could not be used in place
};

/// Binds `value` (an ndarray, or anything numpy.asarray takes) to input `name` of dtype `dtype`
/// and range `range`. InputError when the dtype or shape differs.
BoundArray bind_array(const std::string& name, pybind11::handle value, ir::DType dtype,
                      const zspace::Range& range);

/// The array of `buffer`, which it takes over (a borrowing buffer is copied first).
pybind11::array to_numpy(runtime::Buffer buffer);

/// "float32 (4096, 1024)".
std::string describe_array(const pybind11::array& array);

}  // namespace tapestry::python
