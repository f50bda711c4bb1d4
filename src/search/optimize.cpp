#include "tapestry/search/optimize.h"

#include <fmt/core.h>
#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "checkpoint.h"
#include "tapestry/cost/evaluator.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/cost/standard_plans.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/support/cancel.h"
#include "tapestry/support/error.h"
#include "tapestry/support/text.h"

namespace tapestry::search {

namespace {

using Clock = std::chrono::steady_clock;

// One slot of a generation: a genome, the plan it expands to, and what pricing it said.
struct Candidate {
  rewrite::Plan genome;
  rewrite::Plan plan;
  std::optional<cost::CostVector> cost;  // nullopt: the rewrites or placement refused it
  std::string refusal;                   // why, when they did
  bool priced = false;                   // false: the time budget ran out before its turn
  std::string seed;                      // the seed's name (SeedPlan::name), for a seed
  bool yardstick = false;  // a standard plan priced for the yardstick only (no genome, not offered)
  bool foreign = false;    // priced by another island (seed_archive's lockstep): not counted here
};

constexpr std::size_t kRefusalKinds = 32;  // distinct reasons counted (the rest: "other")

// A refusal's reason with its numbers and layer digits as '#' and at most 160 characters, so
// refusals of one kind count together: "pipeline: # microbatches do not divide the batch of …".
std::string refusal_kind(std::string_view message) {
  std::string kind = name_pattern(message);
  if (kind.size() > 160) kind = kind.substr(0, 157) + "...";
  return kind;
}

// How far an infeasible plan is from feasibility (0 for a feasible one): the pool of parents
// while the front is empty keeps the closest.
double penalty(const cost::CostVector& cost, const Constraints& c, const cost::Target& target) {
  double p = 0;
  const auto peak = static_cast<double>(cost.peak_memory_bytes);
  if (c.max_memory_per_device > 0) {
    const auto cap = static_cast<double>(c.max_memory_per_device);
    p += std::max(0.0, peak - cap) / cap;
  }
  if (!cost.fits) {
    std::int64_t smallest = 0;
    for (const cost::DeviceType& t : target.device_types) {
      if (smallest == 0 || t.memory_bytes < smallest) smallest = t.memory_bytes;
    }
    p += std::max(0.0, peak - static_cast<double>(smallest)) / static_cast<double>(smallest);
  }
  if (c.max_devices > 0 && cost.devices_used > c.max_devices) {
    p += static_cast<double>(cost.devices_used - c.max_devices);
  }
  return p;
}

constexpr std::size_t kPoolSize = 16;
constexpr int kExhaustedAfter = 64;       // generations in a row with nothing new to price
constexpr int kRetries = 8;               // mutations of one parent before a slot gives up
constexpr std::size_t kFastestKept = 16;  // plans of the prefix search offered (prefix_front)

// A search's settings as a checkpoint records them (no state).
CheckpointState settings_of(const ir::Graph& graph, const cost::Target& target,
                            const OptimizeOptions& options) {
  return {.graph = graph_fingerprint(graph),
          .target = target.name,
          .objectives = options.objectives,
          .constraints = options.constraints,
          .seed = options.seed,
          .tie_layers = options.tie_layers};
}

rewrite::Plan genome_of(const nlohmann::json& j) {
  return rewrite::parse_plan(j.dump(), "a plan from another island");
}

}  // namespace

struct Optimizer::Impl {
  const ir::Graph& graph;
  const cost::Target& target;
  OptimizeOptions options;
  PlanSpace space;
  std::vector<SeedPlan> seeds;
  ParetoArchive archive;
  struct PoolEntry {
    rewrite::Plan genome;
    double penalty = 0;
  };
  std::vector<PoolEntry> pool;
  std::unordered_set<std::uint64_t> seen;
  Progress progress;
  std::uint64_t run_evaluations = 0;  // priced by this run (for the rate)
  tbb::enumerable_thread_specific<std::unique_ptr<cost::Evaluator>> evaluators;

  // Island mode (islands.h).
  std::uint64_t stream_seed = 0;  // the seed of the slots' streams: island_seed(seed, rank)
  Progress base;                  // the counters this run started from (a resumed checkpoint's)
  std::uint64_t budget = 0;       // this island's share of the evaluations (max_evaluations set)
  std::unordered_set<std::uint64_t> reported;  // fingerprints sent to rank 0 in reports
  std::uint64_t reported_mark = 0;             // progress.evaluations at the last report
  std::uint64_t posted = 0;
  double waited_s = 0;  // in collect()                    // reports posted
  // What the islands' reports said (counters and pools: rank 0 only), and the merged archive.
  struct IslandState {
    std::uint64_t generation = 0;
    std::uint64_t evaluations = 0;  // of this run
    std::uint64_t refused = 0;
    std::uint64_t infeasible = 0;
    std::uint64_t prefix_evaluations = 0;
    double waited_s = 0;
    std::string done;  // why it finished; empty: still searching
    std::vector<PoolEntry> pool;
  };
  std::vector<IslandState> islands;
  std::optional<ParetoArchive> merged;
  std::unordered_set<std::uint64_t> merged_seen;
  std::vector<StandardResult> standard;
  std::vector<rewrite::Plan> prefix_genomes;  // prefix_front()'s, for OptimizeResult
  // Lockstep (prefix_front): this search is one search priced by every rank of `lockstep`, each
  // pricing its part of every batch (price_all, exchange); nullptr: it prices its batches alone.
  IslandLink* lockstep = nullptr;
  bool lockstep_time_up = false;  // a rank's time budget ran out (every rank alike)
  std::uint64_t priced_here = 0;  // plans this rank priced itself
  bool lockstep_foreign = false;  // exchange(): the other ranks' candidates are `foreign`
  // keep_fastest (the prefix search): the fastest feasible genomes priced, front or not.
  bool keep_fastest = false;
  std::vector<std::pair<double, rewrite::Plan>> fastest;
  // Patience (OptimizeOptions::patience): the best value of each objective so far, and the
  // plans priced (this run's; islands: all islands', at the meeting) when one last improved.
  std::vector<double> best_seen;
  std::uint64_t improved_at = 0;
  // What the seeds' plans priced to, by fingerprint of the plan: the yardstick's standard plans
  // take their price from here when a seed expanded to the same plan.
  std::unordered_map<std::uint64_t, std::pair<std::optional<cost::CostVector>, std::string>>
      seed_prices;

  Impl(const ir::Graph& g, const cost::Target& t, OptimizeOptions o)
      : graph(g),
        target(t),
        options(std::move(o)),
        space(g, t, options.tie_layers),
        archive(options.objectives, options.constraints) {}

  cost::Evaluator& evaluator() {
    auto& slot = evaluators.local();
    if (!slot) slot = std::make_unique<cost::Evaluator>(graph, target, options.lower);
    return *slot;
  }

  // Prices one candidate. With a deadline the pricing is abandoned when it passes
  // (support/cancel.h): the candidate stays unpriced, as one whose turn came after it.
  void price(Candidate& c, std::optional<Clock::time_point> deadline = {}) {
    std::optional<support::CancelAt> scope;
    if (deadline) scope.emplace(*deadline);
    try {
      c.cost = evaluator().evaluate(c.plan);
      c.priced = true;
    } catch (const Error& e) {
      c.cost.reset();
      c.refusal = e.what();
      c.priced = true;
    } catch (const support::Cancelled&) {
      c.cost.reset();
      c.priced = false;
    }
  }

  // Prices the batch in parallel, each worker taking the next candidate in batch order. With a
  // time budget, candidates whose turn comes after it ran out are dropped (and forgotten by the
  // seen set), and so are the pricings under way when it runs out, abandoned there (price): a
  // timed search stops at its budget even when one pricing takes longer than the budget (a
  // 64-way plan of a 24-layer training step: 5-15 s), and what was priced is a prefix of the
  // batch but for the pricings abandoned. In lockstep (prefix_front: one search on many ranks)
  // this rank prices the candidates i with i mod ranks = its rank and takes the others' prices
  // from the exchange (exchange()).
  void price_all(std::vector<Candidate>& batch, std::optional<Clock::time_point> deadline = {}) {
    const int threads =
        std::max(options.threads > 0 ? options.threads
                                     : static_cast<int>(std::thread::hardware_concurrency()),
                 1);
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (lockstep == nullptr || i % lockstep->ranks() == lockstep->rank()) todo.push_back(i);
    }
    const std::size_t workers = std::min<std::size_t>(static_cast<std::size_t>(threads),
                                                      std::max<std::size_t>(todo.size(), 1));
    std::atomic<std::size_t> next{0};
    tbb::task_arena arena(threads);
    arena.execute([&] {
      tbb::parallel_for(
          std::size_t{0}, workers,
          [&](std::size_t) {
            for (std::size_t k = next++; k < todo.size(); k = next++) {
              if (deadline && Clock::now() >= *deadline) return;
              price(batch[todo[k]], deadline);
            }
          },
          tbb::simple_partitioner());
    });
    for (std::size_t i : todo) priced_here += batch[i].priced ? 1 : 0;
    if (lockstep != nullptr) exchange(batch, todo, deadline);
    std::erase_if(batch, [&](const Candidate& c) {
      if (!c.priced && !c.yardstick) seen.erase(fingerprint(c.genome));
      return !c.priced;
    });
  }

  // Lockstep: every rank posts the prices of its candidates (`mine`) and whether its time budget
  // has run out, and takes every rank's — its own too, read back from the same text, so every
  // rank holds the very same costs — into the batch. The batch, and so the archive, the seen set
  // and every decision taken from them, is the same on every rank; the time budget ends the
  // search on all ranks at once when it has run out on one (lockstep_time_up).
  void exchange(std::vector<Candidate>& batch, const std::vector<std::size_t>& mine,
                std::optional<Clock::time_point> deadline) {
    nlohmann::json results = nlohmann::json::array();
    for (std::size_t i : mine) {
      const Candidate& c = batch[i];
      if (!c.priced) continue;
      if (c.cost) {
        results.push_back({{"i", i}, {"cost", cost::to_json(*c.cost)}});
      } else {
        results.push_back({{"i", i}, {"refusal", c.refusal}});
      }
    }
    const bool time_up = deadline && Clock::now() >= *deadline;
    lockstep->post(nlohmann::json{{"results", results}, {"time_up", time_up}}.dump());
    const Clock::time_point start = Clock::now();
    const std::vector<std::string> texts = lockstep->collect();
    waited_s += std::chrono::duration<double>(Clock::now() - start).count();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      Candidate& c = batch[i];
      c.priced = false;
      c.cost.reset();
      c.refusal.clear();
      c.foreign = lockstep_foreign && !std::binary_search(mine.begin(), mine.end(), i);
    }
    for (const std::string& text : texts) {
      const nlohmann::json j = nlohmann::json::parse(text);
      if (j.at("time_up").get<bool>()) lockstep_time_up = true;
      for (const nlohmann::json& r : j.at("results")) {
        Candidate& c = batch.at(r.at("i").get<std::size_t>());
        c.priced = true;
        if (r.contains("cost")) {
          c.cost = cost::cost_from_json(r.at("cost"));
        } else {
          c.refusal = r.at("refusal").get<std::string>();
        }
      }
    }
  }

  // Offers priced candidates in order: the archive, the pool, the counters.
  void merge(std::vector<Candidate>& batch) {
    for (Candidate& c : batch) {
      if (c.foreign) {  // another island counts it (and its refusal); here only offered
        if (c.cost && penalty(*c.cost, options.constraints, target) == 0 &&
            !violation(*c.cost, options.constraints)) {
          archive.offer(std::move(c.genome), std::move(c.plan), std::move(*c.cost),
                        progress.evaluations);
        }
        continue;
      }
      ++progress.evaluations;
      ++run_evaluations;
      if (!c.cost) {
        ++progress.refused;
        std::string kind = refusal_kind(c.refusal);
        if (!progress.refusals.contains(kind) && progress.refusals.size() >= kRefusalKinds) {
          kind = "other";
        }
        ++progress.refusals[kind];
        continue;
      }
      const double p = penalty(*c.cost, options.constraints, target);
      if (p > 0 || violation(*c.cost, options.constraints)) {
        ++progress.infeasible;
        remember(c.genome, p);
        continue;
      }
      if (keep_fastest) note_fastest(c.genome, c.cost->makespan_s);
      archive.offer(std::move(c.genome), std::move(c.plan), std::move(*c.cost),
                    progress.evaluations);
    }
  }

  // keep_fastest: `genome`, priced at `time`, among the kFastestKept fastest feasible genomes
  // (each once; ties: the first priced).
  void note_fastest(const rewrite::Plan& genome, double time) {
    const auto at = std::upper_bound(fastest.begin(), fastest.end(), time,
                                     [](double t, const auto& e) { return t < e.first; });
    if (at - fastest.begin() >= static_cast<std::ptrdiff_t>(kFastestKept)) return;
    if (std::any_of(fastest.begin(), fastest.end(),
                    [&](const auto& e) { return e.second == genome; })) {
      return;
    }
    fastest.insert(at, {time, genome});
    if (fastest.size() > kFastestKept) fastest.pop_back();
  }

  void remember(const rewrite::Plan& genome, double p) {
    auto at = std::upper_bound(pool.begin(), pool.end(), p,
                               [](double v, const PoolEntry& e) { return v < e.penalty; });
    if (at - pool.begin() >= static_cast<std::ptrdiff_t>(kPoolSize)) return;
    pool.insert(at, {genome, p});
    if (pool.size() > kPoolSize) pool.pop_back();
  }

  const rewrite::Plan& parent(Rng& rng) const {
    const auto& front = archive.front();
    if (!seeds.empty() && (rng.chance(0.05) || (front.empty() && pool.empty()))) {
      return seeds[rng.below(seeds.size())].genome;
    }
    if (front.empty()) return pool[rng.below(pool.size())].genome;
    if (rng.chance(0.5)) {
      const Objective o = options.objectives[rng.below(options.objectives.size())];
      return archive.best(o)->genome;
    }
    return front[rng.below(front.size())].genome;
  }

  std::vector<Candidate> generate(std::size_t slots) {
    std::vector<Candidate> batch;
    for (std::size_t i = 0; i < slots; ++i) {
      Rng rng = Rng::for_slot(stream_seed, progress.generation, i);
      const rewrite::Plan& from = parent(rng);
      for (int attempt = 0; attempt < kRetries; ++attempt) {
        rewrite::Plan genome = from;
        mutate(space, genome, rng, options.mutations);
        if (!seen.insert(fingerprint(genome)).second) continue;
        rewrite::Plan plan = space.expand(genome);
        batch.push_back({std::move(genome), std::move(plan), std::nullopt});
        break;
      }
    }
    return batch;
  }

  // Returns what on_progress says: false to stop.
  bool update_progress(Clock::time_point start) {
    progress.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    progress.evaluations_per_s =
        progress.seconds > 0 ? static_cast<double>(run_evaluations) / progress.seconds : 0;
    progress.front_size = archive.front().size();
    progress.best.clear();
    if (!archive.front().empty()) {
      for (Objective o : options.objectives) {
        progress.best.push_back(objective_value(archive.best(o)->cost, o));
      }
    }
    progress.archive = &archive;
    return !options.on_progress || options.on_progress(progress);
  }

  // Patience: `evaluations` becomes the last improvement when `front`'s best on an objective is
  // below the best seen so far (or when it is the first front seen).
  void watch(const ParetoArchive& front, std::uint64_t evaluations) {
    if (front.front().empty()) return;
    bool better = best_seen.empty();
    best_seen.resize(options.objectives.size(), std::numeric_limits<double>::infinity());
    for (std::size_t k = 0; k < options.objectives.size(); ++k) {
      const double v =
          objective_value(front.best(options.objectives[k])->cost, options.objectives[k]);
      if (v < best_seen[k]) {
        best_seen[k] = v;
        better = true;
      }
    }
    if (better) improved_at = evaluations;
  }

  // Patience: true when `evaluations` is `patience` plans or more past the last improvement.
  bool converged(std::uint64_t evaluations) const {
    return options.patience > 0 && evaluations >= improved_at + options.patience;
  }

  CheckpointState settings() const { return settings_of(graph, target, options); }

  // A checkpoint of counters `p`, fingerprints `priced` and the front of `front` (no pool).
  CheckpointState snapshot(const Progress& p, const std::unordered_set<std::uint64_t>& priced,
                           const ParetoArchive& front) const {
    CheckpointState s = settings();
    s.generation = p.generation;
    s.evaluations = p.evaluations;
    s.refused = p.refused;
    s.infeasible = p.infeasible;
    s.seen = {priced.begin(), priced.end()};
    std::sort(s.seen.begin(), s.seen.end());
    for (const ArchiveEntry& e : front.front()) s.front.push_back({e.genome, e.found_at});
    return s;
  }

  CheckpointState state() const {
    CheckpointState s = snapshot(progress, seen, archive);
    for (const PoolEntry& e : pool) s.pool.push_back(e.genome);
    return s;
  }

  void restore(const CheckpointState& s) {
    check_compatible(s, settings(), options.resume.string());
    progress.generation = s.generation;
    progress.evaluations = s.evaluations;
    progress.refused = s.refused;
    progress.infeasible = s.infeasible;
    seen.insert(s.seen.begin(), s.seen.end());
    for (const auto& [genome, found_at] : s.front) {
      Candidate c{genome, space.expand(genome), std::nullopt};
      price(c);
      if (!c.cost) {
        throw Error(fmt::format("{}: a plan of the checkpoint's front no longer prices",
                                options.resume.string()));
      }
      archive.offer(std::move(c.genome), std::move(c.plan), std::move(*c.cost), found_at);
    }
    for (const rewrite::Plan& genome : s.pool) {
      Candidate c{genome, space.expand(genome), std::nullopt};
      price(c);
      if (c.cost) pool.push_back({genome, penalty(*c.cost, options.constraints, target)});
    }
    std::stable_sort(pool.begin(), pool.end(),
                     [](const PoolEntry& a, const PoolEntry& b) { return a.penalty < b.penalty; });
  }

  // The front of a search of the graph's first layers (OptimizeOptions::prefix_layers), at most
  // 16 plans, best time first; empty when there is no prefix to search. Also sets
  // progress.prefix_evaluations (the plans this rank priced) and prefix_stopped_by.
  //
  // The prefix search stops at `prefix_share` of the budget, or sooner when it has converged:
  // `prefix_patience` plans in a row improved no objective's best (OptimizeOptions::patience).
  // Under islands (two or more) every island runs the same search of the prefix — the one a
  // search without islands runs, from the user's seed — in lockstep: each prices its part of
  // every generation and they exchange the prices (price_all, exchange), so each holds the same
  // archive, takes the same decisions (converged, out of budget, out of time) at the same
  // generation and ends with the same front, as one search with the ranks' pricing throughput.
  // Why not an island search: on the 24-layer transformer's prefix two islands improved their best
  // at about the generations one search does (docs/optimizer.md, "Tied layers"): the search is
  // bound by its depth in generations, not by its plans; lockstep makes each generation shorter.
  std::vector<rewrite::Plan> prefix_front() {
    if (!options.tie_layers || options.prefix_layers <= 0 || options.prefix_share <= 0) return {};
    std::optional<ir::Graph> prefix = layer_prefix(graph, space, options.prefix_layers);
    if (!prefix) return {};
    OptimizeOptions o = options;
    o.prefix_layers = 0;
    o.checkpoint.clear();
    o.resume.clear();
    o.on_progress = nullptr;
    o.islands = nullptr;  // one search (on every rank, in lockstep when there are islands)
    o.on_merged = nullptr;
    o.yardstick = false;  // only its front is used
    o.patience = options.prefix_patience;
    o.time_budget_s = options.time_budget_s * options.prefix_share;
    // The whole job's share: the ranks price it together.
    o.max_evaluations = static_cast<std::uint64_t>(static_cast<double>(options.max_evaluations) *
                                                   options.prefix_share);
    if (o.time_budget_s <= 0 && o.max_evaluations == 0) return {};
    o.seed = options.seed;
    Impl sub(*prefix, target, o);
    sub.keep_fastest = true;
    if (options.islands != nullptr && options.islands->ranks() > 1) sub.lockstep = options.islands;
    const OptimizeResult r = sub.run();
    progress.prefix_evaluations += sub.priced_here;
    progress.prefix_stopped_by = r.stopped_by;
    waited_s += sub.waited_s;
    std::vector<std::pair<double, const rewrite::Plan*>> found;
    for (const ArchiveEntry& e : sub.archive.front()) {
      found.emplace_back(e.cost.makespan_s, &e.genome);
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    // Then the fastest plans off the front (a one-objective front holds one plan): the
    // prefix's price ranks the whole graph's plans only roughly (docs/optimizer.md, "Tied
    // layers": 0.292 ms beat 0.294 ms on two layers and took 3.667 against 3.493 ms on 24), so
    // the whole graph's price chooses among the prefix's best few rather than its best one.
    for (const auto& [time, genome] : sub.fastest) found.emplace_back(time, &genome);
    std::vector<rewrite::Plan> genomes;
    for (const auto& [time, genome] : found) {
      if (genomes.size() == kFastestKept) break;
      if (std::find(genomes.begin(), genomes.end(), *genome) != genomes.end()) continue;
      // The prefix's representatives are the whole graph's (the same first members), so its
      // genomes read the same.
      genomes.push_back(*genome);
    }
    prefix_genomes = genomes;
    return genomes;
  }

  // The standard plans as seeds: their entries for the representatives (every operation when
  // layers are not tied), as a genome; the ones that do not apply are left out.
  void add_standard_seeds() {
    for (const cost::StandardPlan& s : cost::standard_plans(graph, target)) {
      if (!s.plan) continue;
      rewrite::Plan genome = *s.plan;
      std::erase_if(genome.ops, [&](const auto& entry) {
        const std::optional<std::size_t> op = space.find(entry.first);
        return op && space.representative(*op) != *op;
      });
      if (space.tie_layers()) {  // expand recomputes a representative's kind whole
        std::erase_if(genome.recompute, [&](const std::string& name) {
          const std::optional<std::size_t> op = space.find(name);
          return op && space.representative(*op) != *op;
        });
      }
      normalize(genome);
      const bool seen_before = std::any_of(seeds.begin(), seeds.end(),
                                           [&](const SeedPlan& d) { return d.genome == genome; });
      if (!seen_before) seeds.push_back({"standard:" + s.name, std::move(genome)});
    }
  }

  // Every standard plan priced whole, under the search's constraints (OptimizeResult::standard):
  // its price from seed_archive; else priced now, unless the time budget of a search that
  // started at `start` and priced its seeds has run out.
  std::vector<StandardResult> price_standard(std::optional<Clock::time_point> start = {}) {
    std::vector<StandardResult> out;
    if (!options.yardstick) return out;
    for (cost::StandardPlan& s : cost::standard_plans(graph, target)) {
      StandardResult r{
          .name = s.name, .summary = s.summary, .plan = std::move(s.plan), .reason = s.reason};
      if (r.plan) {
        const std::optional<Clock::time_point> end = start ? deadline(*start) : std::nullopt;
        std::string refusal;
        if (auto seed = seed_prices.find(fingerprint(*r.plan)); seed != seed_prices.end()) {
          r.cost = seed->second.first;
          refusal = seed->second.second;
        } else if (end && options.resume.empty() && Clock::now() >= *end) {
          r.reason = fmt::format("not priced: the time budget ({} s) ran out before its turn",
                                 options.time_budget_s);
          out.push_back(std::move(r));
          continue;
        } else {
          std::optional<support::CancelAt> scope;
          if (end && options.resume.empty()) scope.emplace(*end);
          try {
            r.cost = evaluator().evaluate(*r.plan);
          } catch (const Error& e) {
            refusal = e.what();
          } catch (const support::Cancelled&) {
            r.reason = fmt::format("not priced: the time budget ({} s) ran out while it was priced",
                                   options.time_budget_s);
            out.push_back(std::move(r));
            continue;
          }
        }
        if (!r.cost) {
          r.reason = fmt::format("the rewrites refuse it: {}", refusal);
        } else if (std::optional<std::string> why = violation(*r.cost, options.constraints)) {
          r.reason = *why;
        } else if (penalty(*r.cost, options.constraints, target) > 0) {
          r.reason = "over the target's memory";
        }
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  // The end of the time budget of a search that started at `start` (none without one).
  std::optional<Clock::time_point> deadline(Clock::time_point start) const {
    if (options.time_budget_s <= 0) return std::nullopt;
    return start + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double>(options.time_budget_s));
  }

  // The standard training plans (standard_plans.h), in the order they are priced: the plans
  // that shard or recompute what a step too big for one device needs, and the yardstick.
  static constexpr std::string_view kTrainingFirst[] = {"zero3", "megatron-3d-selective",
                                                        "megatron-3d-full"};
  static std::size_t training_rank(std::string_view standard_name) {
    const auto at = std::find(std::begin(kTrainingFirst), std::end(kTrainingFirst), standard_name);
    return static_cast<std::size_t>(at - std::begin(kTrainingFirst));
  }
  // The same for a seed's name ("standard:zero3"); std::size(kTrainingFirst) for another seed.
  static std::size_t training_seed_rank(std::string_view seed_name) {
    constexpr std::string_view kStandard = "standard:";
    return seed_name.starts_with(kStandard) ? training_rank(seed_name.substr(kStandard.size()))
                                            : std::size(kTrainingFirst);
  }

  // The order the seeds are priced in: on a training step the standard training plans first
  // (ZeRO-3, then Megatron with selective and with full recomputation), then the others in the
  // seeds' order; on any other graph the seeds' order.
  std::vector<std::size_t> seed_order() const {
    std::vector<std::size_t> order(seeds.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (!space.is_training_step()) return order;
    const auto rank = [&](std::size_t i) { return training_seed_rank(seeds[i].name); };
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return rank(a) < rank(b); });
    return order;
  }

  // Prices the seeds (an island: seed i when i mod ranks is its rank), the prefix's front and
  // the standard plans no seed expands to (for the yardstick: with tied layers a seed gives
  // every layer its representative's entries, and a standard plan's first layer may differ),
  // in that order within the time budget (the seeds in seed_order()) — but on a training step
  // the standard training plans of the yardstick come right after their seeds, before the
  // other seeds: the table the search is judged by needs them, and a 64-way plan of a large
  // step prices in seconds. Remembers the seeds' and the standard plans' prices for the
  // yardstick and names the seeds left unpriced.
  void seed_archive(Clock::time_point start) {
    std::vector<Candidate> seeded, prefixed, yardstick_first, yardstick;
    const IslandLink* link = options.islands;
    for (std::size_t i : seed_order()) {
      if (link != nullptr && i % link->ranks() != link->rank()) continue;
      const SeedPlan& s = seeds[i];
      seen.insert(fingerprint(s.genome));
      seeded.push_back({s.genome, space.expand(s.genome), std::nullopt, {}, false, s.name});
    }
    // The prefix's plans (prefix_front: the same on every island). Islands offer every one of
    // them, priced together in lockstep (price_all: island r prices the plans i ≡ r mod ranks,
    // the others' prices come from the exchange), so every island's search starts from all of
    // them, each priced once in the job, in 1/ranks of the time. A plan that is a seed of any
    // island is left out, so that the list is the same on every island.
    const bool together = link != nullptr && link->ranks() > 1;
    std::unordered_set<std::uint64_t> seed_prints;
    for (const SeedPlan& s : seeds) seed_prints.insert(fingerprint(s.genome));
    for (rewrite::Plan& genome : prefix_front()) {
      const std::uint64_t f = fingerprint(genome);
      if ((together && seed_prints.contains(f)) || !seen.insert(f).second) continue;
      rewrite::Plan plan = space.expand(genome);
      prefixed.push_back({std::move(genome), std::move(plan), std::nullopt});
    }
    if (options.yardstick && link == nullptr) {
      std::set<std::uint64_t> planned;
      for (const auto* list : {&seeded, &prefixed}) {
        for (const Candidate& c : *list) planned.insert(fingerprint(c.plan));
      }
      const bool training = space.is_training_step();
      for (cost::StandardPlan& s : cost::standard_plans(graph, target)) {
        if (!s.plan || !planned.insert(fingerprint(*s.plan)).second) continue;
        const bool first = training && training_rank(s.name) < std::size(kTrainingFirst);
        (first ? yardstick_first : yardstick)
            .push_back({{}, std::move(*s.plan), std::nullopt, {}, false, {}, true});
      }
    }
    // The seeds of the standard training plans lead seed_order() on a training step.
    const auto other_seeds = std::find_if(seeded.begin(), seeded.end(), [](const Candidate& c) {
      return training_seed_rank(c.seed) == std::size(kTrainingFirst);
    });
    std::vector<Candidate> batch;
    const auto add = [&](auto begin, auto end) {
      batch.insert(batch.end(), std::make_move_iterator(begin), std::make_move_iterator(end));
    };
    add(seeded.begin(), other_seeds);
    add(yardstick_first.begin(), yardstick_first.end());
    add(other_seeds, seeded.end());
    if (!together) add(prefixed.begin(), prefixed.end());
    add(yardstick.begin(), yardstick.end());
    std::vector<std::string> names;
    for (const Candidate& c : batch) names.push_back(c.seed);
    price_all(batch, deadline(start));
    if (together) {
      lockstep = options.islands;
      lockstep_foreign = true;
      price_all(prefixed, deadline(start));
      lockstep = nullptr;
      lockstep_foreign = false;
      lockstep_time_up = false;  // the islands' own clocks decide from here
      add(prefixed.begin(), prefixed.end());
    }
    std::set<std::string> priced;
    for (const Candidate& c : batch) {
      if (c.seed.empty() && !c.yardstick) continue;
      priced.insert(c.seed);
      seed_prices.emplace(fingerprint(c.plan), std::pair(c.cost, c.refusal));
    }
    for (const std::string& name : names) {
      if (!name.empty() && !priced.contains(name)) progress.unpriced_seeds.push_back(name);
    }
    std::erase_if(batch, [](const Candidate& c) { return c.yardstick; });
    merge(batch);
  }

  // Evaluations this search may still make (UINT64_MAX: no --max-evals); an island counts its
  // own against its share.
  std::uint64_t evaluations_left() const {
    if (options.max_evaluations == 0) return std::numeric_limits<std::uint64_t>::max();
    if (options.islands == nullptr) {
      return options.max_evaluations > progress.evaluations
                 ? options.max_evaluations - progress.evaluations
                 : 0;
    }
    const std::uint64_t done = progress.evaluations - base.evaluations;
    return budget > done ? budget - done : 0;
  }

  // ---- islands (islands.h) ----

  // What this island tells rank 0 at a meeting: its counters (of this run), the fingerprints and
  // front members new since its last report, its pool, and why it finished (empty: it has not).
  nlohmann::json report(const std::string& done) {
    nlohmann::json seen_new = nlohmann::json::array();
    for (std::uint64_t f : seen) {
      if (reported.insert(f).second) seen_new.push_back(f);
    }
    nlohmann::json front = nlohmann::json::array();
    for (const ArchiveEntry& e : archive.front()) {
      if (e.found_at <= reported_mark) continue;  // reported before (or a migrant from rank 0)
      front.push_back({{"genome", e.genome.to_json()},
                       {"cost", cost::to_json(e.cost)},
                       {"found_at", e.found_at}});
    }
    reported_mark = progress.evaluations;
    nlohmann::json pool_json = nlohmann::json::array();
    for (const PoolEntry& e : pool) {
      pool_json.push_back({{"genome", e.genome.to_json()}, {"penalty", e.penalty}});
    }
    return {{"generation", progress.generation},
            {"evaluations", progress.evaluations - base.evaluations},
            {"refused", progress.refused - base.refused},
            {"infeasible", progress.infeasible - base.infeasible},
            {"prefix_evaluations", progress.prefix_evaluations},
            {"waited_s", waited_s},
            {"done", done},
            {"seen", seen_new},
            {"front", front},
            {"pool", pool_json}};
  }

  // The reports of one meeting, in rank order, into the merged archive (and, on rank 0, the
  // merged seen set and the islands' counters and pools). True when every island had finished.
  bool absorb(const std::vector<std::string>& reports) {
    const bool rank0 = options.islands->rank() == 0;
    bool finished = true;
    for (std::size_t r = 0; r < reports.size(); ++r) {
      const nlohmann::json j = nlohmann::json::parse(reports[r]);
      IslandState& island = islands[r];
      island.generation = j.at("generation").get<std::uint64_t>();
      island.evaluations = j.at("evaluations").get<std::uint64_t>();
      island.refused = j.at("refused").get<std::uint64_t>();
      island.infeasible = j.at("infeasible").get<std::uint64_t>();
      island.prefix_evaluations = j.at("prefix_evaluations").get<std::uint64_t>();
      island.waited_s = j.at("waited_s").get<double>();
      island.done = j.at("done").get<std::string>();
      if (island.done.empty()) finished = false;
      for (const nlohmann::json& e : j.at("front")) {
        rewrite::Plan genome = genome_of(e.at("genome"));
        rewrite::Plan plan = space.expand(genome);
        merged->offer(std::move(genome), std::move(plan), cost::cost_from_json(e.at("cost")),
                      e.at("found_at").get<std::uint64_t>());
      }
      if (!rank0) continue;
      for (const nlohmann::json& f : j.at("seen")) merged_seen.insert(f.get<std::uint64_t>());
      island.pool.clear();
      for (const nlohmann::json& e : j.at("pool")) {
        island.pool.push_back({genome_of(e.at("genome")), e.at("penalty").get<double>()});
      }
    }
    return finished;
  }

  // The migrants: the merged front's best plan on each objective, offered to this island's
  // archive unless it priced the plan itself (then it has offered it already).
  void take_migrants() {
    std::vector<const ArchiveEntry*> taken;
    for (Objective o : options.objectives) {
      const ArchiveEntry* best = merged->best(o);
      if (best == nullptr || std::find(taken.begin(), taken.end(), best) != taken.end()) continue;
      taken.push_back(best);
      if (!seen.insert(fingerprint(best->genome)).second) continue;
      archive.offer(*best);
    }
  }

  // The reports of a meeting, the time spent waiting for them counted.
  std::vector<std::string> collect() {
    const Clock::time_point start = Clock::now();
    std::vector<std::string> reports = options.islands->collect();
    waited_s += std::chrono::duration<double>(Clock::now() - start).count();
    return reports;
  }

  // One meeting (islands.h): post this island's report, take in everyone's report of the meeting
  // before. Returns why the search stops once a meeting's reports say every island finished
  // (after collecting the reports of this one, the last).
  std::optional<std::string> meet(const std::string& done, Clock::time_point start,
                                  Clock::time_point& saved) {
    IslandLink& link = *options.islands;
    link.post(report(done).dump());
    if (++posted == 1) return std::nullopt;
    if (absorb(collect())) {
      absorb(collect());
      if (link.rank() == 0) islands[0].waited_s = waited_s;  // its last wait too
      return islands[0].done;
    }
    // Patience on the merged front and every island's count: the same reports on every island,
    // so every island decides alike at this meeting — and leaves it with the reports of this
    // meeting collected, as at the end of the budget.
    std::uint64_t total = 0;
    for (const IslandState& island : islands) total += island.evaluations;
    watch(*merged, total);
    if (converged(total)) {
      absorb(collect());
      if (link.rank() == 0) islands[0].waited_s = waited_s;
      return std::string("converged");
    }
    take_migrants();
    if (link.rank() == 0 &&
        std::chrono::duration<double>(Clock::now() - saved).count() >= options.checkpoint_every_s) {
      save();
      if (options.on_merged) options.on_merged(merged_result("running", start));
      saved = Clock::now();
    }
    return std::nullopt;
  }

  // Rank 0: the merged state, as a checkpoint any rank count resumes.
  CheckpointState merged_state() const {
    CheckpointState s = snapshot(merged_progress(Clock::now()), merged_seen, *merged);
    // The islands' pools, lowest penalty first (ties: rank order), each genome once.
    std::vector<const PoolEntry*> all;
    for (const IslandState& island : islands) {
      for (const PoolEntry& e : island.pool) all.push_back(&e);
    }
    std::stable_sort(all.begin(), all.end(), [](const PoolEntry* a, const PoolEntry* b) {
      return a->penalty < b->penalty;
    });
    std::unordered_set<std::uint64_t> taken;
    for (const PoolEntry* e : all) {
      if (s.pool.size() == kPoolSize) break;
      if (taken.insert(fingerprint(e->genome)).second) s.pool.push_back(e->genome);
    }
    s.ranks = options.islands->ranks();
    return s;
  }

  // Rank 0: the counters of every island together (the seconds and rate: rank 0's clock).
  Progress merged_progress(Clock::time_point start) const {
    Progress p;
    p.evaluations = base.evaluations;
    p.refused = base.refused;
    p.infeasible = base.infeasible;
    std::uint64_t run = 0;
    for (const IslandState& island : islands) {
      p.generation = std::max(p.generation, island.generation);
      p.evaluations += island.evaluations;
      p.refused += island.refused;
      p.infeasible += island.infeasible;
      p.prefix_evaluations += island.prefix_evaluations;
      p.waiting_s += island.waited_s;
      run += island.evaluations;
    }
    p.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    p.evaluations_per_s = p.seconds > 0 ? static_cast<double>(run) / p.seconds : 0;
    p.front_size = merged->front().size();
    p.ranks = options.islands->ranks();
    p.prefix_stopped_by = progress.prefix_stopped_by;  // every island's alike
    if (!merged->front().empty()) {
      for (Objective o : options.objectives) {
        p.best.push_back(objective_value(merged->best(o)->cost, o));
      }
    }
    return p;
  }

  OptimizeResult merged_result(const std::string& stopped_by, Clock::time_point start) const {
    return {*merged, merged_progress(start), seeds, stopped_by, standard, prefix_genomes};
  }

  // Rank 0: the merged checkpoint, when one is asked for.
  void save() const {
    if (!options.checkpoint.empty()) write_checkpoint(options.checkpoint, merged_state());
  }

  OptimizeResult run() {
    if (options.max_evaluations == 0 && options.time_budget_s <= 0) {
      throw Error("the search needs a budget: a time budget or a maximum number of evaluations");
    }
    const Clock::time_point start = Clock::now();
    IslandLink* const link = options.islands;
    const bool rank0 = link == nullptr || link->rank() == 0;
    stream_seed = link != nullptr ? island_seed(options.seed, link->rank()) : options.seed;
    seeds = seed_plans(space);
    add_standard_seeds();
    // Without seeds the search starts from the unsharded plan alone (seeds[0]).
    if (!options.use_seeds) seeds.resize(std::min<std::size_t>(seeds.size(), 1));
    if (!options.resume.empty()) restore(read_checkpoint(options.resume));
    base = progress;
    if (link != nullptr) {
      progress.ranks = link->ranks();
      const std::uint64_t left = options.max_evaluations > base.evaluations
                                     ? options.max_evaluations - base.evaluations
                                     : 0;
      budget = island_share(left, link->rank(), link->ranks());
      merged.emplace(options.objectives, options.constraints);
      islands.resize(link->ranks());
      if (rank0) {
        merged_seen = seen;
        standard = price_standard();  // now: the merged fronts saved on the way carry them
      }
    }
    if (options.resume.empty()) {
      seed_archive(start);
      progress.generation = 1;
    }
    if (link == nullptr) watch(archive, progress.evaluations - base.evaluations);
    Clock::time_point saved = start;
    std::string stopped_by;
    std::string done;  // why this search finished (an island still meets the others)
    const std::uint64_t migrate_every = std::max<std::uint64_t>(options.migrate_every, 1);
    for (int idle = 0;;) {
      const bool go_on = update_progress(start);
      if (done.empty()) {
        if (!go_on) {
          done = "caller";
        } else if (evaluations_left() == 0) {
          done = "max-evals";
        } else if (options.time_budget_s > 0 &&
                   (lockstep != nullptr ? lockstep_time_up
                                        : progress.seconds >= options.time_budget_s)) {
          done = "time-budget";
        } else if (idle >= kExhaustedAfter) {
          done = "exhausted";
        } else if (link == nullptr && converged(progress.evaluations - base.evaluations)) {
          done = "converged";  // islands: decided at a meeting (meet)
        }
      }
      if (link == nullptr) {
        if (!done.empty()) {
          stopped_by = done;
          break;
        }
      } else if (!done.empty() || progress.generation % migrate_every == 0) {
        if (std::optional<std::string> stop = meet(done, start, saved)) {
          stopped_by = *stop;
          break;
        }
        if (!done.empty()) continue;
      }
      const std::size_t slots = std::min<std::uint64_t>(options.batch, evaluations_left());
      std::vector<Candidate> batch = generate(slots);
      idle = batch.empty() ? idle + 1 : 0;
      price_all(batch, deadline(start));
      merge(batch);
      if (link == nullptr) watch(archive, progress.evaluations - base.evaluations);
      ++progress.generation;  // the state after this generation
      if (link == nullptr && !options.checkpoint.empty() &&
          std::chrono::duration<double>(Clock::now() - saved).count() >=
              options.checkpoint_every_s) {
        write_checkpoint(options.checkpoint, state());
        saved = Clock::now();
      }
    }
    progress.archive = nullptr;
    if (link == nullptr) {
      if (!options.checkpoint.empty()) write_checkpoint(options.checkpoint, state());
      return {archive, progress, seeds, stopped_by, price_standard(start), prefix_genomes};
    }
    if (!rank0) return {archive, progress, seeds, stopped_by, {}, prefix_genomes};
    save();
    return merged_result(stopped_by, start);
  }
};

Optimizer::Optimizer(const ir::Graph& graph, const cost::Target& target, OptimizeOptions options)
    : impl_(std::make_unique<Impl>(graph, target, std::move(options))) {}

Optimizer::~Optimizer() = default;

OptimizeResult Optimizer::run() {
  return impl_->run();
}

const PlanSpace& Optimizer::space() const {
  return impl_->space;
}

const StandardResult* best_standard(const std::vector<StandardResult>& standard,
                                    Objective objective) {
  const StandardResult* best = nullptr;
  for (const StandardResult& s : standard) {
    if (!s.feasible()) continue;
    if (best == nullptr ||
        objective_value(*s.cost, objective) < objective_value(*best->cost, objective)) {
      best = &s;
    }
  }
  return best;
}

nlohmann::json front_json(const OptimizeResult& result, const std::string& graph_name,
                          const std::string& target_name) {
  const ParetoArchive& archive = result.archive;
  nlohmann::json objectives = nlohmann::json::array();
  for (Objective o : archive.objectives()) objectives.push_back(objective_name(o));
  nlohmann::json front = nlohmann::json::array();
  for (std::size_t i = 0; i < archive.front().size(); ++i) {
    const ArchiveEntry& e = archive.front()[i];
    nlohmann::json score = nlohmann::json::object();
    for (std::size_t k = 0; k < archive.objectives().size(); ++k) {
      score[std::string(objective_name(archive.objectives()[k]))] = e.score[k];
    }
    front.push_back({{"name", fmt::format("p{}", i)},
                     {"score", score},
                     {"found_at", e.found_at},
                     {"plan", e.plan.to_json()},
                     {"cost", cost::to_json(e.cost)}});
  }
  nlohmann::json standard = nlohmann::json::array();
  for (const StandardResult& s : result.standard) {
    nlohmann::json entry = {
        {"name", s.name}, {"summary", s.summary}, {"feasible", s.feasible()}, {"reason", s.reason}};
    if (s.plan) entry["plan"] = s.plan->to_json();
    if (s.cost) entry["cost"] = cost::to_json(*s.cost);
    standard.push_back(std::move(entry));
  }
  nlohmann::json constraints = nlohmann::json::object();
  if (archive.constraints().max_memory_per_device > 0) {
    constraints["max_memory_per_device"] = archive.constraints().max_memory_per_device;
  }
  if (archive.constraints().max_devices > 0) {
    constraints["max_devices"] = archive.constraints().max_devices;
  }
  nlohmann::json out = {{"graph", graph_name},
                        {"target", target_name},
                        {"objectives", objectives},
                        {"constraints", constraints},
                        {"evaluations", result.progress.evaluations},
                        {"refused", result.progress.refused},
                        {"refusals", result.progress.refusals},
                        {"unpriced_seeds", result.progress.unpriced_seeds},
                        {"infeasible", result.progress.infeasible},
                        {"seconds", result.progress.seconds},
                        {"stopped_by", result.stopped_by},
                        {"front", front},
                        {"standard_plans", standard}};
  if (result.progress.ranks > 1) {  // a search on many processes (islands.h)
    out["ranks"] = result.progress.ranks;
    out["waiting_s"] = result.progress.waiting_s;
  }
  return out;
}

void check_resume(const ir::Graph& graph, const cost::Target& target,
                  const OptimizeOptions& options) {
  if (options.resume.empty()) return;
  check_compatible(read_checkpoint(options.resume), settings_of(graph, target, options),
                   options.resume.string());
}

std::uint64_t graph_fingerprint(const ir::Graph& graph) {
  const std::string text = ir::write_graph_json(graph);
  return support::fnv1a(text);
}

}  // namespace tapestry::search
