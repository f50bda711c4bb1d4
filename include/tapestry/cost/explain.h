// explain(): a priced plan in the words users of PyTorch DTensor and JAX already know.
//
// First the strategy in one line, derived from the placement alone (grids, mesh axes,
// collectives), never from how the plan was made. It classifies the *contractions* (matmul,
// linear, conv2d: the operations that carry the FLOPs; graph_roles.h) by the index dims their
// grid cuts — batch-like dims (data), other dims (tensor: an `out` or heads cut, or a split
// reduction's `block`), both, or none — and the combines of split reductions not at all (they
// are the collectives' local half):
//
//   every contraction cut the same way            the line
//   none cut, all on one device                   unsharded on gpu:0
//   batch-like dims only, b shards                data parallel ×b
//   other dims only, t shards                     tensor parallel ×t, "(Megatron)" when a
//                                                 column cut (out) feeds a row cut (block)
//   both                                          2-D: data b × tensor t
//   otherwise                                     mixed: 6 contractions data parallel ×8, 2 …
//
// then what the other operations do when it differs ("with sequence parallelism": operations
// outside the pairs cut along batch-like dims under a tensor-parallel plan; "3 other operations
// unsharded on gpu:0"), then the collectives by kind and size — "one all-reduce of 64.0 MiB per
// MLP" when there is one per Megatron pair (a pair is an attention block when the path from its
// row cut back to its column cut passes a product of two activations or a softmax, else an
// MLP), "2 all-gathers of 8.0 MiB" otherwise, "in each of 2 data groups" for collectives repeated
// over groups — and the bytes moved point to point.
//
// Then, when the caller prices them (gains_against_baselines), the gain against one device (the
// unsharded plan on the same target, every operation on its first device, `"fuse": "auto"` as the
// standard plans) and against plain data parallelism (the standard plan, standard_plans.h): each
// the baseline's makespan over this plan's, > 1 when this plan is faster:
//   Gain      5.43× against one device (1.049 ms); 1.00× against data parallel ×8 (193.2 µs)
// and, for a plan that recomputes activations (rewrite/recompute.h; recomputation_of), which
// segments it recomputes and what that saves in peak memory and costs in time against the same
// plan keeping them:
//   Recompute 1 segment: H/linear → H (2 operations); peak memory 1.05 MiB (kept: 1.34 MiB, saves
//             288.0 KiB); makespan 20.1 µs (kept: 18.9 µs, costs 1.2 µs)
//
// Then three parts:
// 1. Sharding, per operation: its grid (the split dims and their shard counts), the devices its
//    shards run on, and for every tensor it reads or writes one placement per grid axis:
//      Shard(k)      the axis cuts tensor dim k (the IPF maps the split index dim onto dim k);
//      Replicate()   every shard along the axis reads the whole tensor along it (the split
//                    index dim does not appear in the tensor's IPF);
//      Partial(sum)  the axis splits a reduction: each shard holds a partial result of the
//                    logical tensor, which a `reduce` combines (split-reduction's `block` dim).
//    The grid axes are the operation's split dims; with a plan "mesh", each is also named by the
//    mesh axis it lies on ("batch@dp").
// 2. Communication: each collective the cost model recognised (collective.h) by its kind and
//    algorithm, size N, devices and wall time — a reduce-scatter whose combine's output is then
//    all-gathered over the same devices as one "all-reduce (ring: reduce-scatter + all-gather)"
//    with both times, and collectives of one shape (the groups of a 2-D plan) as one line
//    "8 × …". The other transfers, point to point, grouped by (producer operation, consumer
//    operation, tensor), each group with its bytes, its devices, its wall time (first start to
//    last end) and a name for its pattern:
//      all-gather       every destination receives every other device's part of the tensor;
//      all-to-all       every device sends to and receives from every other (a re-sharding:
//                       rows to columns);
//      reduce           partials of a split reduction sent to the devices that combine them;
//      host load / host gather   inputs from or outputs to the host;
//      redistribute     anything else (e.g. rows written on one device, read on another).
// 3. Cost: the CostVector, per device compute / communication / idle, and the critical path —
//    the chain of applications and transfers that ends last, walked back from its end — split
//    into compute, communication and waiting, which names the resource that bounds the makespan.
//
//   Explanation e = explain(lowered.graph, placement, target, cost, schedule);
//   fmt::print("{}", to_text(e));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/cost/placement.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/cost/target.h"
#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/lower.h"

namespace tapestry::cost {

struct TensorSharding {
  std::string port;    // "x", "result", …
  std::string tensor;  // its label (the logical tensor for a partial)
  bool is_output = false;
  std::vector<std::string> placements;  // one per grid axis: "Shard(0)", "Replicate()", …
};

struct OperationSharding {
  std::string name;
  std::string kernel;
  std::vector<std::string> axes;     // "batch=2", or "batch=2@dp" under a mesh
  std::vector<std::string> devices;  // distinct devices, in first-use order
  std::vector<TensorSharding> tensors;
};

/// One line of the Communication section: a group of point-to-point transfers, or one or more
/// collectives of one shape (an all-reduce: a reduce-scatter and an all-gather).
struct Communication {
  /// A collective's kind ("all-gather", "reduce-scatter", "all-reduce", …), or a point-to-point
  /// group's pattern ("all-gather", "all-to-all", "reduce", "redistribute", "host load", …).
  std::string pattern;
  /// A collective's algorithm ("ring", "chain", "ring: reduce-scatter + all-gather", …); empty
  /// for point-to-point transfers.
  std::string algorithm;
  std::string tensor;            // label
  std::string producer;          // operation name ("host" for a load)
  std::string consumer;          // operation name ("host" for a gather)
  std::int64_t collectives = 0;  // how many collectives the line stands for; 0: point-to-point
  std::int64_t size_bytes = 0;   // a collective's size N (collective.h)
  std::int64_t transfers = 0;
  std::int64_t bytes = 0;  // moved by its transfers
  /// Wall time: from its first start to its last end (an all-reduce: the reduce-scatter's start
  /// to the all-gather's end, the combine between them included).
  double seconds = 0;
  double start_s = 0, end_s = 0;
  std::vector<double> parts_s;       // an all-reduce: the reduce-scatter's and all-gather's times
  std::vector<std::string> devices;  // a collective's participants
  std::vector<std::string> from;     // distinct devices
  std::vector<std::string> to;
};

struct CriticalPath {
  double compute_s = 0;
  double communication_s = 0;
  double waiting_s = 0;  // the path waited on a busy port or device
  std::int64_t applications = 0;
  std::int64_t transfers = 0;  // point-to-point
  std::int64_t collectives = 0;
  std::string bound;  // "compute", "communication" or "waiting"
};

/// The one-line strategy (above).
struct Strategy {
  std::string summary;  // "tensor parallel ×8 (Megatron), one all-reduce of 64.0 MiB per MLP"
  /// "unsharded", "data parallel", "tensor parallel", "2-D" or "mixed".
  std::string kind;
  std::int64_t data = 1;    // shards along batch-like dims (data parallel, 2-D)
  std::int64_t tensor = 1;  // shards along the other dims (tensor parallel, 2-D)
  bool megatron = false;    // a column cut feeds a row cut
};

/// This plan against a baseline priced on the same target.
struct Gain {
  std::string baseline;   // "one device", "data parallel ×8"
  double baseline_s = 0;  // its makespan; 0 when it was not priced
  double ratio = 0;       // baseline_s / this plan's makespan: > 1 when this plan is faster
  bool baseline_fits = true;
  std::string reason;  // why there is no baseline (data parallel does not apply: …)
};

/// What the plan's recomputation (rewrite/recompute.h) does, against the same plan keeping every
/// activation (its `recompute` list emptied), priced on the same target.
struct Recomputation {
  /// The recomputed operations in chains of operations reading one another ("H/linear → H"),
  /// in graph order.
  std::vector<std::string> segments;
  std::int64_t operations = 0;  // copies made
  /// "E: its input Y is freed after the forward pass …": what the plan asked for and did not get.
  std::vector<std::string> refused;
  std::int64_t peak_memory_bytes = 0;  // this plan
  double makespan_s = 0;
  std::int64_t kept_peak_memory_bytes = 0;  // the plan without recomputation
  double kept_makespan_s = 0;
  std::string reason;  // why the plan without recomputation could not be priced
};

/// What the plan's `zero` member (rewrite/zero.h) shards, against the same plan without it (every
/// parameter and its state whole), priced on the same target.
struct ZeroSharding {
  int stage = 0;
  std::int64_t shards = 0;
  std::string axis;                     // empty: the default placement
  std::vector<std::string> params;      // sharded, in graph order
  std::vector<std::string> states;      // their optimizer state (graph inputs the updates read)
  std::vector<std::string> regathered;  // stage 3: parameters the backward pass gathers again
  std::int64_t sharded_bytes = 0;       // the parameters' and states' bytes, whole
  /// "b: no optimizer update …": what the plan asked for and did not get.
  std::vector<std::string> refused;
  std::int64_t peak_memory_bytes = 0;  // this plan
  double makespan_s = 0;
  std::int64_t whole_peak_memory_bytes = 0;  // the plan without `zero`
  double whole_makespan_s = 0;
  std::string reason;  // why the plan without `zero` could not be priced
};

/// What the plan's `pipeline` member (rewrite/pipeline.h) builds, priced: each stage's forward
/// operations, device, busy time and peak memory, and the bubble.
struct PipelineStages {
  std::string schedule;  // "1f1b" or "gpipe"
  std::int64_t microbatches = 0;
  struct Stage {
    std::string device;                   // "gpu:1"
    std::vector<std::string> operations;  // the forward operations the plan names, graph order
    std::int64_t applications = 0;        // on its device, backward and updates included
    double busy_s = 0;
    std::int64_t peak_memory_bytes = 0;
  };
  std::vector<Stage> stages;
  double makespan_s = 0;
  /// The stages' idle time over their total (stages × makespan): the bubble, and stage
  /// imbalance, as the list scheduler runs the schedule.
  double bubble = 0;
};

struct Explanation {
  std::string target;
  Strategy strategy;
  std::vector<Gain> gains;  // filled by the caller (gains_against_baselines), else empty
  /// Filled by the caller (recomputation_of) for a plan that recomputes.
  std::optional<Recomputation> recomputation;
  /// Filled by the caller (zero_sharding_of) for a plan with `zero`.
  std::optional<ZeroSharding> zero;
  /// Filled by the caller (pipeline_of) for a plan with `pipeline`.
  std::optional<PipelineStages> pipeline;
  std::vector<OperationSharding> operations;
  std::vector<Communication> communication;
  CostVector cost;
  CriticalPath critical_path;
};

/// Explains `placement` (of the application graph `graph`) on `target`, priced as `cost` with
/// `schedule` (both from simulate()).
Explanation explain(const ir::Graph& graph, const Placement& placement, const Target& target,
                    const CostVector& cost, const Schedule& schedule);

/// The gains of a plan of makespan `makespan_s` against one device and against the data-parallel
/// standard plan, each priced with an Evaluator of `graph` (the operation graph the plan was
/// lowered from) on `target` with lower's `options`. A baseline that cannot be priced (data
/// parallelism does not apply, or the rewrites refuse it) carries the reason instead.
std::vector<Gain> gains_against_baselines(const ir::Graph& graph, const Target& target,
                                          double makespan_s,
                                          const rewrite::LowerOptions& options = {});

/// The recomputation of `plan` (the plan as given, before lowering) on `target`, from `lowered`
/// (its lowering) and `cost` (its price); the plan without `recompute` priced with an Evaluator
/// of `graph` and lower's `options`. nullopt when the plan recomputes nothing. The text form:
///
///   Recompute  1 segment: H/linear → H (2 operations); peak memory 1.05 MiB (kept: 1.34 MiB,
///              saves 288.0 KiB); makespan 20.1 µs (kept: 18.9 µs, costs 1.2 µs)
std::optional<Recomputation> recomputation_of(const ir::Graph& graph, const rewrite::Plan& plan,
                                              const rewrite::LowerResult& lowered,
                                              const Target& target, const CostVector& cost,
                                              const rewrite::LowerOptions& options = {});

/// The sharded parameters of `plan` (its `zero` member) on `target`, from `lowered` (its
/// lowering) and `cost` (its price); the plan without `zero` priced with an Evaluator of `graph`
/// and lower's `options`. nullopt when the plan has no `zero`. The text form:
///
///   Sharded   ZeRO-3 over 2 shards: parameters W1, b1, W2, b2 (gathered before their uses,
///             W2 re-gathered for the backward pass), their gradients (reduce-scattered into
///             the sliced updates) and optimizer state W1_m, W1_v, … (one block per device,
///             1.1 MiB whole); peak memory 612.0 KiB (whole: 1.2 MiB, saves 640.0 KiB);
///             makespan 83.0 µs (whole: 80.1 µs, costs 2.9 µs)
std::optional<ZeroSharding> zero_sharding_of(const ir::Graph& graph, const rewrite::Plan& plan,
                                             const rewrite::LowerResult& lowered,
                                             const Target& target, const CostVector& cost,
                                             const rewrite::LowerOptions& options = {});

/// The stages of `plan`'s pipeline on `target`, from `lowered` (its lowering) and `cost` (its
/// price, with per_device); nullopt when the plan has no `pipeline`. The text form:
///
///   Pipeline  2 stages × 4 microbatches, 1F1B; bubble 21% (the stages' idle time / 2 × makespan
///             364.6 µs); stage 0 on gpu:0: L0/linear, L0, L1/linear, L1 (53 applications, busy
///             265.5 µs, peak memory 182.8 KiB); stage 1 on gpu:1: …
std::optional<PipelineStages> pipeline_of(const rewrite::Plan& plan,
                                          const rewrite::LowerResult& lowered, const Target& target,
                                          const CostVector& cost);

/// The human form: the strategy (and gains), then three sections, aligned columns.
std::string to_text(const Explanation& explanation);
/// {"target", "strategy": {"summary", "kind", "data", "tensor", "megatron"}, "gains": [{"baseline",
/// "baseline_s", "ratio", "baseline_fits"} | {"baseline", "reason"}], "recompute": {"segments",
/// "operations", "refused", "peak_memory_bytes", "makespan_s", "kept_peak_memory_bytes",
/// "kept_makespan_s"[, "reason"]} (only for a plan that recomputes), "pipeline": {"schedule",
/// "microbatches", "stages": [{"device", "operations", "applications", "busy_s",
/// "peak_memory_bytes"}], "makespan_s", "bubble"} (only for a plan with a pipeline), "zero":
/// {"stage", "shards", "axis", "params", "states", "regathered", "sharded_bytes", "refused",
/// "peak_memory_bytes", "makespan_s", "whole_peak_memory_bytes", "whole_makespan_s"[, "reason"]}
/// (only with `zero`), "operations": [...], "communication": [...], "cost": {...}, "critical_path":
/// {...}}.
nlohmann::json to_json(const Explanation& explanation);

/// The predicted schedule as a Chrome trace-event document, the format `tapestry run --trace`
/// writes, so a prediction and a measured run open side by side in Perfetto: a track per device
/// (tid = device position, named after the device) holding an event per application — named like
/// the run's (the application's label, else its id), `cat` its operation's kernel, args
/// `operation`, `flops`, `bytes_read`, `bytes_written` — and a track "<device> receives" per
/// receiving device (tid = devices + position; "host receives" last) with an event per transfer
/// (args `tensor`, `from`, `bytes`). Times in µs from the run's start.
///
///   tapestry cost examples/convnet.tap --target cpu-local --trace predicted.json
///   tapestry run examples/convnet.tap --trace measured.json
nlohmann::json chrome_trace(const ir::Graph& graph, const Placement& placement,
                            const Target& target, const Schedule& schedule);

}  // namespace tapestry::cost
