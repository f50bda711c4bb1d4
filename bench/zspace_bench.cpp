// zspace hot paths: applying index projections to shard boxes, intersecting boxes, walking the
// points of a box. These run inside every sharding rewrite, validation pass and cost-model
// evaluation, so they must be cheap and must not touch the heap for rank <= 6.
//
// Every benchmark reports items/s (one item = one IPF range-application, one intersection, one
// point) and `allocs/iter`, the number of operator-new calls per iteration of the timed loop,
// counted by the replacement operator new below. The target (issue "Project foundation and
// ZSpace") is >= 20 M IPF range-applications/s on one core and allocs/iter == 0.
//
//   cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAPESTRY_NATIVE=ON
//   cmake --build build/bench --target zspace_bench && build/bench/bench/zspace_bench
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <optional>
#include <vector>

#include "tapestry/zspace/affine_map.h"
#include "tapestry/zspace/index_projection.h"
#include "tapestry/zspace/range.h"

namespace {
std::atomic<std::int64_t> g_allocations{0};
}  // namespace

// GCC pairs the inlined operator new with free() and warns; the pair is malloc/free, which is
// right.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  return operator new(size);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace tapestry::zspace {
namespace {

using Rows = std::vector<std::vector<std::int64_t>>;

IndexProjection ipf(const Rows& rows, Point offset, Point shape) {
  return IndexProjection(AffineMap::from_rows(rows, std::move(offset)), std::move(shape));
}

// An operation: its index space and one IPF per tensor (inputs and output).
struct Op {
  Range index;
  std::vector<IndexProjection> ipfs;
};

// conv2d, index [n, c_out, oh, ow], stride 2, 3x3 window, padding 1, 32 input channels.
Op conv2d() {
  return Op{Range::of_shape(Point{8, 64, 56, 56}),
            {ipf({{1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 2, 0}, {0, 0, 0, 2}}, {0, 0, -1, -1},
                 {1, 32, 3, 3}),  // input
             ipf({{0, 1, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}, {0, 0, 0, 0},
                 {1, 32, 3, 3}),              // weight
             IndexProjection::identity(4)}};  // output
}

// Batched matmul Y[b, m, n] = Σ_k X[b, m, k]·W[n, k], index [b, m, n, k] (k a reduction).
Op batched_linear() {
  return Op{Range::of_shape(Point{16, 512, 1024, 1024}),
            {ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}}, {0, 0, 0}, {1, 1, 1}),    // X
             ipf({{0, 0, 1, 0}, {0, 0, 0, 1}}, {0, 0}, {1, 1}),                        // W
             ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}, {0, 0, 0}, {1, 1, 1})}};  // Y
}

// A full 4x4 mixed-sign map on every tensor: the worst case for interval arithmetic.
Op mixed_sign() {
  Rows rows{{1, -1, 2, 0}, {-3, 1, 0, 1}, {2, 2, -1, -1}, {0, 1, 1, -2}};
  return Op{Range::of_shape(Point{64, 64, 64, 64}),
            {ipf(rows, {5, -5, 0, 1}, {3, 3, 1, 2}), ipf(rows, {0, 0, 0, 0}, {1, 1, 1, 1}),
             ipf(rows, {-7, 7, 2, 2}, {2, 2, 2, 2})}};
}

// The op's index cut into a 2x4x4x2 grid of 64 shards, as the sharding rewrite would.
std::vector<Range> shards(const Op& op) {
  std::vector<std::int64_t> grid{2, 4, 4, 2};
  return op.index.split_grid(grid);
}

void report(benchmark::State& state, std::int64_t items_per_iter, std::int64_t allocations) {
  state.SetItemsProcessed(state.iterations() * items_per_iter);
  state.counters["allocs/iter"] =
      benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
}

// One iteration applies all three IPFs of the op to one shard: 3 range-applications.
void apply_ipfs_to_shards(benchmark::State& state, const Op& op) {
  const std::vector<Range> boxes = shards(op);
  std::size_t next = 0;
  const std::int64_t before = g_allocations.load();
  for (auto _ : state) {
    const Range& box = boxes[next];
    next = next + 1 == boxes.size() ? 0 : next + 1;
    for (const IndexProjection& f : op.ipfs) {
      Range selected = f.apply(box);
      benchmark::DoNotOptimize(selected);
    }
  }
  report(state, static_cast<std::int64_t>(op.ipfs.size()), g_allocations.load() - before);
}

void BM_IpfApplyRange_Conv2d(benchmark::State& state) {
  apply_ipfs_to_shards(state, conv2d());
}
void BM_IpfApplyRange_BatchedLinear(benchmark::State& state) {
  apply_ipfs_to_shards(state, batched_linear());
}
void BM_IpfApplyRange_MixedSign(benchmark::State& state) {
  apply_ipfs_to_shards(state, mixed_sign());
}

// One IPF applied to single index points (the per-point path used by the naive executor).
void BM_IpfApplyPoint_Conv2d(benchmark::State& state) {
  const Op op = conv2d();
  const std::vector<Range> boxes = shards(op);
  std::size_t next = 0;
  const std::int64_t before = g_allocations.load();
  for (auto _ : state) {
    const Point& corner = boxes[next].start();
    next = next + 1 == boxes.size() ? 0 : next + 1;
    for (const IndexProjection& f : op.ipfs) {
      Range selected = f.apply(corner);
      benchmark::DoNotOptimize(selected);
    }
  }
  report(state, static_cast<std::int64_t>(op.ipfs.size()), g_allocations.load() - before);
}

// Producer/consumer intersection: each conv input window against every shard's input window,
// as when computing what one shard must receive from another (halo exchange).
void BM_RangeIntersect(benchmark::State& state) {
  const Op op = conv2d();
  std::vector<Range> windows;
  for (const Range& box : shards(op)) windows.push_back(op.ipfs[0].apply(box));
  std::size_t i = 0, j = 0;
  const std::int64_t before = g_allocations.load();
  for (auto _ : state) {
    std::optional<Range> both = windows[i].intersect(windows[j]);
    benchmark::DoNotOptimize(both);
    if (++j == windows.size()) {
      j = 0;
      i = i + 1 == windows.size() ? 0 : i + 1;
    }
  }
  report(state, 1, g_allocations.load() - before);
}

// Walks every point of a 4-d box of 4·8·16·32 = 16384 points.
void BM_RangeIterate(benchmark::State& state) {
  const Range box = Range::of_start_shape(Point{2, -3, 0, 7}, Point{4, 8, 16, 32});
  const std::int64_t before = g_allocations.load();
  for (auto _ : state) {
    std::int64_t sum = 0;
    for (const Point& p : box.points()) sum += p[3];
    benchmark::DoNotOptimize(sum);
  }
  report(state, box.size(), g_allocations.load() - before);
}

BENCHMARK(BM_IpfApplyRange_Conv2d);
BENCHMARK(BM_IpfApplyRange_BatchedLinear);
BENCHMARK(BM_IpfApplyRange_MixedSign);
BENCHMARK(BM_IpfApplyPoint_Conv2d);
BENCHMARK(BM_RangeIntersect);
BENCHMARK(BM_RangeIterate);

}  // namespace
}  // namespace tapestry::zspace

BENCHMARK_MAIN();
