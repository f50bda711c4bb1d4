// operation_blocks: an unsharded kernel call as blocks of its index box (operation_blocks.h).
#include "operation_blocks.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tapestry/runtime/fast_kernels.h"

namespace tapestry::runtime::detail {

namespace {

bool cuttable(const KernelCall& call, std::size_t dim) {
  std::vector<const zspace::IndexProjection*> outputs;
  for (const auto& entry : call.outputs.entries()) outputs.push_back(entry.value.ipf);
  return one_to_one(outputs, dim);
}

// Index points × the largest input window: the work of the call, in points.
double work_of(const KernelCall& call) {
  double window = 1;
  for (const auto& entry : call.inputs.entries()) {
    double cells = 1;
    for (std::int64_t s : entry.value.ipf->shape()) cells *= static_cast<double>(s);
    window = std::max(window, cells);
  }
  return static_cast<double>(call.index.size()) * window;
}

template <typename Port>
void narrow(ir::NamedLists<Port>& ports, const Range& block) {
  ports.for_each_entry([&](const std::string&, std::uint32_t, Port& port) {
    port.view = port.view.sub(port.ipf->apply(block));
  });
}

}  // namespace

bool one_to_one(std::span<const zspace::IndexProjection* const> outputs, std::size_t dim) {
  if (outputs.empty()) return false;
  for (const zspace::IndexProjection* ipf : outputs) {
    const zspace::AffineMap& map = ipf->map();
    std::optional<std::size_t> row;
    for (std::size_t t = 0; t < map.out_rank(); ++t) {
      if (map.at(t, dim) == 0) continue;
      if (row) return false;
      row = t;
    }
    if (!row) return false;
    for (std::size_t j = 0; j < map.in_rank(); ++j)
      if (j != dim && map.at(*row, j) != 0) return false;
    if (ipf->shape()[*row] > std::abs(map.at(*row, dim))) return false;
  }
  return true;
}

std::vector<Range> operation_blocks(const KernelCall& call) {
  const Range& index = call.index;
  const auto wanted = static_cast<std::int64_t>(
      std::min(static_cast<double>(kMaxBlocks), std::floor(work_of(call) / kBlockWork)));
  if (wanted < 2 || index.size() == 0) return {index};
  // The dim that gives the most blocks (up to `wanted`), then the fewest input cells read by
  // the blocks together (a convolution's rows, not its output channels: each block reads its
  // own rows of x, not all of them), then the first.
  std::vector<Range> best;
  double best_read = 0;
  for (std::size_t d = 0; d < index.rank(); ++d) {
    if (index.extent(d) < 2 || !cuttable(call, d)) continue;
    std::vector<Range> blocks = index.split_even(d, std::min(wanted, index.extent(d)));
    double read = 0;
    for (const Range& b : blocks)
      for (const auto& entry : call.inputs.entries())
        read += static_cast<double>(entry.value.ipf->apply(b).size());
    if (blocks.size() > best.size() || (blocks.size() == best.size() && read < best_read)) {
      best = std::move(blocks);
      best_read = read;
    }
  }
  if (best.empty()) return {index};
  return best;
}

void call_in_blocks(const KernelFn& kernel, const KernelCall& call) {
  // OpenBLAS and oneDNN (OpenMP) run one thread inside any thread that calls them: OpenMP's
  // thread count is per calling thread, and a TBB worker that never set it would let oneDNN
  // split a GEMM over every core — a different summation order, so bars that depend on the
  // thread count (ONEDNN_MAX_CPU_ISA=AVX2 showed it).
  limit_library_threads_to_one();
  const std::vector<Range> blocks = operation_blocks(call);
  if (blocks.size() == 1) {
    kernel(call);
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<std::size_t>(0, blocks.size(), 1),
      [&](const tbb::blocked_range<std::size_t>& r) {
        limit_library_threads_to_one();
        for (std::size_t b = r.begin(); b < r.end(); ++b) {
          KernelCall piece = call;
          piece.index = blocks[b];
          narrow(piece.inputs, blocks[b]);
          narrow(piece.outputs, blocks[b]);
          kernel(piece);
        }
      },
      tbb::simple_partitioner());
}

}  // namespace tapestry::runtime::detail
