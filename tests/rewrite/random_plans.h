// Random plans for random graphs (random_graphs.h): the lowering properties
// (rewrite/properties_test.cpp) and the block executor properties
// (verify/block_properties_test.cpp).
//
// A plan splits most operations on every index dim (reduction dims included), even and uneven,
// sometimes decomposes a linear on request, and fuses none, "auto" or explicit groups of
// producer → consumer pairs and chains of three. Half the plans are *aligned*: every operation
// cuts its k-th non-reduction dim from the end the same way (capped by the extent). The index
// dims of most kernels are their result's dims in order, so a producer and its elementwise
// consumer then agree and fuse-elementwise applies; independent splits mostly make it refuse
// ("splits disagree").
//
// Small graphs may be cut into as many pieces as a dim has cells (every shard shape, size-1
// shards included); large graphs at most kLargeMaxSplit per dim and kLargeMaxShards per
// operation, so a case has few applications whose shards stay large enough for the library
// paths of the fast kernels.
#pragma once

#include <rapidcheck.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "rewrite/random_graphs.h"
#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::rewrite::testing {

inline constexpr std::int64_t kLargeMaxSplit = 8;
inline constexpr std::int64_t kLargeMaxShards = 64;

/// Shards along a dim of extent `e`: 1, 2, 3, all it may (e, or `most`) or anything in between.
inline std::int64_t split_count(std::int64_t e, std::int64_t most) {
  const std::int64_t top = std::min(e, most);
  switch (pick(0, 4)) {
    case 0:
      return 1;
    case 1:
      return std::min<std::int64_t>(2, top);
    case 2:
      return std::min<std::int64_t>(3, top);
    case 3:
      return top;
    default:
      return pick(1, top);
  }
}

/// Producer → consumer pairs: `consumer` reads a tensor `producer` writes.
inline std::vector<std::pair<std::string, std::string>> edges(const ir::Graph& g) {
  std::vector<std::pair<std::string, std::string>> out;
  for (ir::OperationId op : g.operations()) {
    for (const auto& in : g.operation(op).inputs().entries()) {
      for (ir::OperationId producer : g.producers(in.value.tensor)) {
        out.emplace_back(operation_name(g, producer), operation_name(g, op));
      }
    }
  }
  return out;
}

/// Fusion groups: disjoint producer → consumer pairs, some extended to chains of three.
inline nlohmann::json fusion_groups(const ir::Graph& g) {
  const auto pairs = edges(g);
  std::set<std::string> used;
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& [producer, consumer] : pairs) {
    if (used.contains(producer) || used.contains(consumer) || !chance(60)) continue;
    std::vector<std::string> group = {producer, consumer};
    for (const auto& [p, c] : pairs) {
      if (p == consumer && !used.contains(c) && c != producer && chance(40)) {
        group.push_back(c);
        break;
      }
    }
    used.insert(group.begin(), group.end());
    groups.push_back(group);
  }
  return groups;
}

/// A random plan for `g` (see the file comment) as JSON text.
inline std::string random_plan(const ir::Graph& g, Scale scale = Scale::kSmall) {
  constexpr std::int64_t kAny = std::numeric_limits<std::int64_t>::max();
  const std::int64_t per_dim = scale == Scale::kLarge ? kLargeMaxSplit : kAny;
  const std::int64_t per_op = scale == Scale::kLarge ? kLargeMaxShards : kAny;
  const bool aligned = chance(50);
  std::vector<std::int64_t> by_position(8);
  for (std::int64_t& n : by_position) n = split_count(4, per_dim);
  nlohmann::json ops = nlohmann::json::object();
  for (ir::OperationId op : g.operations()) {
    const ir::OperationView view = g.operation(op);
    const std::string name = operation_name(g, op);
    if (!aligned && !chance(75)) continue;
    std::size_t position = 0;  // among the non-reduction dims, from the last
    std::int64_t shards = 1;
    for (std::size_t d = view.index_rank(); d-- > 0;) {
      const std::int64_t extent = view.ipf_index()->extent(d);
      const bool reduction = view.reduction(d).has_value();
      std::int64_t n = aligned && !reduction
                           ? std::min(by_position[std::min(position++, std::size_t{7})], extent)
                           : split_count(extent, per_dim);
      n = std::min(n, per_op / shards);
      shards *= std::max<std::int64_t>(n, 1);
      if (n > 1) ops[name]["split"][view.index_name(d)] = n;
    }
  }
  for (ir::OperationId op : g.operations()) {
    if (g.operation(op).kernel() == "linear" && chance(30))
      ops[operation_name(g, op)]["substitute"] = {"decompose-linear"};
  }
  nlohmann::json plan = {{"ops", ops}};
  const std::int64_t fuse = pick(0, 2);  // none, "auto", explicit groups
  if (fuse == 1) plan["fuse"] = "auto";
  if (fuse == 2) plan["fuse"] = fusion_groups(g);
  return plan.dump();
}

}  // namespace tapestry::rewrite::testing
