#include "tapestry/rewrite/pattern.h"

#include <fmt/core.h>

#include "tapestry/support/error.h"

namespace tapestry::rewrite {

std::string RewriteEvent::to_string() const {
  const std::string on = origin.empty() || origin == target
                             ? target
                             : fmt::format("{} (from {} in the plan)", target, origin);
  return fmt::format("{:<8} {} on {}: {}", applied ? "applied" : "refused", pattern, on, detail);
}

std::string RewriteState::origin(std::string_view name) const {
  auto it = origins.find(name);
  return it == origins.end() ? std::string(name) : it->second;
}

void RewriteState::derive(const std::string& name, std::string_view from) {
  std::string root = origin(from);
  if (root == name) {
    origins.erase(name);
  } else {
    origins[name] = std::move(root);
  }
}

namespace {

// One pass: applies the first match found. Returns false when nothing matched. Refusals are
// recorded once per (pattern, operation name).
bool apply_first_match(RewriteState& state, std::span<const OperationPattern* const> patterns,
                       const DriverOptions& options, std::vector<RewriteEvent>& log,
                       std::set<std::pair<std::string, std::string>>& refused) {
  for (const OperationPattern* pattern : patterns) {
    if (options.disabled.contains(pattern->name())) continue;
    for (ir::OperationId op : state.graph.operations()) {
      MatchResult result = pattern->match(state, op);
      const std::string target = operation_name(state.graph, op);
      std::string origin = state.origin(target);
      if (result) {
        std::string summary = pattern->apply(state, op);
        log.push_back(
            {std::string(pattern->name()), target, std::move(origin), true, std::move(summary)});
        return true;
      }
      if (result.requested && refused.emplace(std::string(pattern->name()), target).second) {
        log.push_back({std::string(pattern->name()), target, std::move(origin), false,
                       std::move(result.reason)});
      }
    }
  }
  return false;
}

}  // namespace

std::vector<RewriteEvent> run_patterns(RewriteState& state,
                                       std::span<const OperationPattern* const> patterns,
                                       const DriverOptions& options) {
  std::vector<RewriteEvent> log;
  std::set<std::pair<std::string, std::string>> refused;
  int applied = 0;
  while (apply_first_match(state, patterns, options, log, refused)) {
    if (++applied >= options.max_rewrites) {
      throw Error(fmt::format("rewrite driver: more than {} rewrites; the last was {} on {}",
                              options.max_rewrites, log.back().pattern, log.back().target));
    }
  }
  return log;
}

}  // namespace tapestry::rewrite
