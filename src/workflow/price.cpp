#include "tapestry/workflow/price.h"

#include "tapestry/support/error.h"

namespace tapestry::workflow {

cost::Placement place_lowered(const rewrite::LowerResult& lowered, const cost::Target& target,
                              const std::string& plan_source) {
  try {
    return cost::place(lowered.graph, lowered.plan, target);
  } catch (const Error& e) {
    if (plan_source.empty()) throw;
    throw e.with_context(plan_source);
  }
}

Priced price(const ir::Graph& graph, const rewrite::Plan& plan, cost::Target target,
             const PriceOptions& options) {
  return price_lowered(graph, plan, rewrite::lower(graph, plan, options.lower), std::move(target),
                       options);
}

Priced price_lowered(const ir::Graph& graph, const rewrite::Plan& plan,
                     rewrite::LowerResult lowered, cost::Target target,
                     const PriceOptions& options) {
  Priced priced{.lowered = std::move(lowered),
                .target = std::move(target),
                .placement = {},
                .schedule = {},
                .cost = {},
                .gains = {}};
  priced.placement = place_lowered(priced.lowered, priced.target, options.plan_source);
  priced.cost = cost::simulate(priced.placement, priced.target, &priced.schedule);
  priced.pipeline = cost::pipeline_of(plan, priced.lowered, priced.target, priced.cost);
  if (options.baselines) {
    priced.gains =
        cost::gains_against_baselines(graph, priced.target, priced.cost.makespan_s, options.lower);
    priced.recomputation = cost::recomputation_of(graph, plan, priced.lowered, priced.target,
                                                  priced.cost, options.lower);
    priced.zero = cost::zero_sharding_of(graph, plan, priced.lowered, priced.target, priced.cost,
                                         options.lower);
  }
  return priced;
}

}  // namespace tapestry::workflow
