#include "tapestry/search/optimize.h"

#include <fmt/core.h>
#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "checkpoint.h"
#include "tapestry/cost/evaluator.h"
#include "tapestry/cost/standard_plans.h"
#include "tapestry/ir/json_io.h"
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
  bool priced = false;                   // false: the time budget ran out before its turn
};

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
constexpr int kExhaustedAfter = 64;  // generations in a row with nothing new to price
constexpr int kRetries = 8;          // mutations of one parent before a slot gives up
constexpr int kPrefixRuns = 1;       // searches of the first layers (see prefix_front)

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

  void price(Candidate& c) {
    c.priced = true;
    try {
      c.cost = evaluator().evaluate(c.plan);
    } catch (const Error&) {
      c.cost.reset();
    }
  }

  // Prices the batch in parallel. With a time budget, candidates whose turn comes after it ran
  // out are dropped (and forgotten by the seen set): a timed search stops within one pricing of
  // its budget even when a generation takes longer than the budget.
  void price_all(std::vector<Candidate>& batch, std::optional<Clock::time_point> deadline = {}) {
    const int threads = options.threads > 0 ? options.threads
                                            : static_cast<int>(std::thread::hardware_concurrency());
    tbb::task_arena arena(std::max(threads, 1));
    arena.execute([&] {
      tbb::parallel_for(std::size_t{0}, batch.size(), [&](std::size_t i) {
        if (deadline && Clock::now() >= *deadline) return;
        price(batch[i]);
      });
    });
    std::erase_if(batch, [&](const Candidate& c) {
      if (!c.priced) seen.erase(fingerprint(c.genome));
      return !c.priced;
    });
  }

  // Offers priced candidates in order: the archive, the pool, the counters.
  void merge(std::vector<Candidate>& batch) {
    for (Candidate& c : batch) {
      ++progress.evaluations;
      ++run_evaluations;
      if (!c.cost) {
        ++progress.refused;
        continue;
      }
      const double p = penalty(*c.cost, options.constraints, target);
      if (p > 0 || violation(*c.cost, options.constraints)) {
        ++progress.infeasible;
        remember(c.genome, p);
        continue;
      }
      archive.offer(std::move(c.genome), std::move(c.plan), std::move(*c.cost),
                    progress.evaluations);
    }
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
      Rng rng = Rng::for_slot(options.seed, progress.generation, i);
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

  CheckpointState state() const {
    CheckpointState s{.graph = graph_fingerprint(graph),
                      .target = target.name,
                      .objectives = options.objectives,
                      .constraints = options.constraints,
                      .seed = options.seed,
                      .tie_layers = options.tie_layers,
                      .generation = progress.generation,
                      .evaluations = progress.evaluations,
                      .refused = progress.refused,
                      .infeasible = progress.infeasible,
                      .seen = {seen.begin(), seen.end()},
                      .front = {},
                      .pool = {}};
    std::sort(s.seen.begin(), s.seen.end());
    for (const ArchiveEntry& e : archive.front()) s.front.push_back({e.genome, e.found_at});
    for (const PoolEntry& e : pool) s.pool.push_back(e.genome);
    return s;
  }

  void restore(const CheckpointState& s) {
    const CheckpointState mine = state();
    check_compatible(s, mine, options.resume.string());
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
  // 16 plans, best time first; empty when there is no prefix to search.
  std::vector<rewrite::Plan> prefix_front() {
    if (!options.tie_layers || options.prefix_layers <= 0 || options.prefix_share <= 0) return {};
    std::optional<ir::Graph> prefix = layer_prefix(graph, space, options.prefix_layers);
    if (!prefix) return {};
    // kPrefixRuns independent searches of the prefix, each with its share of the budget (their
    // fronts' plans offered fastest first, at most 16). One: two or three shorter ones were no
    // better on the 24-layer transformer of bench/search_bench (docs/optimizer.md).
    OptimizeOptions o = options;
    o.prefix_layers = 0;
    o.checkpoint.clear();
    o.resume.clear();
    o.on_progress = nullptr;
    o.time_budget_s = options.time_budget_s * options.prefix_share / kPrefixRuns;
    o.max_evaluations = static_cast<std::uint64_t>(static_cast<double>(options.max_evaluations) *
                                                   options.prefix_share / kPrefixRuns);
    if (o.time_budget_s <= 0 && o.max_evaluations == 0) return {};
    std::vector<std::pair<double, rewrite::Plan>> found;
    for (int run = 0; run < kPrefixRuns; ++run) {
      o.seed = options.seed * kPrefixRuns + static_cast<std::uint64_t>(run);
      Optimizer sub(*prefix, target, o);
      const OptimizeResult r = sub.run();
      progress.prefix_evaluations += r.progress.evaluations;
      for (const ArchiveEntry& e : r.archive.front())
        found.emplace_back(e.cost.makespan_s, e.genome);
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<rewrite::Plan> genomes;
    for (auto& [time, genome] : found) {
      if (genomes.size() == 16) break;
      // The prefix's representatives are the whole graph's (the same first members), so its
      // genomes read the same.
      genomes.push_back(std::move(genome));
    }
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
      normalize(genome);
      const bool seen_before = std::any_of(seeds.begin(), seeds.end(),
                                           [&](const SeedPlan& d) { return d.genome == genome; });
      if (!seen_before) seeds.push_back({"standard:" + s.name, std::move(genome)});
    }
  }

  // Every standard plan priced whole, under the search's constraints (OptimizeResult::standard).
  std::vector<StandardResult> price_standard() {
    std::vector<StandardResult> out;
    for (cost::StandardPlan& s : cost::standard_plans(graph, target)) {
      StandardResult r{
          .name = s.name, .summary = s.summary, .plan = std::move(s.plan), .reason = s.reason};
      if (r.plan) {
        try {
          r.cost = evaluator().evaluate(*r.plan);
          if (std::optional<std::string> why = violation(*r.cost, options.constraints)) {
            r.reason = *why;
          } else if (penalty(*r.cost, options.constraints, target) > 0) {
            r.reason = "over the target's memory";
          }
        } catch (const Error& e) {
          r.reason = fmt::format("the rewrites refuse it: {}", e.what());
        }
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  void seed_archive() {
    std::vector<Candidate> batch;
    for (const SeedPlan& s : seeds) {
      seen.insert(fingerprint(s.genome));
      batch.push_back({s.genome, space.expand(s.genome), std::nullopt});
    }
    for (rewrite::Plan& genome : prefix_front()) {
      if (!seen.insert(fingerprint(genome)).second) continue;
      rewrite::Plan plan = space.expand(genome);
      batch.push_back({std::move(genome), std::move(plan), std::nullopt});
    }
    price_all(batch);
    merge(batch);
  }

  OptimizeResult run() {
    if (options.max_evaluations == 0 && options.time_budget_s <= 0) {
      throw Error("the search needs a budget: a time budget or a maximum number of evaluations");
    }
    const Clock::time_point start = Clock::now();
    seeds = seed_plans(space);
    add_standard_seeds();
    // Without seeds the search starts from the unsharded plan alone (seeds[0]).
    if (!options.use_seeds) seeds.resize(std::min<std::size_t>(seeds.size(), 1));
    if (!options.resume.empty()) {
      restore(read_checkpoint(options.resume));
    } else {
      seed_archive();
      progress.generation = 1;
    }
    Clock::time_point saved = start;
    std::string stopped_by;
    for (int idle = 0;; ++progress.generation) {
      if (!update_progress(start)) {
        stopped_by = "caller";
        break;
      }
      if (options.max_evaluations > 0 && progress.evaluations >= options.max_evaluations) {
        stopped_by = "max-evals";
        break;
      }
      if (options.time_budget_s > 0 && progress.seconds >= options.time_budget_s) {
        stopped_by = "time-budget";
        break;
      }
      if (idle >= kExhaustedAfter) {
        stopped_by = "exhausted";
        break;
      }
      std::size_t slots = options.batch;
      if (options.max_evaluations > 0) {
        slots = std::min<std::uint64_t>(slots, options.max_evaluations - progress.evaluations);
      }
      std::vector<Candidate> batch = generate(slots);
      idle = batch.empty() ? idle + 1 : 0;
      price_all(batch, options.time_budget_s > 0
                           ? std::optional(
                                 start + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(options.time_budget_s)))
                           : std::nullopt);
      merge(batch);
      if (!options.checkpoint.empty() &&
          std::chrono::duration<double>(Clock::now() - saved).count() >=
              options.checkpoint_every_s) {
        ++progress.generation;  // the state after this generation
        write_checkpoint(options.checkpoint, state());
        --progress.generation;
        saved = Clock::now();
      }
    }
    if (!options.checkpoint.empty()) write_checkpoint(options.checkpoint, state());
    progress.archive = nullptr;
    return {archive, progress, seeds, stopped_by, price_standard()};
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
  return {{"graph", graph_name},
          {"target", target_name},
          {"objectives", objectives},
          {"constraints", constraints},
          {"evaluations", result.progress.evaluations},
          {"refused", result.progress.refused},
          {"infeasible", result.progress.infeasible},
          {"seconds", result.progress.seconds},
          {"stopped_by", result.stopped_by},
          {"front", front},
          {"standard_plans", standard}};
}

std::uint64_t graph_fingerprint(const ir::Graph& graph) {
  const std::string text = ir::write_graph_json(graph);
  return support::fnv1a(text);
}

}  // namespace tapestry::search
