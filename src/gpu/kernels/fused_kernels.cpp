// The `fused` kernel on the GPU (fused_kernels.h): the stages of rewrite/fused.h run one after
// the other with the device kernels, as runtime::run_fused_stages runs them with the CPU's.
#include "fused_kernels.h"

#include <memory>
#include <optional>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "gemm_kernels.h"
#include "pointwise_kernels.h"
#include "tapestry/rewrite/fused.h"

namespace tapestry::gpu::kernels {

namespace {

using rewrite::FusedPort;
using rewrite::FusedStage;
using runtime::InputPort;
using runtime::KernelCall;
using runtime::OutputPort;
using runtime::Range;

// The dtype of an intermediate block: the CPU's rule (runtime/kernels/fused.cpp) — a float stage
// computes in the float type of the call's result, except that a bf16/f16 intermediate keeps its
// dtype (it rounds where the unfused run stores it) and so does an f32 one of a 16-bit result.
std::optional<ir::DType> intermediate_dtype(const KernelCall& call, const FusedPort& out) {
  const std::optional<ir::DType> dtype = out.dtype ? out.dtype->known() : std::nullopt;
  if (!dtype) return std::nullopt;
  const auto executable_float = [](ir::DType d) { return ir::is_float(d) && ir::is_executable(d); };
  if (!call.outputs.entries().empty()) {
    const ir::DType result = call.outputs.entries().front().value.view.dtype();
    if (runtime::is_half_float(*dtype) && result != ir::DType::kFloat64) return *dtype;
    if (*dtype == ir::DType::kFloat32 && runtime::is_half_float(result)) return *dtype;
    if (executable_float(*dtype) && executable_float(result)) return result;
  }
  return *dtype;
}

// The call's stages: the prepared ones, or parsed from the params (kept in `parsed`).
const std::vector<FusedStage>* stages_of(const KernelCall& call,
                                         std::optional<std::vector<FusedStage>>& parsed) {
  if (call.prepared != nullptr) {
    return static_cast<const std::vector<FusedStage>*>(call.prepared);
  }
  if (call.params == nullptr) return nullptr;
  try {
    parsed = rewrite::fused_stages(*call.params);
  } catch (const std::exception&) {
    return nullptr;
  }
  return &*parsed;
}

// Row-major strides of `box`.
runtime::Point row_major_strides(const Range& box) {
  std::vector<std::int64_t> s(box.rank(), 1);
  for (std::size_t k = box.rank(); k-- > 1;) s[k - 1] = s[k] * box.extent(k);
  return runtime::Point(std::span<const std::int64_t>(s));
}

// One intermediate block on the device (or, for supports(), without memory).
struct Block {
  ir::DType dtype = ir::DType::kFloat32;
  Range box;
  void* data = nullptr;
  [[nodiscard]] runtime::View view() const {
    return runtime::View(dtype, static_cast<std::byte*>(data), box, row_major_strides(box));
  }
};

// Walks the stages: for each, its sub-call (views of the fused call's views or of the previous
// block) and, unless it is the last, the block it writes. `stage_fn(sub, kernel)` returns false to
// stop; `alloc(block)` gives a block its memory (or not); `release(block)` after the stage that
// reads it.
template <typename StageFn, typename Alloc, typename Release>
bool walk(const KernelCall& call, const std::vector<FusedStage>& stages, StageFn&& stage_fn,
          Alloc&& alloc, Release&& release) {
  std::optional<Block> previous;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const FusedStage& stage = stages[s];
    const bool last = s + 1 == stages.size();
    const DeviceKernel* kernel = cuda_kernels().find(stage.kernel);
    if (kernel == nullptr) {
      if (previous) release(*previous);
      return false;
    }
    KernelCall sub{.kernel = stage.kernel,
                   .operation = call.operation,
                   .index = zspace::IndexProjection(stage.index_map).apply(call.index),
                   .params = &stage.params,
                   .index_names = stage.index_names,
                   .reductions = stage.reductions,
                   .inputs = {},
                   .outputs = {}};
    for (const FusedPort& in : stage.inputs) {
      if (in.source.empty()) {
        if (!previous) return false;
        sub.inputs.append(in.name, InputPort{runtime::ConstView(previous->view()), &in.ipf});
      } else {
        const InputPort* port = call.find_input(in.source);
        if (port == nullptr) return false;
        sub.inputs.append(in.name, InputPort{port->view, &in.ipf});
      }
    }
    std::optional<Block> block;
    for (const FusedPort& out : stage.outputs) {
      if (last) {
        if (!call.outputs.has(out.source)) return false;
        sub.outputs.append(out.name, OutputPort{call.output(out.source).view, &out.ipf});
      } else {
        const std::optional<ir::DType> dtype = intermediate_dtype(call, out);
        if (!dtype || block) return false;  // one intermediate per stage, as on the CPU
        block = Block{*dtype, out.ipf.apply(sub.index)};
        alloc(*block);
        sub.outputs.append(out.name, OutputPort{block->view(), &out.ipf});
      }
    }
    const bool ok = stage_fn(sub, *kernel);
    if (previous) release(*previous);
    if (!ok) {
      if (block) release(*block);
      return false;
    }
    previous = block;
  }
  if (previous) release(*previous);
  return true;
}

// GEMM → relu as one cuBLASLt call (see the header): the GEMM stage's sub-call with the fused
// output as its result, its output IPF moved by the translation that relu's IPFs apply.
struct GemmRelu {
  zspace::IndexProjection out_ipf;
  KernelCall gemm;
};

bool is_gemm(std::string_view kernel) {
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  return kernel == "linear" || kernel == "linear_nobias" || kernel == "matmul";
}

std::unique_ptr<GemmRelu> gemm_relu(const KernelCall& call, const std::vector<FusedStage>& stages) {
  if (stages.size() != 2) return nullptr;
  const FusedStage& g = stages[0];
  const FusedStage& r = stages[1];
  std::string_view relu = r.kernel;
  if (relu.starts_with("op:")) relu.remove_prefix(3);
  if (!is_gemm(g.kernel) || relu != "relu" || g.outputs.size() != 1 || r.inputs.size() != 1 ||
      r.outputs.size() != 1 || !r.inputs[0].source.empty() ||
      !call.outputs.has(r.outputs[0].source)) {
    return nullptr;
  }
  const zspace::IndexProjection& in = r.inputs[0].ipf;
  const zspace::IndexProjection& out = r.outputs[0].ipf;
  if (!has_unit_cells(in) || !has_unit_cells(out) || in.tensor_rank() != out.tensor_rank() ||
      g.outputs[0].ipf.tensor_rank() != in.tensor_rank()) {
    return nullptr;
  }
  std::vector<std::int64_t> delta(in.tensor_rank());
  for (std::size_t k = 0; k < delta.size(); ++k)
    delta[k] = out.map().offset()[k] - in.map().offset()[k];
  const runtime::Point shift{std::span<const std::int64_t>(delta)};
  if (in.translate(shift) != out) return nullptr;  // relu copies cell for cell, shifted
  // relu reads the whole GEMM result, each cell once.
  const Range gemm_index = zspace::IndexProjection(g.index_map).apply(call.index);
  const Range block = g.outputs[0].ipf.apply(gemm_index);
  const Range relu_index = zspace::IndexProjection(r.index_map).apply(call.index);
  if (in.apply(relu_index) != block || relu_index.size() != block.size()) return nullptr;
  // … and reads no cell twice: each block dim is one index dim (a 0/1 matrix, one 1 per row),
  // and no index dim with extent > 1 feeds two block dims or none.
  const zspace::AffineMap& a = in.map();
  std::vector<int> uses(a.in_rank(), 0);
  for (std::size_t k = 0; k < a.out_rank(); ++k) {
    int ones = 0;
    for (std::size_t j = 0; j < a.in_rank(); ++j) {
      if (a.at(k, j) != 0 && a.at(k, j) != 1) return nullptr;
      if (a.at(k, j) == 1) {
        ++ones;
        ++uses[j];
      }
    }
    if (ones != 1) return nullptr;
  }
  for (std::size_t j = 0; j < a.in_rank(); ++j) {
    if (relu_index.extent(j) > 1 && uses[j] != 1) return nullptr;
  }
  const OutputPort& result = call.output(r.outputs[0].source);
  const std::optional<ir::DType> dtype = intermediate_dtype(call, g.outputs[0]);
  if (!dtype || *dtype != result.view.dtype()) return nullptr;  // no rounding in between
  auto fused = std::make_unique<GemmRelu>(GemmRelu{g.outputs[0].ipf.translate(shift), {}});
  fused->gemm = KernelCall{.kernel = g.kernel,
                           .operation = call.operation,
                           .index = gemm_index,
                           .params = &g.params,
                           .index_names = g.index_names,
                           .reductions = g.reductions,
                           .inputs = {},
                           .outputs = {}};
  for (const FusedPort& p : g.inputs) {
    const InputPort* port = p.source.empty() ? nullptr : call.find_input(p.source);
    if (port == nullptr) return nullptr;
    fused->gemm.inputs.append(p.name, InputPort{port->view, &p.ipf});
  }
  fused->gemm.outputs.append(g.outputs[0].name, OutputPort{result.view, &fused->out_ipf});
  if (!gemm_supports(fused->gemm)) return nullptr;
  return fused;
}

bool supports(const KernelCall& call) {
  std::optional<std::vector<FusedStage>> parsed;
  const std::vector<FusedStage>* stages = stages_of(call, parsed);
  if (stages == nullptr || stages->empty()) return false;
  if (gemm_relu(call, *stages) != nullptr) return true;
  return walk(
      call, *stages, [](const KernelCall& sub, const DeviceKernel& k) { return k.supports(sub); },
      [](Block&) {}, [](Block&) {});
}

void launch(const KernelCall& call, const DeviceContext& ctx) {
  std::optional<std::vector<FusedStage>> parsed;
  const std::vector<FusedStage>* stages = stages_of(call, parsed);
  if (stages == nullptr) call.fail("fused: the stages cannot be read from the params");
  if (const std::unique_ptr<GemmRelu> fused = gemm_relu(call, *stages)) {
    gemm_launch(fused->gemm, ctx, /*fuse_relu=*/true);
    return;
  }
  auto* stream = static_cast<cudaStream_t>(ctx.stream);
  const bool ran = walk(
      call, *stages,
      [&](const KernelCall& sub, const DeviceKernel& k) {
        k.launch(sub, ctx);
        return true;
      },
      [&](Block& b) {
        const auto bytes = static_cast<std::size_t>(
            b.box.size() * static_cast<std::int64_t>(ir::dtype_size_bytes(b.dtype)));
        check_cuda(
            call,
            static_cast<int>(cudaMallocAsync(&b.data, std::max<std::size_t>(bytes, 1), stream)),
            "fused: cudaMallocAsync of an intermediate");
      },
      [&](Block& b) {
        if (b.data != nullptr) {
          check_cuda(call, static_cast<int>(cudaFreeAsync(b.data, stream)), "fused: cudaFreeAsync");
        }
      });
  if (!ran) call.fail("fused: a stage has no device kernel (supports() said no)");
}

}  // namespace

void register_fused_kernel(DeviceKernels& kernels) {
  kernels.add(std::string(rewrite::kFusedKernel), DeviceKernel{&supports, &launch});
}

}  // namespace tapestry::gpu::kernels
