// The search's checkpoint: what a killed search needs to continue (optimize.h, "Checkpoints").
//
//   {"format": "tapestry-optimize-checkpoint", "version": 1,
//    "graph": "9f2c…" (graph_fingerprint, hex), "target": "h100x8",
//    "objectives": ["time", "memory"], "constraints": {"max_memory_per_device": 0, "max_devices":
//    0}, "seed": 1, "tie_layers": false, "generation": 42, "evaluations": 2693, "refused": 12,
//    "infeasible": 40, "seen": ["00a1…", …], "front": [{"genome": {plan}, "found_at": 17}, …],
//    "pool": [{plan}, …], "ranks": 1}
//
// "ranks": the islands that searched (islands.h; informational: a checkpoint resumes with any
// rank count, and one without it was made by one process).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tapestry/rewrite/plan.h"
#include "tapestry/search/objectives.h"

namespace tapestry::search {

struct CheckpointState {
  std::uint64_t graph = 0;
  std::string target;
  std::vector<Objective> objectives;
  Constraints constraints;
  std::uint64_t seed = 0;
  bool tie_layers = false;
  std::uint64_t generation = 0;
  std::uint64_t evaluations = 0;
  std::uint64_t refused = 0;
  std::uint64_t infeasible = 0;
  std::vector<std::uint64_t> seen;
  std::vector<std::pair<rewrite::Plan, std::uint64_t>> front;  // genome, found_at
  std::vector<rewrite::Plan> pool;
  std::uint32_t ranks = 1;
};

/// Writes the checkpoint atomically (support/file.h). Error naming the path when it cannot.
void write_checkpoint(const std::filesystem::path& path, const CheckpointState& state);
/// Reads one. Error naming the path and what is wrong (not a checkpoint, a bad member, a plan
/// that does not parse).
CheckpointState read_checkpoint(const std::filesystem::path& path);
/// Error naming `source` and the first setting `saved` was made with that `current` differs in
/// (graph, target, objectives, constraints, seed, tie-layers).
void check_compatible(const CheckpointState& saved, const CheckpointState& current,
                      const std::string& source);

}  // namespace tapestry::search
