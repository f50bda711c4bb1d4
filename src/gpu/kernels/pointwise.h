// The pointwise engine of the device kernels: one CUDA kernel family for every operation whose
// ports hold one element per index point — the unary maps, broadcasting binary maps, bias_add,
// cast, mul_scalar, the elementwise derivatives, fills and the layout copies.
//
// A launch describes the index box as `rank` extents (dims already collapsed, size-1 dims
// dropped: port_layout.h) and, for every port, the device address of the cell of the box's first
// point and one element step per dim: the cell of the box's local point c is
// data + Σ_j coef_j·c_j. One thread per index point (a grid-stride loop, 64-bit) computes
//
//   port[0] = op(port[1], port[2], port[3])
//
// with the CPU's scalar formulas (runtime/kernels/scalar_math.h for the transcendental ones):
// 16-bit float ports are widened to float32 and the result rounded once to nearest even, as the
// CPU's kernels do. Cast converts from port[1]'s type to port[0]'s; every other op has one element
// type for all ports. A port may alias another (port[0] == port[1]: an in-place update), since a
// thread reads its inputs before it writes its output and no two threads touch one cell.
//
//   PointwiseLaunch l{.op = PointwiseOp::kAdd, .type = ElemType::kF32, .rank = 1, .extent = {n}};
//   l.port[0] = {result, {1}};  l.port[1] = {a, {1}};  l.port[2] = {b, {0}};  // b broadcast
//   launch_pointwise(l, stream);  // 0, or the cudaError_t
//
// This header is plain C++ (nvcc and the host compiler both include it).
#pragma once

#include <cstdint>

namespace tapestry::gpu::kernels {

inline constexpr int kMaxRank = 8;
inline constexpr int kMaxPorts = 4;

enum class ElemType : std::int32_t { kF32, kF64, kBF16, kF16, kI32, kI64 };

/// Bytes per element.
constexpr std::int64_t elem_size(ElemType t) {
  return t == ElemType::kF64 || t == ElemType::kI64   ? 8
         : t == ElemType::kF32 || t == ElemType::kI32 ? 4
                                                      : 2;
}
constexpr bool is_float(ElemType t) {
  return t != ElemType::kI32 && t != ElemType::kI64;
}

enum class PointwiseOp : std::int32_t {
  // unary: port[0] = f(port[1])
  kRelu,
  kNeg,
  kExp,
  kTanh,
  kSigmoid,
  kGelu,
  kSqrt,
  kLog,
  kFloor,
  kCeil,
  kRound,      // half to even (std::nearbyint in the default rounding mode)
  kCopy,       // port[0] = port[1], bitwise (the layout copies)
  kCast,       // port[0] = port[1] converted (port_type[1] → type), rounded once
  kMulScalar,  // port[0] = port[1] · scalar (scalar rounded to the compute type first)
  kFill,       // port[0] = scalar (converted to the element type)
  kPad,  // port[0] = port[1] where lo_j ≤ c_j < hi_j in every dim, else scalar (no collapse)
  // binary: port[0] = f(port[1], port[2])
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMaximum,
  // derivatives: port[0] = f(forward value port[1], cotangent port[2])
  kReluGrad,
  kGeluGrad,
  kTanhGrad,
  kSigmoidGrad,
  kSqrtGrad,
  // port[0] = port[3] where maximum(port[1], port[2]) took a (b), else 0
  kMaximumGradA,
  kMaximumGradB,
  // sgd: port[0] = w − lr·(g + wd·w) in float64; w = port[1], g = port[2], lr = scalar,
  // wd = scalar2
  kSgd,
};

/// Number of input ports of `op`.
constexpr int input_count(PointwiseOp op) {
  switch (op) {
    case PointwiseOp::kFill:
      return 0;
    case PointwiseOp::kAdd:
    case PointwiseOp::kSub:
    case PointwiseOp::kMul:
    case PointwiseOp::kDiv:
    case PointwiseOp::kMaximum:
    case PointwiseOp::kReluGrad:
    case PointwiseOp::kGeluGrad:
    case PointwiseOp::kTanhGrad:
    case PointwiseOp::kSigmoidGrad:
    case PointwiseOp::kSqrtGrad:
    case PointwiseOp::kSgd:
      return 2;
    case PointwiseOp::kMaximumGradA:
    case PointwiseOp::kMaximumGradB:
      return 3;
    default:
      return 1;
  }
}

struct PointwisePort {
  void* data = nullptr;              // the cell of the box's first index point
  std::int64_t coef[kMaxRank] = {};  // element step per (collapsed) index dim
};

struct PointwiseLaunch {
  PointwiseOp op = PointwiseOp::kCopy;
  ElemType type = ElemType::kF32;        // every port's element type (the output's, for cast)
  ElemType input_type = ElemType::kF32;  // port[1]'s type: differs from `type` for kCast only
  int rank = 0;                          // 0: a single point
  std::int64_t extent[kMaxRank] = {};
  PointwisePort port[kMaxPorts];   // [0] the output, then the inputs
  double scalar = 0;               // kMulScalar's factor, kFill's and kPad's value, kSgd's lr
  double scalar2 = 0;              // kSgd's weight decay
  std::int64_t lo[kMaxRank] = {};  // kPad: the local coordinates where port[1] is read
  std::int64_t hi[kMaxRank] = {};
};

/// True when the engine has `op` for `type` (and `input_type`): the transcendental maps and
/// derivatives are float-only, integer div is left to the host (it throws on a zero divisor).
bool pointwise_supports(PointwiseOp op, ElemType type, ElemType input_type);

/// Enqueues the launch on `stream` (a cudaStream_t); returns 0 or the cudaError_t. Asserts
/// nothing on the host beyond the launch's own fields.
int launch_pointwise(const PointwiseLaunch& launch, void* stream);

}  // namespace tapestry::gpu::kernels
