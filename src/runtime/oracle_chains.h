// Private to the oracle and its memory estimate (oracle.h, memory_budget.h): chains of
// operations that the oracle evaluates one block of rows at a time.
//
// The oracle holds 24 bytes a cell of every live float tensor (value, σ, D) against the run's 4,
// so an intermediate the run barely notices dominates it: the MLP's H (4096×4096) is 384 MiB in
// the oracle at 207 MiB for the whole run. But H's rows are independent: the first linear makes
// row i of H from row i of X, relu maps it cell by cell and the second linear reads row i of H
// for row i of Y. Such a *chain* — operations consecutive in the oracle's order, each cut along
// one index dim that every output takes one-to-one (operation_blocks.h), where every tensor the
// chain makes and reads again is read by the block that made it, exactly its cells — runs as
// blocks: block b evaluates every operation of the chain on its b-th index box, so a tensor made
// and read inside the chain only ever exists one block at a time. The tensors the chain makes
// that are read after it (or are graph outputs) are assembled whole from their blocks.
//
//   X[4096, 1024] → linear → Y1 → relu → H → linear(H, W2) → Y     (examples/mlp.tap)
//   one chain of 3 operations, cut along the rows i into 8 blocks of 512; Y1 and H are internal
//   (48 MiB a block, never whole), Y is assembled; X's rows are promoted a block at a time, W1
//   and W2 (every block reads all of them) whole.
//
// Each block is evaluated as a graph of its own (chain_block): the chain's operations with their
// index boxes narrowed to the block and every tensor to the cells the block makes or reads — the
// same coordinates, the same IPFs — so the error rules run on it unchanged. Every cell is
// computed from the same cells by the same kernel and rule; the float64 sums and the float32
// sums rounded up (oracle.h) of a cell may come in another order than the whole operation's
// (a GEMM of fewer rows), which each rule's bound allows: it holds for every order of a cell's
// terms. The cut depends on the sizes alone: the numbers do not depend on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/buffer.h"

namespace tapestry::runtime::detail {

/// Blocks a chain is cut into (fewer where the cut dim is shorter).
inline constexpr std::int64_t kChainBlocks = 8;

struct OracleChain {
  /// Positions in the order: the chain is order[begin], …, order[end − 1].
  std::size_t begin = 0, end = 0;
  /// Per operation of the chain, its index box in each block (all the same count).
  std::vector<std::vector<Range>> boxes;
  /// Tensors the chain makes and only the chain reads, graph outputs not among them: they are
  /// never whole (but with OracleOptions::keep_all).
  std::set<ir::TensorId> internal;
  /// Tensors read by the chain and made before it (inputs included) that each block reads only
  /// a part of: its own cells, the same for every operation of the block.
  std::set<ir::TensorId> partial;
  /// Graph outputs the chain makes that no operation after it reads: with an output sink
  /// (OracleOptions::output_sink) they are handed over a block at a time, never whole.
  std::set<ir::TensorId> final_outputs;
  [[nodiscard]] std::size_t blocks() const { return boxes.empty() ? 0 : boxes.front().size(); }
};

/// The chains of `order` (the oracle's order of `graph`'s operations), in order, disjoint: from
/// each operation on, the longest chain by the cells it keeps from being whole (ties: the first
/// dim), taken when those are at least `min_cells` (OracleOptions::chain_cells; negative: none).
std::vector<OracleChain> oracle_chains(const ir::Graph& graph,
                                       const std::vector<ir::OperationId>& order,
                                       std::int64_t min_cells);

/// Block `block` of `chain` as a graph of its own: the chain's operations over their boxes
/// (same kernels, parameters, IPFs and names), each tensor over the cells of it the block makes
/// or reads (a whole tensor where the block reads all of it).
struct ChainBlock {
  ir::Graph graph;
  /// The chain's operations in `graph`, in order.
  std::vector<ir::OperationId> ops;
  /// Each tensor of `graph` → the tensor of the original graph it is a block of.
  std::map<ir::TensorId, ir::TensorId> original;
};
ChainBlock chain_block(const ir::Graph& graph, const std::vector<ir::OperationId>& order,
                       const OracleChain& chain, std::size_t block);

/// The offset (in cells) of `box`'s first cell in a dense row-major buffer over `range` when
/// the box's cells are one contiguous run there (every dim after the first that the box does
/// not take whole is whole, every one before it is a single index), else -1.
std::int64_t contiguous_offset(const Range& range, const Range& box);

}  // namespace tapestry::runtime::detail
