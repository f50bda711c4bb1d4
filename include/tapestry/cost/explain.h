// explain(): a priced plan in the words users of PyTorch DTensor and JAX already know.
//
// Three parts:
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
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/cost/placement.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/cost/target.h"
#include "tapestry/ir/graph.h"

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

struct Explanation {
  std::string target;
  std::vector<OperationSharding> operations;
  std::vector<Communication> communication;
  CostVector cost;
  CriticalPath critical_path;
};

/// Explains `placement` (of the application graph `graph`) on `target`, priced as `cost` with
/// `schedule` (both from simulate()).
Explanation explain(const ir::Graph& graph, const Placement& placement, const Target& target,
                    const CostVector& cost, const Schedule& schedule);

/// The human form: three sections, aligned columns.
std::string to_text(const Explanation& explanation);
/// {"target", "operations": [...], "communication": [...], "cost": {...}, "critical_path": {...}}.
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
