// Reference kernels of the operations that pick cells by position: argmax and argmin
// (kernels/reductions.yaml) and gather (kernels/layout.yaml).
//
// argmax, argmin: each index point reads one whole row along `axis` (window `*`) and writes
// one int64: scalar_ops.h's arg_extreme, the fast kernels' own function. gather: each index
// point reads one index and the whole axis of x it picks from (window `*`), and copies the cell
// at that index; an index outside −n … n−1 fails the run, naming the operation and the index.
#include <fmt/format.h>

#include "kernel_support.h"
#include "reference_kernels.h"
#include "scalar_ops.h"

namespace tapestry::runtime {

namespace {

// The dim of x the operation searches / picks along: its `axis` param (normalised by the
// metakernel).
std::size_t axis_of(const KernelCall& call) {
  return static_cast<std::size_t>(call.param_int("axis", 0));
}

template <bool kMin>
void arg_extreme_kernel(const KernelCall& call) {
  const InputPort& xp = call.input("x");
  const OutputPort& rp = call.output("result");
  if (rp.view.dtype() != DType::kInt64) call.fail("the result must be i64");
  const std::size_t axis = axis_of(call);
  const bool last = call.param_bool("select_last_index", false);
  visit_dtype(xp.view.dtype(), [&]<typename T>() {
    const Operand<const T> x(xp);
    const Operand<std::int64_t> r(rp);
    const std::int64_t n = x.window(axis), stride = x.stride(axis);
    for (const Point& p : call.index.points())
      *r.cell(p) = kernels::scalar::arg_extreme<kMin>(x.cell(p), stride, n, last);
  });
}

// Index k of an axis of n cells, after ONNX's wrap of a negative k; fails the run when it is
// outside −n … n−1, naming the index and where the indices tensor holds it.
template <typename I>
std::int64_t wrapped_index(const KernelCall& call, I raw, std::int64_t n, const Point& p) {
  const auto k = static_cast<std::int64_t>(raw);
  if (k < -n || k >= n) {
    const Point at = call.input("indices").ipf->apply(p).start();
    call.fail(
        fmt::format("index {} (the indices' cell {}) is out of range: axis {} of x has "
                    "{} cells, so an index is in −{} … {}",
                    k, at.to_string(), call.param_int("axis", 0), n, n, n - 1));
  }
  return k < 0 ? k + n : k;
}

void gather_kernel(const KernelCall& call) {
  const InputPort& xp = call.input("x");
  const InputPort& ip = call.input("indices");
  const OutputPort& rp = call.output("result");
  const std::size_t axis = axis_of(call);
  const DType index_dtype = ip.view.dtype();
  if (index_dtype != DType::kInt32 && index_dtype != DType::kInt64)
    call.fail(fmt::format("indices must be i32 or i64, not {}", ir::dtype_name(index_dtype)));
  visit_dtype(xp.view.dtype(), [&]<typename T>() {
    const Operand<const T> x(xp);
    const Operand<T> r(rp);
    const std::int64_t n = x.window(axis), stride = x.stride(axis);
    const auto run = [&]<typename I>() {
      const Operand<const I> indices(ip);
      for (const Point& p : call.index.points())
        *r.cell(p) = x.cell(p)[wrapped_index(call, *indices.cell(p), n, p) * stride];
    };
    if (index_dtype == DType::kInt32) {
      run.template operator()<std::int32_t>();
    } else {
      run.template operator()<std::int64_t>();
    }
  });
}

}  // namespace

void register_indexing_kernels(ExecutableKernels& registry) {
  registry.add("argmax", &arg_extreme_kernel<false>);
  registry.add("argmin", &arg_extreme_kernel<true>);
  registry.add("gather", &gather_kernel);
}

}  // namespace tapestry::runtime
