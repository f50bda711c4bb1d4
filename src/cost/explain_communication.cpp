// explain()'s Communication section: collectives and point-to-point groups (explain.h).
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "explain_detail.h"

namespace tapestry::cost::detail {

namespace {

// Point-to-point transfers grouped by (producer operation, consumer operation, tensor), each
// group named by its pattern; `first` receives each group's first transfer.
std::vector<Communication> point_to_point(const ir::Graph& graph, const Placement& p,
                                          const Target& target, const Schedule& schedule,
                                          std::vector<std::uint32_t>& first) {
  const auto op_of = [&](std::uint32_t app) -> const PlacedOperation& {
    return p.operations[p.applications[app].operation];
  };
  const auto device_name = [&](std::uint32_t d) -> std::string {
    return d == kHost ? "host" : target.devices[d].name;
  };
  // Groups in first-transfer order.
  std::map<std::tuple<std::string, std::string, std::uint32_t>, std::size_t> group_of;
  std::vector<Communication> groups;
  std::vector<std::vector<std::uint32_t>> members;
  for (std::uint32_t t = 0; t < p.transfers.size(); ++t) {
    const Transfer& tr = p.transfers[t];
    if (tr.collective != kNoCollective) continue;
    const std::string producer = tr.producer == kHost ? "host" : op_of(tr.producer).name;
    const std::string consumer = tr.to == kHost ? "host" : op_of(tr.consumers.front()).name;
    auto [it, added] =
        group_of.emplace(std::tuple(producer, consumer, tr.tensor.index()), groups.size());
    if (added) {
      Communication c;
      c.tensor = label_of(graph, tr.tensor);
      c.producer = producer;
      c.consumer = consumer;
      c.start_s = schedule.transfers[t].start;
      c.end_s = schedule.transfers[t].end;
      groups.push_back(std::move(c));
      members.emplace_back();
      first.push_back(t);
    }
    Communication& c = groups[it->second];
    members[it->second].push_back(t);
    ++c.transfers;
    c.bytes += tr.bytes;
    c.start_s = std::min(c.start_s, schedule.transfers[t].start);
    c.end_s = std::max(c.end_s, schedule.transfers[t].end);
    for (auto [list, d] : {std::pair{&c.from, tr.from}, std::pair{&c.to, tr.to}}) {
      const std::string name = device_name(d);
      if (std::find(list->begin(), list->end(), name) == list->end()) list->push_back(name);
    }
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    Communication& c = groups[g];
    c.seconds = c.end_s - c.start_s;
    const Transfer& first_transfer = p.transfers[members[g].front()];
    if (first_transfer.from == kHost) {
      c.pattern = "host load";
      continue;
    }
    if (first_transfer.to == kHost) {
      c.pattern = "host gather";
      continue;
    }
    if (op_of(first_transfer.consumers.front()).kernel == "reduce" &&
        combining_reduce(graph, first_transfer.tensor)) {
      c.pattern = "reduce";
      continue;
    }
    // All-gather: each destination receives everything the producer wrote elsewhere.
    std::int64_t total = 0;
    std::map<std::uint32_t, std::int64_t> written_on;
    const PlacedOperation& producer = op_of(first_transfer.producer);
    for (std::uint32_t a : producer.applications) {
      for (const auto& out : graph.application(p.applications[a].id).outputs().entries()) {
        if (out.value.tensor != first_transfer.tensor) continue;
        const std::int64_t bytes =
            out.value.range.size() * element_bytes(graph, first_transfer.tensor);
        total += bytes;
        written_on[p.applications[a].device] += bytes;
      }
    }
    std::map<std::uint32_t, std::int64_t> received;
    for (std::uint32_t t : members[g]) received[p.transfers[t].to] += p.transfers[t].bytes;
    bool gather = received.size() >= 2 && written_on.size() >= 2;
    for (const auto& [device, bytes] : received) {
      gather = gather && bytes == total - written_on[device];
    }
    // All-to-all: every device sends to and receives from every other.
    std::set<std::pair<std::uint32_t, std::uint32_t>> pairs;
    std::set<std::uint32_t> devices;
    for (std::uint32_t t : members[g]) {
      pairs.emplace(p.transfers[t].from, p.transfers[t].to);
      devices.insert(p.transfers[t].from);
      devices.insert(p.transfers[t].to);
    }
    const std::size_t n = devices.size();
    const bool all_to_all = n >= 3 && pairs.size() == n * (n - 1) && received.size() == n;
    c.pattern = gather ? "all-gather" : all_to_all ? "all-to-all" : "redistribute";
  }
  return groups;
}

// One collective, or an all-reduce (a reduce-scatter and the all-gather of its combine's output),
// before collectives of one shape are grouped into one line.
struct CollectiveItem {
  Communication line;
  std::uint32_t first = 0;                                // its first transfer
  std::size_t devices = 0;                                // participants of one collective
  double parts_start[2] = {0, 0}, parts_end[2] = {0, 0};  // all-reduce: the two halves
};

CollectiveItem item_of(const ir::Graph& graph, const Placement& p, const Target& target,
                       const Schedule& schedule, std::uint32_t k) {
  const Collective& c = p.collectives[k];
  const Transfer& first = p.transfers[c.transfers.front()];
  CollectiveItem item;
  Communication& line = item.line;
  line.pattern = std::string(kind_name(c.kind));
  line.algorithm = std::string(algorithm_name(price_collective(c, target).algorithm));
  line.tensor = label_of(graph, c.tensor);
  line.producer = p.operations[p.applications[first.producer].operation].name;
  line.consumer = p.operations[p.applications[first.consumers.front()].operation].name;
  line.collectives = 1;
  line.size_bytes = c.bytes;
  line.transfers = static_cast<std::int64_t>(c.transfers.size());
  for (std::uint32_t t : c.transfers) {
    line.bytes += p.transfers[t].bytes;
    for (auto [list, d] :
         {std::pair{&line.from, p.transfers[t].from}, std::pair{&line.to, p.transfers[t].to}}) {
      const std::string& name = target.devices[d].name;
      if (std::find(list->begin(), list->end(), name) == list->end()) list->push_back(name);
    }
  }
  for (std::uint32_t d : c.devices) line.devices.push_back(target.devices[d].name);
  line.start_s = schedule.collectives[k].start;
  line.end_s = schedule.collectives[k].end;
  item.first = c.transfers.front();
  item.devices = c.devices.size();
  return item;
}

// The collectives, a reduce-scatter followed (through its combine) by an all-gather over the same
// devices named as one all-reduce, and collectives of one shape — kind, algorithm, tensor,
// operations, size — grouped into one line (the data-parallel groups of a 2-D plan).
std::vector<CollectiveItem> collective_items(const ir::Graph& graph, const Placement& p,
                                             const Target& target, const Schedule& schedule) {
  std::vector<CollectiveItem> items;
  std::vector<bool> paired(p.collectives.size(), false);
  for (std::uint32_t k = 0; k < p.collectives.size(); ++k) {
    if (paired[k]) continue;
    CollectiveItem item = item_of(graph, p, target, schedule, k);
    const Collective& c = p.collectives[k];
    if (c.kind == CollectiveKind::kReduceScatter) {
      // The all-gather of what the combine wrote, over the same devices.
      for (std::uint32_t g = k + 1; g < p.collectives.size(); ++g) {
        const Collective& ag = p.collectives[g];
        if (paired[g] || ag.kind != CollectiveKind::kAllGather || ag.devices != c.devices) continue;
        const Transfer& t = p.transfers[ag.transfers.front()];
        if (p.operations[p.applications[t.producer].operation].name != item.line.consumer) continue;
        const CollectiveItem second = item_of(graph, p, target, schedule, g);
        paired[g] = true;
        Communication& line = item.line;
        line.pattern = "all-reduce";
        line.algorithm = line.algorithm == second.line.algorithm
                             ? line.algorithm + ": reduce-scatter + all-gather"
                             : fmt::format("reduce-scatter {} + all-gather {}", line.algorithm,
                                           second.line.algorithm);
        line.consumer = second.line.consumer;
        line.transfers += second.line.transfers;
        line.bytes += second.line.bytes;
        item.parts_start[0] = line.start_s;
        item.parts_end[0] = line.end_s;
        item.parts_start[1] = second.line.start_s;
        item.parts_end[1] = second.line.end_s;
        line.end_s = second.line.end_s;
        break;
      }
    }
    items.push_back(std::move(item));
  }
  // Group items of one shape, in the order of their first transfers.
  std::vector<CollectiveItem> grouped;
  for (CollectiveItem& item : items) {
    const Communication& l = item.line;
    auto same = std::find_if(grouped.begin(), grouped.end(), [&](const CollectiveItem& g) {
      const Communication& o = g.line;
      return o.pattern == l.pattern && o.algorithm == l.algorithm && o.tensor == l.tensor &&
             o.producer == l.producer && o.consumer == l.consumer && o.size_bytes == l.size_bytes &&
             g.devices == item.devices;
    });
    if (same == grouped.end()) {
      grouped.push_back(std::move(item));
      continue;
    }
    Communication& o = same->line;
    o.collectives += 1;
    o.transfers += l.transfers;
    o.bytes += l.bytes;
    for (auto [into, from] : {std::pair{&o.devices, &l.devices}, std::pair{&o.from, &l.from},
                              std::pair{&o.to, &l.to}}) {
      for (const std::string& d : *from) {
        if (std::find(into->begin(), into->end(), d) == into->end()) into->push_back(d);
      }
    }
    o.start_s = std::min(o.start_s, l.start_s);
    o.end_s = std::max(o.end_s, l.end_s);
    for (int h = 0; h < 2; ++h) {
      same->parts_start[h] = std::min(same->parts_start[h], item.parts_start[h]);
      same->parts_end[h] = std::max(same->parts_end[h], item.parts_end[h]);
    }
    same->first = std::min(same->first, item.first);
  }
  for (CollectiveItem& g : grouped) {
    Communication& line = g.line;
    line.seconds = line.end_s - line.start_s;
    if (line.pattern == "all-reduce") {
      line.parts_s = {g.parts_end[0] - g.parts_start[0], g.parts_end[1] - g.parts_start[1]};
    }
  }
  return grouped;
}

}  // namespace

std::vector<Communication> communication_of(const ir::Graph& graph, const Placement& p,
                                            const Target& target, const Schedule& schedule) {
  std::vector<std::uint32_t> first;
  std::vector<Communication> p2p = point_to_point(graph, p, target, schedule, first);
  std::vector<CollectiveItem> collectives = collective_items(graph, p, target, schedule);
  // Both, in the order of their first transfers.
  std::vector<std::pair<std::uint32_t, Communication>> all;
  for (std::size_t i = 0; i < p2p.size(); ++i) all.emplace_back(first[i], std::move(p2p[i]));
  for (CollectiveItem& c : collectives) all.emplace_back(c.first, std::move(c.line));
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Communication> out;
  out.reserve(all.size());
  for (auto& [at, c] : all) out.push_back(std::move(c));
  return out;
}

}  // namespace tapestry::cost::detail
