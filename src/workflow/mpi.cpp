#include "tapestry/workflow/mpi.h"

#include <fmt/core.h>

#include "tapestry/support/error.h"
#include "tapestry/workflow/price.h"

namespace tapestry::workflow {

cost::Target rank_target(std::uint32_t ranks) {
  cost::Target target = *cost::preset_target("cpu-local");
  target.name = fmt::format("{} MPI ranks", ranks);
  target.about = "the ranks of an MPI job, each priced as one cpu-local hardware thread";
  target.device_types.resize(1);
  target.device_types[0].name = "rank";
  target.device_types[0].kind = "rank";
  target.devices.clear();
  for (std::uint32_t i = 0; i < ranks; ++i) {
    target.devices.push_back({.name = fmt::format("rank:{}", i), .type = 0, .node = 0, .index = i});
  }
  target.mesh.clear();
  return target;
}

runtime::RankSchedule rank_schedule(const cost::Placement& placement, const cost::Target& target) {
  runtime::RankSchedule schedule;
  for (const cost::Device& d : target.devices) schedule.rank_names.push_back(d.name);
  for (const cost::PlacedApplication& a : placement.applications) schedule.rank_of[a.id] = a.device;
  for (const cost::Transfer& t : placement.transfers) {
    if (t.from == cost::kHost || t.to == cost::kHost) continue;
    // A replicated output's share that nothing reads (Transfer::replicates_output): not sent —
    // the executor gathers every output on rank 0, as without "outputs" (docs/distributed.md).
    if (t.consumers.empty()) continue;
    runtime::RankMessage m{.tensor = t.tensor,
                           .box = t.box,
                           .from = t.from,
                           .to = t.to,
                           .producer = placement.applications[t.producer].id};
    for (std::uint32_t c : t.consumers) m.consumers.push_back(placement.applications[c].id);
    schedule.messages.push_back(std::move(m));
  }
  return schedule;
}

MpiPlan prepare_mpi(const rewrite::LowerResult& lowered, const std::string& target_name,
                    std::uint32_t ranks, const std::string& plan_source) {
  MpiPlan p;
  p.target = target_name.empty() ? rank_target(ranks) : cost::resolve_target(target_name);
  if (p.target.devices.size() != ranks) {
    throw Error(
        fmt::format("--target {} has {} devices, so the job needs {} ranks; it has {} "
                    "(mpirun -np {})",
                    target_name, p.target.devices.size(), p.target.devices.size(), ranks,
                    p.target.devices.size()));
  }
  p.schedule = rank_schedule(place_lowered(lowered, p.target, plan_source), p.target);
  return p;
}

}  // namespace tapestry::workflow
