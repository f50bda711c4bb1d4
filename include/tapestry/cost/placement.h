// Placement: every Application of a lowered graph on a device of a Target, and every byte that
// must cross between devices derived from box intersections — never written by hand.
//
// Where shards run. A plan may say, per operation:
//   "place": ["gpu:0", "gpu:4"]          shards in grid order (row-major over the split dims) on
//                                        these devices, cycled when there are more shards;
//   "mesh":  {"batch": "dp", "out": "tp"} shard (i, j) of the grid on the device at mesh
//                                        coordinate (dp = i mod |dp|, tp = j mod |tp|); mesh axes
//                                        the operation does not map take coordinate 0;
// and without either (the default) its shards, in grid order, go on devices 0, 1, … n−1 of the
// target, cycled. An unsharded operation therefore runs on device 0, and a plan that shards
// nothing moves no bytes. The combine of a split reduction that the plan does not place follows
// the partial blocks (rewrite::OpPlan::colocate): its shard j runs where block j was computed.
//
// What moves. For every input box an application reads, the parts written by applications on
// another device (the intersection of the producer's output box and the consumer's input box,
// exact, via zspace) become one Transfer each — once per destination device: two shards on
// gpu:1 reading the same rows of a tensor written on gpu:0 share one transfer. Graph inputs are
// resident wherever they are read unless the target says `"inputs": "host"` (then each device
// loads, once, each distinct box it reads); graph outputs stay where they are written unless
// `"outputs": "host"` (then every written box is gathered to the host). A plan's
// `"outputs": {"Y": {"replicate": "all" | AXIS}}` adds, for every device that writes part of Y,
// the boxes the other writers of its group write (all of them, or those differing from it only
// along mesh axis AXIS): transfers no application reads (Transfer::replicates_output), which the
// receiver holds to the end of the run — an all-gather per group.
//
// Collectives. Groups of transfers of one tensor that form an all-gather, reduce-scatter,
// reduce, broadcast or all-to-all are recognised (collective.h) and listed in
// Placement::collectives; simulate() prices each as one operation of the target's collective
// algorithm instead of as separate transfers.
//
// Worked example — `Y = relu(linear(X, W, b))`, X f32[4096, 1024], W f32[4096, 1024], on
// h100x8 with {"ops": {"Y": {"split": {"batch": 2}}}} (Y/linear unsplit, on gpu:0):
//   Y/linear       1 application on gpu:0, writes Y/linear's output Z[0:4096, 0:4096]
//   Y (relu) ×2    on gpu:0 (rows 0–2047) and gpu:1 (rows 2048–4095)
//   transfers      one: Z[2048:4096, 0:4096] gpu:0 → gpu:1, 2048·4096·4 = 33,554,432 bytes
//
//   Placement p = place(lowered.graph, lowered.plan, preset_target("h100x8").value());
//   p.applications.size() == 3;  p.transfers.size() == 1;  p.transfers[0].bytes == 33554432
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tapestry/cost/collective.h"
#include "tapestry/cost/target.h"
#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/zspace/range.h"

namespace tapestry::cost {

/// "No device": the host, for transfers from or to it.
inline constexpr std::uint32_t kHost = std::numeric_limits<std::uint32_t>::max();

/// The work of one application, from its kernel and its boxes (work.h has the rules).
struct Work {
  double flops = 0;             // arithmetic operations
  std::int64_t bytes_read = 0;  // bytes of every input box
  std::int64_t bytes_written = 0;
  ir::DType dtype = ir::DType::kFloat32;  // the element type its arithmetic runs in
  /// The part of `flops` in GEMM kernels (matmul, linear, linear_nobias, or such stages of a
  /// fused operation): what a device type's GEMM efficiency table prices (target.h).
  double gemm_flops = 0;
};

struct PlacedApplication {
  ir::ApplicationId id;
  std::uint32_t operation = 0;  // position in Placement::operations
  std::uint32_t device = 0;     // position in Target::devices
  Work work;
  /// Applications on the same device whose output this one reads (positions in applications).
  std::vector<std::uint32_t> local_producers;
  /// Applications on the same device it starts after without reading their output (positions in
  /// applications, none of them in local_producers): the writers of the tensors its operation's
  /// ordering edge names (a recomputed copy's or a re-gather's `after`, ir/ordering.h) and the
  /// applications a pipeline schedule puts before it. They delay its start, and unlike a local
  /// producer's output theirs is not held until it finishes — e.g. 1F1B's backward of microbatch
  /// 0 runs after the forward of microbatch 1, which frees its activation when its own readers
  /// are done, not when that backward ends.
  std::vector<std::uint32_t> ordering_predecessors;
  /// Transfers this one waits for (positions in transfers).
  std::vector<std::uint32_t> incoming;
  /// It writes (part of) a graph output, which stays allocated to the end of the run.
  bool writes_output = false;
  /// The plan chose its device (`place` or `mesh`). An unpinned application on a node whose
  /// devices share memory may run on any device of that node (simulate.h).
  bool pinned = false;
};

struct Transfer {
  ir::TensorId tensor;
  zspace::Range box;  // the cells moved, in the tensor's coordinates
  std::int64_t bytes = 0;
  std::uint32_t from = kHost;      // device, or kHost for a graph input loaded from the host
  std::uint32_t to = kHost;        // device, or kHost for an output gathered to the host
  std::uint32_t producer = kHost;  // the application that writes the box (kHost: a graph input)
  /// The applications on `to` that read it (empty for a gather to the host).
  std::vector<std::uint32_t> consumers;
  /// The collective it belongs to (a position in Placement::collectives), or kNoCollective.
  std::uint32_t collective = kNoCollective;
  /// It delivers part of a replicated graph output (rewrite::Plan::outputs): no consumer, and
  /// the receiver holds it to the end of the run.
  bool replicates_output = false;
};

/// A kernel's part of an operation's FLOPs (a fused operation has one per stage).
struct KernelShare {
  std::string kernel;  // "conv2d"
  double share = 1.0;  // of the operation's FLOPs, summing to 1 over the operation's shares
};

/// One operation of the lowered graph and how it was placed.
struct PlacedOperation {
  ir::OperationId id;
  std::string name;    // rewrite::operation_name
  std::string kernel;  // "linear", "fused", …
  /// The kernels its FLOPs run in: {kernel, 1} for a plain operation, the stages of a fused one
  /// with their parts of the FLOPs (over the first application's box); empty without FLOPs.
  std::vector<KernelShare> kernels;
  std::vector<std::uint32_t> applications;  // positions in Placement::applications, grid order
  std::vector<std::int64_t> grid;           // shards along each index dim (1: not split)
  std::vector<std::string> mesh_axis;       // per index dim: the mesh axis it lies on, or ""
};

/// Row pieces of one tensor that share a buffer on a device: the executors give an intermediate
/// tensor a buffer per interval of rows its boxes fall into on a device (runtime.md, "Memory"),
/// and boxes whose rows overlap — several writers' blocks read by one reader spanning them —
/// share one, allocated at the first write and freed after the last use (a graph output: one
/// buffer per device, from its first write to the end of the run). So the model holds
/// these writers' blocks together: from the first writer's start until the last of them is
/// freed. E.g. a pipeline's four microbatches each writing one block of `dW2/partial[4, 64, 64]`,
/// which the combine reads whole: one buffer of 65,536 B from the first microbatch's backward on,
/// where each block alone (16,384 B from its own write) would leave three quarters of it out
/// until the later microbatches write theirs.
struct SharedBuffer {
  ir::TensorId tensor;
  std::uint32_t device = 0;
  std::vector<std::uint32_t> writers;  // positions in applications, ascending (two or more)
  std::vector<std::int64_t> bytes;     // parallel to writers: the bytes each writes into it
};

struct Placement {
  std::vector<PlacedOperation> operations;      // in graph order
  std::vector<PlacedApplication> applications;  // in a topological order (producers first)
  std::vector<Transfer> transfers;              // in the order consumers first need them
  /// The collectives those transfers form (collective.h), in the order of their first transfers.
  std::vector<Collective> collectives;
  /// Bytes of graph inputs each device holds (distinct boxes it reads), by device position; 0
  /// when inputs come from the host (they are then transfers).
  std::vector<std::int64_t> resident_input_bytes;
  /// The row pieces of intermediate tensors whose writers on one device share a buffer.
  std::vector<SharedBuffer> shared_buffers;
};

/// Places every application of `graph` (an application graph from rewrite::lower; `plan` is the
/// LowerResult's plan, naming the final operations) on `target`. Error (bad input, exit 2) when
/// the plan places shards on a device the target lacks ("plan: /ops/Y/place/1: target 'h100x8'
/// has no device 'gpu:9' (it has gpu:0 … gpu:7)"), maps a dim to a mesh axis the target lacks or
/// a dim it does not split, or both places and meshes one operation.
Placement place(const ir::Graph& graph, const rewrite::Plan& plan, const Target& target);

/// Writes the placement into `graph` (the application graph it was made from): every Application
/// gets a Placement tag (ir/type_names.h) with its device and the transfers it receives —
/// {"device": "gpu:1", "receives": [{"tensorId", "range", "from": "gpu:0" | "host"}]} — so the
/// graph validates in the placement dialect and others can read where everything runs.
void annotate_placement(ir::Graph& graph, const Placement& placement, const Target& target);

/// Problems of a placed graph (Placement tags) against a target: one message per application
/// placed on, or receiving from, a device the target lacks, naming the application and device.
std::vector<std::string> check_devices(const ir::Graph& graph, const Target& target);

}  // namespace tapestry::cost
