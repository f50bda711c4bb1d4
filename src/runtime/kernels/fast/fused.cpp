// The fast `fused` kernel: a GEMM with a fused epilogue when the chain allows it, a conv2d ⇒
// [add] ⇒ [relu] chain as one oneDNN convolution with post-ops (run_conv_epilogue; in bf16/f16
// too, on oneDNN's 16-bit convolution), else the stages one by one with the fast kernels (as
// kernels/fused.cpp does with the reference ones).
//
// The epilogue applies when
//   1. stage 0 is linear or matmul over the fused index space itself (identity index map), all
//      its inputs fused inputs;
//   2. every later stage is bias_add or a unary op (relu, gelu, exp, neg, tanh, sigmoid) whose
//      `x` reads exactly the cells the previous stage wrote: composed with the index maps, the
//      stage's x IPF equals the previous stage's result IPF over the fused index space;
//   3. every intermediate has the call's float dtype (a 16-bit call: or float32).
// A 16-bit chain runs as one oneDNN bf16/f16 matmul with its epilogue in float32 and C rounded
// once (half_contraction.cpp): fewer roundings than the stage loop, within its low-precision bar.
// Then stage 0's GEMM writes straight into the final output view (its IPF, composed back to the
// fused index space, is the last stage's result IPF), and the biases and unary ops run in order
// on each output row while it is hot: no intermediate block at all. The values are those of the
// unfused fast kernels on the same shards, whatever GEMM kernel the CPU selects: the producer's
// own GEMM call on the same block (linear's bias inside oneDNN's matmul primitive where the
// unfused linear has it there), then the same elementwise functions in the same order. Except
// where the primitive takes in more of the chain than the producer alone (contraction.h: a ReLU
// right after the producer, or bias_add's bias after a matmul): another oneDNN kernel may then
// run, and the values are within the dot-product bound of the unfused ones, not bitwise.
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

// A fused input or output port resolved once per operation: its list in the fused call and its
// stage IPF composed to the fused index space.
struct ChainPort {
  std::string source;
  zspace::IndexProjection ipf;
};

// A linear or matmul ⇒ bias_add / unary op chain that fits the epilogue (the file comment's
// rules 1 and 2), resolved when the operation is prepared, so that a call only looks its views
// up: small shards (a 50×32×12 linear ⇒ relu) took twice the unfused kernels' time composing
// IPFs per call.
struct GemmChain {
  std::size_t rank = 0;  // of the fused index space
  ChainPort a;
  ChainPort b;
  std::optional<ChainPort> bias;                    // linear's own bias
  std::vector<std::optional<ChainPort>> biases;     // per later stage: bias_add's bias, or none
  std::vector<UnaryOp> ops;                         // per later stage: its op (unused for a bias)
  std::vector<std::optional<DType>> intermediates;  // rule 3, checked per call
  ChainPort out;                                    // the last stage's result
};

// A fused stage input from a fused input list, as a ChainPort; nullopt when it has no list.
std::optional<ChainPort> chain_port(const FusedPort* port, const zspace::AffineMap& map) {
  if (port == nullptr || port->source.empty()) return std::nullopt;
  return ChainPort{port->source, port->ipf.compose(map)};
}

// Adds stage `s` (bias_add or a unary op) to the chain; `prev` is the previous result IPF in
// fused space, replaced by this stage's. False when the stage does not fit (see file comment).
bool add_stage(const FusedStage& s, zspace::IndexProjection& prev, GemmChain& chain) {
  const std::optional<UnaryOp> op = parse_unary_op(s.kernel);
  const bool is_bias = s.kernel == "bias_add" || s.kernel == "op:bias_add";
  const FusedPort* x = find_port(s.inputs, "x");
  if ((!op && !is_bias) || x == nullptr || !x->source.empty() || s.outputs.size() != 1 ||
      s.inputs.size() != (is_bias ? 2U : 1U) || x->ipf.compose(s.index_map) != prev) {
    return false;
  }
  if (is_bias) {
    std::optional<ChainPort> bias = chain_port(find_port(s.inputs, "bias"), s.index_map);
    if (!bias) return false;
    chain.biases.push_back(std::move(bias));
    chain.ops.push_back(UnaryOp::kRelu);  // unused for a bias step
  } else {
    chain.biases.emplace_back();
    chain.ops.push_back(*op);
  }
  prev = s.outputs[0].ipf.compose(s.index_map);
  return true;
}

// The GEMM chain of `stages`, or nullopt when they do not fit the epilogue.
std::optional<GemmChain> gemm_chain(const std::vector<FusedStage>& stages) {
  if (stages.size() < 2) return std::nullopt;
  const FusedStage& producer = stages.front();
  const bool is_linear = producer.kernel == "linear" || producer.kernel == "op:linear" ||
                         producer.kernel == "linear_nobias";
  const bool is_matmul = producer.kernel == "matmul" || producer.kernel == "op:matmul";
  const std::size_t rank = producer.index_map.in_rank();
  if ((!is_linear && !is_matmul) || producer.outputs.size() != 1 ||
      producer.index_map != zspace::AffineMap::identity(rank)) {
    return std::nullopt;
  }
  const auto& map = producer.index_map;
  std::optional<ChainPort> a = chain_port(find_port(producer.inputs, is_linear ? "x" : "a"), map);
  std::optional<ChainPort> b = chain_port(find_port(producer.inputs, is_linear ? "w" : "b"), map);
  const FusedPort* bias_port = is_linear ? find_port(producer.inputs, "bias") : nullptr;
  std::optional<ChainPort> bias = chain_port(bias_port, map);
  const std::size_t inputs = 2 + (bias_port != nullptr ? 1 : 0);
  if (!a || !b || (bias_port != nullptr && !bias) || producer.inputs.size() != inputs) {
    return std::nullopt;
  }
  GemmChain chain{.rank = rank, .a = std::move(*a), .b = std::move(*b), .bias = std::move(bias)};
  zspace::IndexProjection prev = producer.outputs[0].ipf;
  for (std::size_t s = 1; s < stages.size(); ++s) {
    const std::optional<ir::LoomDType>& dtype = stages[s - 1].outputs.front().dtype;
    chain.intermediates.push_back(dtype ? dtype->known() : std::nullopt);
    if (!add_stage(stages[s], prev, chain)) return std::nullopt;
  }
  const FusedPort& last = stages.back().outputs.front();
  if (last.source.empty()) return std::nullopt;
  chain.out = ChainPort{last.source, std::move(prev)};
  return chain;
}

// What the fast `fused` kernel prepares once per operation: the stages, and their GEMM chain
// when they have one.
struct Prepared {
  std::vector<FusedStage> stages;
  std::optional<GemmChain> gemm;
};

std::shared_ptr<const void> prepare(const KernelCall& call) {
  if (call.params == nullptr) call.fail("fused: no params");
  auto prepared = std::make_shared<Prepared>();
  prepared->stages = rewrite::fused_stages(*call.params);
  prepared->gemm = gemm_chain(prepared->stages);
  return prepared;
}

// Runs `chain` on the call as one GEMM with its epilogue; false when the call does not fit
// (rule 3, a missing list, a layout plan_contraction or bias_step refuses).
template <typename T>
bool run_epilogue(const KernelCall& call, const GemmChain& chain) {
  if (call.index.rank() != chain.rank) return false;
  for (const std::optional<DType>& dtype : chain.intermediates) {
    // A 16-bit chain computes its intermediates in float32 (run_half_contraction): a float32
    // intermediate is computed as declared, a 16-bit one with its rounding left out.
    const bool kept = dtype == dtype_of<T> || (is_half_float_v<T> && dtype == DType::kFloat32);
    if (!kept) return false;
  }
  const auto port = [&](const ChainPort& p) -> std::optional<InputPort> {
    const InputPort* in = call.find_input(p.source);
    if (in == nullptr) return std::nullopt;
    return InputPort{in->view, &p.ipf};
  };
  const std::optional<InputPort> a = port(chain.a);
  const std::optional<InputPort> b = port(chain.b);
  std::optional<InputPort> bias;
  if (chain.bias) bias = port(*chain.bias);
  if (!a || !b || (chain.bias && !bias) || call.outputs.list(chain.out.source).size() != 1) {
    return false;
  }
  const OutputPort out{call.output(chain.out.source).view, &chain.out.ipf};
  const std::optional<ContractionPlan<T>> plan = plan_contraction<T>(call.index, *a, *b, out);
  if (!plan) return false;
  std::vector<EpilogueStep<T>> steps;
  steps.reserve(chain.ops.size() + 1);
  const auto add_bias = [&](const InputPort& p) {
    const std::optional<EpilogueStep<T>> step = bias_step(*plan, call.index, p);
    if (step) steps.push_back(*step);
    return step.has_value();
  };
  if (bias && !add_bias(*bias)) return false;
  for (std::size_t i = 0; i < chain.ops.size(); ++i) {
    if (!chain.biases[i]) {
      steps.push_back(EpilogueStep<T>{.op = chain.ops[i]});
      continue;
    }
    const std::optional<InputPort> p = port(*chain.biases[i]);
    if (!p || !add_bias(*p)) return false;
  }
  if constexpr (is_half_float_v<T>) {
    return run_half_contraction(*plan, steps);
  } else {
    run_contraction(*plan, steps);
    return true;
  }
}

// The conv epilogue's ports, built per call (a deque: ports point at their composed IPFs).
struct ConvChain {
  std::deque<zspace::IndexProjection> ipfs;
  std::deque<InputPort> ports;
};

// A fused input port: the call's view of its source list, the stage IPF composed to fused space.
const InputPort* fused_input(const KernelCall& call, const FusedPort* port,
                             const zspace::AffineMap& map, ConvChain& chain) {
  if (port == nullptr || port->source.empty() || call.find_input(port->source) == nullptr) {
    return nullptr;
  }
  chain.ipfs.push_back(port->ipf.compose(map));
  chain.ports.push_back(InputPort{call.input(port->source).view, &chain.ipfs.back()});
  return &chain.ports.back();
}

// An intermediate the conv epilogue computes as declared: float32; in a 16-bit call also one of
// the call's dtype, computed in float32 with its rounding left out (as the GEMM chain's).
bool is_conv_intermediate(const FusedPort& out, DType call_dtype) {
  const std::optional<DType> dtype = out.dtype ? out.dtype->known() : std::nullopt;
  return dtype == DType::kFloat32 || (is_half_float(call_dtype) && dtype == call_dtype);
}

// A conv2d ⇒ [add of a residual] ⇒ [relu] chain as one oneDNN convolution with post-ops
// (conv_onednn.h): stage 0 conv2d over the fused index space itself, its x and w fused inputs;
// then optionally `add` of the previous result and a fused input read at the same cells, then
// optionally `relu`, last. False when the chain or the call does not fit, or oneDNN is not the
// conv backend for it (conv.cpp's rule), or has no convolution for its dtype on this CPU. A
// bf16/f16 chain runs oneDNN's 16-bit convolution: the residual and the ReLU apply to the
// float32 accumulator and the result is rounded once, where the stage loop rounds the conv's
// result and the sum (the plain-layout 1×1 case adds the residual after the primitive, rounding
// both as the stage loop does) — within the verifier's low-precision bar, as the GEMM chain.
bool run_conv_epilogue(const KernelCall& call, const std::vector<FusedStage>& stages, DType dtype) {
  const FusedStage& producer = stages.front();
  if ((producer.kernel != "conv2d" && producer.kernel != "op:conv2d") || stages.size() < 2 ||
      stages.size() > 3 || producer.outputs.size() != 1 || producer.inputs.size() != 2 ||
      producer.index_map != zspace::AffineMap::identity(call.index.rank()) ||
      conv_backend() == ConvBackend::kIm2col ||
      (conv_backend() == ConvBackend::kAuto && !onednn_conv_pays_off(call.index))) {
    return false;
  }
  ConvChain chain;
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
    if (!is_conv_intermediate(stages[i - 1].outputs.front(), dtype) || s.outputs.size() != 1) {
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
  if (residual != nullptr && !add_residual(*operands, *residual, call.index)) return false;
  return onednn_conv(*operands);
}

void fused_kernel(const KernelCall& call) {
  if (call.params == nullptr) return run_reference(call);
  std::shared_ptr<const void> made;  // without call.prepared: prepared for this call alone
  if (call.prepared == nullptr) made = prepare(call);
  const Prepared& prepared =
      *static_cast<const Prepared*>(call.prepared != nullptr ? call.prepared : made.get());
  const std::vector<FusedStage>& stages = prepared.stages;
  const std::optional<DType> dtype = uniform_dtype(call);
  bool done = false;
  if (!stages.empty() && dtype && !call.index.is_empty()) {
    if (*dtype == DType::kFloat32) {
      done = run_conv_epilogue(call, stages, *dtype) ||
             (prepared.gemm && run_epilogue<float>(call, *prepared.gemm));
    }
    if (*dtype == DType::kFloat64) {
      done = prepared.gemm && run_epilogue<double>(call, *prepared.gemm);
    }
    if (*dtype == DType::kBFloat16) {
      done = run_conv_epilogue(call, stages, *dtype) ||
             (prepared.gemm && run_epilogue<BFloat16>(call, *prepared.gemm));
    }
    if (*dtype == DType::kFloat16) {
      done = run_conv_epilogue(call, stages, *dtype) ||
             (prepared.gemm && run_epilogue<Float16>(call, *prepared.gemm));
    }
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
  // Native: the stage loop widens each stage (bf16/f16 intermediates keep their dtype).
  registry.add_native(std::string(rewrite::kFusedKernel), &fused_kernel, &prepare);
}

}  // namespace tapestry::runtime::fast
