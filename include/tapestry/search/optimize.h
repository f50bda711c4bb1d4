// Optimizer: the stochastic Pareto search — plans of one graph on one target, priced by the cost
// model, kept in a Pareto archive, improved by mutations.
//
// The loop (docs/optimizer.md has the whole story):
//   0. The seeds (mutate.h) and the standard plans (cost/standard_plans.h: data-parallel,
//      megatron, megatron-rs, 2d, those that apply; with tied layers, their representatives'
//      entries) are priced and offered to the archive. Under a time budget they are priced in
//      turn until it runs out (on a training step the training plans first: zero3,
//      megatron-3d-selective, megatron-3d-full, then the yardstick's whole standard training
//      plans); the ones whose turn came after it, or whose pricing it cut short, are named in
//      Progress::unpriced_seeds.
//   1. Each generation fills `batch` slots. Slot i of generation g draws from its own random
//      stream, Rng::for_slot(seed, g, i): it picks a parent — a front member (half the time the
//      best one on a random objective), or, while no plan is feasible, one of the plans closest
//      to feasibility — copies its genome and mutates it, retrying while the result was seen
//      before (a fingerprint set of every genome priced).
//   2. The slots are priced in parallel (oneTBB, `threads` workers, one cost::Evaluator each).
//   3. The results are offered to the archive in slot order.
// So the front depends on the seed and the budget in evaluations, never on the thread count or on
// timing: `--seed 7 --max-evals 5000` gives the same front on 1 thread or 16. A time budget
// stops where the machine got to when it ran out, so how far a timed search gets depends on it.
//
// A search stops at `max_evaluations` (the last generation is cut to land on it exactly), at
// `time_budget_s`, or when 64 generations in a row find nothing new to price (the space is
// exhausted: small graphs). The time budget bounds the wall time of run(): a pricing under way
// when it runs out is abandoned (support/cancel.h) and discarded, never archived.
//
// Checkpoints. With `checkpoint` set, the state after a generation — generation count,
// evaluations, the seen set, the front's and the fallback pool's genomes — is written as JSON
// (atomically: a killed search leaves the previous checkpoint whole) every
// `checkpoint_every_s` and at the end. `resume` reads one and continues: the front is re-priced
// (the same costs: evaluation is deterministic) and the generations continue where they
// stopped, so a search killed and resumed reaches the front an uninterrupted one reaches with the
// same evaluation budget. A checkpoint of another graph, target, objective list, constraint,
// seed or tie setting is refused (Error).
//
//   Optimizer opt(graph, target, {.objectives = {Objective::kTime, Objective::kMemory},
//                                 .seed = 1, .max_evaluations = 5000});
//   OptimizeResult r = opt.run();
//   r.archive.best(Objective::kTime)->plan     // the fastest feasible plan found
//   best_standard(r.standard, Objective::kTime)  // the yardstick: the fastest feasible standard
//                                                // plan, priced under the same constraints
//
// Islands. With `islands` set, this search is one island of a search on many processes
// (islands.h: `tapestry optimize --mpi`): its own stream and share of the budget, meeting the
// others every `migrate_every` generations; rank 0 returns the merged front.
//
// The yardstick. Every standard plan is priced whole (not as a genome) with the same evaluator
// and constraints, so the front's best can be stated as a ratio to the best plan an engineer
// would write by hand: a seed whose genome expands to the same plan gives its price, and the
// others are priced with the seeds (after them and the prefix search's front), within the time
// budget; one the budget left unpriced says so in its reason. A resumed search (which prices no
// seeds) and rank 0 of an island search price them all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/cost/simulate.h"
#include "tapestry/cost/target.h"
#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/search/archive.h"
#include "tapestry/search/islands.h"
#include "tapestry/search/mutate.h"
#include "tapestry/search/plan_space.h"

namespace tapestry::search {

struct Progress {
  std::uint64_t generation = 0;
  std::uint64_t evaluations = 0;  // plans priced, in this search and the one it resumed
  std::uint64_t refused = 0;      // of them, plans the rewrites or placement refused
  /// The refusals by reason (numbers as '#': "pipeline: # microbatches do not divide …"; at most
  /// 32 reasons, the rest as "other"), in this run (a checkpoint does not keep them).
  std::map<std::string, std::uint64_t> refusals;
  std::uint64_t infeasible = 0;          // of them, plans over a constraint
  std::uint64_t prefix_evaluations = 0;  // plans of the layer prefix priced (not in evaluations)
  /// Why the search of the layer prefix stopped: "converged" (OptimizeOptions::prefix_patience),
  /// "max-evals" or "time-budget" (its share), "exhausted"; empty: there was none.
  std::string prefix_stopped_by;
  /// The seeds (SeedPlan::name) the time budget ran out before they were priced, in the order
  /// they would have been.
  std::vector<std::string> unpriced_seeds;
  double seconds = 0;  // of this run
  /// Islands: the seconds they spent waiting for one another at meetings, all of them together
  /// (on rank 0; each island's last meeting counted on rank 0 only).
  double waiting_s = 0;
  double evaluations_per_s = 0;  // of this run
  std::size_t front_size = 0;
  std::uint32_t ranks = 1;   // the islands of the search (islands.h); 1 without
  std::vector<double> best;  // the best value of each objective in the front (empty front: none)
  const ParetoArchive* archive = nullptr;  // the front so far (valid during the callback)
};

struct OptimizeResult;

struct OptimizeOptions {
  std::vector<Objective> objectives = {Objective::kTime, Objective::kMemory, Objective::kDevices,
                                       Objective::kEnergy};
  Constraints constraints;
  std::uint64_t seed = 0;
  int threads = 0;                    // 0: all hardware threads
  double time_budget_s = 0;           // 0: none
  std::uint64_t max_evaluations = 0;  // 0: none (then a time budget is needed)
  bool tie_layers = false;
  /// With tie_layers, on a graph of at least 4 layers: first search the graph's first
  /// `prefix_layers` layers (layer_prefix; cheaper to price) with at most `prefix_share` of the
  /// budget, and offer its front, priced on the whole graph, with the seeds. 0: no prefix search.
  /// The prefix search stops sooner when it has converged: `prefix_patience` plans in a row (all
  /// islands' together) improved no objective's best (0: it runs to its share). Under islands
  /// the islands search the prefix together, as one island search (docs/optimizer.md, "Tied
  /// layers").
  int prefix_layers = 2;
  double prefix_share = 0.25;
  std::uint64_t prefix_patience = 1536;
  /// Stop when this many plans in a row (with islands: all islands' plans, counted at meetings)
  /// improved the front's best on no objective — stopped_by "converged". 0: never. The prefix
  /// search runs with `prefix_patience` here.
  std::uint64_t patience = 0;
  std::size_t batch = 64;  // candidates per generation (fixed: results do not depend on threads)
  bool use_seeds = true;   // price the seed plans first (tests turn it off to test the mutations)
  bool yardstick = true;   // price the standard plans after the search (the prefix search: no)
  MutationSet mutations = kAllMutations;  // the kinds of mutation to use
  std::filesystem::path checkpoint;       // empty: none
  double checkpoint_every_s = 5;
  std::filesystem::path resume;  // empty: start afresh
  /// Called after every generation (from the calling thread); returning false stops the search
  /// (stopped_by "caller").
  std::function<bool(const Progress&)> on_progress;
  /// lower's options (kernel signatures); validation stays off.
  rewrite::LowerOptions lower;
  /// Island mode (islands.h): this search is island `islands->rank()` of `islands->ranks()`,
  /// which meet every `migrate_every` generations; rank 0's result is the merged one, and only
  /// rank 0 writes `checkpoint` (the merged state). nullptr: a search of its own.
  IslandLink* islands = nullptr;
  std::uint64_t migrate_every = 4;
  /// Island mode, rank 0: called with the merged result so far whenever the merged state is saved
  /// (at a meeting, every `checkpoint_every_s`, `checkpoint` set or not; not at the end):
  /// `optimize --mpi` writes the front found so far with it.
  std::function<void(const OptimizeResult&)> on_merged;
};

/// A standard plan (cost/standard_plans.h) priced as the search prices its plans: the yardstick
/// the front is judged against (`optimize` prints the best one beside the front's best).
struct StandardResult {
  std::string name;                      // "data-parallel", "megatron", "megatron-rs", "2d"
  std::string summary;                   // "tensor parallel ×8 (Megatron): 1 pair"
  std::optional<rewrite::Plan> plan;     // nullopt: it does not apply (reason says why)
  std::optional<cost::CostVector> cost;  // nullopt: it does not apply, or the rewrites refuse it
  std::string reason;  // why it does not apply, why it was refused, or the constraint it breaks
  [[nodiscard]] bool feasible() const { return cost.has_value() && reason.empty(); }
};

/// The feasible standard plan with the least `objective` (ties: the first); nullptr when none is.
const StandardResult* best_standard(const std::vector<StandardResult>& standard,
                                    Objective objective);

struct OptimizeResult {
  ParetoArchive archive;
  Progress progress;
  std::vector<SeedPlan> seeds;
  std::string stopped_by;  // "max-evals", "time-budget", "exhausted", "caller", "converged"
  /// Every standard plan, in standard_plan_names() order, priced under the same constraints.
  std::vector<StandardResult> standard;
  /// The front of the search of the layer prefix (OptimizeOptions::prefix_layers), at most 16
  /// genomes, fastest first, as the search was seeded with it (every island: the same).
  std::vector<rewrite::Plan> prefix_front;
};

class Optimizer {
 public:
  /// Copies nothing it does not need; `graph` and `target` must outlive the optimizer.
  Optimizer(const ir::Graph& graph, const cost::Target& target, OptimizeOptions options);
  ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Runs the search (file comment). Error on a bad checkpoint to resume from or an
  /// unwritable checkpoint path.
  OptimizeResult run();

  [[nodiscard]] const PlanSpace& space() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The front as JSON: {"graph", "target", "objectives", "constraints", "seed", "evaluations",
/// "seconds", "stopped_by", "front": [{"name": "p0", "plan": {...}, "cost": {...}}, …],
/// "standard_plans": [{"name", "summary", "plan", "cost", "feasible", "reason"}, …]}, members
/// named p0, p1, … in front order (by score).
nlohmann::json front_json(const OptimizeResult& result, const std::string& graph_name,
                          const std::string& target_name);

/// Error when `options.resume` names a checkpoint Optimizer::run would refuse (unreadable, not a
/// checkpoint, another search's); nothing when it is empty. `optimize --mpi` checks it on every
/// rank before the islands meet, so that every rank agrees on the error.
void check_resume(const ir::Graph& graph, const cost::Target& target,
                  const OptimizeOptions& options);

/// A stable fingerprint of a graph (its loom JSON text), kept in checkpoints.
std::uint64_t graph_fingerprint(const ir::Graph& graph);

}  // namespace tapestry::search
