// Fast folds: sum, max and reduce (kernels/reductions.yaml) over one reduced index dim.
//
// Two loop orders, both over raw pointers:
//   * the reduced dim is contiguous in x and the monoid is sum: each output cell sums its line
//     with eight interleaved partial sums (vectorised); a different association than the
//     reference's left fold, within the dot-product bound of docs/runtime.md;
//   * otherwise the fold runs across rows: out = x[r = 0], then out = out ∘ x[r] for ascending
//     r, each step a vectorisable loop over a run of output cells. That is the reference's
//     order for every cell, so the result is bitwise equal (this is the `reduce` of a split
//     reduction, and sum/max over a leading dim).
// Cells wider than one element (windows) and two reduced dims go to the reference kernel.
#include "fast_support.h"

#include "../kernel_support.h"

namespace tapestry::runtime::fast {

namespace {

// Σ x[0..n) with eight partial sums; the first value taken as is when n is small.
template <typename T>
T sum_line(const T* __restrict x, std::int64_t n) {
  constexpr std::int64_t kLanes = 8;
  if (n < 2 * kLanes) {
    T acc = x[0];
    for (std::int64_t i = 1; i < n; ++i) acc = kernels::add(acc, x[i]);
    return acc;
  }
  T lane[kLanes];
  for (std::int64_t l = 0; l < kLanes; ++l) lane[l] = x[l];
  std::int64_t i = kLanes;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::int64_t l = 0; l < kLanes; ++l) lane[l] = kernels::add(lane[l], x[i + l]);
  }
  for (std::int64_t l = 0; i < n; ++i, ++l) lane[l] = kernels::add(lane[l], x[i]);
  for (std::int64_t w = kLanes / 2; w > 0; w /= 2) {
    for (std::int64_t l = 0; l < w; ++l) lane[l] = kernels::add(lane[l], lane[l + w]);
  }
  return lane[0];
}

// out[i·so] = out[i·so] ∘ x[i·sx] for a run of output cells (first: out = x).
template <typename T, ir::Monoid M>
void fold_run(T* out, std::int64_t so, const T* x, std::int64_t sx, std::int64_t n, bool first) {
  if (first) {
    for (std::int64_t i = 0; i < n; ++i) out[i * so] = x[i * sx];
  } else if (so == 1 && sx == 1) {
    T* __restrict o = out;
    const T* __restrict xs = x;
    for (std::int64_t i = 0; i < n; ++i) o[i] = kernels::combine(M, o[i], xs[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) out[i * so] = kernels::combine(M, out[i * so], x[i * sx]);
  }
}

template <typename T, ir::Monoid M>
void fold_across(const Strided<const T>& xs, const Strided<T>& rs, const Nest<2>& cells,
                 std::int64_t extent, std::int64_t step) {
  for_each_run(cells, [&](const auto& at, std::int64_t n, const auto& s) {
    for (std::int64_t r = 0; r < extent; ++r) {
      fold_run<T, M>(rs.base + at[1], s[1], xs.base + at[0] + r * step, s[0], n, r == 0);
    }
  });
}

template <typename T>
bool fold(const KernelCall& call, ir::Monoid monoid) {
  auto xl = call.inputs.list("x");
  auto rl = call.outputs.list("result");
  if (xl.size() != 1 || rl.size() != 1 || call.inputs.size() != 1 || call.outputs.size() != 1 ||
      !has_unit_cells(*xl[0].ipf) || !has_unit_cells(*rl[0].ipf)) {
    return false;
  }
  const Strided<const T> xs = strided<const T>(xl[0], call.index);
  const Strided<T> rs = strided<T>(rl[0], call.index);
  std::vector<bool> reduced(call.index.rank(), false);
  std::int64_t extent = 1, step = 0;
  int count = 0;
  for (std::size_t j = 0; j < call.index.rank(); ++j) {
    if (call.index.extent(j) == 1 || rs.coef[j] != 0) continue;
    reduced[j] = true;
    extent = call.index.extent(j);
    step = xs.coef[j];
    ++count;
  }
  if (count > 1) return false;
  const Nest<2> cells = make_nest<2>(call.index, {&xs.coef, &rs.coef}, reduced);
  if (step == 1 && monoid == ir::Monoid::kSum) {
    for_each_run(cells, [&](const auto& at, std::int64_t n, const auto& s) {
      for (std::int64_t i = 0; i < n; ++i) {
        rs.base[at[1] + i * s[1]] = sum_line(xs.base + at[0] + i * s[0], extent);
      }
    });
    return true;
  }
  switch (monoid) {
    case ir::Monoid::kSum:
      fold_across<T, ir::Monoid::kSum>(xs, rs, cells, extent, step);
      break;
    case ir::Monoid::kMax:
      fold_across<T, ir::Monoid::kMax>(xs, rs, cells, extent, step);
      break;
    case ir::Monoid::kMin:
      fold_across<T, ir::Monoid::kMin>(xs, rs, cells, extent, step);
      break;
    case ir::Monoid::kProd:
      fold_across<T, ir::Monoid::kProd>(xs, rs, cells, extent, step);
      break;
  }
  return true;
}

void run_fold(const KernelCall& call, ir::Monoid monoid) {
  const std::optional<DType> dtype = uniform_dtype(call);
  bool done = false;
  if (dtype && is_executable(*dtype) && !call.index.is_empty()) {
    done = visit_dtype(*dtype, [&]<typename T>() { return fold<T>(call, monoid); });
  }
  if (done) {
    count_fast();
  } else {
    run_reference(call);
  }
}

template <ir::Monoid M>
void fixed_monoid_kernel(const KernelCall& call) {
  run_fold(call, M);
}

void reduce_kernel(const KernelCall& call) {
  run_fold(call, call.monoid("op", ir::Monoid::kSum));
}

}  // namespace

void register_fast_reduce(ExecutableKernels& registry) {
  registry.add("sum", &fixed_monoid_kernel<ir::Monoid::kSum>);
  registry.add("max", &fixed_monoid_kernel<ir::Monoid::kMax>);
  registry.add("reduce", &reduce_kernel);
}

}  // namespace tapestry::runtime::fast
