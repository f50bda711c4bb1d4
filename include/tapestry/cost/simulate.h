// simulate(placement, target) → CostVector: what a placed plan costs on a target, without running.
//
// Kernel time (the roofline model):
//   time = launch_s + max(flops / (peak_flops[dtype] · efficiency),
//                         (bytes_read + bytes_written) / (memory_bandwidth_Bps ·
//                         bandwidth_efficiency))
// where a device type with a cache streams an application whose bytes fit in cache_bytes at
// cache_bandwidth_Bps instead (target.h).
// The efficiencies are the device type's, or its "kernels" entry for the operation's kernel
// (target.h). A fused operation's compute efficiency is its stages' weighted by their parts of
// the FLOPs, harmonically (the time of each stage's FLOPs at its own rate, summed), and its
// bandwidth efficiency the lowest of its stages' (its external boxes stream at the slowest stage's
// pace). Shape-aware GEMMs: on a device type with a gemm_efficiency table (target.h) the GEMM
// FLOPs of an application (Work::gemm_flops: a matmul's, a linear's, a fused GEMM stage's) run at
// the table's efficiency for that many FLOPs per call, the rest at the other stages' efficiency:
//   compute = gemm_flops / (peak · table(gemm_flops)) + (flops − gemm_flops) / (peak · e_rest)
// Per dtype: peak is peak_flops[the output's dtype] (an integer or boolean dtype the device type
// does not list: its float32 peak); a "dtypes" entry of the device type for that
// dtype (target.h) multiplies e_rest (the efficiency of the FLOPs outside GEMMs) and the
// bandwidth efficiency by its factors — a bf16 gelu on a CPU is priced at the measured bf16 gelu
// rate, not at the bf16 GEMM peak.
// The makespan adds the target's run_overhead_s (a fixed cost per run) to the schedule's end.
// Transfer time: latency_s + bytes / bandwidth_Bps of the link class between the two devices (0
// over shared memory). A collective's time: price_collective() (collective.h).
//
// Scheduling (list scheduling, deterministic):
// * A device runs one application at a time. An application is ready when its local producers
//   have finished and its incoming transfers have arrived; among the ready applications of a
//   device the one that became ready first starts first (ties: topological position).
// * On a node whose devices share memory (`"shared_memory": true`: a CPU's cores), an application
//   the plan did not pin (no `place`, no `mesh`) runs on whichever core of its node is free first —
//   the way the block executor's thread pool takes work; its transfers inside the node are free
//   anyway. Schedule::devices records where each application ran.
// * A transfer starts when its producer finishes (graph inputs from the host: at time 0) and
//   occupies the sender's egress port and the receiver's ingress port of its link class for its
//   whole duration: one transfer at a time per port and direction — the contention rule. Transfers
//   are sent in the order their producers finish (ties: the order of Placement::transfers).
// * A collective (collective.h: Placement::collectives) runs as one operation priced by
//   price_collective(): it starts when every producer of its transfers has finished and every
//   participant's ports of the link classes it uses (intra_node; both classes when it spans
//   nodes) are free in both directions, holds all of them for its whole duration, and all its
//   transfers arrive at its end (each transfer's interval is the collective's).
// * Overlap rule: computation and communication use separate resources. A transfer or collective
//   overlaps any computation that does not depend on it and never one that does (an application
//   waits for every transfer it reads). The SMs NCCL's kernels occupy while a collective runs are
//   not modelled: a GEMM overlapping a collective runs at full speed here.
// * The makespan is the time the last application or transfer ends.
//
// Memory, per device, over the schedule: resident graph inputs for the whole run; an
// application's output boxes from its start until its last local reader finishes and its last
// outgoing transfer ends (graph outputs: to the end); a received box from its transfer's start
// until its last reader on that device finishes — except for a reduce-scatter or reduce, whose
// receiver holds one step's chunk (CollectivePrice::staging_bytes) from the collective's start
// until its last reader finishes, the combine accumulating into its own output, not every partial
// at once. peak_memory_bytes is the largest sum at any instant; `fits` says whether every
// device's peak fits its memory_bytes.
//
// Energy: a plan holds every device of every node on which it uses at least one device (used:
// it computes or receives). Each held device draws idle_w for the whole makespan; a used one also
// draws (busy_w − idle_w) while it computes, and each of its ports (its end of one link class)
// the link class's power_w over the time the port sends or receives (the union of its transfers'
// and collectives' intervals). So a plan that leaves 7 GPUs of a node idle pays for them, and
// adding a device never lowers the idle power drawn.
//
//   CostVector c = simulate(place(lowered.graph, lowered.plan, target), target);
//   c.makespan_s;  c.peak_memory_bytes;  c.devices_used;  c.energy_j;  c.bytes_moved;
//   c.per_device[0].compute_s   // busy time of device 0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/cost/collective.h"
#include "tapestry/cost/placement.h"
#include "tapestry/cost/target.h"

namespace tapestry::cost {

/// One device's share of the cost (devices the placement does not use are left out).
struct DeviceCost {
  std::string device;  // "gpu:0"
  std::int64_t applications = 0;
  double compute_s = 0;  // time running applications
  /// Time its ports are busy: the sum of its point-to-point transfers' durations (sent and
  /// received) and of the collectives it takes part in (each once). May overlap compute.
  double comm_s = 0;
  double idle_s = 0;    // makespan − compute_s
  double finish_s = 0;  // when its last application ends
  std::int64_t peak_memory_bytes = 0;
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
  double energy_j = 0;  // idle, busy and its ports' power
};

struct CostVector {
  double makespan_s = 0;
  std::int64_t peak_memory_bytes = 0;  // the largest per-device peak
  std::int64_t devices_used = 0;
  /// Every device on a node the plan uses (>= devices_used).
  std::int64_t devices_held = 0;
  /// The sum of per_device energy_j and the idle energy of the devices held but unused.
  double energy_j = 0;
  /// The part of energy_j drawn idle: idle_w · makespan over every device held.
  double idle_energy_j = 0;
  std::int64_t bytes_moved = 0;
  bool fits = true;  // every device's peak fits its memory
  std::vector<DeviceCost> per_device;
};

/// When each application and transfer runs (for explain and render).
struct Schedule {
  struct Interval {
    double start = 0;
    double end = 0;
  };
  std::vector<Interval> applications;  // parallel to Placement::applications
  std::vector<std::uint32_t> devices;  // where each application ran (its placed device, or
                                       // another core of a shared-memory node)
  std::vector<Interval> transfers;     // parallel to Placement::transfers (a collective's
                                       // transfers share its interval)
  std::vector<Interval> collectives;   // parallel to Placement::collectives
};

/// The efficiencies a device type achieves on one operation (see above).
struct OperationRates {
  double efficiency = 1.0;
  double bandwidth_efficiency = 1.0;
  /// With a GEMM efficiency table: the efficiency of the FLOPs outside GEMM stages (e_rest).
  double other_efficiency = 1.0;
  /// How many of the operation's applications the device runs at once (target.h "streams"):
  /// a GEMM's efficiency is read at this many times its FLOPs.
  double gemm_concurrency = 1.0;
  /// On a device with fused_passes (target.h): a fused operation's stages after the first that
  /// are passes over memory, and their elements per FLOP of the operation (Σ share / FLOPs per
  /// point): each such pass costs a launch and 2 · elements · element size bytes.
  double extra_passes = 0;
  double pass_elements_per_flop = 0;
};
OperationRates operation_rates(const PlacedOperation& op, const DeviceType& device);

/// The time one application takes on `device` (the roofline above) at `rates`. Error naming the
/// dtype and the device type when the device has no peak for the application's dtype.
double application_seconds(const Work& work, const DeviceType& device, const OperationRates& rates);
/// The same at the device type's own efficiencies (no per-kernel entry).
double application_seconds(const Work& work, const DeviceType& device);
/// The time a transfer of `bytes` takes over `link`.
double transfer_seconds(std::int64_t bytes, const Link& link);

/// Simulates `placement` on `target` (the target it was placed on). Pure and deterministic.
CostVector simulate(const Placement& placement, const Target& target, Schedule* schedule = nullptr);

/// {"makespan_s", "peak_memory_bytes", "devices_used", "devices_held", "energy_j",
///  "idle_energy_j", "bytes_moved", "fits", "per_device": [{"device", "applications",
///  "compute_s", …}, …]}.
nlohmann::json to_json(const CostVector& cost);
/// The inverse of to_json, exactly (JSON numbers round-trip a double): what the processes of a
/// search on MPI send one another with a plan (docs/optimizer.md). Error naming the member that
/// is missing or of the wrong type.
CostVector cost_from_json(const nlohmann::json& json);

}  // namespace tapestry::cost
