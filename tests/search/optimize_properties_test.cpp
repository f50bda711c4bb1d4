// Properties of the optimizer on random graphs: a plan that prices is a plan that runs.
//
// The cost model prices a plan by running the rewrite patterns (cost::Evaluator) without
// validating what they build; `lower` validates. Issue 25: fuse-elementwise fused a `slice` into
// its producer and built an invalid graph, which the evaluator priced and the optimizer put on
// its front as the fastest plan; `tapestry run` then ended in "internal error: the lowered graph
// is invalid". Two properties, on the random graphs of the lowering properties (slices, windows,
// reductions and layout ops included: rewrite/random_graphs.h) and the preset h100x8 target or a
// small toy cluster:
//
// * EveryFrontPlanLowersValidatesAndVerifies: a short optimize run (threads 1, a random seed and
//   budget, two or four objectives); every plan of its front lowers with validation (application
//   dialect and operation-kernel-agreement) and runs on the application executor with the
//   reference kernels, equal to the naive run — bitwise, or with a split reduction within the
//   bars `tapestry run --verify` holds it to (runtime::verify_outputs, bound mode).
// * EveryPlanTheEvaluatorPricesLowers: the genomes the search makes (the seeds, then chains of
//   mutations, place and mesh included) and the lowering properties' random plans: whenever the
//   evaluator prices one, `lower` with validation accepts it — else the two disagree, which is a
//   rewrite's bug.
//
// search_test runs 100 cases of each (a few hundred front plans, a few seconds); ctest
// search_optimize_properties_long (label slow) 3,000 (RC_PARAMS). A failure prints the shrunk
// graph.tap and plan.json: `tapestry run graph.tap --plan plan.json --verify` replays it.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "cost/cost_testing.h"
#include "rewrite/random_graphs.h"
#include "rewrite/random_plans.h"
#include "rewrite/rewrite_testing.h"
#include "search_testing.h"
#include "tapestry/cost/collective.h"
#include "tapestry/cost/evaluator.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/search/optimize.h"
#include "tapestry/support/error.h"

namespace tapestry::search {
namespace {

/// Statements per graph: small enough that a short search reaches a front of several plans.
constexpr int kMaxOperations = 8;

std::string reproducer(const std::string& tap, const std::string& plan, const std::string& what) {
  return fmt::format("reproducer:\n--- graph.tap\n{}--- plan.json\n{}\n--- {}\n", tap, plan, what);
}

/// A random graph as its .tap text and the graph, shared with generators rapidcheck re-runs.
struct RandomGraph {
  std::string tap;
  std::shared_ptr<const ir::Graph> graph;
};

/// Graphs of at least rapidcheck's size kMinSize (of 100): the first cases of a run would
/// otherwise be single operations on single cells, whose fronts hold one plan.
constexpr int kMinSize = 50;

RandomGraph random_graph() {
  const std::string tap = *rc::gen::withSize([](int size) {
    return rc::gen::resize(std::max(size, kMinSize),
                           rewrite::testing::gen_tap_program(kMaxOperations));
  });
  std::string messages;
  std::optional<ir::Graph> built = rewrite::testing::try_build(tap, &messages);
  if (!built) RC_FAIL("the generator made a program that does not build:\n" + tap + messages);
  return {tap, std::make_shared<const ir::Graph>(std::move(*built))};
}

/// h100x8 half the time, else a toy target of 1–2 nodes × 1–4 devices without latency (where
/// every cut pays: fronts of many plans). Every device prices every dtype of the random graphs
/// (f32, f64, i32), so no graph is refused whole for its dtype.
cost::Target random_target() {
  cost::Target t = *rc::gen::arbitrary<bool>()
                       ? testing::h100x8()
                       : cost::testing::toy_target(*rc::gen::inRange<std::size_t>(1, 3),
                                                   *rc::gen::inRange<std::size_t>(1, 5));
  for (cost::DeviceType& type : t.device_types) {
    const double f32 = type.peak_flops.at(ir::DType::kFloat32);
    type.peak_flops.emplace(ir::DType::kFloat64, f32 / 2);
    type.peak_flops.emplace(ir::DType::kInt32, f32);
  }
  return t;
}

/// Why `plan` fails to lower, run or verify on `g` (nullopt: it passes). `lower` validates.
std::optional<std::string> why_plan_fails(const ir::Graph& g, const rewrite::Plan& plan) {
  std::optional<rewrite::LowerResult> r;
  try {
    r = rewrite::lower(g, plan);
  } catch (const Error& e) {
    return std::string("lowering failed\n") + e.what();
  }
  bool reduction_split = false;
  for (const rewrite::RewriteEvent& e : r->log) {
    reduction_split |= e.applied && e.pattern == "split-reduction";
  }
  try {
    if (reduction_split) {
      const runtime::VerifyReport report =
          rewrite::testing::within_documented_bound(g, rewrite::testing::run_lowered(g, r->graph));
      if (!report.pass()) return "results differ\n" + report.text();
    } else {
      const runtime::TensorsComparison cmp = rewrite::testing::run_both(g, r->graph);
      if (!cmp.all_bitwise_equal()) return "results differ\n" + cmp.summary();
    }
  } catch (const Error& e) {
    return std::string("execution failed\n") + e.what();
  }
  return std::nullopt;
}

RC_GTEST_PROP(OptimizeProperties, EveryFrontPlanLowersValidatesAndVerifies, ()) {
  const RandomGraph random = random_graph();
  const std::string& tap = random.tap;
  const ir::Graph& g = *random.graph;
  const cost::Target target = random_target();
  OptimizeOptions options;
  if (*rc::gen::inRange(0, 4) == 0) options.objectives = {Objective::kTime, Objective::kMemory};
  options.seed = *rc::gen::inRange<std::uint64_t>(0, 1000);
  options.threads = 1;
  options.batch = 16;
  options.max_evaluations = *rc::gen::inRange<std::uint64_t>(16, 160);
  const OptimizeResult result = [&] {
    const rewrite::testing::PrintOnCrash on_crash(
        reproducer(tap, "(none: optimize)",
                   fmt::format("crash in optimize on {}, seed {}, {} evaluations", target.name,
                               options.seed, options.max_evaluations)));
    return Optimizer(g, target, options).run();
  }();
  RC_CLASSIFY(result.progress.refused > 0, "some plans refused");
  RC_TAG(fmt::format("front of {}", std::min<std::size_t>(result.archive.front().size(), 5)) +
         (result.archive.front().size() >= 5 ? "+" : ""));
  for (const ArchiveEntry& e : result.archive.front()) {
    const std::string plan_text = e.plan.to_json().dump();
    const rewrite::testing::PrintOnCrash on_plan_crash(reproducer(tap, plan_text, "crash"));
    if (auto why = why_plan_fails(g, e.plan)) {
      RC_FAIL(reproducer(tap, plan_text,
                         fmt::format("a plan on the front of {} (seed {}) does not run: {}",
                                     target.name, options.seed, *why)));
    }
  }
}

RC_GTEST_PROP(OptimizeProperties, EveryPlanTheEvaluatorPricesLowers, ()) {
  const RandomGraph random = random_graph();
  const std::string& tap = random.tap;
  const std::shared_ptr<const ir::Graph> g = random.graph;
  const cost::Target target = random_target();
  const PlanSpace space(*g, target, false);
  std::vector<rewrite::Plan> plans;
  for (const SeedPlan& seed : seed_plans(space)) plans.push_back(space.expand(seed.genome));
  Rng rng(*rc::gen::arbitrary<std::uint64_t>());
  rewrite::Plan genome = plans.empty() ? rewrite::Plan{} : plans[rng.below(plans.size())];
  for (int i = 0; i < 12; ++i) {
    mutate(space, genome, rng);
    plans.push_back(space.expand(genome));
  }
  plans.push_back(
      rewrite::parse_plan(*rc::gen::exec([g] { return rewrite::testing::random_plan(*g); })));
  cost::Evaluator evaluator(*g, target);
  for (const rewrite::Plan& plan : plans) {
    const std::string plan_text = plan.to_json().dump();
    const rewrite::testing::PrintOnCrash on_crash(reproducer(tap, plan_text, "crash"));
    try {
      (void)evaluator.evaluate(plan);
    } catch (const Error&) {
      RC_TAG("refused");
      continue;  // refused before lowering's validation could disagree
    }
    try {
      (void)rewrite::lower(*g, plan);
    } catch (const Error& e) {
      RC_FAIL(
          reproducer(tap, plan_text,
                     fmt::format("priced on {}, but lower refuses it: {}", target.name, e.what())));
    }
  }
}

// Where a walk of mutations starts: a random graph and target, the search's plan space on them,
// its seed plans, a random number generator and a seed's genome.
struct Walk {
  RandomGraph random = random_graph();
  cost::Target target = random_target();
  PlanSpace space{*random.graph, target, false};
  std::vector<SeedPlan> seeds = seed_plans(space);
  Rng rng{*rc::gen::arbitrary<std::uint64_t>()};
  rewrite::Plan genome = seeds.empty() ? rewrite::Plan{} : seeds[rng.below(seeds.size())].genome;
};

// The Evaluator's result does not depend on what it priced before: one Evaluator that walks a
// chain of mutations (its memo, and the per-thread caches of the rewrites and the cost model,
// filled by every earlier case of the run, other graphs included) prices each plan exactly as a
// fresh Evaluator and as lower → place → simulate do — every field of the CostVector bit for bit
// — and refuses exactly the plans they refuse, with the same message.
RC_GTEST_PROP(OptimizeProperties, OneEvaluatorPricesAMutationChainAsFreshOnesDo, ()) {
  Walk w;
  const ir::Graph& g = *w.random.graph;
  const cost::Target& target = w.target;
  cost::Evaluator walker(g, target);  // one for the whole chain
  rewrite::LowerOptions options;
  options.validate = false;
  int refused = 0;
  for (int i = 0; i < 24; ++i) {
    if (i % 6 == 0 && !w.seeds.empty()) w.genome = w.seeds[w.rng.below(w.seeds.size())].genome;
    mutate(w.space, w.genome, w.rng);
    const rewrite::Plan plan = w.space.expand(w.genome);
    const std::string plan_text = plan.to_json().dump();
    const rewrite::testing::PrintOnCrash on_crash(reproducer(w.random.tap, plan_text, "crash"));
    std::string walked_error, fresh_error, reference_error;
    nlohmann::json walked, fresh, reference;
    try {
      walked = cost::to_json(walker.evaluate(plan));
    } catch (const Error& e) {
      walked_error = e.what();
    }
    // The other two without the fused-stage cache: they parse every fused operation's stages.
    struct CacheOff {
      bool was = rewrite::use_fused_stage_cache(false);
      ~CacheOff() { rewrite::use_fused_stage_cache(was); }
    };
    std::optional<CacheOff> off(std::in_place);
    try {
      cost::Evaluator once(g, target);
      fresh = cost::to_json(once.evaluate(plan));
    } catch (const Error& e) {
      fresh_error = e.what();
    }
    try {
      const rewrite::LowerResult r = rewrite::lower(g, plan, options);
      reference = cost::to_json(cost::simulate(cost::place(r.graph, r.plan, target), target));
      // partial_tensors reads each fused operation once: the same as is_partial tensor by tensor.
      const std::vector<std::uint8_t> partial = cost::partial_tensors(r.graph);
      for (ir::TensorId t : r.graph.tensors()) {
        RC_ASSERT(partial[t.index()] == (cost::is_partial(r.graph, t) ? 1 : 0));
      }
    } catch (const Error& e) {
      reference_error = e.what();
    }
    off.reset();
    // OperationFinder answers as find_operation does, for every name the plan and graph use.
    const rewrite::OperationFinder finder(g);
    for (const auto& entry : plan.ops) {
      RC_ASSERT(finder.find(entry.first) == rewrite::find_operation(g, entry.first));
    }
    for (ir::OperationId op : g.operations()) {
      for (const std::string name : {g.operation(op).label(), std::string(g.key(op))}) {
        RC_ASSERT(finder.find(name) == rewrite::find_operation(g, name));
      }
    }
    refused += walked_error.empty() ? 0 : 1;
    if (walked != fresh || walked_error != fresh_error || walked != reference ||
        walked_error != reference_error) {
      RC_FAIL(reproducer(
          w.random.tap, plan_text,
          fmt::format("step {} on {}: the walking Evaluator gives {}{}, a fresh one {}{}, lower → "
                      "place → simulate {}{}",
                      i, target.name, walked.dump(), walked_error, fresh.dump(), fresh_error,
                      reference.dump(), reference_error)));
    }
  }
  RC_TAG(refused == 0 ? "every plan priced" : "some plans refused");
}

// `plan` with every count of a dim that is not a reduction and is above 1 moved to another value
// above 1 (a distinct value for each distinct one, none equal to a reduction count, within the
// dim's extent where one fits): often a plan of the same memo key (symbolic.h) that the rewrites
// memoised for `plan`, whose cuts shard-grid may accept where it refused `plan`'s, or the reverse.
rewrite::Plan other_counts(const ir::Graph& g, const rewrite::Plan& plan, Rng& rng) {
  std::vector<std::int64_t> kept;  // reduction counts
  for (const auto& [name, op] : plan.ops) {
    const std::optional<ir::OperationId> id = rewrite::find_operation(g, name);
    if (!id) continue;
    const ir::OperationView view = g.operation(*id);
    const std::vector<std::string> dims = view.index_names();
    for (const auto& [dim, count] : op.split) {
      const auto d =
          static_cast<std::size_t>(std::find(dims.begin(), dims.end(), dim) - dims.begin());
      if (d < dims.size() && view.reduction(d)) kept.push_back(count);
    }
  }
  std::map<std::int64_t, std::int64_t> moved;
  rewrite::Plan out = plan;
  for (auto& [name, op] : out.ops) {
    const std::optional<ir::OperationId> id = rewrite::find_operation(g, name);
    if (!id) continue;
    const ir::OperationView view = g.operation(*id);
    const std::vector<std::string> dims = view.index_names();
    for (auto& [dim, count] : op.split) {
      const auto d =
          static_cast<std::size_t>(std::find(dims.begin(), dims.end(), dim) - dims.begin());
      if (d >= dims.size() || view.reduction(d) || count == 1 ||
          std::find(kept.begin(), kept.end(), count) != kept.end()) {
        continue;
      }
      const std::int64_t extent = view.ipf_index()->extent(d);
      auto to = moved.find(count);
      if (to == moved.end()) {
        std::int64_t value = count;
        for (int tries = 0; tries < 8; ++tries) {
          const std::int64_t v =
              2 + static_cast<std::int64_t>(
                      rng.below(static_cast<std::size_t>(std::max<std::int64_t>(extent - 1, 1))));
          const bool taken =
              std::find(kept.begin(), kept.end(), v) != kept.end() ||
              std::any_of(moved.begin(), moved.end(), [&](const auto& m) { return m.second == v; });
          if (!taken && v <= extent) {
            value = v;
            break;
          }
        }
        to = moved.emplace(count, value).first;
      }
      if (to->second <= extent) count = to->second;
    }
  }
  return out;
}

// The Evaluator's memo serves a plan as a fresh evaluation would, whatever came before: plans of
// a mutation chain, plans of the same keys with other counts (other_counts) and plans priced
// before, in a random order, by one Evaluator whose memo holds a random few operations (entries
// evicted and made again) and by one with the default memo, each price equal to a fresh
// Evaluator's, bit for bit, and each refusal with the same message.
RC_GTEST_PROP(OptimizeProperties, AnEvaluatorWhoseMemoHitsAndMissesPricesAsFreshOnesDo, ()) {
  Walk w;
  const ir::Graph& g = *w.random.graph;
  const cost::Target& target = w.target;
  std::vector<rewrite::Plan> met;  // the plans of the walk so far
  const std::size_t bound = *rc::gen::inRange<std::size_t>(1, 4 * g.operations().size() + 2);
  const rewrite::LowerOptions options;
  cost::Evaluator small(g, target, options, bound), large(g, target);
  std::size_t refused = 0;
  for (int i = 0; i < 32; ++i) {
    rewrite::Plan plan;
    const std::size_t pick = w.rng.below(3);
    if (met.empty() || pick == 0) {
      mutate(w.space, w.genome, w.rng);
      plan = w.space.expand(w.genome);
    } else if (pick == 1) {
      plan = other_counts(g, met[w.rng.below(met.size())], w.rng);
    } else {
      plan = met[w.rng.below(met.size())];
    }
    met.push_back(plan);
    const std::string plan_text = plan.to_json().dump();
    const rewrite::testing::PrintOnCrash on_crash(reproducer(w.random.tap, plan_text, "crash"));
    const auto price = [&](cost::Evaluator& e) {
      try {
        return cost::to_json(e.evaluate(plan)).dump();
      } catch (const Error& error) {
        return std::string("refused: ") + error.what();
      }
    };
    cost::Evaluator once(g, target);
    const std::string fresh = price(once), by_small = price(small), by_large = price(large);
    refused += fresh.starts_with("refused") ? 1 : 0;
    if (by_small != fresh || by_large != fresh) {
      RC_FAIL(reproducer(w.random.tap, plan_text,
                         fmt::format("step {} on {} (memo of {} operations): a fresh Evaluator "
                                     "gives {}, the small memo's {}, the default memo's {}",
                                     i, target.name, bound, fresh, by_small, by_large)));
    }
  }
  const cost::EvaluatorStats& stats = large.stats();
  RC_CLASSIFY(stats.rewrites_run < stats.evaluations, "memo hits");
  RC_CLASSIFY(small.stats().evicted > 0, "evictions");
  RC_CLASSIFY(refused > 0, "some plans refused");
}

}  // namespace
}  // namespace tapestry::search
