// explain()'s strategy line and the gains against the baselines (explain.h).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "explain_detail.h"
#include "tapestry/cost/evaluator.h"
#include "tapestry/cost/graph_roles.h"
#include "tapestry/cost/standard_plans.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/support/error.h"

namespace tapestry::cost {

namespace detail {

namespace {

// How one operation is cut. A batch split whose shards all run on one device is microbatches
// (a pipeline stage's, or gradient accumulation), not data parallelism: it is `micro`, not `data`.
struct Cut {
  std::int64_t data = 1;    // shards along batch-like dims, over more than one device
  std::int64_t tensor = 1;  // shards along the others
  std::int64_t micro = 1;   // shards along batch-like dims, all on one device
  bool row = false;         // it cuts the block of the partial sums it writes
  bool column = false;      // it cuts a dim that is neither batch-like, a reduction nor a block
  std::string device;       // an unsharded (or microbatched) operation's device

  [[nodiscard]] std::string words(bool unsharded_device) const {
    if (data > 1 && tensor > 1) return fmt::format("2-D data {} × tensor {}", data, tensor);
    if (data > 1) return fmt::format("data parallel ×{}", data);
    if (tensor > 1) return fmt::format("tensor parallel ×{}", tensor);
    if (micro > 1) {
      return unsharded_device ? fmt::format("{} microbatches on {}", micro, device)
                              : fmt::format("{} microbatches", micro);
    }
    return unsharded_device ? fmt::format("unsharded on {}", device) : "unsharded";
  }
  [[nodiscard]] std::tuple<std::int64_t, std::int64_t, std::int64_t> key() const {
    return {data, tensor, micro};
  }
};

bool reads_partial(const ir::Graph& graph, const OperationRoles& op) {
  return std::any_of(op.inputs.begin(), op.inputs.end(),
                     [&](const PortRoles& port) { return is_partial(graph, port.tensor); });
}

Cut cut_of(const ir::Graph& graph, const OperationRoles& op, const PlacedOperation& placed,
           const Placement& p, const Target& target) {
  Cut c;
  for (std::size_t d = 0; d < placed.grid.size() && d < op.dims.size(); ++d) {
    if (placed.grid[d] <= 1) continue;
    if (op.batch[d]) {
      c.data *= placed.grid[d];
      continue;
    }
    c.tensor *= placed.grid[d];
    const bool block = std::any_of(op.outputs.begin(), op.outputs.end(), [&](const PortRoles& o) {
      return !o.follows.empty() && o.follows[0] == d && is_partial(graph, o.tensor);
    });
    if (block) {
      c.row = true;
    } else if (!op.reductions[d]) {
      c.column = true;
    }
  }
  if (!placed.applications.empty()) {
    c.device = target.devices[p.applications[placed.applications.front()].device].name;
  }
  const bool one_device =
      std::all_of(placed.applications.begin(), placed.applications.end(), [&](std::uint32_t a) {
        return p.applications[a].device == p.applications[placed.applications.front()].device;
      });
  if (c.data > 1 && c.tensor == 1 && one_device) std::swap(c.data, c.micro);
  return c;
}

bool has_kernel(const ir::Graph& graph, const OperationRoles& op, std::string_view kernel) {
  if (op.kernel == kernel) return true;
  if (op.kernel != rewrite::kFusedKernel) return false;
  for (const rewrite::FusedStage& s : rewrite::fused_stages(graph.operation(op.id).params())) {
    if (s.kernel == kernel) return true;
  }
  return false;
}

bool reads_weight(const GraphRoles& roles, const OperationRoles& op) {
  return std::any_of(op.inputs.begin(), op.inputs.end(),
                     [&](const PortRoles& port) { return roles.is_weight(port.tensor); });
}

// Whether the path from a row cut back to its column cut passes a product of two activations or
// a softmax: an attention block, else an MLP.
bool is_attention(const ir::Graph& graph, const GraphRoles& roles, const OperationRoles& row) {
  std::vector<ir::TensorId> todo;
  for (const PortRoles& port : row.inputs) {
    if (!roles.is_weight(port.tensor)) todo.push_back(port.tensor);
  }
  std::set<std::uint32_t> seen;
  while (!todo.empty()) {
    const ir::TensorId t = todo.back();
    todo.pop_back();
    if (!seen.insert(t.index()).second) continue;
    for (ir::OperationId producer : graph.producers(t)) {
      const auto at = roles.position(producer);
      if (!at) continue;
      const OperationRoles& op = roles.operations[*at];
      if (has_kernel(graph, op, "softmax")) return true;
      if (op.contraction) {
        if (reads_weight(roles, op)) continue;  // the column cut: stop here
        return true;                            // a product of two activations
      }
      for (const PortRoles& port : op.inputs) {
        if (!roles.is_weight(port.tensor)) todo.push_back(port.tensor);
      }
    }
  }
  return false;
}

std::string plural(std::string_view pattern) {
  return std::string(pattern) + "s";
}

std::string bytes_words(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (b < 1024.0 * 1024) return fmt::format("{:.1f} KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
}

// The collectives by kind and size, "per MLP" where there is one per pair; then the bytes moved
// point to point.
std::string communication_words(const std::vector<Communication>& lines, std::size_t pairs,
                                std::string_view pair_word) {
  struct Group {
    std::string pattern;
    std::int64_t size = 0;
    std::size_t lines = 0;
    std::set<std::int64_t> groups;  // collectives per line
  };
  std::vector<Group> groups;
  std::int64_t p2p_bytes = 0;
  std::vector<std::string> p2p_patterns;
  for (const Communication& c : lines) {
    if (c.collectives == 0) {
      p2p_bytes += c.bytes;
      const std::string word = c.pattern == "redistribute" ? "redistribution" : c.pattern;
      if (std::find(p2p_patterns.begin(), p2p_patterns.end(), word) == p2p_patterns.end()) {
        p2p_patterns.push_back(word);
      }
      continue;
    }
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) {
      return x.pattern == c.pattern && x.size == c.size_bytes;
    });
    if (g == groups.end()) g = groups.insert(groups.end(), Group{c.pattern, c.size_bytes, 0, {}});
    g->lines += 1;
    g->groups.insert(c.collectives);
  }
  // A reduce-scatter and an all-gather of one size, one per pair each: the sequence-parallel form.
  const auto find = [&](std::string_view pattern, std::int64_t size) {
    return std::find_if(groups.begin(), groups.end(),
                        [&](const Group& x) { return x.pattern == pattern && x.size == size; });
  };
  for (auto rs = groups.begin(); rs != groups.end(); ++rs) {
    if (rs->pattern != "reduce-scatter") continue;
    auto ag = find("all-gather", rs->size);
    if (ag == groups.end() || ag->lines != rs->lines || ag->groups != rs->groups) continue;
    rs->pattern = "reduce-scatter + all-gather";
    groups.erase(ag);
    break;
  }
  std::vector<std::string> parts;
  for (const Group& g : groups) {
    // Only a combine's collectives are the pairs' (all-reduce, reduce, reduce-scatter).
    const bool combine = g.pattern.find("reduce") != std::string::npos;
    std::string part =
        combine && pairs > 0 && g.lines == pairs
            ? fmt::format("one {} of {} per {}", g.pattern, bytes_words(g.size), pair_word)
        : g.lines == 1
            ? fmt::format("one {} of {}", g.pattern, bytes_words(g.size))
            : fmt::format("{} {} of {}", g.lines, plural(g.pattern), bytes_words(g.size));
    if (g.groups.size() == 1 && *g.groups.begin() > 1) {
      part += fmt::format(" in each of {} groups", *g.groups.begin());
    }
    parts.push_back(std::move(part));
  }
  if (p2p_bytes > 0) {
    parts.push_back(fmt::format("{} point to point ({})", bytes_words(p2p_bytes),
                                fmt::join(p2p_patterns, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

Strategy strategy_of(const ir::Graph& graph, const Placement& placement, const Target& target,
                     const std::vector<Communication>& communication) {
  const GraphRoles roles = graph_roles(graph);
  // 1. Every operation's cut; the combines of split reductions are left out.
  struct Entry {
    const OperationRoles* op;
    Cut cut;
  };
  std::vector<Entry> contractions, others;
  for (const PlacedOperation& placed : placement.operations) {
    const auto at = roles.position(placed.id);
    if (!at || placed.applications.empty()) continue;
    const OperationRoles& op = roles.operations[*at];
    if (reads_partial(graph, op)) continue;
    Entry e{&op, cut_of(graph, op, placed, placement, target)};
    (op.contraction ? contractions : others).push_back(std::move(e));
  }
  // A graph without contractions (elementwise, layout) is described by all its operations.
  const std::string_view noun = contractions.empty() ? "operation" : "contraction";
  if (contractions.empty()) std::swap(contractions, others);
  Strategy s;
  if (contractions.empty()) {
    s.kind = "unsharded";
    s.summary = "nothing to run";
    return s;
  }
  // 2. The head: what every contraction does, or the mix. Microbatched contractions on two or
  // more devices are a pipeline: its stages are those devices.
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::size_t> classes;
  std::set<std::string> devices;
  bool row = false, column = false;
  for (const Entry& e : contractions) {
    ++classes[e.cut.key()];
    devices.insert(e.cut.device);
    row = row || e.cut.row;
    column = column || e.cut.column;
  }
  const Cut& first = contractions.front().cut;
  std::string head;
  if (classes.size() == 1) {
    s.data = first.data;
    s.tensor = first.tensor;
    s.megatron = row && column && first.tensor > 1;
    if (first.micro > 1 && devices.size() > 1) {
      s.kind = "pipeline";
      // The stages in the order of the forward pass: each device where a contraction first runs.
      std::vector<std::string> stages;
      for (const Entry& e : contractions) {
        if (std::find(stages.begin(), stages.end(), e.cut.device) == stages.end()) {
          stages.push_back(e.cut.device);
        }
      }
      head = fmt::format("pipeline: {} stages ({}) × {} microbatches", stages.size(),
                         fmt::join(stages, ", "), first.micro);
    } else if (first.micro > 1) {
      s.kind = "microbatches";
      head =
          fmt::format("{} microbatches on {} (gradient accumulation)", first.micro, first.device);
    } else if (first.data > 1 && first.tensor > 1) {
      s.kind = "2-D";
      head = fmt::format("2-D: data {} × tensor {}{}", first.data, first.tensor,
                         s.megatron ? " (Megatron)" : "");
    } else if (first.data > 1) {
      s.kind = "data parallel";
      head = fmt::format("data parallel ×{}", first.data);
    } else if (first.tensor > 1) {
      s.kind = "tensor parallel";
      head = fmt::format("tensor parallel ×{}{}", first.tensor, s.megatron ? " (Megatron)" : "");
    } else {
      s.kind = "unsharded";
      head = devices.size() == 1
                 ? fmt::format("unsharded on {}", first.device)
                 : fmt::format("unsharded, operations on {}", fmt::join(devices, ", "));
    }
  } else {
    s.kind = "mixed";
    std::vector<std::pair<std::size_t, std::string>> counts;
    // By count, ties in the order the classes first appear (the placement's: topological).
    std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> order;
    for (const Entry& e : contractions) {
      if (std::find(order.begin(), order.end(), e.cut.key()) == order.end()) {
        order.push_back(e.cut.key());
      }
    }
    for (const auto& key : order) {
      const std::size_t n = classes.at(key);
      std::set<std::string> on;
      for (const Entry& e : contractions) {
        if (e.cut.key() == key) on.insert(e.cut.device);
      }
      const auto e = std::find_if(contractions.begin(), contractions.end(),
                                  [&, &k = key](const Entry& x) { return x.cut.key() == k; });
      counts.emplace_back(n, e->cut.words(on.size() == 1));
    }
    std::stable_sort(counts.begin(), counts.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::string> words;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      words.push_back(i == 0 ? fmt::format("{} {}{} {}", counts[i].first, noun,
                                           counts[i].first == 1 ? "" : "s", counts[i].second)
                             : fmt::format("{} {}", counts[i].first, counts[i].second));
    }
    head = fmt::format("mixed: {}", fmt::join(words, ", "));
  }
  // 3. The other operations, where they differ.
  std::vector<std::string> parts = {head};
  if (s.kind == "tensor parallel" || s.kind == "2-D") {
    const bool rows = std::any_of(others.begin(), others.end(), [&](const Entry& e) {
      return e.cut.data > s.data && e.cut.tensor == 1;
    });
    if (rows) parts.back() += " with sequence parallelism";
  }
  if (s.kind != "unsharded") {
    std::set<std::string> whole_on;
    std::size_t whole = 0;
    for (const Entry& e : others) {
      if (e.cut.data > 1 || e.cut.tensor > 1 || e.cut.micro > 1) continue;
      ++whole;
      whole_on.insert(e.cut.device);
    }
    if (whole > 0) {
      parts.push_back(fmt::format("{} other operation{} {}{}", whole, whole == 1 ? "" : "s",
                                  s.kind == "pipeline" ? "whole (not microbatched)" : "unsharded",
                                  whole_on.size() == 1 ? " on " + *whole_on.begin() : ""));
    }
  }
  // 4. The collectives, per pair when there is one per pair.
  std::size_t pairs = 0, attention = 0;
  if (s.megatron) {
    for (const Entry& e : contractions) {
      if (!e.cut.row) continue;
      ++pairs;
      attention += is_attention(graph, roles, *e.op) ? 1 : 0;
    }
  }
  const std::string pair_word = attention == 0       ? "MLP"
                                : attention == pairs ? "attention block"
                                                     : "attention block and MLP";
  if (std::string comm = communication_words(communication, pairs, pair_word); !comm.empty()) {
    parts.push_back(std::move(comm));
  }
  s.summary = fmt::format("{}", fmt::join(parts, ", "));
  return s;
}

}  // namespace detail

std::vector<Gain> gains_against_baselines(const ir::Graph& graph, const Target& target,
                                          double makespan_s, const rewrite::LowerOptions& options) {
  Evaluator evaluator(graph, target, options);
  std::vector<Gain> gains;
  const auto priced = [&](std::string baseline, const rewrite::Plan& plan) {
    Gain g{.baseline = std::move(baseline)};
    try {
      const CostVector c = evaluator.evaluate(plan);
      g.baseline_s = c.makespan_s;
      g.ratio = makespan_s > 0 ? c.makespan_s / makespan_s : 0;
      g.baseline_fits = c.fits;
    } catch (const Error& e) {
      g.reason = e.what();
    }
    return g;
  };
  rewrite::Plan unsharded;
  unsharded.fuse_auto = true;  // as the standard plans: a fair baseline fuses what it can
  gains.push_back(priced("one device", unsharded));
  const StandardPlan dp = standard_plan(graph, target, "data-parallel");
  if (dp.plan) {
    gains.push_back(priced(dp.summary, *dp.plan));
  } else {
    gains.push_back(Gain{.baseline = "data parallel",
                         .baseline_s = 0,
                         .ratio = 0,
                         .baseline_fits = true,
                         .reason = fmt::format("does not apply: {}", dp.reason)});
  }
  return gains;
}

}  // namespace tapestry::cost
