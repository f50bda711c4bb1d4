// Reference reduction kernels (kernels/reductions.yaml): sum and max over one dim of x, and
// `reduce`, which combines the partial results of a split reduction over their leading block
// dim with the monoid of its `op` param.
//
// All are one fold: each output cell combines, in ascending order of the index points that map
// to it and, inside each point's cell window, in row-major order, every input element those
// points select. Whether the reduced dim is an index dim (unit cells) or a window (`*`), the
// elements are visited in ascending coordinate order along it, so results are reproducible:
//
//   sum over dim 1 of [[1, 2, 3]]  = (1 + 2) + 3
//   reduce(partials [p, …], monoid sum) = ((partials[0] + partials[1]) + …) + partials[p-1]
//
// The first element starts the fold; an empty reduction gives the monoid's identity.
#include "kernel_support.h"
#include "reference_kernels.h"

namespace tapestry::runtime {

namespace {

constexpr std::string_view kX = "x";
constexpr std::string_view kResult = "result";
constexpr std::string_view kMonoidParam = "op";

template <typename T>
void fold(const KernelCall& call, ir::Monoid monoid) {
  const InputPort& xp = call.input(kX);
  const OutputPort& rp = call.output(kResult);
  kernels::require_unit_cells(call, rp, kResult);
  const Operand<const T> x(xp);
  const Operand<T> result(rp);
  kernels::Fold<T> acc(monoid);
  kernels::for_each_output_cell(
      call.index, call.reduced_dims(), [&](const Point&) { acc.reset(); },
      [&](const Point& p) {
        kernels::for_each_in_window(x.cell(p), x.window(), x.view().strides(),
                                    [&](const T& v) { acc.add(v); });
      },
      [&](const Point& q) { *result.cell(q) = acc.result(); });
}

void run_fold(const KernelCall& call, ir::Monoid monoid) {
  visit_dtype(kernels::common_dtype(call), [&]<typename T>() { fold<T>(call, monoid); });
}

template <ir::Monoid M>
void fixed_monoid_kernel(const KernelCall& call) {
  run_fold(call, M);
}

// The monoid comes from the `op` param, else the operation's one declared reduction, else sum
// (the param's default).
void reduce_kernel(const KernelCall& call) {
  run_fold(call, call.monoid(kMonoidParam, ir::Monoid::kSum));
}

}  // namespace

void register_reduce_kernels(ExecutableKernels& registry) {
  registry.add("sum", &fixed_monoid_kernel<ir::Monoid::kSum>);
  registry.add("max", &fixed_monoid_kernel<ir::Monoid::kMax>);
  registry.add("reduce", &reduce_kernel);
}

}  // namespace tapestry::runtime
