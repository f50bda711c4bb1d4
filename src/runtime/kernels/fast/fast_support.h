// Private building blocks of the fast kernels: affine element offsets of a port over an index
// box, loop nests over raw pointers, the hit counters and the reference fallback.
//
// Every fast kernel starts the same way: for each port, the element offset of the cell an index
// point i selects is affine in i (kernel.h, Operand):
//
//   offset(i) = Σ_k stride_k·(A_k·i + b_k − view.start_k) = base + Σ_j coef_j·(i_j − lo_j)
//
// with coef_j = Σ_k stride_k·A_kj and base the offset of the box's first point lo. From the
// coefficients a kernel reads the layout it runs on (which index dim walks which operand with
// which stride) and decides whether its fast path applies; the loops then use plain pointers.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/kernel.h"

namespace tapestry::runtime::fast {

/// A port over an index box: the element at the box's first point, and per index dim the
/// element stride (coefficient) an index step moves it by.
template <typename T>
struct Strided {
  T* base = nullptr;
  std::vector<std::int64_t> coef;
};

/// The Strided form of `port` over the non-empty box `index` (T const for inputs).
template <typename T, typename Port>
Strided<T> strided(const Port& port, const Range& index) {
  const zspace::AffineMap& map = port.ipf->map();
  const auto& view = port.view;
  Strided<T> s;
  s.coef.assign(map.in_rank(), 0);
  std::int64_t base = 0;
  for (std::size_t k = 0; k < map.out_rank(); ++k) {
    std::int64_t row = map.offset()[k] - view.box().start()[k];
    for (std::size_t j = 0; j < map.in_rank(); ++j) {
      row += map.at(k, j) * index.start()[j];
      s.coef[j] += view.stride(k) * map.at(k, j);
    }
    base += view.stride(k) * row;
  }
  s.base = view.template typed<std::remove_const_t<T>>().origin() + base;
  return s;
}

/// True when every cell of the port's IPF is one element.
bool has_unit_cells(const zspace::IndexProjection& ipf);

/// A loop nest over up to N operands: per loop (outermost first) its extent and each operand's
/// element stride. Built from an index box by dropping extent-1 dims and merging neighbours
/// whose strides nest for every operand, so a dense whole-tensor map is one loop.
template <std::size_t N>
struct Nest {
  std::vector<std::int64_t> extent;
  std::vector<std::array<std::int64_t, N>> stride;
};

template <std::size_t N>
Nest<N> make_nest(const Range& index, const std::array<const std::vector<std::int64_t>*, N>& coef,
                  const std::vector<bool>& skip = {}) {
  Nest<N> nest;
  for (std::size_t j = 0; j < index.rank(); ++j) {
    const std::int64_t e = index.extent(j);
    if (e == 1 || (!skip.empty() && skip[j])) continue;
    std::array<std::int64_t, N> s{};
    for (std::size_t o = 0; o < N; ++o) s[o] = (*coef[o])[j];
    bool merges = !nest.extent.empty();
    for (std::size_t o = 0; o < N && merges; ++o) merges = nest.stride.back()[o] == s[o] * e;
    if (merges) {
      nest.extent.back() *= e;
      nest.stride.back() = s;
    } else {
      nest.extent.push_back(e);
      nest.stride.push_back(s);
    }
  }
  return nest;
}

/// Calls fn(offsets, n, strides) for every run of the innermost loop: `offsets` are the
/// operands' element offsets at the run's start, `n` its length, `strides` the operands'
/// strides along it. A nest without loops is one run of length 1.
template <std::size_t N, typename Fn>
void for_each_run(const Nest<N>& nest, Fn&& fn) {
  const std::size_t depth = nest.extent.size();
  std::array<std::int64_t, N> offsets{};
  if (depth == 0) {
    fn(offsets, std::int64_t{1}, std::array<std::int64_t, N>{});
    return;
  }
  const std::int64_t inner = nest.extent[depth - 1];
  const std::array<std::int64_t, N>& inner_stride = nest.stride[depth - 1];
  std::vector<std::int64_t> counter(depth - 1, 0);
  while (true) {
    fn(offsets, inner, inner_stride);
    // Odometer over the outer loops, innermost first.
    std::size_t d = depth - 1;
    while (true) {
      if (d == 0) return;
      --d;
      for (std::size_t o = 0; o < N; ++o) offsets[o] += nest.stride[d][o];
      if (++counter[d] < nest.extent[d]) break;
      for (std::size_t o = 0; o < N; ++o) offsets[o] -= nest.stride[d][o] * nest.extent[d];
      counter[d] = 0;
    }
  }
}

/// Counts a fast-path call / a fused epilogue (relaxed atomics).
void count_fast();
void count_epilogue();
/// Counts one convolution oneDNN's primitive ran (conv_onednn.cpp) and notes the onednn path.
void count_onednn_conv();
/// Counts a call with bf16/f16 ports run on the 16-bit cells, without float32 copies
/// (FastKernelCounts::half_native_calls).
void count_half_native();
/// Counts a fallback and runs the reference kernel named `call.kernel` on `call`.
void run_reference(const KernelCall& call);

/// The common dtype of all ports of `call`, or nullopt when they differ (the reference kernel
/// then reports the error).
std::optional<DType> uniform_dtype(const KernelCall& call);

/// Registration of the fast kernel families (one file each).
void register_fast_elementwise(ExecutableKernels& registry);
void register_fast_contraction(ExecutableKernels& registry);
void register_fast_reduce(ExecutableKernels& registry);
void register_fast_conv(ExecutableKernels& registry);
void register_fast_softmax(ExecutableKernels& registry);
void register_fast_moments(ExecutableKernels& registry);
void register_fast_pool(ExecutableKernels& registry);
void register_fast_fused(ExecutableKernels& registry);
void register_fast_autodiff(ExecutableKernels& registry);
void register_fast_training(ExecutableKernels& registry);
void register_fast_indexing(ExecutableKernels& registry);

}  // namespace tapestry::runtime::fast
