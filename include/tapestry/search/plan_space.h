// PlanSpace: the decisions a plan can make for one graph on one target, as the search sees them.
//
// For every operation (in topological order): its plan name, kernel, index dims with their
// extents and which are reductions, and for each port which index dim each tensor dim follows —
// so a split can be carried from a producer to its consumer through the tensor between them
// (the `align` mutation, mutate.h). Also the edges producer → consumer, the target's device
// count and mesh axes, and two roles the seeds use:
//
//   batch dim   the non-reduction dim that the operation's first output's dim 0 follows
//               (linear: `batch`, relu: `d0`) — data parallelism cuts it;
//   weight dim  the non-reduction dim that follows a dim of a *weight*: a graph input of rank
//               >= 2 that does not depend on the batch dim (linear's `w` → `out`, conv2d's `w`
//               → `o`) — "each weight's output dimension split" cuts it.
//
// A tensor dim follows the index dim with the largest coefficient in its IPF row (the only one
// for most kernels; for reshape's merged dim [h·64 + d], h): cutting that index dim cuts the
// tensor dim into contiguous blocks.
//
// Tied layers (`--tie-layers`). Operations of the same *kind* share one plan entry: same kernel,
// index extents, reductions and params, and names equal once every run of digits is replaced by
// `#` (`L3/Q/linear` and `L17/Q/linear`; `Q3` and `Q17`). The search mutates one representative
// per kind (the first in topological order) and `expand` copies its entry to every member, so
// a 24-layer model has as many decisions as one layer. Without tying every operation is its own
// kind.
//
//   PlanSpace space(graph, *cost::preset_target("h100x8"), /*tie_layers=*/true);
//   space.operations()[0].name;           // "H/linear"
//   space.expand(genome);                 // the plan with tied layers filled in
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/cost/target.h"
#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::search {

struct DimInfo {
  std::string name;
  std::int64_t extent = 1;
  bool reduction = false;
};

/// One port of an operation: its tensor, and for each tensor dim the index dim it follows.
struct PortDims {
  ir::TensorId tensor;
  std::vector<std::optional<std::size_t>> follows;
};

struct OperationInfo {
  std::string name;  // as plans name it (rewrite::operation_name)
  std::string kernel;
  std::vector<DimInfo> dims;
  std::vector<PortDims> inputs;   // in (name, position) order
  std::vector<PortDims> outputs;  // ditto
  bool decomposable = false;      // decompose-linear may rewrite it (a linear)
  std::optional<std::size_t> batch_dim;
  std::optional<std::size_t> weight_dim;
  std::size_t kind = 0;  // position in PlanSpace::kinds()
};

/// Producer `producer` writes `tensor` through its output port `output`; `consumer` reads it
/// through its input port `input` (positions in operations() and in their port lists).
struct Edge {
  std::size_t producer = 0;
  std::size_t output = 0;
  std::size_t consumer = 0;
  std::size_t input = 0;
};

/// A training step's decisions beyond the cuts (cost::training_roles; all empty when the graph
/// is not a training step): what the `recompute`, `zero` and `pipeline` mutations choose from.
struct TrainingSpace {
  /// The parameters (graph inputs an optimizer kernel updates): `zero`'s params.
  std::vector<std::string> parameters;
  /// Shard counts for `zero`: from 2 to the device count, dividing every parameter's dim 0
  /// (powers of two, the device count, the mesh axes' sizes).
  std::vector<std::int64_t> zero_shards;
  /// Representatives (positions in operations()) of the forward operations that may be
  /// recomputed: they read an activation and write no checkpoint (cost::TrainingRoles::full).
  std::vector<std::size_t> recomputable;
  /// The representatives of full and of selective recomputation's operations, by name.
  std::vector<std::string> full, selective;
  /// The forward operations of each layer, in the forward order: the kinds of forward operation
  /// (tied by name pattern and structure, whether or not the search ties them) with the most
  /// members, `depth`, give member i to layer i (a kind of k·depth members: k a layer). Empty
  /// for a graph of one layer.
  std::vector<std::vector<std::string>> layers;
  /// Microbatch counts dividing every forward operation's batch dim (2 … 64).
  std::vector<std::int64_t> microbatches;
};

class PlanSpace {
 public:
  PlanSpace(const ir::Graph& graph, const cost::Target& target, bool tie_layers);

  /// Every operation, in topological order.
  [[nodiscard]] const std::vector<OperationInfo>& operations() const { return operations_; }
  /// The operations of each kind (positions in operations()); the first is its representative.
  [[nodiscard]] const std::vector<std::vector<std::size_t>>& kinds() const { return kinds_; }
  /// The representatives: the operations a genome names.
  [[nodiscard]] const std::vector<std::size_t>& representatives() const { return representatives_; }
  [[nodiscard]] std::size_t representative(std::size_t op) const {
    return kinds_[operations_[op].kind].front();
  }
  [[nodiscard]] const std::vector<Edge>& edges() const { return edges_; }
  /// Edges out of / into an operation (positions in edges()).
  [[nodiscard]] const std::vector<std::size_t>& edges_from(std::size_t op) const {
    return out_edges_[op];
  }
  [[nodiscard]] const std::vector<std::size_t>& edges_into(std::size_t op) const {
    return in_edges_[op];
  }
  [[nodiscard]] std::optional<std::size_t> find(std::string_view name) const;

  [[nodiscard]] std::int64_t device_count() const { return device_count_; }
  [[nodiscard]] const std::vector<cost::MeshAxis>& mesh_axes() const { return mesh_axes_; }
  [[nodiscard]] const std::vector<std::string>& device_names() const { return device_names_; }
  [[nodiscard]] bool tie_layers() const { return tie_layers_; }
  /// The training step's decisions; `training().parameters` empty: not a training step.
  [[nodiscard]] const TrainingSpace& training() const { return training_; }
  [[nodiscard]] bool is_training_step() const { return !training_.parameters.empty(); }

  /// The genome with every tied operation given its representative's entry (fusion pairs
  /// repeated layer by layer, a recomputed representative's kind recomputed whole, in
  /// topological order). Without tying: the genome itself.
  [[nodiscard]] rewrite::Plan expand(const rewrite::Plan& genome) const;

 private:
  void build_training(const ir::Graph& graph, const cost::Target& target);

  std::vector<OperationInfo> operations_;
  std::vector<std::vector<std::size_t>> kinds_;
  std::vector<std::size_t> representatives_;
  std::vector<Edge> edges_;
  std::vector<std::vector<std::size_t>> out_edges_;
  std::vector<std::vector<std::size_t>> in_edges_;
  std::int64_t device_count_ = 1;
  std::vector<cost::MeshAxis> mesh_axes_;
  std::vector<std::string> device_names_;
  bool tie_layers_ = false;
  TrainingSpace training_;
};

/// The name with every run of digits replaced by '#': the layer-independent part of a name.
std::string name_pattern(std::string_view name);

/// The first `layers` layers of a graph of repeated layers: the graph without the operations of
/// later layers, the operations that read what those produce, and the tensors left with neither
/// producer nor consumer. `space` must tie layers; the depth is its largest kind's size, and an
/// operation's layer is its place among its kind's members (a kind of 2 × depth members: two a
/// layer). A kind whose size the depth does not divide (a stem, a head) is kept while what it
/// reads is. nullopt when the graph has fewer than 2 × `layers` layers. Names are kept, so a
/// genome of the prefix's PlanSpace names the same representatives.
std::optional<ir::Graph> layer_prefix(const ir::Graph& graph, const PlanSpace& space, int layers);

}  // namespace tapestry::search
