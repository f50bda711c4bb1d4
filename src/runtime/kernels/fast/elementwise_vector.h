// Private: the dense (unit-stride) loops of the fast elementwise kernels, compiled for more than
// one instruction set and chosen at run time.
//
// The runtime is built for the baseline x86-64 (SSE2: four f32 lanes), so a loop over gelu_f32
// would run on four lanes on a machine with AVX-512. This file's loops are compiled three times
// (GCC `target` attributes): for AVX-512 (sixteen f32 / eight f64 lanes, 512-bit vectors
// preferred), for AVX2 (eight / four) and for the baseline; the first call asks cpuid
// (__builtin_cpu_supports) which the CPU runs. Every clone applies the same functor of
// ../scalar_ops.h, with the same operations in the same order: the runtime is built with
// -ffp-contract=off, so no clone fuses a multiply and an add, and the three compute the same bits
// as the reference kernels for every element (tests/runtime/elementwise_accuracy_test.cpp runs
// all three against the reference kernel over the whole sweep). Two clones are written by hand:
// f32 gelu on AVX-512 and AVX2, gelu_f32's operations in its order with its table's coefficients
// fetched by permutes from registers (GCC would gather them), held to the same bits by the same
// tests.
//
// Example: fast/elementwise.cpp's unary kernel, on a contiguous run of a float32 `gelu`,
//
//   unary_dense<scalar::Gelu>(x, r, n);   // AVX-512 here: gelu_f32 on 16 f32 lanes
//
// and the fused epilogue, in place on a GEMM's output rows,
//
//   unary_dense_in_place<scalar::Gelu>(c, n);
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../scalar_ops.h"
#include "tapestry/runtime/element.h"

namespace tapestry::runtime::fast {

/// The instruction sets the dense loops are compiled for (best last).
enum class VectorIsa { kBaseline, kAvx2, kAvx512 };

/// "baseline", "avx2" or "avx512".
std::string_view isa_name(VectorIsa isa);

/// The set the dense loops run with: the best this CPU supports (asked once), unless
/// force_vector_isa chose another.
VectorIsa vector_isa();

/// Tests and benchmarks: run the dense loops with `isa` (nullopt: back to the CPU's best). An
/// `isa` the CPU lacks is a bug (asserted). Not thread-safe against running kernels.
void force_vector_isa(std::optional<VectorIsa> isa);

/// Whether this CPU can run `isa`'s clones.
bool cpu_supports(VectorIsa isa);

/// Whether unary_dense and unary_dense_in_place are instantiated for Op (the list at the end of
/// elementwise_vector.cpp). A unary kernel added elsewhere (docs/metakernels.md, "Adding a
/// built-in kernel") runs elementwise_ops.h's plain loop until it is added to both lists.
template <typename Op>
inline constexpr bool kHasClones =
    std::is_same_v<Op, kernels::scalar::Relu> || std::is_same_v<Op, kernels::scalar::Neg> ||
    std::is_same_v<Op, kernels::scalar::Exp> || std::is_same_v<Op, kernels::scalar::Tanh> ||
    std::is_same_v<Op, kernels::scalar::Sigmoid> || std::is_same_v<Op, kernels::scalar::Gelu> ||
    std::is_same_v<Op, kernels::scalar::Sqrt>;

/// r[i] = Op{}(x[i]) for i < n; x and r do not overlap. Op is one of scalar_ops.h's unary
/// functors with kHasClones<Op>; T float or double (and, for Relu and Neg, int32 and int64).
template <typename Op, typename T>
void unary_dense(const T* x, T* r, std::int64_t n);

/// p[i] = Op{}(p[i]) for i < n.
template <typename Op, typename T>
void unary_dense_in_place(T* p, std::int64_t n);

/// 16-bit cells (H BFloat16 or Float16): r[i] = round(Op{}(widen(x[i]))) for i < n — each cell
/// widened in a register, the float32 functor (the float32 kernel's, bit for bit), one rounding
/// to nearest even (element.h, narrow_float) — with x == r allowed. For kHasClones<Op>.
///   unary_dense_half<scalar::Gelu>(x, r, n);   // bf16 gelu: 16 f32 lanes a step on AVX-512
template <typename Op, typename H>
void unary_dense_half(const H* x, H* r, std::int64_t n);

/// Whether binary_dense_half is instantiated for Op (the arithmetic maps; the masks' selects and
/// pow run elementwise_ops.h's plain loop).
template <typename Op>
inline constexpr bool kHasBinaryClones =
    std::is_same_v<Op, kernels::scalar::Add> || std::is_same_v<Op, kernels::scalar::Sub> ||
    std::is_same_v<Op, kernels::scalar::Mul> || std::is_same_v<Op, kernels::scalar::Div> ||
    std::is_same_v<Op, kernels::scalar::Maximum>;

/// 16-bit cells: r[i] = round(Op{}(widen(a[i·sa]), widen(b[i·sb]))) for i < n, sa and sb each 0
/// (one value broadcast) or 1; r does not overlap a or b. For kHasBinaryClones<Op>.
template <typename Op, typename H>
void binary_dense_half(const H* a, std::int64_t sa, const H* b, std::int64_t sb, H* r,
                       std::int64_t n);

/// scalar_ops.h's softmax_row on a contiguous row (both strides 1), through the same clones.
template <typename T>
void softmax_row_dense(const T* x, T* r, std::int64_t n, std::vector<T>& scratch);

}  // namespace tapestry::runtime::fast
