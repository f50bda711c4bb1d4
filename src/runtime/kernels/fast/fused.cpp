// The fast `fused` kernel: a GEMM with a fused epilogue when the chain allows it, a conv2d ⇒
// [add] ⇒ [relu] chain as one oneDNN convolution with post-ops (run_conv_epilogue), else the
// stages one by one with the fast kernels (as kernels/fused.cpp does with the reference ones).
//
// The epilogue applies when
//   1. stage 0 is linear or matmul over the fused index space itself (identity index map), all
//      its inputs fused inputs;
//   2. every later stage is bias_add or a unary op (relu, gelu, exp, neg, tanh, sigmoid) whose
//      `x` reads exactly the cells the previous stage wrote: composed with the index maps, the
//      stage's x IPF equals the previous stage's result IPF over the fused index space;
//   3. every intermediate has the call's float dtype.
// Then stage 0's GEMM writes straight into the final output view (its IPF, composed back to the
// fused index space, is the last stage's result IPF), and the biases and unary ops run in order
// on each output row while it is hot: no intermediate block at all. The values are those of the
// unfused fast kernels: the same GEMM, then the same elementwise functions in the same order.
#include <deque>

#include "contraction.h"
#include "conv_onednn.h"
#include "kernels/reference_kernels.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/runtime/buffer.h"

namespace tapestry::runtime::fast {

namespace {

using rewrite::FusedPort;
using rewrite::FusedStage;

const FusedPort* find_port(const std::vector<FusedPort>& ports, std::string_view name) {
  for (const FusedPort& p : ports) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// Everything the epilogue path builds; IPFs live in a deque so ports may point at them.
template <typename T>
struct EpilogueChain {
  std::deque<zspace::IndexProjection> ipfs;
  std::deque<InputPort> ports;
  std::vector<const InputPort*> biases;  // per later stage: its bias port, or null (a unary op)
  std::vector<UnaryOp> ops;
};

// A fused input port: the call's view of its source list, the stage IPF composed to fused space.
template <typename T>
const InputPort* fused_input(const KernelCall& call, const FusedPort* port,
                             const zspace::AffineMap& map, EpilogueChain<T>& chain) {
  if (port == nullptr || port->source.empty() || call.find_input(port->source) == nullptr) {
    return nullptr;
  }
  chain.ipfs.push_back(port->ipf.compose(map));
  chain.ports.push_back(InputPort{call.input(port->source).view, &chain.ipfs.back()});
  return &chain.ports.back();
}

// Adds stage `s` (bias_add or a unary op) to the chain; `prev` is the previous result IPF in
// fused space, replaced by this stage's. False when the stage does not fit (see file comment).
template <typename T>
bool add_stage(const KernelCall& call, const FusedStage& s, zspace::IndexProjection& prev,
               EpilogueChain<T>& chain) {
  const std::optional<UnaryOp> op = parse_unary_op(s.kernel);
  const bool is_bias = s.kernel == "bias_add" || s.kernel == "op:bias_add";
  const FusedPort* x = find_port(s.inputs, "x");
  if ((!op && !is_bias) || x == nullptr || !x->source.empty() || s.outputs.size() != 1 ||
      s.inputs.size() != (is_bias ? 2u : 1u) || x->ipf.compose(s.index_map) != prev) {
    return false;
  }
  if (is_bias) {
    const InputPort* bias = fused_input(call, find_port(s.inputs, "bias"), s.index_map, chain);
    if (bias == nullptr) return false;
    chain.biases.push_back(bias);
    chain.ops.push_back(UnaryOp::kRelu);  // unused for a bias step
  } else {
    chain.biases.push_back(nullptr);
    chain.ops.push_back(*op);
  }
  prev = s.outputs[0].ipf.compose(s.index_map);
  return true;
}

template <typename T>
bool is_intermediate_of(const FusedPort& out) {
  return out.dtype && out.dtype->known() == dtype_of<T>;
}

template <typename T>
bool run_epilogue(const KernelCall& call, const std::vector<FusedStage>& stages) {
  const FusedStage& producer = stages.front();
  const bool is_linear = producer.kernel == "linear" || producer.kernel == "op:linear";
  const bool is_matmul = producer.kernel == "matmul" || producer.kernel == "op:matmul";
  if ((!is_linear && !is_matmul) || stages.size() < 2 || producer.outputs.size() != 1 ||
      producer.index_map != zspace::AffineMap::identity(call.index.rank())) {
    return false;
  }
  EpilogueChain<T> chain;
  const auto& map = producer.index_map;
  const InputPort* a =
      fused_input(call, find_port(producer.inputs, is_linear ? "x" : "a"), map, chain);
  const InputPort* b =
      fused_input(call, find_port(producer.inputs, is_linear ? "w" : "b"), map, chain);
  const FusedPort* bias_port = is_linear ? find_port(producer.inputs, "bias") : nullptr;
  const InputPort* bias = fused_input(call, bias_port, map, chain);
  const std::size_t inputs = 2 + (bias_port != nullptr ? 1 : 0);
  if (a == nullptr || b == nullptr || (bias_port != nullptr && bias == nullptr) ||
      producer.inputs.size() != inputs) {
    return false;
  }
  zspace::IndexProjection prev = producer.outputs[0].ipf;
  for (std::size_t s = 1; s < stages.size(); ++s) {
    if (!is_intermediate_of<T>(stages[s - 1].outputs.front())) return false;
    if (!add_stage(call, stages[s], prev, chain)) return false;
  }
  const FusedPort& last = stages.back().outputs.front();
  if (last.source.empty() || call.outputs.list(last.source).size() != 1) return false;
  chain.ipfs.push_back(prev);
  const OutputPort out{call.output(last.source).view, &chain.ipfs.back()};

  const std::optional<ContractionPlan<T>> plan = plan_contraction<T>(call.index, *a, *b, out);
  if (!plan) return false;
  std::vector<EpilogueStep<T>> steps;
  std::vector<const InputPort*> biases = chain.biases;
  std::vector<UnaryOp> ops = chain.ops;
  if (bias != nullptr) {
    biases.insert(biases.begin(), bias);
    ops.insert(ops.begin(), UnaryOp::kRelu);
  }
  for (std::size_t i = 0; i < biases.size(); ++i) {
    if (biases[i] == nullptr) {
      steps.push_back(EpilogueStep<T>{.op = ops[i]});
      continue;
    }
    const std::optional<EpilogueStep<T>> step = bias_step(*plan, call.index, *biases[i]);
    if (!step) return false;
    steps.push_back(*step);
  }
  run_contraction(*plan, steps);
  return true;
}

// A conv2d ⇒ [add of a residual] ⇒ [relu] chain as one oneDNN convolution with post-ops
// (conv_onednn.h): stage 0 conv2d over the fused index space itself, its x and w fused inputs;
// then optionally `add` of the previous result and a fused input read at the same cells, then
// optionally `relu`, last. False when the chain or the call does not fit, or oneDNN is not the
// conv backend for it (conv.cpp's rule).
bool run_conv_epilogue(const KernelCall& call, const std::vector<FusedStage>& stages) {
  const FusedStage& producer = stages.front();
  if ((producer.kernel != "conv2d" && producer.kernel != "op:conv2d") || stages.size() < 2 ||
      stages.size() > 3 || producer.outputs.size() != 1 || producer.inputs.size() != 2 ||
      producer.index_map != zspace::AffineMap::identity(call.index.rank()) ||
      conv_backend() == ConvBackend::kIm2col ||
      (conv_backend() == ConvBackend::kAuto && !onednn_conv_pays_off(call.index))) {
    return false;
  }
  EpilogueChain<float> chain;
  const InputPort* x =
      fused_input(call, find_port(producer.inputs, "x"), producer.index_map, chain);
  const InputPort* w =
      fused_input(call, find_port(producer.inputs, "w"), producer.index_map, chain);
  if (x == nullptr || w == nullptr) return false;
  zspace::IndexProjection prev = producer.outputs[0].ipf;
  const InputPort* residual = nullptr;
  bool relu = false;
  for (std::size_t i = 1; i < stages.size(); ++i) {
    const FusedStage& s = stages[i];
    if (!is_intermediate_of<float>(stages[i - 1].outputs.front()) || s.outputs.size() != 1) {
      return false;
    }
    if ((s.kernel == "add" || s.kernel == "op:add") && i == 1 && s.inputs.size() == 2) {
      // One operand is the conv's result, the other a fused input at the same cells.
      const FusedPort& a = s.inputs[0];
      const FusedPort& b = s.inputs[1];
      const FusedPort& own = a.source.empty() ? a : b;
      const FusedPort& other = a.source.empty() ? b : a;
      if (!own.source.empty() || other.source.empty() || own.ipf.compose(s.index_map) != prev ||
          other.ipf.compose(s.index_map) != prev) {
        return false;
      }
      residual = fused_input(call, &other, s.index_map, chain);
      if (residual == nullptr) return false;
    } else if ((s.kernel == "relu" || s.kernel == "op:relu") && i + 1 == stages.size() &&
               s.inputs.size() == 1 && s.inputs[0].source.empty() &&
               s.inputs[0].ipf.compose(s.index_map) == prev) {
      relu = true;
    } else {
      return false;
    }
    prev = s.outputs[0].ipf.compose(s.index_map);
  }
  const FusedPort& last = stages.back().outputs.front();
  if (last.source.empty() || call.outputs.list(last.source).size() != 1) return false;
  chain.ipfs.push_back(prev);
  const OutputPort out{call.output(last.source).view, &chain.ipfs.back()};
  std::optional<ConvOperands> operands = onednn_conv_operands(*x, *w, out, call.index);
  if (!operands) return false;
  operands->problem.relu = relu;
  if (residual != nullptr) add_residual(*operands, *residual, call.index);
  return onednn_conv(*operands);
}

void fused_kernel(const KernelCall& call) {
  if (call.params == nullptr) return run_reference(call);
  std::vector<FusedStage> parsed;
  if (call.prepared == nullptr) parsed = rewrite::fused_stages(*call.params);
  const std::vector<FusedStage>& stages =
      call.prepared != nullptr ? prepared_fused_stages(call) : parsed;
  const std::optional<DType> dtype = uniform_dtype(call);
  bool done = false;
  if (!stages.empty() && dtype && !call.index.is_empty()) {
    if (*dtype == DType::kFloat32) {
      done = run_conv_epilogue(call, stages) || run_epilogue<float>(call, stages);
    }
    if (*dtype == DType::kFloat64) done = run_epilogue<double>(call, stages);
  }
  if (done) {
    count_fast();
    count_epilogue();
    return;
  }
  // The generic path: each stage with the fast kernel of its name, intermediates in blocks.
  run_fused_stages(call, stages, fast_kernels());
}

}  // namespace

void register_fast_fused(ExecutableKernels& registry) {
  registry.add(std::string(rewrite::kFusedKernel), &fused_kernel, &prepare_fused_stages);
}

}  // namespace tapestry::runtime::fast
