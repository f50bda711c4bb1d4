// Preparing an MPI run (`tapestry run --executor mpi`, docs/distributed.md): the lowered plan
// placed on a target whose device i is rank i, and the placement's transfers between devices
// turned into the messages between ranks the MPI executor (runtime/mpi_executor.h) sends.
// Every rank prepares the same way from the same graph and plan (all deterministic), so every
// rank computes the same schedule and nothing about the plan is sent.
//
//   const rewrite::LowerResult lowered = lower_for_run(graph, plan, {});
//   const MpiPlan p = prepare_mpi(lowered, "", 2, "--split");  // devices rank:0, rank:1
//   p.schedule.rank_of           // application id → rank
//   p.schedule.messages          // what each rank sends whom
#pragma once

#include <cstdint>
#include <string>

#include "tapestry/cost/placement.h"
#include "tapestry/cost/target.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/rank_schedule.h"

namespace tapestry::workflow {

/// N devices rank:0 … rank:N-1 of the cpu-local preset's device type.
cost::Target rank_target(std::uint32_t ranks);

/// The placement's transfers between devices as messages between ranks; loads from and gathers
/// to the host are not messages (each rank reads its own inputs; the executor gathers the
/// outputs on rank 0), nor is a replicated output's share that nothing reads.
runtime::RankSchedule rank_schedule(const cost::Placement& placement, const cost::Target& target);

struct MpiPlan {
  cost::Target target;
  runtime::RankSchedule schedule;
};

/// The target (`target_name` resolved, or rank_target(ranks) when empty) and the schedule of
/// `lowered` on it. Error when the target's device count is not `ranks`, or the plan cannot be
/// placed on it (naming `plan_source`).
MpiPlan prepare_mpi(const rewrite::LowerResult& lowered, const std::string& target_name,
                    std::uint32_t ranks, const std::string& plan_source);

}  // namespace tapestry::workflow
