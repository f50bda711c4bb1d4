// The device kernels (src/gpu/kernels, cuda_kernels()) against the CPU's reference kernels
// (runtime::ExecutableKernels::reference()), on the GPU: every kernel, every dtype it takes, whole
// operations and shards (sub-boxes at non-zero and negative coordinates, a split reduction's K
// range), views inside larger buffers, broadcasting, transposed outputs.
//
// Each case runs the same KernelCall twice — on host buffers with the reference kernel and on
// device copies of them with the device kernel — and compares the *whole* output buffers, which
// start with the same non-zero fill: a device kernel that writes outside its box, or misses a cell
// of it, differs there. Bars:
//   exact      bitwise (NaN = NaN): relu neg add sub mul div maximum copies cast fills, the
//              f32/bf16/f16 transcendentals (the GPU evaluates the CPU's own f32 formulas,
//              runtime/kernels/scalar_math.h) and the f32-formula derivatives
//   ulps(n)    |gpu − ref| ≤ n ulp of ref in the output dtype: where the CPU calls the C library
//              (f64 exp, tanh, erfc, log; f32 log) and the GPU calls CUDA's (≤ 1–4 ulp documented)
//   gemm       |gpu − ref| ≤ 2·(K+1)·ε·Σ|a·b| (+|bias|) + 2·ε_out·(|ref| + Σ|a·b|): any summation
//              order, the 16-bit output rounded (twice where the bias is added after the GEMM)
// The Faults tests check that the comparison catches a shifted box and a wrong operand.
//
// Without a usable CUDA device every case still checks that its device kernel's supports()
// accepts the call (host code); the Faults tests skip.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conv_kernels.h"
#include "device_kernels.h"
#include "gemm_kernels.h"
#include "pointwise_kernels.h"
#include "rows.h"
#include "rows_kernels.h"
#include "tapestry/gpu/cuda.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/executable_kernels.h"

namespace tapestry::gpu::kernels {
namespace {

using ir::DType;
using runtime::Buffer;
using runtime::KernelCall;
using runtime::Point;
using runtime::Range;
using zspace::AffineMap;
using zspace::IndexProjection;

bool have_gpu() {
  return device_count() > 0;
}

#define SKIP_WITHOUT_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device"

void check(cudaError_t e, const char* what) {
  ASSERT_EQ(e, cudaSuccess) << what << ": " << cudaGetErrorString(e);
}

// The device context of every test: one stream, a cuBLASLt handle, a 32 MiB workspace.
const DeviceContext& context() {
  static const DeviceContext ctx = [] {
    DeviceContext c;
    cudaStream_t stream = nullptr;
    cudaStreamCreate(&stream);
    cublasLtHandle_t lt = nullptr;
    cublasLtCreate(&lt);
    cudnnHandle_t dnn = nullptr;
    cudnnCreate(&dnn);
    cudnnSetStream(dnn, stream);
    c.cudnn = dnn;
    c.stream = stream;
    c.cublaslt = lt;
    c.workspace_bytes = std::size_t{32} << 20;
    cudaMalloc(&c.workspace, c.workspace_bytes);
    return c;
  }();
  return ctx;
}

// ---- cases ------------------------------------------------------------------------------------

struct PortSpec {
  std::string name;
  bool output = false;
  DType dtype = DType::kFloat32;
  Range range;  // the tensor's range (its buffer); ports read IPF(box) inside it
  IndexProjection ipf;
  double lo = -2, hi = 2;  // input values, uniform; quantised to 1/8 when `ties`
  bool ties = false;
  bool specials = false;  // NaN, ±inf, ±0, a subnormal, large values first
};

struct OpSpec {
  std::string kernel;
  Range index;
  std::vector<std::string> names;
  std::vector<ir::Reduction> reductions;
  nlohmann::json params = nlohmann::json::object();
  std::vector<PortSpec> ports;
};

IndexProjection ipf(const std::vector<std::vector<std::int64_t>>& rows, Point offset,
                    std::optional<Point> shape = std::nullopt) {
  AffineMap map = AffineMap::from_rows(rows, std::move(offset));
  return shape ? IndexProjection(std::move(map), *shape) : IndexProjection(std::move(map));
}

IndexProjection identity_ipf(std::size_t rank) {
  return IndexProjection::identity(rank);
}

void fill(Buffer& b, const PortSpec& p, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(p.lo, p.hi);
  runtime::visit_storage_dtype(b.dtype(), [&]<typename T>() {
    auto values = b.values<T>();
    for (std::size_t i = 0; i < values.size(); ++i) {
      double v = u(rng);
      if (p.ties) v = std::round(v * 8) / 8;
      if constexpr (std::is_integral_v<T>) v = std::round(v * 1000);
      values[i] = runtime::storage_cast<T>(v);
    }
    if constexpr (runtime::is_float_element_v<T>) {
      if (p.specials) {
        const double s[] = {std::numeric_limits<double>::quiet_NaN(),
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            0.0,
                            -0.0,
                            1e-40,
                            -1e-40,
                            95.0,
                            -95.0,
                            -30.0,
                            30.0,
                            -14.0};
        for (std::size_t i = 0; i < std::size(s) && i < values.size(); ++i) {
          values[i] = runtime::storage_cast<T>(s[i]);
        }
      }
    }
  });
}

// A buffer on the device mirroring a host buffer (same range, strides, bytes).
struct DeviceCopy {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  explicit DeviceCopy(const Buffer& b) : bytes(b.size_bytes()) {
    check(cudaMalloc(&ptr, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    check(cudaMemcpy(ptr, b.bytes(), bytes, cudaMemcpyHostToDevice), "upload");
  }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  ~DeviceCopy() { cudaFree(ptr); }
  void download(Buffer& b) const {
    check(cudaMemcpy(b.bytes(), ptr, bytes, cudaMemcpyDeviceToHost), "download");
  }
  // The view of `box` of this copy of `b`.
  template <typename Byte>
  runtime::BasicView<Byte> view(const Buffer& b, const Range& box) const {
    const std::int64_t offset = runtime::element_offset(b.range(), b.strides(), box.start());
    const std::size_t elem =
        b.size_bytes() / static_cast<std::size_t>(std::max<std::int64_t>(b.size(), 1));
    return runtime::BasicView<Byte>(
        b.dtype(), static_cast<Byte*>(ptr) + offset * static_cast<std::int64_t>(elem), box,
        b.strides());
  }
};

struct Buffers {
  std::vector<Buffer> host;  // one per port
};

Buffers make_buffers(const OpSpec& op, std::uint32_t seed, bool absolute = false) {
  Buffers b;
  for (std::size_t i = 0; i < op.ports.size(); ++i) {
    const PortSpec& p = op.ports[i];
    Buffer buf(p.dtype, p.range);
    if (p.output) {
      PortSpec sentinel = p;
      sentinel.lo = 7;
      sentinel.hi = 9;
      sentinel.specials = false;
      fill(buf, sentinel, 999);
    } else {
      fill(buf, p, seed + static_cast<std::uint32_t>(i) * 17);
      if (absolute) {
        runtime::visit_storage_dtype(buf.dtype(), [&]<typename T>() {
          for (T& v : buf.values<T>()) {
            v = runtime::storage_cast<T>(std::abs(static_cast<double>(v)));
          }
        });
      }
    }
    b.host.push_back(std::move(buf));
  }
  return b;
}

// The call over `box` with views of `host` (or of `device` copies when given).
KernelCall make_call(const OpSpec& op, const Range& box, std::vector<Buffer>& host,
                     const std::vector<std::unique_ptr<DeviceCopy>>* device) {
  KernelCall call{.kernel = op.kernel,
                  .operation = "test_op",
                  .index = box,
                  .params = &op.params,
                  .index_names = op.names,
                  .reductions = op.reductions};
  for (std::size_t i = 0; i < op.ports.size(); ++i) {
    const PortSpec& p = op.ports[i];
    const Range cells = p.ipf.apply(box);
    if (p.output) {
      runtime::View v =
          device != nullptr ? (*device)[i]->view<std::byte>(host[i], cells) : host[i].view(cells);
      call.outputs.append(p.name, runtime::OutputPort{v, &p.ipf});
    } else {
      runtime::ConstView v = device != nullptr ? (*device)[i]->view<const std::byte>(host[i], cells)
                                               : std::as_const(host[i]).view(cells);
      call.inputs.append(p.name, runtime::InputPort{v, &p.ipf});
    }
  }
  return call;
}

std::size_t output_index(const OpSpec& op) {
  for (std::size_t i = 0; i < op.ports.size(); ++i) {
    if (op.ports[i].output) return i;
  }
  ADD_FAILURE() << "no output";
  return 0;
}

Buffer run_reference(const OpSpec& op, const Range& box, std::uint32_t seed,
                     bool absolute = false) {
  Buffers b = make_buffers(op, seed, absolute);
  const KernelCall call = make_call(op, box, b.host, nullptr);
  runtime::ExecutableKernels::reference().lookup(op.kernel, "test_op")(call);
  return std::move(b.host[output_index(op)]);
}

const DeviceKernel* device_kernel(const std::string& name) {
  return cuda_kernels().find(name);
}

// Runs the device kernel over `box` (asserting supports()); `run_box` may differ from `box` (the
// Faults tests). Returns the whole output buffer.
Buffer run_device(const OpSpec& op, const Range& box, std::uint32_t seed,
                  const Range* run_box = nullptr) {
  Buffers b = make_buffers(op, seed);
  std::vector<std::unique_ptr<DeviceCopy>> dev;
  for (const Buffer& h : b.host) dev.push_back(std::make_unique<DeviceCopy>(h));
  const DeviceKernel* k = device_kernel(op.kernel);
  EXPECT_NE(k, nullptr) << op.kernel;
  const std::size_t out = output_index(op);
  if (k == nullptr) return std::move(b.host[out]);
  const KernelCall call = make_call(op, run_box != nullptr ? *run_box : box, b.host, &dev);
  EXPECT_TRUE(k->supports(call)) << op.kernel << " should run on the GPU";
  k->launch(call, context());
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(context().stream)), "sync");
  dev[out]->download(b.host[out]);
  return std::move(b.host[out]);
}

// ---- comparisons ------------------------------------------------------------------------------

enum class Bar { kExact, kUlps, kGemm };

struct Tolerance {
  Bar bar = Bar::kExact;
  double ulps = 0;
  std::int64_t k = 0;  // GEMM: the reduction length
};

double unit_roundoff(DType t) {
  switch (t) {
    case DType::kFloat64:
      return 0x1p-53;
    case DType::kBFloat16:
      return 0x1p-8;
    case DType::kFloat16:
      return 0x1p-11;
    default:
      return 0x1p-24;
  }
}

double smallest_normal(DType t) {
  switch (t) {
    case DType::kFloat64:
      return std::numeric_limits<double>::min();
    case DType::kBFloat16:
      return std::numeric_limits<float>::min();
    case DType::kFloat16:
      return 0x1p-14;
    default:
      return std::numeric_limits<float>::min();
  }
}

// "" when gpu matches ref within `tol`, else a description of the first mismatch.
std::string mismatch(const Buffer& gpu, const Buffer& ref, const Tolerance& tol,
                     const Buffer* magnitude = nullptr, DType compute = DType::kFloat32) {
  if (gpu.range() != ref.range() || gpu.dtype() != ref.dtype()) return "different buffers";
  std::string out;
  runtime::visit_storage_dtype(ref.dtype(), [&]<typename T>() {
    const auto g = gpu.values<T>(), r = ref.values<T>();
    for (std::size_t i = 0; i < r.size() && out.empty(); ++i) {
      const double gv = static_cast<double>(g[i]), rv = static_cast<double>(r[i]);
      bool ok = false;
      if constexpr (runtime::is_float_element_v<T>) {
        if (std::isnan(rv) || std::isnan(gv)) {
          ok = std::isnan(rv) && std::isnan(gv);
        } else if (tol.bar == Bar::kExact) {
          ok = std::memcmp(&g[i], &r[i], sizeof(T)) == 0;
        } else if (std::isinf(rv) || std::isinf(gv)) {
          ok = gv == rv;
        } else {
          const DType t = ref.dtype();
          const double u = unit_roundoff(t);
          double bound = 0;
          if (tol.bar == Bar::kUlps) {
            bound = tol.ulps * 2 * u * std::max(std::abs(rv), smallest_normal(t));
          } else {
            // |…|: the magnitude run passes Σ|x·w| through the stages, and a stage such as
            // neg makes it negative (the H100 run: equal values failed a negative bound).
            const double m = std::abs(static_cast<double>(magnitude->values<T>()[i]));
            bound = 2.0 * static_cast<double>(tol.k + 1) * unit_roundoff(compute) * m +
                    2 * u * (std::abs(rv) + m);
          }
          ok = std::abs(gv - rv) <= bound;
        }
      } else {
        ok = g[i] == r[i];
      }
      if (!ok) out = fmt::format("element {}: gpu {} ref {}", i, gv, rv);
    }
  });
  return out;
}

int& interpreted_cases() {
  static int n = 0;
  return n;
}

// ---- without a GPU: the launches interpreted on host memory
// -------------------------------------- The device kernels' host code (supports, the cell
// arithmetic, the launch descriptions) runs as on the GPU; instead of the CUDA kernels, these
// interpreters execute the launch descriptions on the host buffers the views point to, for the ops
// whose formulas are plain IEEE arithmetic (the others answer "not interpreted", and the case
// checks supports() alone). So a wrong base, step, collapse or predicate fails here, without a GPU.

constexpr int kNotInterpreted = -1;

double read_cell(ElemType t, const void* base, std::int64_t at) {
  switch (t) {
    case ElemType::kF32:
      return static_cast<const float*>(base)[at];
    case ElemType::kF64:
      return static_cast<const double*>(base)[at];
    case ElemType::kBF16:
      return static_cast<double>(static_cast<const runtime::BFloat16*>(base)[at]);
    case ElemType::kF16:
      return static_cast<double>(static_cast<const runtime::Float16*>(base)[at]);
    case ElemType::kI32:
      return static_cast<const std::int32_t*>(base)[at];
    case ElemType::kI64:
      return static_cast<double>(static_cast<const std::int64_t*>(base)[at]);
  }
  return 0;
}

void write_cell(ElemType t, void* base, std::int64_t at, double v) {
  switch (t) {
    case ElemType::kF32:
      static_cast<float*>(base)[at] = static_cast<float>(v);
      break;
    case ElemType::kF64:
      static_cast<double*>(base)[at] = v;
      break;
    case ElemType::kBF16:
      static_cast<runtime::BFloat16*>(base)[at] = runtime::to_bfloat16(v);
      break;
    case ElemType::kF16:
      static_cast<runtime::Float16*>(base)[at] = runtime::to_float16(v);
      break;
    case ElemType::kI32:
      static_cast<std::int32_t*>(base)[at] = static_cast<std::int32_t>(v);
      break;
    case ElemType::kI64:
      static_cast<std::int64_t*>(base)[at] = static_cast<std::int64_t>(v);
      break;
  }
}

// Rounds a result to the compute type (float32 for the 16-bit floats and float32).
double in_compute(ElemType t, double v) {
  return t == ElemType::kF64 || t == ElemType::kI32 || t == ElemType::kI64
             ? v
             : static_cast<double>(static_cast<float>(v));
}

int interpret_pointwise(const PointwiseLaunch& l) {
  const bool small_ints = true;
  (void)small_ints;
  switch (l.op) {
    case PointwiseOp::kCopy:
    case PointwiseOp::kPad:
    case PointwiseOp::kFill:
    case PointwiseOp::kRelu:
    case PointwiseOp::kNeg:
    case PointwiseOp::kAdd:
    case PointwiseOp::kSub:
    case PointwiseOp::kMul:
    case PointwiseOp::kMaximum:
      break;
    default:
      return kNotInterpreted;
  }
  std::int64_t total = 1;
  for (int j = 0; j < l.rank; ++j) total *= l.extent[j];
  const std::int64_t bytes = elem_size(l.type);
  for (std::int64_t t = 0; t < total; ++t) {
    std::int64_t rest = t;
    std::int64_t o[kMaxPorts] = {};
    bool inside = true;
    for (int j = l.rank - 1; j >= 0; --j) {
      const std::int64_t c = rest % l.extent[j];
      rest /= l.extent[j];
      for (int p = 0; p < kMaxPorts; ++p) o[p] += c * l.port[p].coef[j];
      inside = inside && c >= l.lo[j] && c < l.hi[j];
    }
    auto* out = static_cast<std::byte*>(l.port[0].data);
    if (l.op == PointwiseOp::kCopy || (l.op == PointwiseOp::kPad && inside)) {
      std::memcpy(out + o[0] * bytes, static_cast<const std::byte*>(l.port[1].data) + o[1] * bytes,
                  static_cast<std::size_t>(bytes));
      continue;
    }
    if (l.op == PointwiseOp::kPad || l.op == PointwiseOp::kFill) {
      write_cell(l.type, out, o[0], in_compute(l.type, l.scalar));
      continue;
    }
    if (!is_float(l.type)) return kNotInterpreted;  // integer wrapping: the GPU test checks it
    const double x = read_cell(l.type, l.port[1].data, o[1]);
    const double y = input_count(l.op) > 1 ? read_cell(l.type, l.port[2].data, o[2]) : 0;
    double r = 0;
    switch (l.op) {
      case PointwiseOp::kRelu:
        r = x < 0 ? 0 : x;
        break;
      case PointwiseOp::kNeg:
        r = -x;
        break;
      case PointwiseOp::kAdd:
        r = x + y;
        break;
      case PointwiseOp::kSub:
        r = x - y;
        break;
      case PointwiseOp::kMul:
        r = x * y;
        break;
      default:  // kMaximum
        r = std::isnan(x) ? x : std::isnan(y) ? y : x < y ? y : x;
        break;
    }
    write_cell(l.type, out, o[0], in_compute(l.type, r));
  }
  return 0;
}

int interpret_rows(const RowsLaunch& l) {
  if (l.op != RowOp::kSum && l.op != RowOp::kMax && l.op != RowOp::kAverage) return kNotInterpreted;
  if (!is_float(l.type)) return kNotInterpreted;
  std::int64_t outer = 1, inner = 1;
  for (int j = 0; j < l.outer_rank; ++j) outer *= l.outer_extent[j];
  for (int j = 0; j < l.inner_rank; ++j) inner *= l.inner_extent[j];
  for (std::int64_t t = 0; t < outer; ++t) {
    std::int64_t rest = t, ox = 0, oo = 0;
    for (int j = l.outer_rank - 1; j >= 0; --j) {
      const std::int64_t c = rest % l.outer_extent[j];
      rest /= l.outer_extent[j];
      ox += c * l.x_outer[j];
      oo += c * l.out_outer[j];
    }
    double acc = l.from_identity ? 0 : std::numeric_limits<double>::quiet_NaN();
    double sum = 0;
    for (std::int64_t r = 0; r < inner; ++r) {
      std::int64_t rr = r, off = ox;
      for (int j = l.inner_rank - 1; j >= 0; --j) {
        off += (rr % l.inner_extent[j]) * l.x_inner[j];
        rr /= l.inner_extent[j];
      }
      const double v = read_cell(l.type, l.x, off);
      sum += v;
      if (r == 0 && !l.from_identity) {
        acc = v;
      } else if (l.op == RowOp::kSum) {
        acc = in_compute(l.type, acc + v);
      } else if (l.op == RowOp::kMax) {
        acc = std::isnan(acc) ? acc : std::isnan(v) ? v : acc < v ? v : acc;
      }
    }
    const double result =
        l.op == RowOp::kAverage ? in_compute(l.type, sum / static_cast<double>(inner)) : acc;
    write_cell(l.type, l.out, oo, result);
  }
  return 0;
}

// The device kernel over `box` on host memory through the interpreters; nullopt when a launch of
// an op they do not interpret was asked for.
std::optional<Buffer> run_interpreted(const OpSpec& op, const Range& box, std::uint32_t seed) {
  Buffers b = make_buffers(op, seed);
  const KernelCall call = make_call(op, box, b.host, nullptr);
  const DeviceKernel* k = device_kernel(op.kernel);
  set_pointwise_hook(&interpret_pointwise);
  set_rows_hook(&interpret_rows);
  bool interpreted = true;
  try {
    k->launch(call, DeviceContext{});
  } catch (const Error&) {
    interpreted = false;  // "not interpreted" comes back as a launch error
  }
  set_pointwise_hook(nullptr);
  set_rows_hook(nullptr);
  if (!interpreted) return std::nullopt;
  return std::move(b.host[output_index(op)]);
}

void expect_match(const OpSpec& op, const Range& box, const Tolerance& tol, const std::string& what,
                  std::uint32_t seed = 1) {
  if (!have_gpu()) {
    // Without a GPU: the device kernel must accept the call (supports() is host code), and where
    // the interpreters run its launches, give the reference's results.
    Buffers b = make_buffers(op, seed);
    const DeviceKernel* k = device_kernel(op.kernel);
    ASSERT_NE(k, nullptr) << op.kernel;
    const bool supported = k->supports(make_call(op, box, b.host, nullptr));
    EXPECT_TRUE(supported) << what << ": not supported";
    if (!supported || tol.bar != Bar::kExact) return;
    const std::optional<Buffer> host = run_interpreted(op, box, seed);
    if (!host) return;
    ++interpreted_cases();
    EXPECT_EQ(mismatch(*host, run_reference(op, box, seed), tol), "")
        << what << " (interpreted on the host)";
    return;
  }
  const Buffer ref = run_reference(op, box, seed);
  const Buffer gpu = run_device(op, box, seed);
  std::optional<Buffer> magnitude;
  DType compute = DType::kFloat32;
  if (tol.bar == Bar::kGemm) {
    magnitude = run_reference(op, box, seed, true);
    for (const PortSpec& p : op.ports) {
      if (!p.output && p.dtype == DType::kFloat64) compute = DType::kFloat64;
    }
  }
  const std::string m = mismatch(gpu, ref, tol, magnitude ? &*magnitude : nullptr, compute);
  EXPECT_EQ(m, "") << what << " (" << op.kernel << ", box " << fmt::format("{}", box.size())
                   << " points)";
}

// The whole index and shards of it: the first and last halves along every dim, and a middle box.
std::vector<Range> boxes(const Range& index) {
  std::vector<Range> out{index};
  for (std::size_t d = 0; d < index.rank(); ++d) {
    const std::int64_t lo = index.start()[d], hi = index.end()[d];
    if (hi - lo < 2) continue;
    const std::int64_t mid = lo + (hi - lo) / 2;
    out.push_back(index.with_dim(d, lo, mid));
    out.push_back(index.with_dim(d, mid, hi));
  }
  Range inner = index;
  for (std::size_t d = 0; d < index.rank(); ++d) {
    const std::int64_t lo = index.start()[d], hi = index.end()[d];
    if (hi - lo >= 3) inner = inner.with_dim(d, lo + 1, hi - 1);
  }
  out.push_back(inner);
  return out;
}

void expect_all_boxes(const OpSpec& op, const Tolerance& tol, const std::string& what) {
  for (const Range& box : boxes(op.index)) expect_match(op, box, tol, what);
}

const DType kFloats[] = {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kFloat16};

std::string name_of(DType t) {
  return std::string(ir::dtype_name(t));
}

// ---- pointwise --------------------------------------------------------------------------------

// x [-3:4, 2:9, 0:6] read through a box inside a larger buffer: the unary maps' index is x's box.
OpSpec unary_op(const std::string& kernel, DType t, double lo, double hi, bool specials) {
  OpSpec op{.kernel = kernel,
            .index = Range(Point{-3, 2, 0}, Point{4, 9, 6}),
            .names = {"d0", "d1", "d2"}};
  op.ports.push_back(PortSpec{.name = "x",
                              .dtype = t,
                              .range = Range(Point{-5, 1, -2}, Point{6, 9, 9}),
                              .ipf = identity_ipf(3),
                              .lo = lo,
                              .hi = hi,
                              .specials = specials});
  op.ports.push_back(PortSpec{.name = "result",
                              .output = true,
                              .dtype = t,
                              .range = Range(Point{-3, 2, 0}, Point{4, 9, 6}),
                              .ipf = identity_ipf(3)});
  return op;
}

TEST(GpuPointwise, UnaryMapsMatchTheReference) {
  struct Unary {
    const char* name;
    double lo, hi;
    double f64_ulps;  // CUDA's libm where the CPU calls glibc's (0: bitwise)
    double f32_ulps;
  };
  const Unary maps[] = {{"relu", -2, 2, 0, 0}, {"neg", -2, 2, 0, 0},       {"exp", -90, 90, 2, 0},
                        {"tanh", -6, 6, 3, 0}, {"sigmoid", -30, 30, 3, 0}, {"gelu", -16, 8, 8, 0},
                        {"sqrt", 0, 50, 0, 0}, {"log", 1e-3, 50, 4, 4},    {"floor", -9, 9, 0, 0},
                        {"ceil", -9, 9, 0, 0}, {"round", -9, 9, 0, 0}};
  for (const Unary& u : maps) {
    for (DType t : kFloats) {
      const bool specials = u.lo < 0;  // NaN, ±inf, ±0 (not into sqrt and log)
      const OpSpec op = unary_op(u.name, t, u.lo, u.hi, specials);
      Tolerance tol;
      const double ulps = t == DType::kFloat64 ? u.f64_ulps : u.f32_ulps;
      if (ulps > 0)
        tol = Tolerance{Bar::kUlps, t == DType::kFloat32 || t == DType::kFloat64 ? ulps : 1};
      expect_all_boxes(op, tol, fmt::format("{} {}", u.name, name_of(t)));
    }
  }
}

// Ports that are exactly the box (one dense run, 16-byte aligned: cudaMalloc's buffers) take the
// vectorised map: 16 bytes a thread, the elements past the last whole vector by the first block.
// Sizes with and without a tail, halves (the second one aligned or not) and the inner box (never
// aligned: the element-wise map) must give the reference's bits all the same.
TEST(GpuPointwise, DenseMapsMatchTheReferenceWithTheirTails) {
  struct Unary {
    const char* name;
    double lo, hi;
    double f64_ulps;
  };
  const Unary maps[] = {{"gelu", -16, 8, 8}, {"relu", -2, 2, 0}, {"exp", -90, 90, 2}};
  for (const std::int64_t n : {8, 1003, 4101}) {
    for (const Unary& u : maps) {
      for (DType t : kFloats) {
        OpSpec op{
            .kernel = u.name, .index = Range(Point{0, 0}, Point{3, n}), .names = {"d0", "d1"}};
        op.ports.push_back(PortSpec{.name = "x",
                                    .dtype = t,
                                    .range = op.index,
                                    .ipf = identity_ipf(2),
                                    .lo = u.lo,
                                    .hi = u.hi,
                                    .specials = true});
        op.ports.push_back(PortSpec{.name = "result",
                                    .output = true,
                                    .dtype = t,
                                    .range = op.index,
                                    .ipf = identity_ipf(2)});
        Tolerance tol;
        if (t == DType::kFloat64 && u.f64_ulps > 0) tol = Tolerance{Bar::kUlps, u.f64_ulps};
        expect_all_boxes(op, tol, fmt::format("dense {} {} × {}", u.name, name_of(t), n));
      }
    }
  }
}

TEST(GpuPointwise, IntegerMapsWrapAsTheCpuDoes) {
  for (DType t : {DType::kInt32, DType::kInt64}) {
    expect_all_boxes(unary_op("relu", t, -2, 2, false), {}, "relu int");
    expect_all_boxes(unary_op("neg", t, -2, 2, false), {}, "neg int");
  }
}

// a [3, 1, 5] at (-2, 0, 0) and b [4, 5] at (-9, 4) broadcast to [3, 4, 5] (numpy's rule).
OpSpec binary_op(const std::string& kernel, DType t, bool ties) {
  OpSpec op{.kernel = kernel, .index = Range::of_shape({3, 4, 5}), .names = {"d0", "d1", "d2"}};
  op.ports.push_back(PortSpec{.name = "a",
                              .dtype = t,
                              .range = Range(Point{-2, 0, 0}, Point{1, 1, 5}),
                              .ipf = ipf({{1, 0, 0}, {0, 0, 0}, {0, 0, 1}}, Point{-2, 0, 0}),
                              .ties = ties});
  op.ports.push_back(PortSpec{.name = "b",
                              .dtype = t,
                              .range = Range(Point{-9, 4}, Point{-5, 9}),
                              .ipf = ipf({{0, 1, 0}, {0, 0, 1}}, Point{-9, 4}),
                              .lo = 0.25,
                              .hi = 3,
                              .ties = ties});
  op.ports.push_back(PortSpec{.name = "result",
                              .output = true,
                              .dtype = t,
                              .range = Range::of_shape({3, 4, 5}),
                              .ipf = identity_ipf(3)});
  return op;
}

TEST(GpuPointwise, BroadcastingBinaryMapsMatchTheReference) {
  for (const char* name : {"add", "sub", "mul", "div", "maximum"}) {
    for (DType t : kFloats) {
      expect_all_boxes(binary_op(name, t, std::string(name) == "maximum"), {},
                       fmt::format("{} {}", name, name_of(t)));
    }
  }
  for (const char* name : {"add", "sub", "mul", "maximum"}) {
    for (DType t : {DType::kInt32, DType::kInt64}) {
      expect_all_boxes(binary_op(name, t, false), {}, fmt::format("{} {}", name, name_of(t)));
    }
  }
}

TEST(GpuPointwise, IntegerDivisionStaysOnTheHost) {
  const OpSpec op = binary_op("div", DType::kInt32, false);
  Buffers b = make_buffers(op, 1);
  const KernelCall call = make_call(op, op.index, b.host, nullptr);
  EXPECT_FALSE(device_kernel("div")->supports(call));
}

TEST(GpuPointwise, BiasAddMatchesTheReference) {
  for (DType t : kFloats) {
    OpSpec op{
        .kernel = "bias_add", .index = Range(Point{-40, 20}, Point{-31, 27}), .names = {"b", "n"}};
    op.ports.push_back(
        PortSpec{.name = "x", .dtype = t, .range = op.index, .ipf = identity_ipf(2)});
    op.ports.push_back(PortSpec{.name = "bias",
                                .dtype = t,
                                .range = Range(Point{3}, Point{10}),
                                .ipf = ipf({{0, 1}}, Point{3 - 20})});
    op.ports.push_back(PortSpec{
        .name = "result", .output = true, .dtype = t, .range = op.index, .ipf = identity_ipf(2)});
    expect_all_boxes(op, {}, fmt::format("bias_add {}", name_of(t)));
  }
}

TEST(GpuPointwise, CastRoundsOnceAsTheCpuDoes) {
  for (DType from : kFloats) {
    for (DType to : kFloats) {
      OpSpec op = unary_op("cast", from, -3, 3, true);
      op.ports[1].dtype = to;
      // Values that need rounding: f64 inputs with bits below every narrower type's ulp.
      expect_all_boxes(op, {}, fmt::format("cast {} -> {}", name_of(from), name_of(to)));
    }
  }
}

TEST(GpuPointwise, ScalarsAndFills) {
  for (DType t : kFloats) {
    OpSpec scale = unary_op("mul_scalar", t, -2, 2, true);
    scale.params = {{"factor", 0.3}, {"divisor", 3}};
    expect_all_boxes(scale, {}, fmt::format("mul_scalar {}", name_of(t)));
    OpSpec ones = unary_op("ones_like", t, -2, 2, false);
    ones.params = {{"value", 2.7}};
    expect_all_boxes(ones, {}, fmt::format("ones_like {}", name_of(t)));
    expect_all_boxes(unary_op("zeros_like", t, -2, 2, false), {},
                     fmt::format("zeros_like {}", name_of(t)));
  }
}

OpSpec grad_op(const std::string& kernel, const std::string& forward, DType t, double lo,
               double hi) {
  OpSpec op = unary_op(kernel, t, lo, hi, false);
  op.ports[0].name = forward;
  op.ports[0].ties = kernel == "relu_grad";  // exact zeros
  PortSpec g = op.ports[0];
  g.name = "d_result";
  g.lo = -2;
  g.hi = 2;
  g.ties = false;
  op.ports.insert(op.ports.begin() + 1, g);
  return op;
}

TEST(GpuPointwise, DerivativesMatchTheReference) {
  for (DType t : kFloats) {
    const std::string n = name_of(t);
    expect_all_boxes(grad_op("relu_grad", "x", t, -2, 2), {}, fmt::format("relu_grad {}", n));
    expect_all_boxes(grad_op("tanh_grad", "y", t, -1, 1), {}, fmt::format("tanh_grad {}", n));
    expect_all_boxes(grad_op("sigmoid_grad", "y", t, 0, 1), {}, fmt::format("sigmoid_grad {}", n));
    expect_all_boxes(grad_op("sqrt_grad", "y", t, 0.1, 4), {}, fmt::format("sqrt_grad {}", n));
    // float64 erfc and exp: CUDA's, not glibc's, each within a few ulps — but Φ(x) + x·φ(x)
    // cancels for x ≪ 0 (to ~φ(x)/x², a 1/|x|³ share of its terms: 512× at x = −8), so the
    // result's ulps grow by that much (the H100 run: 14 ulps at x ≈ −2.3). 4096 ulps is still
    // 1e-12 relative: a wrong formula is far outside it.
    expect_all_boxes(grad_op("gelu_grad", "x", t, -8, 8),
                     t == DType::kFloat64 ? Tolerance{Bar::kUlps, 4096} : Tolerance{Bar::kUlps, 1},
                     fmt::format("gelu_grad {}", n));
    for (const char* name : {"maximum_grad_a", "maximum_grad_b"}) {
      OpSpec op = grad_op(name, "a", t, -1, 1);
      op.ports[0].ties = true;  // a == b somewhere: the tie goes to a
      PortSpec b = op.ports[0];
      b.name = std::string(1, 'b');
      op.ports.insert(op.ports.begin() + 1, std::move(b));
      expect_all_boxes(op, {}, fmt::format("{} {}", name, n));
    }
  }
}

TEST(GpuPointwise, SgdUpdatesInFloat64) {
  for (DType t : kFloats) {
    OpSpec op = grad_op("sgd", "param", t, -2, 2);
    op.ports[1].name = std::string("grad");
    op.params = {{"lr", 0.1}, {"weight_decay", 0.01}};
    expect_all_boxes(op, {}, fmt::format("sgd {}", name_of(t)));
  }
}

// ---- layout copies ----------------------------------------------------------------------------

TEST(GpuCopies, TransposePermuteSliceExpand) {
  for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kInt64, DType::kFloat64}) {
    // transpose: result[i, j] = x[j, i]; x [5:12, -4:9], result [-4:9, 5:12].
    OpSpec tr{
        .kernel = "transpose", .index = Range(Point{-4, 5}, Point{9, 12}), .names = {"i", "j"}};
    tr.ports.push_back(PortSpec{.name = "x",
                                .dtype = t,
                                .range = Range(Point{5, -4}, Point{12, 9}),
                                .ipf = ipf({{0, 1}, {1, 0}}, Point{0, 0})});
    tr.ports.push_back(PortSpec{.name = "result",
                                .output = true,
                                .dtype = t,
                                .range = Range(Point{-4, 5}, Point{9, 12}),
                                .ipf = identity_ipf(2)});
    expect_all_boxes(tr, {}, fmt::format("transpose {}", name_of(t)));
    // permute (2, 0, 1) of x [2, 3, 4].
    OpSpec pm{.kernel = "permute", .index = Range::of_shape({4, 2, 3}), .names = {"a", "b", "c"}};
    pm.ports.push_back(PortSpec{.name = "x",
                                .dtype = t,
                                .range = Range::of_shape({2, 3, 4}),
                                .ipf = ipf({{0, 1, 0}, {0, 0, 1}, {1, 0, 0}}, Point{0, 0, 0})});
    pm.ports.push_back(PortSpec{.name = "result",
                                .output = true,
                                .dtype = t,
                                .range = Range::of_shape({4, 2, 3}),
                                .ipf = identity_ipf(3)});
    expect_all_boxes(pm, {}, fmt::format("permute {}", name_of(t)));
    // slice: result [0:6, 0:4] = x[3:9, 2:6] of x [0:12, 0:8].
    OpSpec sl{.kernel = "slice", .index = Range::of_shape({6, 4}), .names = {"i", "j"}};
    sl.ports.push_back(PortSpec{.name = "x",
                                .dtype = t,
                                .range = Range::of_shape({12, 8}),
                                .ipf = ipf({{1, 0}, {0, 1}}, Point{3, 2})});
    sl.ports.push_back(PortSpec{.name = "result",
                                .output = true,
                                .dtype = t,
                                .range = Range::of_shape({6, 4}),
                                .ipf = identity_ipf(2)});
    expect_all_boxes(sl, {}, fmt::format("slice {}", name_of(t)));
    // expand: result [4, 5, 6] from x [4, 1, 6].
    OpSpec ex{.kernel = "expand", .index = Range::of_shape({4, 5, 6}), .names = {"a", "n", "b"}};
    ex.ports.push_back(PortSpec{.name = "x",
                                .dtype = t,
                                .range = Range::of_shape({4, 1, 6}),
                                .ipf = ipf({{1, 0, 0}, {0, 0, 0}, {0, 0, 1}}, Point{0, 0, 0})});
    ex.ports.push_back(PortSpec{.name = "result",
                                .output = true,
                                .dtype = t,
                                .range = Range::of_shape({4, 5, 6}),
                                .ipf = identity_ipf(3)});
    expect_all_boxes(ex, {}, fmt::format("expand {}", name_of(t)));
  }
}

TEST(GpuCopies, PadIntoNegativeCoordinates) {
  for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFloat64, DType::kInt32}) {
    // x [2, 3, 4, 5] at (0, 0, -2, 3) padded by 2: result (0, 0, -4, 1) to (2, 3, 4, 10).
    OpSpec op{.kernel = "pad",
              .index = Range::of_shape({2, 3, 8, 9}),
              .names = {"lead0", "lead1", "ph", "pw"},
              .params = {{"padding", 2}, {"value", t == DType::kInt32 ? 3.0 : 0.5}}};
    op.ports.push_back(PortSpec{.name = "x",
                                .dtype = t,
                                .range = Range(Point{0, 0, -2, 3}, Point{2, 3, 2, 8}),
                                .ipf = ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
                                           Point{0, 0, -2, 3}, Point{1, 1, 4, 5})});
    op.ports.push_back(PortSpec{
        .name = "result",
        .output = true,
        .dtype = t,
        .range = Range(Point{0, 0, -4, 1}, Point{2, 3, 4, 10}),
        .ipf = ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}}, Point{0, 0, -4, 1})});
    expect_all_boxes(op, {}, fmt::format("pad {}", name_of(t)));
  }
}

TEST(GpuCopies, UnsliceZeroesOutsideTheSlice) {
  for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kInt64}) {
    // x [3, 4, 5] placed at 2 of a dim of 9: result [3, 9, 5]; x's cell is its whole dim 1.
    OpSpec op{.kernel = "unslice",
              .index = Range::of_shape({3, 9, 5}),
              .names = {"pre", "n", "post"},
              .params = {{"dim", 1}, {"start", 2}, {"size", 9}}};
    op.ports.push_back(
        PortSpec{.name = "x",
                 .dtype = t,
                 .range = Range::of_shape({3, 4, 5}),
                 .ipf = ipf({{1, 0, 0}, {0, 0, 0}, {0, 0, 1}}, Point{0, 0, 0}, Point{1, 4, 1})});
    op.ports.push_back(PortSpec{.name = "result",
                                .output = true,
                                .dtype = t,
                                .range = Range::of_shape({3, 9, 5}),
                                .ipf = identity_ipf(3)});
    expect_all_boxes(op, {}, fmt::format("unslice {}", name_of(t)));
  }
}

TEST(GpuCopies, CellsWiderThanOneElementStayOnTheHost) {
  OpSpec op{.kernel = "reshape", .index = Range::of_shape({3}), .names = {"i"}};
  op.ports.push_back(
      PortSpec{.name = "x", .range = Range::of_shape({12}), .ipf = ipf({{4}}, Point{0}, Point{4})});
  op.ports.push_back(PortSpec{.name = "result",
                              .output = true,
                              .range = Range::of_shape({3, 4}),
                              .ipf = ipf({{1}, {0}}, Point{0, 0}, Point{1, 4})});
  Buffers b = make_buffers(op, 1);
  EXPECT_FALSE(device_kernel("reshape")->supports(make_call(op, op.index, b.host, nullptr)));
}

// ---- GEMMs ------------------------------------------------------------------------------------

// linear: x [batch, in] at (-40, 20) inside a larger buffer, w [out, in], bias [out]; index
// [batch, out, in] (in a sum).
OpSpec linear_op(DType t, DType out_t, std::int64_t batch, std::int64_t out, std::int64_t in,
                 bool bias) {
  OpSpec op{.kernel = bias ? "linear" : "linear_nobias",
            .index = Range(Point{-40, 0, 20}, Point{-40 + batch, out, 20 + in}),
            .names = {"batch", "out", "in"},
            .reductions = {{"in", ir::Monoid::kSum}}};
  op.ports.push_back(PortSpec{.name = "x",
                              .dtype = t,
                              .range = Range(Point{-42, 18}, Point{-40 + batch + 3, 20 + in + 5}),
                              .ipf = ipf({{1, 0, 0}, {0, 0, 1}}, Point{0, 0})});
  op.ports.push_back(PortSpec{.name = "w",
                              .dtype = t,
                              .range = Range::of_shape({out, in}),
                              .ipf = ipf({{0, 1, 0}, {0, 0, 1}}, Point{0, -20})});
  if (bias) {
    op.ports.push_back(PortSpec{.name = "bias",
                                .dtype = out_t,
                                .range = Range::of_shape({out}),
                                .ipf = ipf({{0, 1, 0}}, Point{0})});
  }
  op.ports.push_back(PortSpec{.name = "result",
                              .output = true,
                              .dtype = out_t,
                              .range = Range(Point{-40, 0}, Point{-40 + batch, out}),
                              .ipf = ipf({{1, 0, 0}, {0, 1, 0}}, Point{0, 0})});
  return op;
}

TEST(GpuGemm, LinearMatchesTheReferenceOnShardsAndKRanges) {
  for (DType t : kFloats) {
    for (bool bias : {true, false}) {
      const OpSpec op = linear_op(t, t, 37, 19, 45, bias);
      for (const Range& box : boxes(op.index)) {
        expect_match(op, box, {Bar::kGemm, 0, box.extent(2)},
                     fmt::format("linear {} bias {}", name_of(t), bias));
      }
    }
  }
}

TEST(GpuGemm, SixteenBitInputsMayWriteFloat32Partials) {
  for (DType t : {DType::kBFloat16, DType::kFloat16}) {
    const OpSpec op = linear_op(t, DType::kFloat32, 9, 16, 64, false);
    // The K-range shards of a split reduction: each writes its own partial sums.
    for (std::int64_t k0 : {20, 36, 52}) {
      const Range box = op.index.with_dim(2, k0, k0 + 16);
      expect_match(op, box, {Bar::kGemm, 0, 16}, fmt::format("f32 partials of {}", name_of(t)));
    }
  }
}

TEST(GpuGemm, LinearWithTwoBatchDimsThatDoNotMerge) {
  for (DType t : {DType::kFloat32, DType::kFloat64}) {
    OpSpec op{.kernel = "linear",
              .index = Range(Point{0, -1, 0, 0}, Point{3, 4, 7, 9}),
              .names = {"batch0", "batch1", "out", "in"},
              .reductions = {{"in", ir::Monoid::kSum}}};
    op.ports.push_back(
        PortSpec{.name = "x",
                 .dtype = t,
                 .range = Range(Point{0, -1, 0}, Point{3, 4, 9}),
                 .ipf = ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}}, Point{0, 0, 0})});
    op.ports.push_back(PortSpec{.name = "w",
                                .dtype = t,
                                .range = Range::of_shape({7, 9}),
                                .ipf = ipf({{0, 0, 1, 0}, {0, 0, 0, 1}}, Point{0, 0})});
    op.ports.push_back(PortSpec{.name = "bias",
                                .dtype = t,
                                .range = Range::of_shape({7}),
                                .ipf = ipf({{0, 0, 1, 0}}, Point{0})});
    op.ports.push_back(
        PortSpec{.name = "result",
                 .output = true,
                 .dtype = t,
                 .range = Range(Point{0, -1, 0}, Point{3, 4, 7}),
                 .ipf = ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}, Point{0, 0, 0})});
    for (const Range& box : boxes(op.index)) {
      expect_match(op, box, {Bar::kGemm, 0, box.extent(3)},
                   fmt::format("linear two batch dims {}", name_of(t)));
    }
  }
}

TEST(GpuGemm, LinearWithTheReductionInsideTheCells) {
  // in of extent 1 in the index, each cell a window of 24 along in.
  OpSpec op{.kernel = "linear_nobias",
            .index = Range::of_shape({10, 6, 1}),
            .names = {"batch", "out", "in"},
            .reductions = {{"in", ir::Monoid::kSum}}};
  op.ports.push_back(PortSpec{.name = "x",
                              .range = Range::of_shape({10, 24}),
                              .ipf = ipf({{1, 0, 0}, {0, 0, 24}}, Point{0, 0}, Point{1, 24})});
  op.ports.push_back(PortSpec{.name = "w",
                              .range = Range::of_shape({6, 24}),
                              .ipf = ipf({{0, 1, 0}, {0, 0, 24}}, Point{0, 0}, Point{1, 24})});
  op.ports.push_back(PortSpec{.name = "result",
                              .output = true,
                              .range = Range::of_shape({10, 6}),
                              .ipf = ipf({{1, 0, 0}, {0, 1, 0}}, Point{0, 0})});
  for (const Range& box : boxes(op.index)) expect_match(op, box, {Bar::kGemm, 0, 24}, "windowed k");
}

// matmul: a [2, 1, 5, 6] at (-3, 0, 0, 0), b [3, 6, 4] at (0, 10, 0): batch [2, 3] broadcast.
OpSpec matmul_op(DType t, bool transposed_result) {
  OpSpec op{.kernel = "matmul",
            .index = Range::of_shape({2, 3, 5, 4, 6}),
            .names = {"batch0", "batch1", "m", "n", "k"},
            .reductions = {{"k", ir::Monoid::kSum}}};
  op.ports.push_back(
      PortSpec{.name = "a",
               .dtype = t,
               .range = Range(Point{-3, 0, 0, 0}, Point{-1, 1, 5, 6}),
               .ipf = ipf({{1, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 0, 1}},
                          Point{-3, 0, 0, 0})});
  op.ports.push_back(
      PortSpec{.name = "b",
               .dtype = t,
               .range = Range(Point{0, 10, 0}, Point{3, 16, 4}),
               .ipf = ipf({{0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 1, 0}}, Point{0, 10, 0})});
  if (transposed_result) {
    // result[b0, b1, n, m]: a column-major C (the GEMM's direct form).
    op.ports.push_back(
        PortSpec{.name = "result",
                 .output = true,
                 .dtype = t,
                 .range = Range::of_shape({2, 3, 4, 5}),
                 .ipf = ipf({{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 0, 1, 0}, {0, 0, 1, 0, 0}},
                            Point{0, 0, 0, 0})});
  } else {
    op.ports.push_back(
        PortSpec{.name = "result",
                 .output = true,
                 .dtype = t,
                 .range = Range::of_shape({2, 3, 5, 4}),
                 .ipf = ipf({{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 1, 0}},
                            Point{0, 0, 0, 0})});
  }
  return op;
}

TEST(GpuGemm, BatchedMatmulWithBroadcastBatchDims) {
  for (DType t : kFloats) {
    for (bool transposed : {false, true}) {
      const OpSpec op = matmul_op(t, transposed);
      for (const Range& box : boxes(op.index)) {
        expect_match(op, box, {Bar::kGemm, 0, box.extent(4)},
                     fmt::format("matmul {} transposed result {}", name_of(t), transposed));
      }
    }
  }
}

TEST(GpuGemm, StridedBatchMatmul) {
  // a [8, 33, 20], b [8, 20, 17]: one strided-batch cuBLASLt call.
  OpSpec op{.kernel = "matmul",
            .index = Range::of_shape({8, 33, 17, 20}),
            .names = {"batch", "m", "n", "k"},
            .reductions = {{"k", ir::Monoid::kSum}}};
  op.ports.push_back(
      PortSpec{.name = "a",
               .range = Range::of_shape({8, 33, 20}),
               .ipf = ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}}, Point{0, 0, 0})});
  op.ports.push_back(
      PortSpec{.name = "b",
               .range = Range::of_shape({8, 20, 17}),
               .ipf = ipf({{1, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 1, 0}}, Point{0, 0, 0})});
  op.ports.push_back(
      PortSpec{.name = "result",
               .output = true,
               .range = Range::of_shape({8, 33, 17}),
               .ipf = ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}, Point{0, 0, 0})});
  for (const Range& box : boxes(op.index)) {
    expect_match(op, box, {Bar::kGemm, 0, box.extent(3)}, "strided batch matmul");
  }
}

TEST(GpuGemm, LinearGradWSumsOverTheBatch) {
  for (DType t : kFloats) {
    // result[o, i] = Σ_b d_result[b, o]·x[b, i]; index [batch, out, in], batch the reduction.
    OpSpec op{.kernel = "linear_grad_w",
              .index = Range(Point{-30, 0, 0}, Point{34, 12, 19}),
              .names = {"batch", "out", "in"},
              .reductions = {{"batch", ir::Monoid::kSum}}};
    op.ports.push_back(PortSpec{.name = "x",
                                .dtype = t,
                                .range = Range(Point{-30, 0}, Point{34, 19}),
                                .ipf = ipf({{1, 0, 0}, {0, 0, 1}}, Point{0, 0})});
    op.ports.push_back(PortSpec{.name = "d_result",
                                .dtype = t,
                                .range = Range(Point{-30, 0}, Point{34, 12}),
                                .ipf = ipf({{1, 0, 0}, {0, 1, 0}}, Point{0, 0})});
    op.ports.push_back(PortSpec{.name = "result",
                                .output = true,
                                .dtype = t,
                                .range = Range::of_shape({12, 19}),
                                .ipf = ipf({{0, 1, 0}, {0, 0, 1}}, Point{0, 0})});
    for (const Range& box : boxes(op.index)) {
      expect_match(op, box, {Bar::kGemm, 0, box.extent(0)},
                   fmt::format("linear_grad_w {}", name_of(t)));
    }
  }
}

TEST(GpuGemm, IntegerContractionsStayOnTheHost) {
  const OpSpec op = linear_op(DType::kInt64, DType::kInt64, 5, 3, 4, true);
  Buffers b = make_buffers(op, 1);
  EXPECT_FALSE(device_kernel("linear")->supports(make_call(op, op.index, b.host, nullptr)));
}

// ---- rows: folds, moments, softmax -------------------------------------------------------------

TEST(GpuRows, FoldsAreBitwiseTheCpusOrder) {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kFloat16,
                  DType::kInt32, DType::kInt64}) {
    // sum over dim 1 of x [5, 9, 3] at (-4, 0, 3): index [pre, post, reduced].
    OpSpec sum{.kernel = "sum",
               .index = Range::of_shape({5, 3, 9}),
               .names = {"pre", "post", "reduced"},
               .reductions = {{"reduced", ir::Monoid::kSum}},
               .params = {{"dim", 1}}};
    sum.ports.push_back(PortSpec{.name = "x",
                                 .dtype = t,
                                 .range = Range(Point{-4, 0, 3}, Point{1, 9, 6}),
                                 .ipf = ipf({{1, 0, 0}, {0, 0, 1}, {0, 1, 0}}, Point{-4, 0, 3}),
                                 .specials = t == DType::kFloat32});
    sum.ports.push_back(PortSpec{.name = "result",
                                 .output = true,
                                 .dtype = t,
                                 .range = Range::of_shape({5, 3}),
                                 .ipf = ipf({{1, 0, 0}, {0, 1, 0}}, Point{0, 0})});
    expect_all_boxes(sum, {}, fmt::format("sum {}", name_of(t)));
    OpSpec max = sum;
    max.kernel = "max";
    max.reductions = {{"reduced", ir::Monoid::kMax}};
    expect_all_boxes(max, {}, fmt::format("max {}", name_of(t)));
    // reduce: partials [4, 3, 5] over the leading block dim, each monoid.
    for (const char* monoid : {"sum", "prod", "max", "min"}) {
      OpSpec red{.kernel = "reduce",
                 .index = Range::of_shape({3, 5, 4}),
                 .names = {"d0", "d1", "block"},
                 .reductions = {{"block", ir::Monoid::kSum}},
                 .params = {{"op", monoid}}};
      red.ports.push_back(PortSpec{.name = "x",
                                   .dtype = t,
                                   .range = Range::of_shape({4, 3, 5}),
                                   .ipf = ipf({{0, 0, 1}, {1, 0, 0}, {0, 1, 0}}, Point{0, 0, 0})});
      red.ports.push_back(PortSpec{.name = "result",
                                   .output = true,
                                   .dtype = t,
                                   .range = Range::of_shape({3, 5}),
                                   .ipf = ipf({{1, 0, 0}, {0, 1, 0}}, Point{0, 0})});
      expect_all_boxes(red, {}, fmt::format("reduce {} {}", monoid, name_of(t)));
    }
  }
}

TEST(GpuRows, SumToStartsFromZero) {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kInt64}) {
    // x [4, 5, 6] summed to [5, 1]: dims 0 and 2 reduced, in the CPU's row-major order.
    OpSpec op{.kernel = "sum_to",
              .index = Range::of_shape({4, 5, 6}),
              .names = {"d0", "d1", "d2"},
              .params = {{"shape", {5, 1}}}};
    op.ports.push_back(PortSpec{.name = "x",
                                .dtype = t,
                                .range = Range::of_shape({4, 5, 6}),
                                .ipf = identity_ipf(3),
                                .specials = t == DType::kFloat32});
    op.ports.push_back(PortSpec{.name = "result",
                                .output = true,
                                .dtype = t,
                                .range = Range::of_shape({5, 1}),
                                .ipf = ipf({{0, 1, 0}, {0, 0, 0}}, Point{0, 0})});
    expect_all_boxes(op, {}, fmt::format("sum_to {}", name_of(t)));
  }
}

TEST(GpuRows, PoolsAreBitwiseTheCpus) {
  for (DType t : kFloats) {
    for (const char* kernel : {"max_pool2d", "avg_pool2d"}) {
      // x [2, 3, 11, 9] in a larger buffer, 3×3 windows, stride 2: index [n, c, oh, ow].
      OpSpec op{.kernel = kernel,
                .index = Range::of_shape({2, 3, 5, 4}),
                .names = {"n", "c", "oh", "ow"},
                .params = {{"kernel", 3}, {"stride", 2}}};
      op.ports.push_back(
          PortSpec{.name = "x",
                   .dtype = t,
                   .range = Range::of_shape({2, 4, 12, 10}),
                   .ipf = ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 2, 0}, {0, 0, 0, 2}},
                              Point{0, 1, 1, 1}, Point{1, 1, 3, 3}),
                   .specials = t == DType::kFloat32});
      op.ports.push_back(PortSpec{.name = "result",
                                  .output = true,
                                  .dtype = t,
                                  .range = Range::of_shape({2, 3, 5, 4}),
                                  .ipf = identity_ipf(4)});
      expect_all_boxes(op, {}, fmt::format("{} {}", kernel, name_of(t)));
    }
  }
}

TEST(GpuRows, FoldOverTheCellWindow) {
  // sum over dim 1 with the reduced dim inside x's cells (window 11).
  OpSpec op{.kernel = "sum",
            .index = Range::of_shape({6, 4, 1}),
            .names = {"pre", "post", "reduced"},
            .reductions = {{"reduced", ir::Monoid::kSum}}};
  op.ports.push_back(
      PortSpec{.name = "x",
               .range = Range::of_shape({6, 11, 4}),
               .ipf = ipf({{1, 0, 0}, {0, 0, 0}, {0, 1, 0}}, Point{0, 0, 0}, Point{1, 11, 1})});
  op.ports.push_back(PortSpec{.name = "result",
                              .output = true,
                              .range = Range::of_shape({6, 4}),
                              .ipf = ipf({{1, 0, 0}, {0, 1, 0}}, Point{0, 0})});
  expect_all_boxes(op, {}, "sum over a window");
}

TEST(GpuRows, MeanAndVarianceAreBitwiseTheCpus) {
  for (DType t : kFloats) {
    for (const char* kernel : {"mean", "variance"}) {
      // x [6, 10, 4] at (0, -3, 2), dim 1: index [pre, post].
      OpSpec op{.kernel = kernel,
                .index = Range(Point{0, 2}, Point{6, 6}),
                .names = {"pre", "post"},
                .params = {{"dim", 1}}};
      op.ports.push_back(
          PortSpec{.name = "x",
                   .dtype = t,
                   .range = Range(Point{0, -3, 2}, Point{6, 7, 6}),
                   .ipf = ipf({{1, 0}, {0, 0}, {0, 1}}, Point{0, -3, 0}, Point{1, 10, 1}),
                   .lo = 3,
                   .hi = 5});
      op.ports.push_back(
          PortSpec{.name = "result",
                   .output = true,
                   .dtype = t,
                   .range = Range(Point{0, 0, 2}, Point{6, 1, 6}),
                   .ipf = ipf({{1, 0}, {0, 0}, {0, 1}}, Point{0, 0, 0}, Point{1, 1, 1})});
      expect_all_boxes(op, {}, fmt::format("{} {}", kernel, name_of(t)));
    }
  }
}

OpSpec softmax_op(DType t, std::int64_t n, bool specials) {
  // x [3, 5, n] at (-40, -7, 20): one row per index point (window n along the last dim).
  OpSpec op{
      .kernel = "softmax", .index = Range(Point{-40, -7}, Point{-37, -2}), .names = {"b", "r"}};
  op.ports.push_back(PortSpec{.name = "x",
                              .dtype = t,
                              .range = Range(Point{-40, -7, 20}, Point{-37, -2, 20 + n}),
                              .ipf = ipf({{1, 0}, {0, 1}, {0, 0}}, Point{0, 0, 20}, Point{1, 1, n}),
                              .lo = -40,
                              .hi = 40,
                              .specials = specials});
  op.ports.push_back(
      PortSpec{.name = "result",
               .output = true,
               .dtype = t,
               .range = Range(Point{-40, -7, 20}, Point{-37, -2, 20 + n}),
               .ipf = ipf({{1, 0}, {0, 1}, {0, 0}}, Point{0, 0, 20}, Point{1, 1, n})});
  return op;
}

TEST(GpuRows, SoftmaxWithinAnUlpOfTheCpu) {
  for (DType t : kFloats) {
    // The sum's order differs from the CPU's 8 lanes: an ulp (f64: CUDA's exp, 4 ulp).
    const Tolerance tol{Bar::kUlps, t == DType::kFloat64 ? 4.0 : 1.0};
    for (std::int64_t n : {9, 1000}) {
      expect_all_boxes(softmax_op(t, n, false), tol, fmt::format("softmax {} n {}", name_of(t), n));
    }
    // A row with NaN, ±inf: NaN rows, as on the CPU.
    expect_match(softmax_op(t, 40, true), softmax_op(t, 40, true).index, tol,
                 fmt::format("softmax with specials {}", name_of(t)));
  }
}

// ---- conv2d -----------------------------------------------------------------------------------

// x [n, c, ih, iw] inside a buffer with a margin, w [o, c, kh, kw]; index [n, o, oh, ow, c].
OpSpec conv_op(DType t, std::int64_t n, std::int64_t c, std::int64_t ih, std::int64_t iw,
               std::int64_t o, std::int64_t kh, std::int64_t kw, std::int64_t s,
               std::int64_t margin) {
  const std::int64_t oh = (ih - kh) / s + 1, ow = (iw - kw) / s + 1;
  OpSpec op{.kernel = "conv2d",
            .index = Range::of_shape({n, o, oh, ow, c}),
            .names = {"n", "o", "oh", "ow", "c"},
            .reductions = {{"c", ir::Monoid::kSum}},
            .params = {{"stride", s}}};
  op.ports.push_back(
      PortSpec{.name = "x",
               .dtype = t,
               .range = Range::of_shape({n + margin, c + margin, ih + 2 * margin, iw + 2 * margin}),
               .ipf = ipf({{1, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, s, 0, 0}, {0, 0, 0, s, 0}},
                          Point{0, margin, margin, margin}, Point{1, 1, kh, kw})});
  op.ports.push_back(
      PortSpec{.name = "w",
               .dtype = t,
               .range = Range::of_shape({o, c, kh, kw}),
               .ipf = ipf({{0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}},
                          Point{0, 0, 0, 0}, Point{1, 1, kh, kw})});
  op.ports.push_back(
      PortSpec{.name = "result",
               .output = true,
               .dtype = t,
               .range = Range::of_shape({n, o, oh, ow}),
               .ipf = ipf({{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 1, 0}},
                          Point{0, 0, 0, 0})});
  return op;
}

TEST(GpuConv, Conv2dMatchesTheReferenceOnShards) {
  for (DType t : kFloats) {
    for (const auto& [kh, s, margin] :
         std::vector<std::array<std::int64_t, 3>>{{3, 1, 0}, {3, 2, 1}, {1, 1, 2}, {5, 3, 0}}) {
      const OpSpec op = conv_op(t, 2, 6, 13, 11, 5, kh, kh, s, margin);
      for (const Range& box : boxes(op.index)) {  // the c halves: partial sums, unpacked filters
        expect_match(op, box, {Bar::kGemm, 0, box.extent(4) * kh * kh},
                     fmt::format("conv2d {} k {} stride {} margin {}", name_of(t), kh, s, margin));
      }
    }
  }
}

TEST(GpuConv, ThePlainConvolutionRunsEveryCall) {
  force_simple_conv(true);
  for (DType t : kFloats) {
    const OpSpec op = conv_op(t, 2, 6, 13, 11, 5, 3, 3, 2, 1);
    for (const Range& box : boxes(op.index)) {
      expect_match(op, box, {Bar::kGemm, 0, box.extent(4) * 9},
                   fmt::format("plain conv2d {}", name_of(t)));
    }
  }
  force_simple_conv(false);
}

// ---- fused ------------------------------------------------------------------------------------

// A fused linear (or linear_nobias + bias_add) followed by `tail` elementwise stages, over
// linear's index [batch, out, in]; x, w, b are the fused operation's inputs s0_x, s0_w, s0_b.
OpSpec fused_op(DType t, const std::vector<std::string>& tail, bool split_bias = false) {
  using rewrite::FusedPort;
  using rewrite::FusedStage;
  const std::int64_t batch = 23, out = 17, in = 40;
  const auto id3 = AffineMap::from_rows({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, Point{0, 0, 0});
  const auto drop_in = AffineMap::from_rows({{1, 0, 0}, {0, 1, 0}}, Point{0, 0});
  std::vector<FusedStage> stages;
  FusedStage gemm{.kernel = split_bias ? "linear_nobias" : "linear",
                  .label = "Y/linear",
                  .params = nlohmann::json::object(),
                  .index_names = {"batch", "out", "in"},
                  .reductions = {{"in", ir::Monoid::kSum}},
                  .index_map = id3};
  gemm.inputs.push_back(FusedPort{"x", "s0_x", ipf({{1, 0, 0}, {0, 0, 1}}, Point{0, 0}), {}});
  gemm.inputs.push_back(FusedPort{"w", "s0_w", ipf({{0, 1, 0}, {0, 0, 1}}, Point{0, 0}), {}});
  if (!split_bias) gemm.inputs.push_back(FusedPort{"bias", "s0_b", ipf({{0, 1, 0}}, Point{0}), {}});
  gemm.outputs.push_back(FusedPort{"result", "", ipf({{1, 0, 0}, {0, 1, 0}}, Point{0, 0}), t});
  stages.push_back(gemm);
  std::vector<std::string> rest = tail;
  if (split_bias) rest.insert(rest.begin(), "bias_add");
  for (std::size_t i = 0; i < rest.size(); ++i) {
    FusedStage st{.kernel = rest[i],
                  .label = fmt::format("Y/{}", i),
                  .params = nlohmann::json::object(),
                  .index_names = {"d0", "d1"},
                  .reductions = {},
                  .index_map = drop_in};
    st.inputs.push_back(FusedPort{"x", "", identity_ipf(2), {}});
    if (rest[i] == "bias_add")
      st.inputs.push_back(FusedPort{"bias", "s0_b", ipf({{0, 1}}, Point{0}), {}});
    const bool last = i + 1 == rest.size();
    st.outputs.push_back(FusedPort{"result", last ? "result" : "", identity_ipf(2),
                                   last ? std::nullopt : std::optional<ir::LoomDType>(t)});
    stages.push_back(st);
  }
  OpSpec op{.kernel = "fused",
            .index = Range::of_shape({batch, out, in}),
            .names = {"batch", "out", "in"},
            .reductions = {{"in", ir::Monoid::kSum}},
            .params = rewrite::fused_params(stages)};
  op.ports.push_back(PortSpec{.name = "s0_x",
                              .dtype = t,
                              .range = Range::of_shape({batch, in}),
                              .ipf = ipf({{1, 0, 0}, {0, 0, 1}}, Point{0, 0})});
  op.ports.push_back(PortSpec{.name = "s0_w",
                              .dtype = t,
                              .range = Range::of_shape({out, in}),
                              .ipf = ipf({{0, 1, 0}, {0, 0, 1}}, Point{0, 0})});
  op.ports.push_back(PortSpec{.name = "s0_b",
                              .dtype = t,
                              .range = Range::of_shape({out}),
                              .ipf = ipf({{0, 1, 0}}, Point{0})});
  op.ports.push_back(PortSpec{.name = "result",
                              .output = true,
                              .dtype = t,
                              .range = Range::of_shape({batch, out}),
                              .ipf = ipf({{1, 0, 0}, {0, 1, 0}}, Point{0, 0})});
  return op;
}

TEST(GpuFused, GemmThenElementwiseStages) {
  for (DType t : kFloats) {
    for (const auto& [tail, split] : std::vector<std::pair<std::vector<std::string>, bool>>{
             {{"relu"}, false},  // epilogue
             {{"gelu"}, false},  // exact gelu pass
             {{"relu"}, true},   // 3 stages
             {{"tanh", "neg"}, false}}) {
      const OpSpec op = fused_op(t, tail, split);
      // gelu and tanh after a GEMM: the GEMM's rounding differences pass through f (|f'| ≤ 1.13).
      const Range whole = op.index;
      for (const Range& box : {whole, whole.with_dim(0, 0, 11), whole.with_dim(1, 5, 17)}) {
        expect_match(op, box, {Bar::kGemm, 0, 2 * box.extent(2)},
                     fmt::format("fused {} {} split bias {}", name_of(t), tail[0], split));
      }
    }
  }
}

TEST(GpuFused, AStageWithoutADeviceKernelMakesItAHostStep) {
  const OpSpec op = fused_op(DType::kFloat32, {"no_such_kernel"});
  Buffers b = make_buffers(op, 1);
  EXPECT_FALSE(device_kernel("fused")->supports(make_call(op, op.index, b.host, nullptr)));
}

TEST(GpuGemm, ThePlainGemmRunsEveryPlan) {
  // The fallback where cuBLASLt has no algorithm, forced: the same plans, the same bars.
  force_simple_gemm(true);
  for (DType t : kFloats) {
    const OpSpec lin = linear_op(t, t, 37, 19, 45, true);
    for (const Range& box : boxes(lin.index)) {
      expect_match(lin, box, {Bar::kGemm, 0, box.extent(2)},
                   fmt::format("plain linear {}", name_of(t)));
    }
    for (bool transposed : {false, true}) {
      const OpSpec mm = matmul_op(t, transposed);
      for (const Range& box : boxes(mm.index)) {
        expect_match(mm, box, {Bar::kGemm, 0, box.extent(4)},
                     fmt::format("plain matmul {}", name_of(t)));
      }
    }
    const OpSpec fused = fused_op(t, {"relu"}, false);
    expect_match(fused, fused.index, {Bar::kGemm, 0, 2 * fused.index.extent(2)},
                 fmt::format("plain fused relu {}", name_of(t)));
  }
  force_simple_gemm(false);
}

// ---- faults: the comparison must catch wrong results ------------------------------------------

TEST(Faults, AShiftedBoxIsCaught) {
  SKIP_WITHOUT_GPU();
  const OpSpec op = unary_op("exp", DType::kFloat32, -2, 2, false);
  const Range box = op.index.with_dim(0, -3, 0);
  const Range shifted = op.index.with_dim(0, -2, 1);
  const Buffer ref = run_reference(op, box, 1);
  const Buffer gpu = run_device(op, box, 1, &shifted);
  EXPECT_NE(mismatch(gpu, ref, {}), "");
  // And the linear kernel's K range one step off.
  const OpSpec lin = linear_op(DType::kFloat32, DType::kFloat32, 7, 5, 12, false);
  const Range k_box = lin.index.with_dim(2, 20, 26);
  const Range k_shifted = lin.index.with_dim(2, 21, 27);
  const Buffer lin_ref = run_reference(lin, k_box, 1);
  const Buffer lin_gpu = run_device(lin, k_box, 1, &k_shifted);
  const Buffer mag = run_reference(lin, k_box, 1, true);
  EXPECT_NE(mismatch(lin_gpu, lin_ref, {Bar::kGemm, 0, 6}, &mag), "");
}

TEST(Faults, TheBarsAreTightEnoughToSeeOneUlpInExactKernels) {
  SKIP_WITHOUT_GPU();
  const OpSpec op = unary_op("gelu", DType::kFloat32, -3, 3, false);
  const Buffer ref = run_reference(op, op.index, 1);
  Buffer off = run_device(op, op.index, 1);
  auto v = off.values<float>();
  v[5] = std::nextafter(v[5], 100.0F);
  EXPECT_NE(mismatch(off, ref, {}), "");
}

// Without a GPU, the interpreters run the exact cases (each test runs alone under ctest, so this
// one runs some itself): they must not all answer "not interpreted".
TEST(HostInterpreter, RunsTheExactCases) {
  if (have_gpu()) GTEST_SKIP() << "the GPU runs the kernels";
  const int before = interpreted_cases();
  expect_all_boxes(binary_op("add", DType::kFloat32, false), {}, "add f32");
  expect_all_boxes(unary_op("relu", DType::kBFloat16, -2, 2, true), {}, "relu bf16");
  EXPECT_GE(interpreted_cases(), before + 8);
}

}  // namespace
}  // namespace tapestry::gpu::kernels
