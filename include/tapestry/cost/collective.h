// Collectives: groups of a placement's transfers that NCCL would run as one collective operation,
// recognised by their structure and priced by a closed-form algorithm model of the target.
//
// A collective is a group of transfers of ONE tensor T, all device → device (none to or from the
// host), connected (the transfers of one tensor fall into groups whose devices do not meet: a
// plan with two data-parallel groups each reduce-scattering among its own four devices has two
// reduce-scatters), at least two transfers, with this structure (W: devices writing parts of T in
// the group, S: senders, R: receivers, n: participants S ∪ R):
//
//   kind            structure                                                    N (its size)
//   reduce-scatter  T is partial (below); every writer writes one whole block —   one block
//                   the same region V of dims 1.. and the same dim-0 extent —
//                   S = R = W; receiver r gets the same slice S_r of every other
//                   writer's block, and the S_r partition V
//   reduce          T is partial; one receiver; every other writer sends it its   one block
//                   whole block (same V, same extent); at least two senders
//   broadcast       one sender, ≥ 2 receivers, each receiving the same boxes      bytes one
//   receiver gets all-gather      ≥ 2 senders; with U the bounding box of the boxes moved, bytes of
//   U
//                   every transfer moves a whole written box ∩ U, and every
//                   participant holds U afterwards: what it writes of U plus
//                   what it receives is exactly U
//   all-to-all      ≥ 2 senders, ≥ 2 receivers, none of the above                 the most one
//                                                                                 participant
//                                                                                 sends or receives
//   point-to-point  anything else (one sender to one receiver, a gather onto one device, a
//                   scatter): not a collective; simulate.h's transfer model prices it.
//
// A tensor is *partial* when every consumer reduces it over its dim 0 — a `reduce` (the combine
// that split-reduction adds: its `block` dim is dim 0 of its input) or a fused operation whose
// stage reading the tensor is such a reduce (partial_tensors()).
//
// Prices (NCCL's conventions). α is the link class's collective step latency and B its
// effective collective bandwidth (target.h: a link's "collective" figures; absent, its line rate
// and latency); c the largest part one participant contributes (all-gather) or receives the
// reduction of (reduce-scatter) — N/n when the split is even:
//
//   ring all-gather, reduce-scatter   (n−1)·(α + c/B)
//   NVLS (only where a link class declares nvls_bandwidth_Bps), the same two kinds:
//                                     (n−1)·c/B_nvls + α   (= (n−1)/n·N/B_nvls + α)
//   hierarchical ring (participants on m ≥ 2 nodes, g on each, g ≥ 2): reduce-scatter within
//   the nodes, then across (all-gather the reverse), in sequence:
//                                     (g−1)·(α_i + m·c/B_i) + (m−1)·(α_e + c/B_e)
//                                     (= (g−1)(α_i + N/(g·B_i)) + (m−1)(α_e + N/(g·m·B_e)))
//   chain broadcast / reduce          N/B + (n−1)·α      (ring-pipelined)
//   tree broadcast / reduce           ⌈log₂ n⌉·(α + N/B)
//   pairwise all-to-all               (n−1)·α + max over participants of max(sent, received)/B
//
// The cheapest applicable algorithm is chosen (ties: the first listed) and named. Participants
// on several nodes with different counts per node, and broadcast, reduce and all-to-all across
// nodes, use the slowest link class's figures (the inter-node one) with the flat formulas. Over
// shared memory (a CPU's cores) a collective is free, as a transfer is. An all-reduce is a
// reduce-scatter, the combine's local reduce, then an all-gather: 2(n−1)(α + N/n/B) plus a
// memory-bound reduce; explain names such a pair "all-reduce".
//
// Worked example — an all-gather of 64 MiB (8 parts of 8 MiB) on h100x8, whose intra-node
// collective figures are B = 370e9 B/s and α = 3.4 µs:
//   ring: 7 · (3.4e-6 + 8 MiB / 370e9) = 7 · (3.4 µs + 22.67 µs) = 182.5 µs, 7 steps
//
//   Collective c{.kind = CollectiveKind::kAllGather, .devices = {0, 1, …, 7},
//                .bytes = 64 << 20, .chunk_bytes = 8 << 20};
//   price_collective(c, *preset_target("h100x8")).seconds   // 7 · (3.4e-6 + 8388608 / 370e9)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "tapestry/cost/target.h"
#include "tapestry/ir/graph.h"
#include "tapestry/zspace/range.h"

namespace tapestry::cost {

struct Placement;

/// "No collective": a point-to-point transfer (Transfer::collective).
inline constexpr std::uint32_t kNoCollective = ~std::uint32_t{0};

enum class CollectiveKind : std::uint8_t {
  kAllGather,
  kBroadcast,
  kReduceScatter,
  kReduce,
  kAllToAll,
};

/// "all-gather", "broadcast", "reduce-scatter", "reduce", "all-to-all".
std::string_view kind_name(CollectiveKind kind);

enum class CollectiveAlgorithm : std::uint8_t {
  kSharedMemory,      // free: the participants share memory
  kRing,              // all-gather, reduce-scatter
  kNvls,              // all-gather, reduce-scatter in the switch (NVLink SHARP)
  kHierarchicalRing,  // all-gather, reduce-scatter: within nodes, then across
  kChain,             // broadcast, reduce: ring-pipelined
  kTree,              // broadcast, reduce: binary tree
  kPairwise,          // all-to-all
};

/// "shared memory", "ring", "NVLS", "hierarchical ring", "chain", "tree", "pairwise".
std::string_view algorithm_name(CollectiveAlgorithm algorithm);

/// One recognised collective (see the table above).
struct Collective {
  CollectiveKind kind = CollectiveKind::kAllGather;
  ir::TensorId tensor;
  std::vector<std::uint32_t> devices;    // participants (senders and receivers), ascending
  std::vector<std::uint32_t> transfers;  // positions in Placement::transfers, ascending
  std::int64_t bytes = 0;                // N
  /// The largest part a ring step moves: all-gather, the largest contribution of a participant
  /// (bytes of U it writes); reduce-scatter, the largest slice one receiver gets from one
  /// writer. N/n for an even split. Broadcast and reduce: N. All-to-all: unused (0).
  std::int64_t chunk_bytes = 0;
  /// All-to-all: the largest bytes one participant sends or receives; 0 for other kinds.
  std::int64_t port_bytes = 0;

  friend bool operator==(const Collective&, const Collective&) = default;
};

/// What a collective costs on a target, and how it runs.
struct CollectivePrice {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  double seconds = 0;
  std::int64_t steps = 0;  // latency-bearing steps (α terms) of the chosen algorithm
  /// Reduce-scatter and reduce: the bytes a receiver holds while the collective runs — one
  /// step's chunk (chunk_bytes for a reduce-scatter, ⌈N/n⌉ for a reduce), the combine
  /// accumulating into its own output — instead of every partial at once. 0 for other kinds.
  std::int64_t staging_bytes = 0;
};

/// Prices `collective` on `target` (the closed forms above). Pure.
CollectivePrice price_collective(const Collective& collective, const Target& target);

/// The link classes a collective occupies: intra_node only when its participants share a node;
/// intra_node and inter_node when they span nodes.
bool spans_nodes(const Collective& collective, const Target& target);

/// By node index of `graph` (an operation or application graph): 1 for a partial tensor (above),
/// 0 otherwise.
std::vector<std::uint8_t> partial_tensors(const ir::Graph& graph);

/// One box of a tensor an application writes: what recognition knows of the writers.
struct WrittenBox {
  std::uint32_t tensor = 0;       // node index
  std::uint32_t application = 0;  // position in Placement::applications
  zspace::Range box;
};

/// Every box a placement's applications write, indexed by tensor: tensor t's (node index) are
/// boxes[order[k]] for k in [begin[t], begin[t + 1]), applications ascending.
struct WriterIndex {
  std::vector<WrittenBox> boxes;
  std::vector<std::uint32_t> begin;  // one more than the graph's nodes
  std::vector<std::uint32_t> order;

  /// The index of `boxes` (in any order) for a graph of `nodes` nodes.
  static WriterIndex of(std::vector<WrittenBox> boxes, std::size_t nodes);
};

/// Finds the collectives among a placement's transfers (the table above). The placement's
/// transfers must be complete and its applications placed; `partial` is partial_tensors() and
/// `element_bytes` the bytes per element, both by node index. Sets placement.collectives (in the
/// order of their first transfers) and every Transfer::collective. It keeps its scratch from call
/// to call (PlacementBuilder holds one, so an Evaluator recognises without allocating): one
/// recogniser per thread.
class CollectiveRecogniser {
 public:
  CollectiveRecogniser();
  ~CollectiveRecogniser();
  CollectiveRecogniser(CollectiveRecogniser&&) noexcept;
  CollectiveRecogniser& operator=(CollectiveRecogniser&&) noexcept;

  void recognise(Placement& placement, const WriterIndex& writers,
                 std::span<const std::uint8_t> partial,
                 std::span<const std::int64_t> element_bytes);

 private:
  struct Scratch;
  bool classify(const Placement& placement, const WriterIndex& writers, bool partial,
                std::int64_t element_bytes, Collective& out);
  bool blocks_of(const WriterIndex& writers, bool receivers_may_not_write);
  bool is_reduce_scatter(const Placement& placement, const WriterIndex& writers,
                         std::int64_t& block, std::int64_t& chunk);
  bool is_reduce(const Placement& placement, const WriterIndex& writers, std::int64_t& block);
  bool is_broadcast(const Placement& placement, std::int64_t& bytes);
  bool is_all_gather(const Placement& placement, const WriterIndex& writers,
                     std::int64_t element_bytes, std::int64_t& bytes, std::int64_t& chunk);
  std::unique_ptr<Scratch> s_;
};

}  // namespace tapestry::cost
