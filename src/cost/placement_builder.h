// PlacementBuilder: a Placement from shards given as plain data — the one implementation of
// placement.h's rules behind both `place()` (which reads the shards of an application graph) and
// `Evaluator` (which computes them from an operation graph and split counts, never building the
// Applications).
//
// The caller adds operations in topological order, each with its shards (device, work, the boxes
// each reads and writes), then calls `connect()`, which derives local producers, transfers and
// resident inputs, and recognises the collectives among the transfers (collective.h). The builder
// writes into a Placement it is given and reuses that Placement's storage, so an Evaluator that
// places plan after plan into one Placement allocates little.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "tapestry/cost/placement.h"
#include "tapestry/cost/target.h"
#include "tapestry/ir/graph.h"
#include "tapestry/zspace/box_index.h"
#include "tapestry/zspace/range.h"

namespace tapestry::cost::detail {

/// What placement needs to know of a graph's tensors, computed once per graph.
struct TensorFacts {
  const ir::Graph* graph = nullptr;         // for messages naming a tensor
  std::vector<std::int64_t> element_bytes;  // by node index; 0: not a tensor or an unknown dtype
  std::vector<ir::TensorId> outputs;        // metakernel::graph_outputs, in its order
  std::vector<std::uint8_t> partial;        // by node index: partial_tensors (collective.h)
  /// By operation node index: the tensors (node indexes) it starts after (ir/ordering.h).
  std::vector<std::vector<std::uint32_t>> after;

  static TensorFacts of(const ir::Graph& graph);
  /// Bytes per element of `tensor` (node index); Error when the cost model does not know its
  /// dtype.
  [[nodiscard]] std::int64_t bytes_of(std::uint32_t tensor) const;
};

/// The target's devices for a message: all of them up to 4, else "first … last".
std::string device_list(const Target& target);

/// One box a shard reads or writes.
struct ShardBox {
  std::uint32_t tensor = 0;  // node index
  zspace::Range box;
};

/// One writer a box read overlaps (PlacementBuilder::connect): the writer's position among its
/// tensor's written boxes (application order). The hits depend on the boxes alone, not on
/// devices, so a caller that knows the boxes of a reader and of its tensor's writers did not
/// change may hand them back (add_input with `known`) instead of having the writers searched
/// again — cost::Evaluator keeps them per operation from plan to plan. Only the position: the
/// intersection is made again for a transfer (keeping it cost 112 bytes a hit, 280 MB more on a
/// 24-layer plan on 64 devices, whose 64-way reads each overlap 64 writers).
struct ReadHit {
  std::uint32_t writer = 0;
};

/// The grid of one operation's shards: counts per index dim and, per shard, its coordinates.
struct ShardGrid {
  std::size_t rank = 0;
  std::size_t shards = 0;
  std::vector<std::int64_t> counts;       // shards per index dim
  std::vector<std::int64_t> coordinates;  // shard i's coordinate along d at i·rank + d

  /// The row-major position of shard i in the grid.
  [[nodiscard]] std::size_t linear(std::size_t i) const;
};

/// The operation a colocated one runs with (rewrite::OpPlan::colocate), already placed.
struct Colocated {
  const rewrite::OpPlan::Colocation* colocation = nullptr;
  const PlacedOperation* with = nullptr;  // its grid and applications, in grid order
  std::span<const std::string> with_index_names;
  std::span<const PlacedApplication> applications;  // what with->applications index
};

/// The device of every shard of `placed` (placement.h's rules: the plan's `place` list, else its
/// `mesh`, else — colocated — the device of the corresponding shard of the operation it runs
/// with, else devices 0..n−1 cycled, all in grid order). Fills placed.grid and placed.mesh_axis
/// (a colocated dim takes the axis of the dim it follows); Error naming the plan path when a
/// device or mesh axis does not exist.
void assign_devices(PlacedOperation& placed, std::span<const std::string> index_names,
                    const ShardGrid& grid, std::span<const std::string> place,
                    const std::map<std::string, std::string>* mesh, const Colocated* colocated,
                    const Target& target, std::vector<std::uint32_t>& devices);

/// A graph output the plan replicates (rewrite::Plan::outputs): its tensor (node index) and the
/// mesh axis along which its writers share it (nullopt: all of them).
struct ReplicatedOutput {
  std::uint32_t tensor = 0;
  std::optional<std::size_t> axis;
};

/// The plan's replicated outputs in `graph` (an output tensor keeps its name through the
/// rewrites). Error naming the plan path for an output the graph lacks or an axis the target's
/// mesh lacks.
std::vector<ReplicatedOutput> replicated_outputs(const rewrite::Plan& plan, const ir::Graph& graph,
                                                 const Target& target);

/// An open-addressing hash set of positions into a vector the caller owns; the caller hashes
/// its elements and says which are equal.
class PositionSet {
 public:
  void clear();
  /// The position of an element with hash `hash` that `equal(position)` accepts, else -1.
  template <typename Equal>
  [[nodiscard]] std::int64_t find(std::uint64_t hash, Equal&& equal) const {
    if (slots_.empty()) return -1;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.position == 0) return -1;
      if (s.hash == hash && equal(s.position - 1)) return s.position - 1;
    }
  }
  /// Adds `position` (not present) with its hash.
  void insert(std::uint64_t hash, std::uint32_t position);

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t position = 0;  // position + 1; 0: empty
  };
  void place(Slot slot);
  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

class PlacementBuilder {
 public:
  PlacementBuilder(const TensorFacts& facts, const Target& target);
  /// Places the next placements on the graph of `facts` (which must outlive them): one builder,
  /// its storage reused, for the graphs of many plans (cost::Evaluator).
  void use_facts(const TensorFacts& facts) { facts_ = &facts; }
  /// Starts a placement into `out`, which is emptied (its storage kept for reuse); `replicated`
  /// are the outputs to share among their writers (connect() adds the transfers).
  void start(Placement& out, std::span<const ReplicatedOutput> replicated = {});

  /// Starts the next operation (topological order); its applications follow.
  void add_operation(ir::OperationId id, std::string_view name, std::string_view kernel);
  /// The current operation's placed form (to fill its grid and mesh axes).
  PlacedOperation& operation() { return out_->operations[n_operations_ - 1]; }
  /// What assign_devices needs to colocate the current operation with the one `colocation`
  /// names, placed before it, whose index dims are `with_index_names`; nullopt when no operation
  /// of that name was placed before it (the default placement then applies).
  std::optional<Colocated> colocated(const rewrite::OpPlan::Colocation& colocation,
                                     std::span<const std::string> with_index_names) const;
  /// A box the next application reads / writes (add them, then add_application).
  const zspace::Range& add_input(std::uint32_t tensor, const zspace::Range& box);
  /// A box read whose overlapping writers are `known` (ReadHit; the storage must outlive
  /// connect()): connect() takes them as they are instead of searching the writers. Exactly the
  /// hits the search would find, in its order — the writers' boxes are the caller's promise.
  const zspace::Range& add_input(std::uint32_t tensor, const zspace::Range& box,
                                 std::span<const ReadHit> known);
  /// A box read whose hits connect() keeps for recorded(input), where `input` is its number
  /// among every add_input since start() (0, 1, …).
  const zspace::Range& add_input_recorded(std::uint32_t tensor, const zspace::Range& box);
  /// The hits connect() found for input number `input`, added with add_input_recorded (valid
  /// until the next start()).
  [[nodiscard]] std::span<const ReadHit> recorded(std::size_t input) const;
  const zspace::Range& add_output(std::uint32_t tensor, const zspace::Range& box);
  /// Adds an application of the current operation, with the boxes added since the last one;
  /// `pinned`: the plan chose its device (PlacedApplication::pinned).
  void add_application(ir::ApplicationId id, std::uint32_t device, const Work& work, bool pinned);
  /// Derives local producers (with the ordering edges of ir/ordering.h on one device),
  /// transfers, resident inputs and collectives; the Placement is then complete.
  void connect();

 private:
  void index_writers();
  void read(std::uint32_t a, std::uint32_t input);
  void add_transfer(std::uint32_t consumer, std::uint32_t producer, std::uint32_t from,
                    std::uint32_t tensor, const zspace::Range& box);
  void add_resident(std::uint32_t device, std::uint32_t tensor, const zspace::Range& box);
  void gather_outputs();
  void replicate_outputs();
  void share_buffers();

  const TensorFacts* facts_;
  const Target& target_;
  Placement* out_ = nullptr;
  std::size_t n_operations_ = 0;
  std::size_t n_applications_ = 0;
  std::size_t n_transfers_ = 0;
  // The boxes of application a: inputs_[in_begin_[a], in_begin_[a + 1]).
  std::vector<ShardBox> inputs_;
  std::vector<std::uint32_t> in_begin_;
  // Per input box (parallel to inputs_): the hits given (known, n), or to record (record:
  // connect() sets recorded_[first, first + n)).
  struct InputHits {
    enum Mode : std::uint8_t { kSearch, kKnown, kRecord };
    const ReadHit* known = nullptr;
    std::uint32_t n = 0;
    Mode mode = kSearch;
    std::uint32_t first = 0;
  };
  std::vector<InputHits> in_hits_;
  std::vector<ReadHit> recorded_;
  std::size_t n_recorded_ = 0;  // slots of recorded_ in use
  // Every box written (written_.boxes, in application order) and, once connect() indexes them,
  // the writers by tensor: tensor t's are written_.boxes[written_.order[k]] for k in
  // [written_.begin[t], written_.begin[t + 1]), in application order.
  WriterIndex written_;
  CollectiveRecogniser collectives_;
  struct Indexed {  // the boxes of a tensor with many writers, and their index
    std::vector<zspace::Range> boxes;
    std::unique_ptr<zspace::BoxIndex> index;
  };
  std::vector<std::unique_ptr<Indexed>> indexed_;  // by tensor, built on first use
  std::vector<std::uint32_t> hits_, cursor_;
  // Open-addressing sets of positions in out_->transfers and in resident_.
  PositionSet transfer_set_, resident_set_;
  struct Resident {
    std::uint32_t device;
    std::uint32_t tensor;
    zspace::Range box;
  };
  std::vector<Resident> resident_;
  std::vector<ReplicatedOutput> replicated_;
  // share_buffers()'s rows of the boxes of tensors with several writers: a writer's (`writer`
  // its position) or a reader's (`writer` kHost), sorted by tensor, device and first row.
  struct RowSpan {
    std::uint32_t tensor, device;
    std::int64_t start, end;  // rows [start, end); a rank-0 tensor's one "row" [0, 1)
    std::uint32_t writer;
    std::int64_t bytes;
    friend bool operator<(const RowSpan& a, const RowSpan& b) {
      return std::tie(a.tensor, a.device, a.start, a.writer) <
             std::tie(b.tensor, b.device, b.start, b.writer);
    }
  };
  std::vector<RowSpan> spans_;
  // By tensor: 0 no two writers on one device, 1 some, 2 some of a graph output's.
  std::vector<char> shares_;
  std::vector<std::uint32_t> last_writer_of_;  // by device: the last tensor seen written there
};

}  // namespace tapestry::cost::detail
