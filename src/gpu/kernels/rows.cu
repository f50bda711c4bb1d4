// Folds, moments and softmax on the GPU (rows.h).
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <cuda_runtime.h>

#include "device_elements.cuh"
#include "rows.h"
#include "runtime/kernels/scalar_math.h"

namespace tapestry::gpu::kernels {

namespace {

namespace scalar = runtime::kernels::scalar;

// The outer point t's offsets of x and of the result.
struct OuterOffsets {
  std::int64_t x = 0, out = 0;
};

__device__ OuterOffsets locate_outer(const RowsLaunch& l, std::int64_t t) {
  OuterOffsets o;
  for (int j = l.outer_rank - 1; j >= 0; --j) {
    const std::int64_t c = t % l.outer_extent[j];
    t /= l.outer_extent[j];
    o.x += c * l.x_outer[j];
    o.out += c * l.out_outer[j];
  }
  return o;
}

std::int64_t outer_points(const RowsLaunch& l) {
  std::int64_t n = 1;
  for (int j = 0; j < l.outer_rank; ++j) n *= l.outer_extent[j];
  return n;
}

// ---- folds ------------------------------------------------------------------------------------

// kernels::identity and kernels::combine (kernel_support.h): integers wrap, max/min propagate
// NaN (the first operand's first).
template <RowOp kOp, typename C>
__device__ C identity() {
  if constexpr (kOp == RowOp::kSum || kOp == RowOp::kAverage) {
    return C{0};
  } else if constexpr (kOp == RowOp::kProd) {
    return C{1};
  } else if constexpr (kOp == RowOp::kMax) {
    using L = std::numeric_limits<C>;
    return L::has_infinity ? -L::infinity() : L::lowest();
  } else {
    using L = std::numeric_limits<C>;
    return L::has_infinity ? L::infinity() : L::max();
  }
}

template <RowOp kOp, typename C>
__device__ C combine(C a, C b) {
  if constexpr (kOp == RowOp::kSum || kOp == RowOp::kProd) {
    if constexpr (std::is_floating_point_v<C>) {
      return kOp == RowOp::kSum ? a + b : a * b;
    } else {
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(kOp == RowOp::kSum ? static_cast<U>(a) + static_cast<U>(b)
                                               : static_cast<U>(a) * static_cast<U>(b));
    }
  } else {
    if constexpr (std::is_floating_point_v<C>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    if constexpr (kOp == RowOp::kMax) {
      return a < b ? b : a;
    } else {
      return b < a ? b : a;
    }
  }
}

template <RowOp kOp, typename T>
__global__ void fold_kernel(RowsLaunch l, std::int64_t outer) {
  using C = compute_t<T>;
  const T* x = static_cast<const T*>(l.x);
  T* out = static_cast<T*>(l.out);
  std::int64_t inner = 1;
  for (int j = 0; j < l.inner_rank; ++j) inner *= l.inner_extent[j];
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < outer;
       t += stride) {
    const OuterOffsets o = locate_outer(l, t);
    // avg_pool2d sums in float64 (pool.cpp); the others fold in C.
    using Acc = std::conditional_t<kOp == RowOp::kAverage, double, C>;
    Acc acc = kOp == RowOp::kAverage ? Acc{0} : static_cast<Acc>(identity<kOp, C>());
    // The reduced points in row-major order: an odometer over the inner dims.
    std::int64_t at[kMaxInner] = {};
    std::int64_t offset = o.x;
    for (std::int64_t r = 0; r < inner; ++r) {
      const C v = load(x + offset);
      if constexpr (kOp == RowOp::kAverage) {
        acc += static_cast<double>(v);
      } else {
        acc = r == 0 && !l.from_identity ? v : combine<kOp, C>(acc, v);
      }
      int j = l.inner_rank - 1;
      for (; j >= 0; --j) {
        offset += l.x_inner[j];
        if (++at[j] < l.inner_extent[j]) break;
        offset -= l.x_inner[j] * l.inner_extent[j];
        at[j] = 0;
      }
    }
    if constexpr (kOp == RowOp::kAverage) {
      store(out + o.out, static_cast<C>(acc / static_cast<double>(inner)));
    } else {
      store(out + o.out, acc);
    }
  }
}

// ---- mean and variance ------------------------------------------------------------------------

// A 16-bit cell as row_sum reads it: its exact value as a double.
template <typename T>
struct AsDouble {
  T cell;
  __device__ operator double() const { return static_cast<double>(widen(cell)); }
};

template <typename T>
__device__ double row_moment(const T* x, std::int64_t sx, std::int64_t n, bool variance) {
  if constexpr (kIsHalf<T>) {
    const auto* cells = reinterpret_cast<const AsDouble<T>*>(x);
    return variance ? scalar::row_variance(cells, sx, n) : scalar::row_mean(cells, sx, n);
  } else {
    return variance ? scalar::row_variance(x, sx, n) : scalar::row_mean(x, sx, n);
  }
}

template <typename T>
__global__ void moment_kernel(RowsLaunch l, std::int64_t outer) {
  using C = compute_t<T>;
  const T* x = static_cast<const T*>(l.x);
  T* out = static_cast<T*>(l.out);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < outer;
       t += stride) {
    const OuterOffsets o = locate_outer(l, t);
    const double m = row_moment(x + o.x, l.x_inner[0], l.inner_extent[0], l.op == RowOp::kVariance);
    store(out + o.out, static_cast<C>(m));  // rounded to T (then to 16 bits), as the CPU does
  }
}

// ---- softmax ----------------------------------------------------------------------------------

constexpr int kSoftmaxThreads = 256;

// Block-wide reductions (every thread gets the result); `shared` holds one value per warp.
template <typename V, typename Op>
__device__ V block_reduce(V v, Op op, V* shared) {
  for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // `shared` may still be read by a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = shared[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) v = op(v, shared[w]);
  return v;
}

// A float64 sum with the exact error of its additions (scalar::CompensatedSum's rule).
struct Compensated {
  double sum = 0, err = 0;
};

__device__ Compensated add(Compensated a, Compensated b) {
  const double s = a.sum + b.sum;
  return {s, (a.err + b.err) + scalar::two_sum_error(a.sum, b.sum, s)};
}

template <typename T>
__global__ void softmax_kernel(RowsLaunch l, std::int64_t rows) {
  using C = compute_t<T>;
  using Bits = decltype(scalar::ordered_bits(C{}));
  __shared__ Bits shared_bits[kSoftmaxThreads / 32];
  __shared__ int shared_nan[kSoftmaxThreads / 32];
  __shared__ double shared_sum[kSoftmaxThreads / 32];
  __shared__ double shared_err[kSoftmaxThreads / 32];
  const T* xs = static_cast<const T*>(l.x);
  T* rs = static_cast<T*>(l.out);
  const std::int64_t n = l.inner_extent[0], sx = l.x_inner[0], sr = l.out_inner;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const OuterOffsets o = locate_outer(l, row);
    const T* x = xs + o.x;
    T* r = rs + o.out;
    // m = max_j x_j, exactly (ordered bits; a NaN anywhere makes it NaN): scalar::softmax_max.
    Bits m_bits = scalar::ordered_bits(load(x));
    int nan = 0;
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const C v = load(x + j * sx);
      const Bits b = scalar::ordered_bits(v);
      m_bits = m_bits < b ? b : m_bits;
      nan |= v != v;
    }
    m_bits = block_reduce(
        m_bits, [](Bits a, Bits b) { return a < b ? b : a; }, shared_bits);
    nan = block_reduce(
        nan, [](int a, int b) { return a | b; }, shared_nan);
    // ordered_bits is its own inverse on the bits: back to the value.
    const Bits back = m_bits ^ ((m_bits >> (8 * sizeof(C) - 1)) & std::numeric_limits<Bits>::max());
    const C m = nan != 0 ? std::numeric_limits<C>::quiet_NaN() : std::bit_cast<C>(back);
    if constexpr (std::is_same_v<C, float>) {
      // f32: terms in f32 lanes (scalar::softmax_exp_f32), summed in f64, times 1/Σ.
      const float live_from = scalar::softmax_live_from(m);
      double sum = 0;
      for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        sum += static_cast<double>(scalar::softmax_exp_f32(load(x + j * sx), m, live_from));
      }
      sum = block_reduce(
          sum, [](double a, double b) { return a + b; }, shared_sum);
      const double inverse = 1.0 / sum;
      for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        const double e = scalar::softmax_exp_f32(load(x + j * sx), m, live_from);
        store(r + j * sr, static_cast<float>(e * inverse));
      }
    } else {
      // f64: d = x − m carried as d + err, e^d·(1 + err), a compensated sum, then e/Σ.
      const auto term = [&](std::int64_t j) {
        const double xj = load(x + j * sx);
        const double d = xj - m;
        double v = scalar::exp_fast_underflow(d);
        if (v != 0.0) v += v * scalar::two_sum_error(xj, -m, d);
        return v;
      };
      Compensated c;
      for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) c = add(c, {term(j), 0});
      // Reduce (sum, err) pairs: the warp shuffles carry both halves.
      for (int off = 16; off > 0; off /= 2) {
        const Compensated other{__shfl_xor_sync(0xffffffffu, c.sum, off),
                                __shfl_xor_sync(0xffffffffu, c.err, off)};
        c = add(c, other);
      }
      const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
      __syncthreads();
      if (lane == 0) {
        shared_sum[warp] = c.sum;
        shared_err[warp] = c.err;
      }
      __syncthreads();
      Compensated total{shared_sum[0], shared_err[0]};
      for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) {
        total = add(total, {shared_sum[w], shared_err[w]});
      }
      const double sum = total.sum + total.err;
      for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) store(r + j * sr, term(j) / sum);
    }
    __syncthreads();  // the shared arrays are reused by the next row
  }
}

constexpr int kThreads = 256;

template <typename Kernel>
int run_threads(Kernel kernel, const RowsLaunch& l, void* stream) {
  const std::int64_t outer = outer_points(l);
  if (outer <= 0) return 0;
  const std::int64_t blocks = std::min<std::int64_t>((outer + kThreads - 1) / kThreads, 1 << 16);
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(l,
                                                                                            outer);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

bool rows_supports(RowOp op, ElemType type) {
  switch (op) {
    case RowOp::kSum:
    case RowOp::kProd:
    case RowOp::kMax:
    case RowOp::kMin:
      return true;
    default:
      return is_float(type);
  }
}

int launch_rows(const RowsLaunch& l, void* stream) {
  if (!rows_supports(l.op, l.type)) return static_cast<int>(cudaErrorInvalidValue);
  int status = static_cast<int>(cudaErrorInvalidValue);
  visit_type(l.type, [&]<typename T>() {
    constexpr bool kFloat = std::is_floating_point_v<compute_t<T>>;
    switch (l.op) {
      case RowOp::kSum:
        status = run_threads(&fold_kernel<RowOp::kSum, T>, l, stream);
        break;
      case RowOp::kProd:
        status = run_threads(&fold_kernel<RowOp::kProd, T>, l, stream);
        break;
      case RowOp::kMax:
        status = run_threads(&fold_kernel<RowOp::kMax, T>, l, stream);
        break;
      case RowOp::kMin:
        status = run_threads(&fold_kernel<RowOp::kMin, T>, l, stream);
        break;
      case RowOp::kAverage:
        if constexpr (kFloat) status = run_threads(&fold_kernel<RowOp::kAverage, T>, l, stream);
        break;
      case RowOp::kMean:
      case RowOp::kVariance:
        if constexpr (kFloat) status = run_threads(&moment_kernel<T>, l, stream);
        break;
      case RowOp::kSoftmax:
        if constexpr (kFloat) {
          const std::int64_t rows = outer_points(l);
          if (rows <= 0 || l.inner_extent[0] == 0) {
            status = 0;
            break;
          }
          const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(rows, 1 << 16));
          softmax_kernel<T>
              <<<blocks, kSoftmaxThreads, 0, static_cast<cudaStream_t>(stream)>>>(l, rows);
          status = static_cast<int>(cudaGetLastError());
        }
        break;
    }
  });
  return status;
}

}  // namespace tapestry::gpu::kernels
