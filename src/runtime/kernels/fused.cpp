// The `fused` kernel: runs the stages of a fused operation (rewrite/fused.h) over one piece of
// work, keeping each intermediate in a temporary block of exactly the box the next stage reads.
//
// For a shard with index box S of the fused operation, stage s computes over index_map_s(S)
// with its own IPFs. Inputs come from the fused call's views (the fused IPFs are the stage IPFs
// composed with index_map, so those views hold exactly what the stage reads) or from the
// previous stage's block; the last stage writes the fused call's output views. The stage
// kernels are the reference kernels, so a fused run is bitwise equal to the unfused one. The
// fast fused kernel (kernels/fast/fused.cpp) runs the same stage loop with the fast kernels when
// its epilogue does not apply.
#include <fmt/format.h>

#include <optional>

#include "reference_kernels.h"
#include "tapestry/ir/dtype.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/kernel.h"

namespace tapestry::runtime {

namespace {

DType intermediate_dtype(const KernelCall& call, const rewrite::FusedPort& out) {
  const std::optional<DType> dtype = out.dtype ? out.dtype->known() : std::nullopt;
  if (!dtype) {
    call.fail(fmt::format("fused stage output '{}' has no executable dtype '{}'", out.name,
                          out.dtype ? out.dtype->name() : ""));
  }
  // A float stage computes in the float type of the call's result: the oracle (oracle.h) runs
  // a float32 graph's operations on float64 buffers. A bf16/f16 intermediate keeps its dtype
  // (outside the oracle) so that the fused run rounds it where the unfused run stores it, and so
  // does a float32 one of a 16-bit result (a split's partial sums: rewrite/mixed_precision.h).
  const auto executable_float = [](DType d) { return ir::is_float(d) && is_executable(d); };
  if (!call.outputs.entries().empty()) {
    const DType result = call.outputs.entries().front().value.view.dtype();
    if (is_half_float(*dtype) && result != DType::kFloat64) return *dtype;
    if (*dtype == DType::kFloat32 && is_half_float(result)) return *dtype;
    if (executable_float(*dtype) && executable_float(result)) return result;
  }
  return *dtype;
}

void fused_kernel(const KernelCall& call) {
  if (call.prepared != nullptr) {
    run_fused_stages(call, prepared_fused_stages(call), ExecutableKernels::reference());
    return;
  }
  if (call.params == nullptr) call.fail("fused: no params");
  run_fused_stages(call, rewrite::fused_stages(*call.params), ExecutableKernels::reference());
}

}  // namespace

std::shared_ptr<const void> prepare_fused_stages(const KernelCall& call) {
  if (call.params == nullptr) call.fail("fused: no params");
  return std::make_shared<const std::vector<rewrite::FusedStage>>(
      rewrite::fused_stages(*call.params));
}

const std::vector<rewrite::FusedStage>& prepared_fused_stages(const KernelCall& call) {
  return *static_cast<const std::vector<rewrite::FusedStage>*>(call.prepared);
}

void run_fused_stages(const KernelCall& call, const std::vector<rewrite::FusedStage>& stages,
                      const ExecutableKernels& kernels) {
  std::optional<Buffer> previous;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const rewrite::FusedStage& stage = stages[s];
    const bool last = s + 1 == stages.size();
    KernelCall sub{.kernel = stage.kernel,
                   .operation = call.operation,
                   .index = zspace::IndexProjection(stage.index_map).apply(call.index),
                   .params = &stage.params,
                   .index_names = stage.index_names,
                   .reductions = stage.reductions,
                   .inputs = {},
                   .outputs = {}};
    for (const rewrite::FusedPort& in : stage.inputs) {
      if (in.source.empty()) {
        if (!previous)
          call.fail("fused: stage " + stage.label + " reads a previous stage that does not exist");
        sub.inputs.append(in.name, InputPort{std::as_const(*previous).view(), &in.ipf});
      } else {
        sub.inputs.append(in.name, InputPort{call.input(in.source).view, &in.ipf});
      }
    }
    std::optional<Buffer> block;
    for (const rewrite::FusedPort& out : stage.outputs) {
      if (last) {
        sub.outputs.append(out.name, OutputPort{call.output(out.source).view, &out.ipf});
      } else {
        // Uninitialized, as the executor's own intermediates: the stage writes every cell.
        block.emplace(intermediate_dtype(call, out), out.ipf.apply(sub.index),
                      Buffer::Uninitialized{});
        sub.outputs.append(out.name, OutputPort{block->view(), &out.ipf});
      }
    }
    kernels.lookup(stage.kernel, stage.label)(sub);
    previous = std::move(block);
  }
}

void register_fused_kernel(ExecutableKernels& registry) {
  // Native: each stage's kernel widens its own bf16/f16 ports, and every intermediate keeps
  // its dtype, so a fused bf16 run rounds where the unfused one does.
  registry.add_native(std::string(rewrite::kFusedKernel), fused_kernel, prepare_fused_stages);
}

}  // namespace tapestry::runtime
