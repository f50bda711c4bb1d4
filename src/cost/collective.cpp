// Collectives: names and prices in closed form (collective.h). Recognition is in
// collective_recogniser.cpp.
#include "tapestry/cost/collective.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "tapestry/support/assert.h"

namespace tapestry::cost {

namespace {

// A link class's collective figures; shared memory moves bytes for free.
struct Figures {
  double bandwidth = 0;  // B, bytes/s (infinite over shared memory)
  double latency = 0;    // α, seconds per step
  std::optional<double> nvls;
};

Figures figures_of(const Link& link) {
  if (link.shared_memory) return {std::numeric_limits<double>::infinity(), 0.0, std::nullopt};
  const CollectiveRates rates = link.collective_rates();
  return {rates.bandwidth_Bps, rates.step_latency_s, rates.nvls_bandwidth_Bps};
}

std::int64_t ceil_log2(std::size_t n) {
  std::int64_t steps = 0;
  for (std::size_t reach = 1; reach < n; reach *= 2) ++steps;
  return steps;
}

// The participants' nodes: how many, and how many participants each holds when every one holds
// the same number (0 otherwise). Devices are numbered node by node, so a node's participants are
// a run of the ascending device list.
struct Spread {
  std::size_t nodes = 0;
  std::size_t per_node = 0;
};

Spread spread_of(const Collective& c, const Target& t) {
  Spread s;
  std::size_t run = 0;
  bool even = true;
  for (std::size_t i = 0; i < c.devices.size(); ++i) {
    const bool same = i > 0 && t.devices[c.devices[i]].node == t.devices[c.devices[i - 1]].node;
    if (!same && i > 0) {
      even = even && (s.per_node == 0 || s.per_node == run);
      s.per_node = run;
      run = 0;
    }
    if (!same) ++s.nodes;
    ++run;
  }
  even = even && (s.per_node == 0 || s.per_node == run);
  s.per_node = even ? run : 0;
  return s;
}

// Keeps the cheaper of `best` and a candidate (ties: the one already held, listed first).
void consider(CollectivePrice& best, bool& any, CollectiveAlgorithm algorithm, double seconds,
              std::int64_t steps) {
  if (!any || seconds < best.seconds) {
    best.algorithm = algorithm;
    best.seconds = seconds;
    best.steps = steps;
    any = true;
  }
}

}  // namespace

std::string_view kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kReduce:
      return "reduce";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
  }
  return "?";
}

std::string_view algorithm_name(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::kSharedMemory:
      return "shared memory";
    case CollectiveAlgorithm::kRing:
      return "ring";
    case CollectiveAlgorithm::kNvls:
      return "NVLS";
    case CollectiveAlgorithm::kHierarchicalRing:
      return "hierarchical ring";
    case CollectiveAlgorithm::kChain:
      return "chain";
    case CollectiveAlgorithm::kTree:
      return "tree";
    case CollectiveAlgorithm::kPairwise:
      return "pairwise";
  }
  return "?";
}

bool spans_nodes(const Collective& collective, const Target& target) {
  for (std::uint32_t d : collective.devices) {
    if (target.devices[d].node != target.devices[collective.devices.front()].node) return true;
  }
  return false;
}

CollectivePrice price_collective(const Collective& c, const Target& target) {
  const std::size_t n = c.devices.size();
  TAPESTRY_ASSERT(n >= 2, "a collective has at least two participants");
  const Spread spread = spread_of(c, target);
  const bool multi = spread.nodes > 1;
  TAPESTRY_ASSERT(!multi || target.inter_node.has_value(), "a multi-node target has inter_node");
  const Figures intra = figures_of(target.intra_node);
  const Figures inter = multi ? figures_of(*target.inter_node) : intra;
  // The flat algorithms run at the slowest class's figures.
  const Figures& flat = inter.bandwidth < intra.bandwidth ? inter : intra;
  const auto ring_steps = static_cast<std::int64_t>(n - 1);
  const auto steps = static_cast<double>(ring_steps);
  const auto bytes = static_cast<double>(c.bytes);
  const auto chunk = static_cast<double>(c.chunk_bytes);

  CollectivePrice price;
  bool any = false;
  switch (c.kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter: {
      if (!multi) {
        consider(price, any, CollectiveAlgorithm::kRing,
                 steps * (intra.latency + chunk / intra.bandwidth), ring_steps);
        if (intra.nvls) {
          consider(price, any, CollectiveAlgorithm::kNvls,
                   steps * chunk / *intra.nvls + intra.latency, 1);
        }
        break;
      }
      consider(price, any, CollectiveAlgorithm::kRing,
               steps * (flat.latency + chunk / flat.bandwidth), ring_steps);
      if (spread.per_node >= 2) {
        const auto g = static_cast<double>(spread.per_node);
        const auto m = static_cast<double>(spread.nodes);
        consider(price, any, CollectiveAlgorithm::kHierarchicalRing,
                 (g - 1) * (intra.latency + m * chunk / intra.bandwidth) +
                     (m - 1) * (inter.latency + chunk / inter.bandwidth),
                 static_cast<std::int64_t>(spread.per_node + spread.nodes - 2));
      }
      break;
    }
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce: {
      consider(price, any, CollectiveAlgorithm::kChain,
               bytes / flat.bandwidth + steps * flat.latency, ring_steps);
      const std::int64_t depth = ceil_log2(n);
      consider(price, any, CollectiveAlgorithm::kTree,
               static_cast<double>(depth) * (flat.latency + bytes / flat.bandwidth), depth);
      break;
    }
    case CollectiveKind::kAllToAll:
      consider(price, any, CollectiveAlgorithm::kPairwise,
               steps * flat.latency + static_cast<double>(c.port_bytes) / flat.bandwidth,
               ring_steps);
      break;
  }
  if (std::isinf(flat.bandwidth) && std::isinf(intra.bandwidth)) {
    price.algorithm = CollectiveAlgorithm::kSharedMemory;  // every class shares memory
  }
  if (c.kind == CollectiveKind::kReduceScatter) price.staging_bytes = c.chunk_bytes;
  if (c.kind == CollectiveKind::kReduce) {
    price.staging_bytes =
        (c.bytes + static_cast<std::int64_t>(n) - 1) / static_cast<std::int64_t>(n);
  }
  return price;
}

}  // namespace tapestry::cost
