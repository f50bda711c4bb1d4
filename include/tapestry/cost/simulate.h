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
// pace).
// The makespan adds the target's run_overhead_s (a fixed cost per run) to the schedule's end.
// Transfer time: latency_s + bytes / bandwidth_Bps of the link class between the two devices (0
// over shared memory).
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
// * The makespan is the time the last application or transfer ends.
//
// Memory, per device, over the schedule: resident graph inputs for the whole run; an
// application's output boxes from its start until its last local reader finishes and its last
// outgoing transfer ends (graph outputs: to the end); a received box from its transfer's start
// until its last reader on that device finishes. peak_memory_bytes is the largest sum at any
// instant; `fits` says whether every device's peak fits its memory_bytes.
//
// Energy: each device used draws idle_w for the whole makespan plus (busy_w − idle_w) while it
// computes. Devices the plan leaves unused are free for other work and cost nothing; links' energy
// is not modelled.
//
//   CostVector c = simulate(place(lowered.graph, lowered.plan, target), target);
//   c.makespan_s;  c.peak_memory_bytes;  c.devices_used;  c.energy_j;  c.bytes_moved;
//   c.per_device[0].compute_s   // busy time of device 0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/cost/placement.h"
#include "tapestry/cost/target.h"

namespace tapestry::cost {

/// One device's share of the cost (devices the placement does not use are left out).
struct DeviceCost {
  std::string device;  // "gpu:0"
  std::int64_t applications = 0;
  double compute_s = 0;  // time running applications
  double comm_s = 0;     // time its ports are busy sending or receiving (may overlap compute)
  double idle_s = 0;     // makespan − compute_s
  double finish_s = 0;   // when its last application ends
  std::int64_t peak_memory_bytes = 0;
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
  double energy_j = 0;
};

struct CostVector {
  double makespan_s = 0;
  std::int64_t peak_memory_bytes = 0;  // the largest per-device peak
  std::int64_t devices_used = 0;
  double energy_j = 0;
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
  std::vector<Interval> transfers;     // parallel to Placement::transfers
};

/// The efficiencies a device type achieves on one operation (see above).
struct OperationRates {
  double efficiency = 1.0;
  double bandwidth_efficiency = 1.0;
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

/// {"makespan_s", "peak_memory_bytes", "devices_used", "energy_j", "bytes_moved", "fits",
///  "per_device": [{"device", "applications", "compute_s", …}, …]}.
nlohmann::json to_json(const CostVector& cost);

}  // namespace tapestry::cost
