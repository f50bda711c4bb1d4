// Checks shared by the reference kernels.
#include "kernel_support.h"

#include <fmt/format.h>

#include "tapestry/zspace/format.h"

namespace tapestry::runtime::kernels {

template <typename Port>
void require_unit_cells(const KernelCall& call, const Port& port, std::string_view name) {
  if (has_unit_cells(*port.ipf)) return;
  call.fail(fmt::format("{} has cells of shape {}; this kernel reads one element per index point",
                        name, port.ipf->shape()));
}

template void require_unit_cells(const KernelCall&, const InputPort&, std::string_view);
template void require_unit_cells(const KernelCall&, const OutputPort&, std::string_view);

void require_unit_cells(const KernelCall& call) {
  auto check = [&](const auto& ports, const char* kind) {
    for (const auto& e : ports.entries()) {
      if (has_unit_cells(*e.value.ipf)) continue;
      call.fail(
          fmt::format("{} {}[{}] has cells of shape {}; this kernel reads one element per "
                      "index point",
                      kind, e.name, e.position, e.value.ipf->shape()));
    }
  };
  check(call.inputs, "input");
  check(call.outputs, "output");
}

DType common_dtype(const KernelCall& call) {
  std::optional<DType> dtype;
  auto check = [&](const auto& ports) {
    for (const auto& e : ports.entries()) {
      if (!dtype) dtype = e.value.view.dtype();
      if (e.value.view.dtype() == *dtype) continue;
      call.fail(fmt::format("{}[{}] is {}, but other operands are {}", e.name, e.position,
                            ir::dtype_name(e.value.view.dtype()), ir::dtype_name(*dtype)));
    }
  };
  check(call.inputs);
  check(call.outputs);
  if (!dtype) call.fail("has no operands");
  return *dtype;
}

void require_float(const KernelCall& call, DType dtype) {
  if (ir::is_float(dtype)) return;  // views hold executable dtypes: float32 or float64
  call.fail(fmt::format("is defined for float32 and float64, not {}", ir::dtype_name(dtype)));
}

}  // namespace tapestry::runtime::kernels
