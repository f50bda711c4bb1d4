// The pointwise engine (pointwise.h): one thread per index point, each port's cell located by its
// element steps; the formulas are the CPU's (runtime/kernels/scalar_ops.h, scalar_math.h).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "device_elements.cuh"
#include "pointwise.h"
#include "runtime/kernels/scalar_math.h"

namespace tapestry::gpu::kernels {

namespace {

namespace scalar = runtime::kernels::scalar;

template <typename C>
inline constexpr bool kFloat = std::is_floating_point_v<C>;

// Integers wrap (two's complement), as the CPU's kernels::add/sub/mul/neg.
template <typename C>
__device__ C wrap_add(C a, C b) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename C>
__device__ C wrap_sub(C a, C b) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename C>
__device__ C wrap_mul(C a, C b) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
}

// scalar::Maximum: NaN if either is NaN (a's first), else the larger (a when equal).
template <typename C>
__device__ C maximum(C a, C b) {
  C r = a < b ? b : a;
  if constexpr (kFloat<C>) {
    r = b != b ? b : r;
    r = a != a ? a : r;
  }
  return r;
}

// One functor per op: C is the compute type, `s` the launch's scalar.
template <PointwiseOp kOp, typename C>
__device__ C apply(C x, C y, C z, double s, double s2) {
  if constexpr (kOp == PointwiseOp::kRelu) {
    return x < C{0} ? C{0} : x;
  } else if constexpr (kOp == PointwiseOp::kNeg) {
    if constexpr (kFloat<C>) {
      return -x;
    } else {
      return wrap_sub(C{0}, x);
    }
  } else if constexpr (kOp == PointwiseOp::kExp) {
    if constexpr (std::is_same_v<C, float>) {
      return scalar::exp_f32(x);
    } else {
      return scalar::exp_fast_underflow(x);
    }
  } else if constexpr (kOp == PointwiseOp::kTanh) {
    if constexpr (std::is_same_v<C, float>) {
      return scalar::tanh_f32(x);
    } else {
      return std::tanh(x);
    }
  } else if constexpr (kOp == PointwiseOp::kSigmoid) {
    if constexpr (std::is_same_v<C, float>) {
      return scalar::sigmoid_f32(x);
    } else {
      const C e = scalar::exp_fast_underflow(-std::fabs(x));
      return scalar::select_if_negative(x, e, C{1}) / (C{1} + e);
    }
  } else if constexpr (kOp == PointwiseOp::kGelu) {
    if constexpr (std::is_same_v<C, float>) {
      return scalar::gelu_f32(x);
    } else {
      return scalar::gelu_f64(x);
    }
  } else if constexpr (kOp == PointwiseOp::kSqrt) {
    return std::sqrt(x);
  } else if constexpr (kOp == PointwiseOp::kLog) {
    return std::log(x);
  } else if constexpr (kOp == PointwiseOp::kFloor) {
    return std::floor(x);
  } else if constexpr (kOp == PointwiseOp::kCeil) {
    return std::ceil(x);
  } else if constexpr (kOp == PointwiseOp::kRound) {
    return std::nearbyint(x);
  } else if constexpr (kOp == PointwiseOp::kMulScalar) {
    return x * static_cast<C>(s);
  } else if constexpr (kOp == PointwiseOp::kFill) {
    return static_cast<C>(s);
  } else if constexpr (kOp == PointwiseOp::kAdd) {
    if constexpr (kFloat<C>) {
      return x + y;
    } else {
      return wrap_add(x, y);
    }
  } else if constexpr (kOp == PointwiseOp::kSub) {
    if constexpr (kFloat<C>) {
      return x - y;
    } else {
      return wrap_sub(x, y);
    }
  } else if constexpr (kOp == PointwiseOp::kMul) {
    if constexpr (kFloat<C>) {
      return x * y;
    } else {
      return wrap_mul(x, y);
    }
  } else if constexpr (kOp == PointwiseOp::kDiv) {
    return x / y;  // floats only (pointwise_supports)
  } else if constexpr (kOp == PointwiseOp::kMaximum) {
    return maximum(x, y);
  } else if constexpr (kOp == PointwiseOp::kReluGrad) {
    return x > C{0} ? y : C{0};
  } else if constexpr (kOp == PointwiseOp::kGeluGrad) {
    // scalar::GeluGrad: g · (Φ(x) + x·φ(x)) in float64.
    const double w = x;
    const double cdf = 0.5 * std::erfc(-w * scalar::kInvSqrt2);
    const double pdf = scalar::kInvSqrt2Pi * std::exp(-0.5 * w * w);
    return static_cast<C>(static_cast<double>(y) * (cdf + w * pdf));
  } else if constexpr (kOp == PointwiseOp::kTanhGrad) {
    return y * (C{1} - x * x);
  } else if constexpr (kOp == PointwiseOp::kSigmoidGrad) {
    return y * (x * (C{1} - x));
  } else if constexpr (kOp == PointwiseOp::kSqrtGrad) {
    return y / (C{2} * x);
  } else if constexpr (kOp == PointwiseOp::kSgd) {
    // runtime/kernels/training.cpp's sgd: in float64, rounded once to the compute type.
    const double w = x;
    const double g = static_cast<double>(y) + s2 * w;
    return static_cast<C>(w - s * g);
  } else if constexpr (kOp == PointwiseOp::kMaximumGradA || kOp == PointwiseOp::kMaximumGradB) {
    const C m = maximum(x, y);
    const bool took_a = m == x || (m != m && x != x);
    return took_a == (kOp == PointwiseOp::kMaximumGradA) ? z : C{0};
  } else {
    static_assert(kOp == PointwiseOp::kRelu, "op without a formula");
    return x;
  }
}

// The cell offsets (in elements) of local point t for ports [0, N).
template <int N>
struct Offsets {
  std::int64_t o[N];
};

template <int N>
__device__ Offsets<N> locate(const PointwiseLaunch& l, std::int64_t t) {
  Offsets<N> r{};
  if (l.rank == 1) {
#pragma unroll
    for (int p = 0; p < N; ++p) r.o[p] = t * l.port[p].coef[0];
    return r;
  }
  for (int j = l.rank - 1; j >= 0; --j) {
    const std::int64_t e = l.extent[j];
    const std::int64_t c = t % e;
    t /= e;
#pragma unroll
    for (int p = 0; p < N; ++p) r.o[p] += c * l.port[p].coef[j];
  }
  return r;
}

template <PointwiseOp kOp, typename T>
__global__ void map_kernel(PointwiseLaunch l, std::int64_t total) {
  using C = compute_t<T>;
  constexpr int kInputs = input_count(kOp);
  T* out = static_cast<T*>(l.port[0].data);
  const T* in1 = static_cast<const T*>(l.port[1].data);
  const T* in2 = static_cast<const T*>(l.port[2].data);
  const T* in3 = static_cast<const T*>(l.port[3].data);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += stride) {
    const Offsets<kInputs + 1> at = locate<kInputs + 1>(l, t);
    C x{}, y{}, z{};
    if constexpr (kInputs >= 1) x = load(in1 + at.o[1]);
    if constexpr (kInputs >= 2) y = load(in2 + at.o[2]);
    if constexpr (kInputs >= 3) z = load(in3 + at.o[3]);
    store(out + at.o[0], apply<kOp, C>(x, y, z, l.scalar, l.scalar2));
  }
}

// map_kernel over dense ports (dense_map below): 16 bytes of every port per thread, as one
// vector load or store each, 32-bit indices; the elements past the last whole vector by the
// first block's threads. The same formula and rounding per element as map_kernel, so the same
// bits.
template <typename T>
struct alignas(16) Vector {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

template <PointwiseOp kOp, typename T>
__global__ void dense_map_kernel(PointwiseLaunch l, std::int64_t total) {
  using C = compute_t<T>;
  using V = Vector<T>;
  constexpr int kInputs = input_count(kOp);
  T* out = static_cast<T*>(l.port[0].data);
  const T* in1 = static_cast<const T*>(l.port[1].data);
  const T* in2 = static_cast<const T*>(l.port[2].data);
  const T* in3 = static_cast<const T*>(l.port[3].data);
  const auto vectors = static_cast<std::uint32_t>(total / V::kSize);
  const std::uint32_t stride = gridDim.x * blockDim.x;
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += stride) {
    V x{}, y{}, z{}, r;
    if constexpr (kInputs >= 1) x = reinterpret_cast<const V*>(in1)[i];
    if constexpr (kInputs >= 2) y = reinterpret_cast<const V*>(in2)[i];
    if constexpr (kInputs >= 3) z = reinterpret_cast<const V*>(in3)[i];
#pragma unroll
    for (int k = 0; k < V::kSize; ++k) {
      C a{}, b{}, c{};
      if constexpr (kInputs >= 1) a = load(&x.v[k]);
      if constexpr (kInputs >= 2) b = load(&y.v[k]);
      if constexpr (kInputs >= 3) c = load(&z.v[k]);
      store(&r.v[k], apply<kOp, C>(a, b, c, l.scalar, l.scalar2));
    }
    reinterpret_cast<V*>(out)[i] = r;
  }
  if (blockIdx.x != 0) return;
  for (std::int64_t t = std::int64_t{vectors} * V::kSize + threadIdx.x; t < total;
       t += blockDim.x) {
    C a{}, b{}, c{};
    if constexpr (kInputs >= 1) a = load(in1 + t);
    if constexpr (kInputs >= 2) b = load(in2 + t);
    if constexpr (kInputs >= 3) c = load(in3 + t);
    store(out + t, apply<kOp, C>(a, b, c, l.scalar, l.scalar2));
  }
}

// pad: x where the point's cell lies inside x's box (a box in local coordinates), else the value.
template <typename T>
__global__ void pad_kernel(PointwiseLaunch l, std::int64_t total) {
  using C = compute_t<T>;
  T* out = static_cast<T*>(l.port[0].data);
  const T* in = static_cast<const T*>(l.port[1].data);
  const C value = static_cast<C>(l.scalar);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += stride) {
    std::int64_t rest = t, o_out = 0, o_in = 0;
    bool inside = true;
    for (int j = l.rank - 1; j >= 0; --j) {
      const std::int64_t c = rest % l.extent[j];
      rest /= l.extent[j];
      o_out += c * l.port[0].coef[j];
      o_in += c * l.port[1].coef[j];
      inside = inside && c >= l.lo[j] && c < l.hi[j];
    }
    store(out + o_out, inside ? load(in + o_in) : value);
  }
}

// Bitwise copies, by element size.
template <typename U>
__global__ void copy_kernel(PointwiseLaunch l, std::int64_t total) {
  U* out = static_cast<U*>(l.port[0].data);
  const U* in = static_cast<const U*>(l.port[1].data);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += stride) {
    const Offsets<2> at = locate<2>(l, t);
    out[at.o[0]] = in[at.o[1]];
  }
}

// cast: storage_cast<To>(double(from)).
template <typename From, typename To>
__global__ void cast_kernel(PointwiseLaunch l, std::int64_t total) {
  To* out = static_cast<To*>(l.port[0].data);
  const From* in = static_cast<const From*>(l.port[1].data);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += stride) {
    const Offsets<2> at = locate<2>(l, t);
    store_double(out + at.o[0], to_double(in + at.o[1]));
  }
}

constexpr int kThreads = 256;

template <typename Kernel>
int run(Kernel kernel, const PointwiseLaunch& l, void* stream) {
  std::int64_t total = 1;
  for (int j = 0; j < l.rank; ++j) total *= l.extent[j];
  if (total <= 0) return 0;
  const std::int64_t blocks = std::min<std::int64_t>((total + kThreads - 1) / kThreads, 1 << 16);
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(l,
                                                                                            total);
  return static_cast<int>(cudaGetLastError());
}

bool integer_op(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::kRelu:
    case PointwiseOp::kNeg:
    case PointwiseOp::kCopy:
    case PointwiseOp::kFill:
    case PointwiseOp::kPad:
    case PointwiseOp::kAdd:
    case PointwiseOp::kSub:
    case PointwiseOp::kMul:
    case PointwiseOp::kMaximum:
    case PointwiseOp::kReluGrad:
    case PointwiseOp::kMaximumGradA:
    case PointwiseOp::kMaximumGradB:
      return true;
    default:
      return false;
  }
}

// Every port of the map one dense run (rank 1, unit steps), 16-byte aligned, and few enough
// vectors for 32-bit indices: dense_map_kernel.
template <typename T>
bool dense_map(const PointwiseLaunch& l) {
  if (l.rank != 1 || l.extent[0] / Vector<T>::kSize > 0x7FFFFFFF) return false;
  for (int p = 0; p <= input_count(l.op); ++p) {
    if (l.port[p].coef[0] != 1 || reinterpret_cast<std::uintptr_t>(l.port[p].data) % 16 != 0) {
      return false;
    }
  }
  return true;
}

template <PointwiseOp kOp, typename T>
int run_map_op(const PointwiseLaunch& l, void* stream) {
  if (!dense_map<T>(l)) return run(&map_kernel<kOp, T>, l, stream);
  const std::int64_t total = l.extent[0];
  if (total <= 0) return 0;
  const std::int64_t vectors = std::max<std::int64_t>(total / Vector<T>::kSize, 1);
  const std::int64_t blocks = std::min<std::int64_t>((vectors + kThreads - 1) / kThreads, 1 << 16);
  dense_map_kernel<kOp, T>
      <<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(l, total);
  return static_cast<int>(cudaGetLastError());
}

template <typename T>
int run_map(const PointwiseLaunch& l, void* stream) {
  constexpr bool kF = kFloat<compute_t<T>>;
#define TAPESTRY_PW_CASE(OP) \
  case PointwiseOp::OP:      \
    return run_map_op<PointwiseOp::OP, T>(l, stream);
#define TAPESTRY_PW_FLOAT_CASE(OP)                                      \
  case PointwiseOp::OP:                                                 \
    if constexpr (kF) return run_map_op<PointwiseOp::OP, T>(l, stream); \
    break;
  switch (l.op) {
    TAPESTRY_PW_CASE(kRelu)
    TAPESTRY_PW_CASE(kNeg)
    TAPESTRY_PW_CASE(kFill)
    TAPESTRY_PW_CASE(kAdd)
    TAPESTRY_PW_CASE(kSub)
    TAPESTRY_PW_CASE(kMul)
    TAPESTRY_PW_CASE(kMaximum)
    TAPESTRY_PW_CASE(kReluGrad)
    TAPESTRY_PW_CASE(kMaximumGradA)
    TAPESTRY_PW_CASE(kMaximumGradB)
    TAPESTRY_PW_FLOAT_CASE(kExp)
    TAPESTRY_PW_FLOAT_CASE(kTanh)
    TAPESTRY_PW_FLOAT_CASE(kSigmoid)
    TAPESTRY_PW_FLOAT_CASE(kGelu)
    TAPESTRY_PW_FLOAT_CASE(kSqrt)
    TAPESTRY_PW_FLOAT_CASE(kLog)
    TAPESTRY_PW_FLOAT_CASE(kFloor)
    TAPESTRY_PW_FLOAT_CASE(kCeil)
    TAPESTRY_PW_FLOAT_CASE(kRound)
    TAPESTRY_PW_FLOAT_CASE(kMulScalar)
    TAPESTRY_PW_FLOAT_CASE(kDiv)
    TAPESTRY_PW_FLOAT_CASE(kGeluGrad)
    TAPESTRY_PW_FLOAT_CASE(kTanhGrad)
    TAPESTRY_PW_FLOAT_CASE(kSigmoidGrad)
    TAPESTRY_PW_FLOAT_CASE(kSqrtGrad)
    TAPESTRY_PW_FLOAT_CASE(kSgd)
    default:
      break;
  }
#undef TAPESTRY_PW_CASE
#undef TAPESTRY_PW_FLOAT_CASE
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace

bool pointwise_supports(PointwiseOp op, ElemType type, ElemType input_type) {
  if (op == PointwiseOp::kCopy) return true;
  if (op == PointwiseOp::kCast) return is_float(type) && is_float(input_type);
  if (input_type != type && input_count(op) > 0) return false;
  return is_float(type) || integer_op(op);
}

int launch_pointwise(const PointwiseLaunch& l, void* stream) {
  if (!pointwise_supports(l.op, l.type, l.input_type))
    return static_cast<int>(cudaErrorInvalidValue);
  if (l.op == PointwiseOp::kCopy) {
    switch (elem_size(l.type)) {
      case 2:
        return run(&copy_kernel<std::uint16_t>, l, stream);
      case 4:
        return run(&copy_kernel<std::uint32_t>, l, stream);
      default:
        return run(&copy_kernel<std::uint64_t>, l, stream);
    }
  }
  int status = static_cast<int>(cudaErrorInvalidValue);
  if (l.op == PointwiseOp::kPad) {
    visit_type(l.type, [&]<typename T>() { status = run(&pad_kernel<T>, l, stream); });
    return status;
  }
  if (l.op == PointwiseOp::kCast) {
    visit_type(l.input_type, [&]<typename From>() {
      if constexpr (kFloat<compute_t<From>>) {
        visit_type(l.type, [&]<typename To>() {
          if constexpr (kFloat<compute_t<To>>) status = run(&cast_kernel<From, To>, l, stream);
        });
      }
    });
    return status;
  }
  visit_type(l.type, [&]<typename T>() { status = run_map<T>(l, stream); });
  return status;
}

}  // namespace tapestry::gpu::kernels
