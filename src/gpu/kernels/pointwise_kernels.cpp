// The pointwise device kernels (pointwise_kernels.h): host-side checks and launch parameters.
#include "pointwise_kernels.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>
#include "tapestry/runtime/buffer.h"

namespace tapestry::gpu::kernels {

using runtime::InputPort;
using runtime::KernelCall;
using runtime::OutputPort;

std::optional<ElemType> elem_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32:
      return ElemType::kF32;
    case ir::DType::kFloat64:
      return ElemType::kF64;
    case ir::DType::kBFloat16:
      return ElemType::kBF16;
    case ir::DType::kFloat16:
      return ElemType::kF16;
    case ir::DType::kInt32:
      return ElemType::kI32;
    case ir::DType::kInt64:
      return ElemType::kI64;
    default:
      return std::nullopt;
  }
}

namespace {

template <typename Byte>
void* address_of(const runtime::BasicPort<Byte>& port, const PortLayout& layout) {
  const auto type = elem_type(port.view.dtype());
  TAPESTRY_ASSERT(type.has_value(), "device port of a dtype the GPU does not run");
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): the engine's ports are untyped
  auto* origin = const_cast<std::byte*>(port.view.origin());
  return origin + layout.base * elem_size(*type);
}

}  // namespace

void* device_address(const InputPort& port, const PortLayout& layout) {
  return address_of(port, layout);
}

void* device_address(const OutputPort& port, const PortLayout& layout) {
  return address_of(port, layout);
}

namespace {
std::atomic<PointwiseHook> g_pointwise_hook{nullptr};
}  // namespace

void set_pointwise_hook(PointwiseHook hook) {
  g_pointwise_hook = hook;
}

int run_pointwise(const PointwiseLaunch& l, void* stream) {
  if (const PointwiseHook hook = g_pointwise_hook.load()) return hook(l);
  return launch_pointwise(l, stream);
}

void check_cuda(const KernelCall& call, int status, std::string_view what) {
  if (status == 0) return;
  call.fail(fmt::format("{}: {}", what, cudaGetErrorString(static_cast<cudaError_t>(status))));
}

namespace {

std::vector<PortLayout> layouts(const KernelCall& call, const OutputPort& out,
                                std::span<const InputPort* const> in) {
  std::vector<PortLayout> all;
  all.push_back(port_layout(out, call.index));
  for (const InputPort* p : in) all.push_back(port_layout(*p, call.index));
  return all;
}

}  // namespace

std::size_t pointwise_rank(const KernelCall& call, const OutputPort& out,
                           std::span<const InputPort* const> in) {
  const std::vector<PortLayout> all = layouts(call, out, in);
  return collapse(call.index, all).extent.size();
}

void launch_pointwise_call(const KernelCall& call, const DeviceContext& ctx, PointwiseOp op,
                           const OutputPort& out, std::span<const InputPort* const> in,
                           double scalar, double scalar2) {
  TAPESTRY_ASSERT(in.size() + 1 <= static_cast<std::size_t>(kMaxPorts), "too many ports");
  if (call.index.is_empty()) return;
  const std::vector<PortLayout> all = layouts(call, out, in);
  const LoopNest nest = collapse(call.index, all);
  if (nest.extent.size() > static_cast<std::size_t>(kMaxRank)) {
    call.fail(fmt::format("{} index dims after collapsing; the GPU's pointwise loop takes {}",
                          nest.extent.size(), kMaxRank));
  }
  PointwiseLaunch l;
  l.op = op;
  l.type = *elem_type(out.view.dtype());
  l.input_type = in.empty() ? l.type : *elem_type(in[0]->view.dtype());
  l.rank = static_cast<int>(nest.extent.size());
  for (std::size_t j = 0; j < nest.extent.size(); ++j) l.extent[j] = nest.extent[j];
  for (std::size_t p = 0; p < all.size(); ++p) {
    l.port[p].data = p == 0 ? device_address(out, all[0]) : device_address(*in[p - 1], all[p]);
    for (std::size_t j = 0; j < nest.extent.size(); ++j) l.port[p].coef[j] = nest.coef[p][j];
  }
  l.scalar = scalar;
  l.scalar2 = scalar2;
  check_cuda(call, run_pointwise(l, ctx.stream), "pointwise kernel launch");
}

namespace {

// Which ports a kernel reads.
enum class Form { kUnary, kBinary, kBiasAdd, kGrad, kMaxGrad, kFill, kMulScalar, kSgd };

constexpr std::string_view kResult = "result";

std::vector<const InputPort*> inputs_of(const KernelCall& call, Form form) {
  const auto find = [&](std::string_view name) { return call.find_input(name); };
  switch (form) {
    case Form::kUnary:
    case Form::kMulScalar:
      return {find("x")};
    case Form::kBinary:
      return {find("a"), find("b")};
    case Form::kBiasAdd:
      return {find("x"), find("bias")};
    case Form::kGrad:
      return {find("y") != nullptr ? find("y") : find("x"), find("d_result")};
    case Form::kMaxGrad:
      return {find("a"), find("b"), find("d_result")};
    case Form::kSgd:
      return {find("param"), find("grad")};
    case Form::kFill:
      return {};
  }
  return {};
}

double fill_value(const KernelCall& call, double fallback) {
  if (call.params != nullptr && call.params->is_object() && call.params->contains("value")) {
    return call.params->at("value").get<double>();
  }
  return fallback;
}

// mul_scalar's factor / divisor, in float64 as the CPU computes it.
double scale_factor(const KernelCall& call) {
  double factor = 1.0;
  if (call.params != nullptr && call.params->contains("factor")) {
    factor = call.params->at("factor").get<double>();
  }
  return factor / static_cast<double>(call.param_int("divisor", 1));
}

// sgd's lr and weight_decay (training.cpp's param_double): numbers, with defaults 0.
double number_param(const KernelCall& call, std::string_view name) {
  if (call.params == nullptr || !call.params->contains(name)) return 0;
  const nlohmann::json& v = call.params->at(std::string(name));
  if (!v.is_number()) throw Error(fmt::format("param {} must be a number", name));
  return v.get<double>();
}

// True when the ports are all floats but not all of one dtype.
bool mixed_floats(const OutputPort& out, std::span<const InputPort* const> in) {
  const ir::DType d = out.view.dtype();
  if (!ir::is_float(d)) return false;
  bool mixed = false;
  for (const InputPort* p : in) {
    if (p == nullptr || !ir::is_float(p->view.dtype())) return false;
    mixed = mixed || p->view.dtype() != d;
  }
  return mixed;
}

// A float32 block of `box` in device memory, dense, from cudaMallocAsync on the stream (freed
// on it after the last kernel that reads it: stream-ordered, capturable).
struct Float32Block {
  void* data = nullptr;
  runtime::Point strides;
};

Float32Block float32_block(const KernelCall& call, const DeviceContext& ctx,
                           const runtime::Range& box) {
  Float32Block b{nullptr, runtime::dense_strides(box.shape())};
  const auto bytes = static_cast<std::size_t>(std::max<std::int64_t>(box.size(), 1)) * 4;
  check_cuda(
      call,
      static_cast<int>(cudaMallocAsync(&b.data, bytes, static_cast<cudaStream_t>(ctx.stream))),
      "allocate a float32 block");
  return b;
}

// The kernel over float32 copies of the ports that are not float32 (each input widened
// exactly, over the cells the call's index points read), the result computed in float32 and
// rounded once into the output: the CPU's widen_half_floats (executable_kernels.h), so the
// bits are the CPU's.
void launch_mixed(const KernelCall& call, const DeviceContext& ctx, PointwiseOp op,
                  std::span<const InputPort* const> in, double s1, double s2) {
  auto* stream = static_cast<cudaStream_t>(ctx.stream);
  std::vector<void*> blocks;
  std::vector<InputPort> widened(in.size());
  std::vector<const InputPort*> use(in.begin(), in.end());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i]->view.dtype() == ir::DType::kFloat32) continue;
    const Float32Block b = float32_block(call, ctx, in[i]->view.box());
    blocks.push_back(b.data);
    const OutputPort temp{runtime::View(ir::DType::kFloat32, static_cast<std::byte*>(b.data),
                                        in[i]->view.box(), b.strides),
                          in[i]->ipf};
    const InputPort* source[] = {in[i]};
    launch_pointwise_call(call, ctx, PointwiseOp::kCast, temp, source, 0, 0);
    widened[i] = InputPort{runtime::ConstView(ir::DType::kFloat32, static_cast<std::byte*>(b.data),
                                              in[i]->view.box(), b.strides),
                           in[i]->ipf};
    use[i] = &widened[i];
  }
  const OutputPort& out = call.output(kResult);
  if (out.view.dtype() == ir::DType::kFloat32) {
    launch_pointwise_call(call, ctx, op, out, use, s1, s2);
  } else {
    const Float32Block b = float32_block(call, ctx, out.view.box());
    blocks.push_back(b.data);
    const OutputPort temp{runtime::View(ir::DType::kFloat32, static_cast<std::byte*>(b.data),
                                        out.view.box(), b.strides),
                          out.ipf};
    launch_pointwise_call(call, ctx, op, temp, use, s1, s2);
    const InputPort computed{
        runtime::ConstView(ir::DType::kFloat32, static_cast<std::byte*>(b.data), out.view.box(),
                           b.strides),
        out.ipf};
    const InputPort* source[] = {&computed};
    launch_pointwise_call(call, ctx, PointwiseOp::kCast, out, source, 0, 0);
  }
  for (void* b : blocks) {
    check_cuda(call, static_cast<int>(cudaFreeAsync(b, stream)), "free a float32 block");
  }
}

template <PointwiseOp kOp, Form kForm>
bool supports(const KernelCall& call) {
  if (call.outputs.size() != 1 || !call.outputs.has(kResult)) return false;
  const OutputPort* out = &call.output(kResult);
  if (!has_unit_cells(*out->ipf)) return false;
  const auto out_type = elem_type(out->view.dtype());
  if (!out_type) return false;
  const std::vector<const InputPort*> in = inputs_of(call, kForm);
  for (const InputPort* p : in) {
    if (p == nullptr || !has_unit_cells(*p->ipf)) return false;
  }
  ElemType in_type = *out_type;
  if (!in.empty()) {
    const auto t = elem_type(in[0]->view.dtype());
    if (!t) return false;
    in_type = *t;
  }
  constexpr bool kConverts = kOp == PointwiseOp::kCast || kOp == PointwiseOp::kCopy;
  if (!kConverts && mixed_floats(*out, in)) {
    // Float ports of several dtypes (a bf16 bias added to float32 partial sums): run in
    // float32, as the CPU's widen_half_floats does (launch_mixed).
    if (!pointwise_supports(kOp, ElemType::kF32, ElemType::kF32)) return false;
    return pointwise_rank(call, *out, in) <= static_cast<std::size_t>(kMaxRank);
  }
  for (const InputPort* p : in) {
    if (p->view.dtype() != in[0]->view.dtype()) return false;
  }
  if (kOp != PointwiseOp::kCast && kOp != PointwiseOp::kCopy && in_type != *out_type) return false;
  if (kOp == PointwiseOp::kCopy && in_type != *out_type) return false;
  if (!pointwise_supports(kOp, *out_type, in_type)) return false;
  try {
    if (kForm == Form::kFill) (void)fill_value(call, 0);
    if (kForm == Form::kMulScalar) (void)scale_factor(call);
    if (kForm == Form::kSgd) (void)(number_param(call, "lr") + number_param(call, "weight_decay"));
  } catch (const std::exception&) {
    return false;  // a malformed param: the host kernel reports it
  }
  return pointwise_rank(call, *out, in) <= static_cast<std::size_t>(kMaxRank);
}

template <PointwiseOp kOp, Form kForm, int kFillDefault = 0>
void launch(const KernelCall& call, const DeviceContext& ctx) {
  const std::vector<const InputPort*> in = inputs_of(call, kForm);
  if (kOp != PointwiseOp::kCast && kOp != PointwiseOp::kCopy &&
      mixed_floats(call.output(kResult), in)) {
    const double s1 = kForm == Form::kSgd         ? number_param(call, "lr")
                      : kForm == Form::kFill      ? fill_value(call, kFillDefault)
                      : kForm == Form::kMulScalar ? scale_factor(call)
                                                  : 0.0;
    const double s2 = kForm == Form::kSgd ? number_param(call, "weight_decay") : 0.0;
    launch_mixed(call, ctx, kOp, in, s1, s2);
    return;
  }
  double scalar = 0;
  if constexpr (kForm == Form::kFill) scalar = fill_value(call, kFillDefault);
  if constexpr (kForm == Form::kMulScalar) scalar = scale_factor(call);
  if constexpr (kForm == Form::kSgd) {
    launch_pointwise_call(call, ctx, kOp, call.output(kResult), in, number_param(call, "lr"),
                          number_param(call, "weight_decay"));
    return;
  }
  launch_pointwise_call(call, ctx, kOp, call.output(kResult), in, scalar);
}

template <PointwiseOp kOp, Form kForm, int kFillDefault = 0>
DeviceKernel kernel() {
  return DeviceKernel{&supports<kOp, kForm>, &launch<kOp, kForm, kFillDefault>};
}

// ---- pad, pad2d, pad3d -------------------------------------------------------------------------
// Each index point's result cell takes x's element at the same coordinates where x's box holds
// them, else `value` (runtime/kernels/layout.cpp). x's port reads whole planes (`*` windows), so
// its own IPF says nothing about the cell: x is addressed through the result's IPF instead, and
// "inside x's box" is a box of local index coordinates when every result dim follows one index
// dim with coefficient 1 (as the pad metakernels' IPFs do).

struct PadPlan {
  PointwiseLaunch launch;
  PortLayout out, x;
};

std::optional<PadPlan> plan_pad(const KernelCall& call) {
  const InputPort* x = call.find_input("x");
  if (x == nullptr || call.outputs.size() != 1 || !call.outputs.has(kResult)) return std::nullopt;
  const OutputPort& out = call.output(kResult);
  const auto type = elem_type(out.view.dtype());
  if (!type || x->view.dtype() != out.view.dtype() || !has_unit_cells(*out.ipf))
    return std::nullopt;
  const std::size_t rank = call.index.rank();
  if (rank > static_cast<std::size_t>(kMaxRank) || x->view.rank() != out.view.rank()) {
    return std::nullopt;
  }
  // The value: a number; for integer tensors a whole one in range (else the host reports it).
  double value = 0;
  if (call.params != nullptr && call.params->is_object() && call.params->contains("value")) {
    const nlohmann::json& v = call.params->at("value");
    if (!v.is_number()) return std::nullopt;
    value = v.get<double>();
    if (!is_float(*type)) {
      const double lim = *type == ElemType::kI32 ? 2147483648.0 : 9223372036854775808.0;
      if (value != std::trunc(value) || value < -lim || value >= lim) return std::nullopt;
    }
  }
  PadPlan p;
  PointwiseLaunch& l = p.launch;
  l.op = PointwiseOp::kPad;
  l.type = *type;
  l.input_type = *type;
  l.rank = static_cast<int>(rank);
  l.scalar = value;
  for (std::size_t j = 0; j < rank; ++j) {
    l.extent[j] = call.index.extent(j);
    l.lo[j] = 0;
    l.hi[j] = l.extent[j];
  }
  const zspace::AffineMap& a = out.ipf->map();
  const runtime::Range& xbox = x->view.box();
  for (std::size_t k = 0; k < a.out_rank(); ++k) {
    std::optional<std::size_t> dim;
    for (std::size_t j = 0; j < a.in_rank(); ++j) {
      if (a.at(k, j) == 0) continue;
      if (a.at(k, j) != 1 || dim) return std::nullopt;
      dim = j;
    }
    // Cell coordinate c_k = p_j + b_k = local + start_j + b_k.
    const std::int64_t shift = dim ? call.index.start()[*dim] + a.offset()[k] : a.offset()[k];
    const std::int64_t lo = xbox.start()[k] - shift, hi = xbox.end()[k] - shift;
    if (!dim) {
      if (0 < lo || 0 >= hi) {  // a constant coordinate outside x: every point takes the value
        l.hi[0] = l.lo[0] = 0;
      }
      continue;
    }
    l.lo[*dim] = std::max(l.lo[*dim], lo);
    l.hi[*dim] = std::min(l.hi[*dim], hi);
  }
  p.out = port_layout(out, call.index);
  p.x = port_layout(InputPort{x->view, out.ipf}, call.index);
  for (std::size_t j = 0; j < rank; ++j) {
    l.port[0].coef[j] = p.out.coef[j];
    l.port[1].coef[j] = p.x.coef[j];
  }
  return p;
}

bool pad_supports(const KernelCall& call) {
  return plan_pad(call).has_value();
}

// Launches a planned pad or unslice: the result's cells, x's where the predicate holds.
void launch_planned(const KernelCall& call, const DeviceContext& ctx, std::optional<PadPlan> p,
                    std::string_view what) {
  if (!p) call.fail(fmt::format("the GPU cannot {} this call (supports() said no)", what));
  if (call.index.is_empty()) return;
  const InputPort& x = *call.find_input("x");
  p->launch.port[0].data = device_address(call.output(kResult), p->out);
  // x's origin plus the (possibly outside, never read there) offset of the first point's cell.
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): the engine's ports are untyped
  p->launch.port[1].data =
      const_cast<std::byte*>(x.view.origin()) + p->x.base * elem_size(p->launch.type);
  check_cuda(call, run_pointwise(p->launch, ctx.stream), fmt::format("{} kernel launch", what));
}

void pad_launch(const KernelCall& call, const DeviceContext& ctx) {
  launch_planned(call, ctx, plan_pad(call), "pad");
}

// ---- unslice ------------------------------------------------------------------------------------
// result[p] = x[…, p_dim − start, …] where 0 ≤ p_dim − start < m, else 0 (autodiff.cpp): x's cell
// is its whole dim `dim` (window m), the element at p_dim − start along it — affine in p, so the
// pad kernel runs it with the predicate on index dim `dim`.

std::optional<PadPlan> plan_unslice(const KernelCall& call) {
  const InputPort* x = call.find_input("x");
  if (x == nullptr || call.outputs.size() != 1 || !call.outputs.has(kResult)) return std::nullopt;
  const OutputPort& out = call.output(kResult);
  const auto type = elem_type(out.view.dtype());
  if (!type || x->view.dtype() != out.view.dtype() || !has_unit_cells(*out.ipf))
    return std::nullopt;
  const std::size_t rank = call.index.rank();
  std::int64_t dim = 0, start = 0;
  try {
    dim = call.param_int("dim", 0);
    start = call.param_int("start", 0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (rank > static_cast<std::size_t>(kMaxRank) || dim < 0 ||
      static_cast<std::size_t>(dim) >= rank || static_cast<std::size_t>(dim) >= x->view.rank()) {
    return std::nullopt;
  }
  const auto d = static_cast<std::size_t>(dim);
  const zspace::Point& window = x->ipf->shape();
  for (std::size_t k = 0; k < window.rank(); ++k) {
    if (k != d && window[k] != 1) return std::nullopt;
  }
  const std::int64_t m = window[d];
  PadPlan p;
  PointwiseLaunch& l = p.launch;
  l.op = PointwiseOp::kPad;
  l.type = *type;
  l.input_type = *type;
  l.rank = static_cast<int>(rank);
  l.scalar = 0;
  for (std::size_t j = 0; j < rank; ++j) {
    l.extent[j] = call.index.extent(j);
    l.lo[j] = 0;
    l.hi[j] = l.extent[j];
  }
  const std::int64_t first = call.index.start()[d];  // p_dim of local coordinate 0
  l.lo[d] = std::max<std::int64_t>(0, start - first);
  l.hi[d] = std::min<std::int64_t>(l.extent[d], start + m - first);
  p.out = port_layout(out, call.index);
  p.x = port_layout(*x, call.index);
  const std::int64_t stride = x->view.stride(d);
  p.x.base += (first - start) * stride;  // the element at p_dim − start of the first point's cell
  p.x.coef[d] += stride;
  for (std::size_t j = 0; j < rank; ++j) {
    l.port[0].coef[j] = p.out.coef[j];
    l.port[1].coef[j] = p.x.coef[j];
  }
  return p;
}

bool unslice_supports(const KernelCall& call) {
  return plan_unslice(call).has_value();
}

void unslice_launch(const KernelCall& call, const DeviceContext& ctx) {
  launch_planned(call, ctx, plan_unslice(call), "unslice");
}

}  // namespace

void register_pointwise_kernels(DeviceKernels& kernels) {
  using enum PointwiseOp;
  kernels.add("relu", kernel<kRelu, Form::kUnary>());
  kernels.add("gelu", kernel<kGelu, Form::kUnary>());
  kernels.add("exp", kernel<kExp, Form::kUnary>());
  kernels.add("neg", kernel<kNeg, Form::kUnary>());
  kernels.add("tanh", kernel<kTanh, Form::kUnary>());
  kernels.add("sigmoid", kernel<kSigmoid, Form::kUnary>());
  kernels.add("sqrt", kernel<kSqrt, Form::kUnary>());
  kernels.add("log", kernel<kLog, Form::kUnary>());
  kernels.add("floor", kernel<kFloor, Form::kUnary>());
  kernels.add("ceil", kernel<kCeil, Form::kUnary>());
  kernels.add("round", kernel<kRound, Form::kUnary>());
  kernels.add("add", kernel<kAdd, Form::kBinary>());
  kernels.add("sub", kernel<kSub, Form::kBinary>());
  kernels.add("mul", kernel<kMul, Form::kBinary>());
  kernels.add("div", kernel<kDiv, Form::kBinary>());
  kernels.add("maximum", kernel<kMaximum, Form::kBinary>());
  kernels.add("bias_add", kernel<kAdd, Form::kBiasAdd>());
  kernels.add("cast", kernel<kCast, Form::kUnary>());
  kernels.add("mul_scalar", kernel<kMulScalar, Form::kMulScalar>());
  kernels.add("ones_like", kernel<kFill, Form::kFill, 1>());
  kernels.add("zeros_like", kernel<kFill, Form::kFill, 0>());
  kernels.add("relu_grad", kernel<kReluGrad, Form::kGrad>());
  kernels.add("gelu_grad", kernel<kGeluGrad, Form::kGrad>());
  kernels.add("tanh_grad", kernel<kTanhGrad, Form::kGrad>());
  kernels.add("sigmoid_grad", kernel<kSigmoidGrad, Form::kGrad>());
  kernels.add("sqrt_grad", kernel<kSqrtGrad, Form::kGrad>());
  kernels.add("maximum_grad_a", kernel<kMaximumGradA, Form::kMaxGrad>());
  kernels.add("maximum_grad_b", kernel<kMaximumGradB, Form::kMaxGrad>());
  kernels.add("sgd", kernel<kSgd, Form::kSgd>());
  for (const char* name :
       {"transpose", "permute", "reshape", "slice", "broadcast", "expand", "unpad"}) {
    kernels.add(name, kernel<kCopy, Form::kUnary>());
  }
  for (const char* name : {"pad", "pad2d", "pad3d"}) {
    kernels.add(name, DeviceKernel{&pad_supports, &pad_launch});
  }
  kernels.add("unslice", DeviceKernel{&unslice_supports, &unslice_launch});
}

}  // namespace tapestry::gpu::kernels
