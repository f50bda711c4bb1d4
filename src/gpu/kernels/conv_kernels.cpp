// conv2d on the GPU through cuDNN (conv_kernels.h).
#include "conv_kernels.h"

#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include <cuda_runtime.h>
#include <cudnn.h>
#include <fmt/format.h>

#include "pointwise_kernels.h"
#include "port_layout.h"
#include "simple_conv.h"

namespace tapestry::gpu::kernels {

namespace {

using runtime::InputPort;
using runtime::KernelCall;
using runtime::OutputPort;

// The convolution of one call: result[n, o, y, x] = Σ x[n, c, s·y + i, s·x + j]·w[o, c, i, j]
// over the call's box, every operand as a 4-d strided tensor.
struct Conv {
  std::int64_t n = 0, o = 0, oh = 0, ow = 0, c = 0, kh = 0, kw = 0, stride = 1;
  std::int64_t xs[4] = {}, ws[4] = {}, ys[4] = {};  // element strides (NCHW / OIHW)
  const InputPort* x = nullptr;
  const InputPort* w = nullptr;
  const OutputPort* y = nullptr;
  PortLayout lx, lw, ly;
  ir::DType dtype = ir::DType::kFloat32;
};

// The step along C of an operand whose cells hold `window` channels `stride` apart and whose
// index dim c steps `coef`: C = extent·window as one dim, when it can be.
std::optional<std::int64_t> c_step(std::int64_t extent, std::int64_t window, std::int64_t coef,
                                   std::int64_t stride) {
  if (window == 1) return coef;
  if (extent == 1 || coef == window * stride) return stride;
  return std::nullopt;
}

std::optional<Conv> plan(const KernelCall& call) {
  std::string_view kernel = call.kernel;
  if (kernel.starts_with("op:")) kernel.remove_prefix(3);
  if (kernel != "conv2d" || call.index.rank() != 5) return std::nullopt;
  Conv cv;
  cv.x = call.find_input("x");
  cv.w = call.find_input("w");
  if (cv.x == nullptr || cv.w == nullptr || call.outputs.size() != 1 ||
      !call.outputs.has("result")) {
    return std::nullopt;
  }
  cv.y = &call.output("result");
  cv.dtype = cv.x->view.dtype();
  if (cv.w->view.dtype() != cv.dtype || cv.y->view.dtype() != cv.dtype) return std::nullopt;
  if (cv.dtype != ir::DType::kFloat32 && cv.dtype != ir::DType::kFloat64 &&
      cv.dtype != ir::DType::kBFloat16 && cv.dtype != ir::DType::kFloat16) {
    return std::nullopt;
  }
  if (cv.x->view.rank() != 4 || cv.w->view.rank() != 4 || cv.y->view.rank() != 4)
    return std::nullopt;
  if (!has_unit_cells(*cv.y->ipf)) return std::nullopt;
  const zspace::Point& xw = cv.x->ipf->shape();
  const zspace::Point& ww = cv.w->ipf->shape();
  if (xw[0] != 1 || ww[0] != 1 || xw[1] != ww[1] || xw[2] != ww[2] || xw[3] != ww[3]) {
    return std::nullopt;
  }
  cv.lx = port_layout(*cv.x, call.index);
  cv.lw = port_layout(*cv.w, call.index);
  cv.ly = port_layout(*cv.y, call.index);
  for (int k = 0; k < 4; ++k) {
    cv.xs[k] = cv.x->view.stride(static_cast<std::size_t>(k));
    cv.ws[k] = cv.w->view.stride(static_cast<std::size_t>(k));
    cv.ys[k] = cv.y->view.stride(static_cast<std::size_t>(k));
  }
  // Index dims n, o, oh, ow, c.
  const auto e = [&](std::size_t d) { return call.index.extent(d); };
  cv.n = e(0);
  cv.o = e(1);
  cv.oh = e(2);
  cv.ow = e(3);
  cv.kh = xw[2];
  cv.kw = xw[3];
  const std::int64_t cw = xw[1];
  cv.c = e(4) * cw;
  const auto xc = c_step(e(4), cw, cv.lx.coef[4], cv.xs[1]);
  const auto wc = c_step(e(4), cw, cv.lw.coef[4], cv.ws[1]);
  if (!xc || !wc) return std::nullopt;
  // x: n → xs0, c → xs1, oh → s·xs2, ow → s·xs3, o → 0; w: o → ws0, c → ws1; y: n, o, oh, ow.
  const std::int64_t s = call.param_int("stride", 1);
  if (s < 1) return std::nullopt;
  cv.stride = s;
  const auto matches = [](std::int64_t extent, std::int64_t coef, std::int64_t want) {
    return extent == 1 || coef == want;
  };
  const PortLayout& lx = cv.lx;
  const PortLayout& lw = cv.lw;
  const PortLayout& ly = cv.ly;
  if (!matches(cv.n, lx.coef[0], cv.xs[0]) || !matches(cv.o, lx.coef[1], 0) ||
      !matches(cv.oh, lx.coef[2], s * cv.xs[2]) || !matches(cv.ow, lx.coef[3], s * cv.xs[3]) ||
      !matches(cv.c, *xc, cv.xs[1]) || !matches(cv.c, *wc, cv.ws[1])) {
    return std::nullopt;
  }
  if (!matches(cv.n, lw.coef[0], 0) || !matches(cv.o, lw.coef[1], cv.ws[0]) ||
      !matches(cv.oh, lw.coef[2], 0) || !matches(cv.ow, lw.coef[3], 0)) {
    return std::nullopt;
  }
  if (!matches(cv.n, ly.coef[0], cv.ys[0]) || !matches(cv.o, ly.coef[1], cv.ys[1]) ||
      !matches(cv.oh, ly.coef[2], cv.ys[2]) || !matches(cv.ow, ly.coef[3], cv.ys[3]) ||
      ly.coef[4] != 0) {
    return std::nullopt;
  }
  for (int k = 0; k < 4; ++k) {
    if (cv.xs[k] < 1 || cv.ws[k] < 1 || cv.ys[k] < 1) return std::nullopt;
  }
  return cv;
}

cudnnDataType_t cudnn_type(ir::DType t) {
  switch (t) {
    case ir::DType::kFloat64:
      return CUDNN_DATA_DOUBLE;
    case ir::DType::kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    case ir::DType::kFloat16:
      return CUDNN_DATA_HALF;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

void check_dnn(const KernelCall& call, cudnnStatus_t status, std::string_view what) {
  if (status != CUDNN_STATUS_SUCCESS) {
    call.fail(fmt::format("{}: cuDNN: {}", what, cudnnGetErrorString(status)));
  }
}

// Owns the descriptors of one convolution.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
    if (w != nullptr) cudnnDestroyFilterDescriptor(w);
    if (y != nullptr) cudnnDestroyTensorDescriptor(y);
    if (x != nullptr) cudnnDestroyTensorDescriptor(x);
  }
};

struct CachedAlgo {
  bool found = false;
  cudnnConvolutionFwdAlgo_t algo{};
  std::size_t workspace = 0;
};

std::atomic<bool> g_force_simple_conv{false};

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::vector<std::int64_t>, CachedAlgo>& cache() {
  static std::map<std::vector<std::int64_t>, CachedAlgo> c;
  return c;
}

int narrow(const KernelCall& call, std::int64_t v) {
  if (v > std::numeric_limits<int>::max()) call.fail("a convolution dim exceeds cuDNN's int range");
  return static_cast<int>(v);
}

}  // namespace

bool conv_supports(const KernelCall& call) {
  const std::optional<Conv> cv = plan(call);
  if (!cv || cv->c == 0 || cv->kh == 0 || cv->kw == 0) return false;
  for (std::int64_t v : {cv->n, cv->o, cv->oh, cv->ow, cv->c, cv->kh, cv->kw}) {
    if (v > std::numeric_limits<int>::max()) return false;
  }
  return true;
}

void conv_launch(const KernelCall& call, const DeviceContext& ctx) {
  const std::optional<Conv> planned = plan(call);
  if (!planned) call.fail("the GPU's convolution cannot express this call (supports() said no)");
  const Conv& cv = *planned;
  if (cv.n == 0 || cv.o == 0 || cv.oh == 0 || cv.ow == 0) return;
  auto* stream = static_cast<cudaStream_t>(ctx.stream);
  auto* handle = static_cast<cudnnHandle_t>(ctx.cudnn);
  const std::int64_t bytes = static_cast<std::int64_t>(ir::dtype_size_bytes(cv.dtype));
  const auto* x = static_cast<const std::byte*>(device_address(*cv.x, cv.lx));
  const auto* w = static_cast<const std::byte*>(device_address(*cv.w, cv.lw));
  auto* y = static_cast<std::byte*>(device_address(*cv.y, cv.ly));

  // cuDNN's filters are packed OIHW: a filter view that is not (a shard of o or c of a larger
  // tensor) is copied into a packed block first.
  const bool packed = (cv.o == 1 || cv.ws[0] == cv.c * cv.kh * cv.kw) &&
                      (cv.c == 1 || cv.ws[1] == cv.kh * cv.kw) &&
                      (cv.kh == 1 || cv.ws[2] == cv.kw) && (cv.kw == 1 || cv.ws[3] == 1);
  void* packed_w = nullptr;
  if (!packed) {
    const std::int64_t size = cv.o * cv.c * cv.kh * cv.kw;
    check_cuda(call,
               static_cast<int>(
                   cudaMallocAsync(&packed_w, static_cast<std::size_t>(size * bytes), stream)),
               "conv2d: cudaMallocAsync of the packed filters");
    PointwiseLaunch copy;
    copy.op = PointwiseOp::kCopy;
    copy.type = *elem_type(cv.dtype);
    copy.input_type = copy.type;
    copy.rank = 4;
    const std::int64_t extent[4] = {cv.o, cv.c, cv.kh, cv.kw};
    const std::int64_t packed_steps[4] = {cv.c * cv.kh * cv.kw, cv.kh * cv.kw, cv.kw, 1};
    for (int k = 0; k < 4; ++k) {
      copy.extent[k] = extent[k];
      copy.port[0].coef[k] = packed_steps[k];
      copy.port[1].coef[k] = cv.ws[k];
    }
    copy.port[0].data = packed_w;
    copy.port[1].data = const_cast<std::byte*>(w);  // NOLINT: read only
    check_cuda(call, launch_pointwise(copy, stream), "conv2d: packing the filters");
  }

  Descriptors d;
  const cudnnDataType_t type = cudnn_type(cv.dtype);
  const bool f64 = cv.dtype == ir::DType::kFloat64;
  const std::int64_t ih = (cv.oh - 1) * cv.stride + cv.kh, iw = (cv.ow - 1) * cv.stride + cv.kw;
  check_dnn(call, cudnnCreateTensorDescriptor(&d.x), "tensor descriptor");
  check_dnn(call,
            cudnnSetTensor4dDescriptorEx(d.x, type, narrow(call, cv.n), narrow(call, cv.c),
                                         narrow(call, ih), narrow(call, iw), narrow(call, cv.xs[0]),
                                         narrow(call, cv.xs[1]), narrow(call, cv.xs[2]),
                                         narrow(call, cv.xs[3])),
            "x descriptor");
  check_dnn(call, cudnnCreateTensorDescriptor(&d.y), "tensor descriptor");
  check_dnn(call,
            cudnnSetTensor4dDescriptorEx(d.y, type, narrow(call, cv.n), narrow(call, cv.o),
                                         narrow(call, cv.oh), narrow(call, cv.ow),
                                         narrow(call, cv.ys[0]), narrow(call, cv.ys[1]),
                                         narrow(call, cv.ys[2]), narrow(call, cv.ys[3])),
            "result descriptor");
  check_dnn(call, cudnnCreateFilterDescriptor(&d.w), "filter descriptor");
  check_dnn(
      call,
      cudnnSetFilter4dDescriptor(d.w, type, CUDNN_TENSOR_NCHW, narrow(call, cv.o),
                                 narrow(call, cv.c), narrow(call, cv.kh), narrow(call, cv.kw)),
      "w descriptor");
  check_dnn(call, cudnnCreateConvolutionDescriptor(&d.conv), "convolution descriptor");
  const int s = narrow(call, cv.stride);
  check_dnn(call,
            cudnnSetConvolution2dDescriptor(d.conv, 0, 0, s, s, 1, 1, CUDNN_CROSS_CORRELATION,
                                            f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT),
            "convolution descriptor");
  // float32 without TF32 unless allowed (cuDNN's default math may use it); 16-bit on tensor
  // cores, accumulating in float32.
  const cudnnMathType_t math = cv.dtype == ir::DType::kFloat32
                                   ? (ctx.allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH)
                                   : (f64 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH);
  check_dnn(call, cudnnSetConvolutionMathType(d.conv, math), "math type");

  const auto align = [](const void* p) {
    const auto v = reinterpret_cast<std::uintptr_t>(p) | 256U;
    return static_cast<std::int64_t>(v & (~v + 1));
  };
  const std::vector<std::int64_t> key{static_cast<std::int64_t>(type),
                                      cv.n,
                                      cv.o,
                                      cv.oh,
                                      cv.ow,
                                      cv.c,
                                      cv.kh,
                                      cv.kw,
                                      cv.stride,
                                      cv.xs[0],
                                      cv.xs[1],
                                      cv.xs[2],
                                      cv.xs[3],
                                      cv.ys[0],
                                      cv.ys[1],
                                      cv.ys[2],
                                      cv.ys[3],
                                      static_cast<std::int64_t>(math),
                                      align(x),
                                      align(y),
                                      align(packed ? static_cast<const void*>(w) : packed_w),
                                      static_cast<std::int64_t>(ctx.workspace_bytes),
                                      ctx.device};
  CachedAlgo algo;
  bool cached = false;
  {
    const std::lock_guard<std::mutex> lock(cache_mutex());
    const auto it = cache().find(key);
    if (it != cache().end()) {
      algo = it->second;
      cached = true;
    }
  }
  if (!cached) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    check_dnn(call,
              cudnnGetConvolutionForwardAlgorithm_v7(
                  handle, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
              "cudnnGetConvolutionForwardAlgorithm_v7");
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ctx.workspace_bytes) continue;
      // float32 without TF32: no algorithm that converts to tensor-op math.
      if (cv.dtype == ir::DType::kFloat32 && !ctx.allow_tf32 &&
          perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH) {
        continue;
      }
      algo = {true, perf[i].algo, perf[i].memory};
      break;
    }
    const std::lock_guard<std::mutex> lock(cache_mutex());
    cache().emplace(key, algo);
  }
  // The plain CUDA convolution through the views' own strides: where cuDNN has no algorithm or
  // refuses the call.
  const auto run_simple = [&] {
    SimpleConv simple;
    simple.type = *elem_type(cv.dtype);
    simple.n = cv.n;
    simple.o = cv.o;
    simple.oh = cv.oh;
    simple.ow = cv.ow;
    simple.c = cv.c;
    simple.kh = cv.kh;
    simple.kw = cv.kw;
    simple.stride = cv.stride;
    for (int k = 0; k < 4; ++k) {
      simple.xs[k] = cv.xs[k];
      simple.ws[k] = cv.ws[k];
      simple.ys[k] = cv.ys[k];
    }
    simple.x = x;
    simple.w = w;
    simple.y = y;
    check_cuda(call, launch_simple_conv(simple, stream), "plain conv2d launch");
    if (packed_w != nullptr) {
      check_cuda(call, static_cast<int>(cudaFreeAsync(packed_w, stream)), "conv2d: cudaFreeAsync");
    }
  };
  if (!algo.found || g_force_simple_conv.load()) {
    run_simple();
    return;
  }
  const float alpha32 = 1.0F, beta32 = 0.0F;
  const double alpha64 = 1.0, beta64 = 0.0;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
  if (cudnnConvolutionForward(
          handle, alpha, d.x, x, d.w, packed ? static_cast<const void*>(w) : packed_w, d.conv,
          algo.algo, ctx.workspace, algo.workspace, beta, d.y, y) != CUDNN_STATUS_SUCCESS) {
    run_simple();
    return;
  }
  if (packed_w != nullptr) {
    check_cuda(call, static_cast<int>(cudaFreeAsync(packed_w, stream)), "conv2d: cudaFreeAsync");
  }
}

void force_simple_conv(bool on) {
  g_force_simple_conv = on;
}

void register_conv_kernels(DeviceKernels& kernels) {
  kernels.add("conv2d", DeviceKernel{&conv_supports, &conv_launch});
}

}  // namespace tapestry::gpu::kernels
