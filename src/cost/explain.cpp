// explain(): sharding in DTensor/JAX words, communication grouped into patterns, the cost and
// its critical path (explain.h).
#include "tapestry/cost/explain.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tapestry/support/assert.h"

namespace tapestry::cost {

namespace {

std::string label_of(const ir::Graph& graph, ir::TensorId t) {
  const std::string& label = graph.tensor(t).label();
  return label.empty() ? std::string(graph.key(t)) : label;
}

std::int64_t element_bytes(const ir::Graph& graph, ir::TensorId t) {
  const std::optional<ir::DType> dtype = graph.tensor(t).dtype().known();
  return dtype ? static_cast<std::int64_t>(ir::dtype_size_bytes(*dtype)) : 0;
}

// The reduce operation that combines `tensor` when it holds the partials of a split reduction.
std::optional<ir::OperationId> combining_reduce(const ir::Graph& graph, ir::TensorId tensor) {
  const auto consumers = graph.consumers(tensor);
  if (consumers.size() != 1 || graph.operation(consumers[0]).kernel() != "reduce") {
    return std::nullopt;
  }
  return consumers[0];
}

std::string placement_of(const ir::Graph& graph, const zspace::AffineMap& map, std::size_t dim,
                         ir::TensorId tensor, bool is_output) {
  for (std::size_t row = 0; row < map.out_rank(); ++row) {
    if (map.at(row, dim) == 0) continue;
    if (is_output && row == 0) {
      if (auto reduce = combining_reduce(graph, tensor)) {
        const nlohmann::json& params = graph.operation(*reduce).params();
        const std::string monoid =
            params.is_object() && params.contains("op") ? params["op"].get<std::string>() : "sum";
        return fmt::format("Partial({})", monoid);
      }
    }
    return fmt::format("Shard({})", row);
  }
  return "Replicate()";
}

OperationSharding sharding_of(const ir::Graph& graph, const Placement& p, const Target& target,
                              const PlacedOperation& op) {
  OperationSharding s{op.name, op.kernel, {}, {}, {}};
  ir::OperationView view = graph.operation(op.id);
  std::vector<std::size_t> split;
  for (std::size_t d = 0; d < op.grid.size(); ++d) {
    if (op.grid[d] <= 1) continue;
    split.push_back(d);
    s.axes.push_back(op.mesh_axis[d].empty() ? fmt::format("{}={}", view.index_name(d), op.grid[d])
                                             : fmt::format("{}={}@{}", view.index_name(d),
                                                           op.grid[d], op.mesh_axis[d]));
  }
  for (std::uint32_t a : op.applications) {
    const std::string& device = target.devices[p.applications[a].device].name;
    if (std::find(s.devices.begin(), s.devices.end(), device) == s.devices.end()) {
      s.devices.push_back(device);
    }
  }
  const ir::IpfSignature* sig = view.ipf_signature();
  if (sig == nullptr) return s;
  const auto add = [&](const ir::SelectionMap& tensors, const ir::IpfMap& ipfs, bool is_output) {
    auto ipf = ipfs.entries().begin();
    for (const auto& entry : tensors.entries()) {
      TAPESTRY_ASSERT(ipf != ipfs.entries().end(), "one IPF per selection");
      TensorSharding t{entry.name, label_of(graph, entry.value.tensor), is_output, {}};
      if (is_output) {
        if (auto reduce = combining_reduce(graph, entry.value.tensor)) {
          const auto outs = graph.operation(*reduce).outputs().entries();
          if (outs.begin() != outs.end()) t.tensor = label_of(graph, (*outs.begin()).value.tensor);
        }
      }
      for (std::size_t d : split) {
        t.placements.push_back(
            placement_of(graph, ipf->value.map(), d, entry.value.tensor, is_output));
      }
      s.tensors.push_back(std::move(t));
      ++ipf;
    }
  };
  add(view.inputs(), sig->inputs, false);
  add(view.outputs(), sig->outputs, true);
  return s;
}

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
  std::uint32_t first = 0;    // its first transfer
  std::size_t devices = 0;    // participants of one collective
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
    for (auto [list, d] : {std::pair{&line.from, p.transfers[t].from}, std::pair{&line.to, p.transfers[t].to}}) {
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
  for (auto& [at, c] : all) out.push_back(std::move(c));
  return out;
}

// The elements of a schedule the critical path walks: applications, point-to-point transfers and
// collectives (a collective's transfers are one element).
struct Element {
  enum Kind : std::uint8_t { kApplication, kTransfer, kCollective } kind = kApplication;
  std::uint32_t index = 0;
  friend bool operator==(const Element&, const Element&) = default;
};

CriticalPath critical_path_of(const Placement& p, const Schedule& s, const Target& target) {
  CriticalPath path;
  const auto interval = [&](Element e) -> Schedule::Interval {
    switch (e.kind) {
      case Element::kApplication:
        return s.applications[e.index];
      case Element::kTransfer:
        return s.transfers[e.index];
      case Element::kCollective:
        return s.collectives[e.index];
    }
    return {};
  };
  const auto of_transfer = [&](std::uint32_t t) {
    const std::uint32_t c = p.transfers[t].collective;
    return c == kNoCollective ? Element{Element::kTransfer, t} : Element{Element::kCollective, c};
  };
  // Ports: a point-to-point transfer holds the sender's egress and the receiver's ingress of its
  // class; a collective both directions of every participant's classes (intra, and inter when
  // it spans nodes).
  const auto node = [&](std::uint32_t d) {
    return d == kHost ? ~0u : static_cast<std::uint32_t>(target.devices[d].node);
  };
  const auto class_of = [&](const Transfer& x) {
    if (x.from == kHost || x.to == kHost) return 2;
    return node(x.from) != node(x.to) ? 1 : 0;
  };
  std::vector<std::vector<bool>> member(p.collectives.size());
  std::vector<int> classes(p.collectives.size(), 1);
  for (std::size_t c = 0; c < p.collectives.size(); ++c) {
    member[c].assign(target.devices.size(), false);
    for (std::uint32_t d : p.collectives[c].devices) member[c][d] = true;
    classes[c] = spans_nodes(p.collectives[c], target) ? 2 : 1;
  }
  const auto in = [&](std::size_t c, std::uint32_t d) { return d != kHost && member[c][d]; };
  const auto share_port = [&](Element a, Element b) {
    if (a.kind == Element::kTransfer && b.kind == Element::kTransfer) {
      const Transfer &x = p.transfers[a.index], &y = p.transfers[b.index];
      if (class_of(x) != class_of(y)) return false;
      return (x.from != kHost && x.from == y.from) || (x.to != kHost && x.to == y.to);
    }
    if (a.kind == Element::kTransfer) std::swap(a, b);  // a is the collective
    if (b.kind == Element::kTransfer) {
      const Transfer& y = p.transfers[b.index];
      return class_of(y) < classes[a.index] && (in(a.index, y.from) || in(a.index, y.to));
    }
    for (std::uint32_t d : p.collectives[b.index].devices) {
      if (member[a.index][d]) return true;
    }
    return false;
  };
  // The element that ends last.
  std::optional<Element> at;
  double end = -1;
  const auto latest = [&](Element e) {
    if (interval(e).end > end) std::tie(end, at) = std::tuple(interval(e).end, e);
  };
  for (std::uint32_t a = 0; a < s.applications.size(); ++a) latest({Element::kApplication, a});
  for (std::uint32_t t = 0; t < s.transfers.size(); ++t) {
    if (p.transfers[t].collective == kNoCollective) latest({Element::kTransfer, t});
  }
  for (std::uint32_t c = 0; c < p.collectives.size(); ++c) latest({Element::kCollective, c});
  if (!at) return path;
  for (std::size_t guard = 0; guard < s.applications.size() + s.transfers.size() + 1; ++guard) {
    const Element e = *at;
    const Schedule::Interval iv = interval(e);
    switch (e.kind) {
      case Element::kApplication:
        path.compute_s += iv.end - iv.start;
        ++path.applications;
        break;
      case Element::kTransfer:
        path.communication_s += iv.end - iv.start;
        ++path.transfers;
        break;
      case Element::kCollective:
        path.communication_s += iv.end - iv.start;
        ++path.collectives;
        break;
    }
    if (iv.start <= 0) break;
    // What it waited for: an element ending exactly at its start (times are copied by max, so
    // equality is exact); otherwise the latest dependency, the gap counted as waiting.
    std::optional<Element> cause;
    double last = -1;
    Element last_cause;
    const auto consider = [&](Element x) {
      if (x == e) return;
      const double x_end = interval(x).end;
      if (x_end == iv.start && !cause) cause = x;
      if (x_end > last && x_end <= iv.start) std::tie(last, last_cause) = std::tuple(x_end, x);
    };
    const auto consider_ports = [&] {
      for (std::uint32_t t = 0; t < p.transfers.size(); ++t) {
        const Element x = of_transfer(t);
        if (x.kind == Element::kTransfer && share_port(e, x)) consider(x);
      }
      for (std::uint32_t c = 0; c < p.collectives.size(); ++c) {
        const Element x{Element::kCollective, c};
        if (!(x == e) && share_port(e, x)) consider(x);
      }
    };
    switch (e.kind) {
      case Element::kApplication: {
        const PlacedApplication& app = p.applications[e.index];
        for (std::uint32_t t : app.incoming) consider(of_transfer(t));
        for (std::uint32_t q : app.local_producers) consider({Element::kApplication, q});
        for (std::uint32_t q = 0; q < p.applications.size(); ++q) {
          if (q != e.index && s.devices[q] == s.devices[e.index]) consider({Element::kApplication, q});
        }
        break;
      }
      case Element::kTransfer: {
        const Transfer& tr = p.transfers[e.index];
        if (tr.producer != kHost) consider({Element::kApplication, tr.producer});
        consider_ports();
        break;
      }
      case Element::kCollective:
        for (std::uint32_t t : p.collectives[e.index].transfers) {
          consider({Element::kApplication, p.transfers[t].producer});
        }
        consider_ports();
        break;
    }
    if (!cause) {
      if (last < 0) {
        path.waiting_s += iv.start;
        break;
      }
      path.waiting_s += iv.start - last;
      cause = last_cause;
    }
    at = cause;
  }
  const double top = std::max({path.compute_s, path.communication_s, path.waiting_s});
  path.bound = top == path.compute_s         ? "compute"
               : top == path.communication_s ? "communication"
                                             : "waiting";
  return path;
}

std::string bytes_text(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (b < 1024.0 * 1024) return fmt::format("{:.1f} KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
}

// Device names, "gpu:0 … gpu:7" for a run of four or more consecutive devices of one kind.
std::string device_span(const std::vector<std::string>& names) {
  const auto number = [](const std::string& name) -> std::optional<std::pair<std::string, long>> {
    const std::size_t colon = name.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    try {
      return std::pair{name.substr(0, colon), std::stol(name.substr(colon + 1))};
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  bool run = names.size() >= 4;
  for (std::size_t i = 0; run && i < names.size(); ++i) {
    const auto a = number(names[i]), b = number(names[0]);
    run = a && b && a->first == b->first && a->second == b->second + static_cast<long>(i);
  }
  if (run) return fmt::format("{} … {}", names.front(), names.back());
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string seconds_text(double s) {
  if (s == 0) return "0";
  if (s < 1e-3) return fmt::format("{:.1f} µs", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

}  // namespace

Explanation explain(const ir::Graph& graph, const Placement& placement, const Target& target,
                    const CostVector& cost, const Schedule& schedule) {
  Explanation e;
  e.target = target.name;
  for (const PlacedOperation& op : placement.operations) {
    e.operations.push_back(sharding_of(graph, placement, target, op));
  }
  e.communication = communication_of(graph, placement, target, schedule);
  e.cost = cost;
  e.critical_path = critical_path_of(placement, schedule, target);
  return e;
}

std::string to_text(const Explanation& e) {
  std::string out = fmt::format("Sharding on {}\n", e.target);
  for (const OperationSharding& op : e.operations) {
    out += fmt::format(
        "  {} ({})  {}  on {}\n", op.name, op.kernel,
        op.axes.empty() ? "unsharded" : fmt::format("grid {}", fmt::join(op.axes, " × ")),
        fmt::join(op.devices, ", "));
    if (op.axes.empty()) continue;
    std::size_t width = 0;
    for (const TensorSharding& t : op.tensors)
      width = std::max(width, t.port.size() + t.tensor.size() + 4);
    for (const TensorSharding& t : op.tensors) {
      const std::string name = fmt::format("{} {} {}", t.is_output ? "→" : "←", t.port, t.tensor);
      out += fmt::format("      {:<{}} [{}]\n", name, width + 2, fmt::join(t.placements, ", "));
    }
  }
  out += "\nCommunication\n";
  if (e.communication.empty())
    out += "  none: every application reads only what its device holds\n";
  for (const Communication& c : e.communication) {
    if (c.collectives == 0) {
      out += fmt::format("  {:<13} {} of {} → {}: {} transfer{}, {}, {} → {}, {}\n", c.pattern,
                         c.tensor, c.producer, c.consumer, c.transfers, c.transfers == 1 ? "" : "s",
                         bytes_text(c.bytes), fmt::join(c.from, ","), fmt::join(c.to, ","),
                         seconds_text(c.seconds));
      continue;
    }
    const std::size_t per = c.devices.size() / static_cast<std::size_t>(c.collectives);
    std::string parts;
    if (c.parts_s.size() == 2) {
      parts = fmt::format(" (reduce-scatter {}, all-gather {})", seconds_text(c.parts_s[0]),
                          seconds_text(c.parts_s[1]));
    }
    out += fmt::format("  {}{} ({})  {} of {} → {}: {} over {} devices{} ({}), {} transfers, {}{}\n",
                       c.collectives > 1 ? fmt::format("{} × ", c.collectives) : "", c.pattern,
                       c.algorithm, c.tensor, c.producer, c.consumer, bytes_text(c.size_bytes),
                       per, c.collectives > 1 ? " each" : "", device_span(c.devices), c.transfers,
                       seconds_text(c.seconds), parts);
  }
  const CostVector& c = e.cost;
  out += fmt::format(
      "\nCost\n  makespan {}, peak memory {} (max over devices){}, {} device{}{}, energy {:.3g} J, "
      "moved {}\n",
      seconds_text(c.makespan_s), bytes_text(c.peak_memory_bytes), c.fits ? "" : " — DOES NOT FIT",
      c.devices_used, c.devices_used == 1 ? "" : "s",
      c.devices_held > c.devices_used ? fmt::format(" ({} held)", c.devices_held) : "",
      c.energy_j, bytes_text(c.bytes_moved));
  out += fmt::format("  {:<8} {:>5} {:>11} {:>11} {:>11} {:>11} {:>10}\n", "device", "apps",
                     "compute", "comm", "idle", "peak mem", "energy J");
  for (const DeviceCost& d : c.per_device) {
    out += fmt::format("  {:<8} {:>5} {:>11} {:>11} {:>11} {:>11} {:>10.3g}\n", d.device,
                       d.applications, seconds_text(d.compute_s), seconds_text(d.comm_s),
                       seconds_text(d.idle_s), bytes_text(d.peak_memory_bytes), d.energy_j);
  }
  const CriticalPath& p = e.critical_path;
  out += fmt::format(
      "  critical path: {} application{} ({} compute), {}{} transfer{} ({} communication), {} "
      "waiting: bound by {}\n",
      p.applications, p.applications == 1 ? "" : "s", seconds_text(p.compute_s),
      p.collectives > 0
          ? fmt::format("{} collective{} + ", p.collectives, p.collectives == 1 ? "" : "s")
          : "",
      p.transfers, p.transfers == 1 ? "" : "s", seconds_text(p.communication_s),
      seconds_text(p.waiting_s), p.bound);
  return out;
}

nlohmann::json to_json(const Explanation& e) {
  nlohmann::json ops = nlohmann::json::array();
  for (const OperationSharding& op : e.operations) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const TensorSharding& t : op.tensors) {
      tensors.push_back({{"port", t.port},
                         {"tensor", t.tensor},
                         {"output", t.is_output},
                         {"placements", t.placements}});
    }
    ops.push_back({{"name", op.name},
                   {"kernel", op.kernel},
                   {"grid", op.axes},
                   {"devices", op.devices},
                   {"tensors", tensors}});
  }
  nlohmann::json comms = nlohmann::json::array();
  for (const Communication& c : e.communication) {
    nlohmann::json line = {{"pattern", c.pattern},
                           {"tensor", c.tensor},
                           {"producer", c.producer},
                           {"consumer", c.consumer},
                           {"transfers", c.transfers},
                           {"bytes", c.bytes},
                           {"seconds", c.seconds},
                           {"start_s", c.start_s},
                           {"end_s", c.end_s},
                           {"from", c.from},
                           {"to", c.to}};
    if (c.collectives > 0) {
      line["algorithm"] = c.algorithm;
      line["collectives"] = c.collectives;
      line["size_bytes"] = c.size_bytes;
      line["devices"] = c.devices;
      if (!c.parts_s.empty()) line["parts_s"] = c.parts_s;
    }
    comms.push_back(std::move(line));
  }
  const CriticalPath& p = e.critical_path;
  return {{"target", e.target},
          {"operations", ops},
          {"communication", comms},
          {"cost", to_json(e.cost)},
          {"critical_path",
           {{"compute_s", p.compute_s},
            {"communication_s", p.communication_s},
            {"waiting_s", p.waiting_s},
            {"applications", p.applications},
            {"transfers", p.transfers},
            {"collectives", p.collectives},
            {"bound", p.bound}}}};
}

nlohmann::json chrome_trace(const ir::Graph& graph, const Placement& placement,
                            const Target& target, const Schedule& schedule) {
  TAPESTRY_ASSERT(schedule.applications.size() == placement.applications.size() &&
                      schedule.transfers.size() == placement.transfers.size(),
                  "the schedule is of this placement");
  const auto n = static_cast<std::uint32_t>(target.devices.size());
  const auto device_name = [&](std::uint32_t d) {
    return d == kHost ? std::string("host") : target.devices[d].name;
  };
  const auto receiver_track = [&](std::uint32_t to) { return to == kHost ? 2 * n : n + to; };
  const auto node_name = [&](ir::NodeId node) {
    const std::string& label = graph.node(node).label();
    return label.empty() ? std::string(graph.key(node)) : label;
  };
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", fmt::format("predicted on {}", target.name)}}}});
  const auto name_track = [&](std::uint32_t tid, const std::string& name) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
  };
  std::vector<bool> device_used(n, false), receiver_used(2 * n + 1, false);
  for (std::uint32_t a = 0; a < placement.applications.size(); ++a) {
    device_used[schedule.devices.empty() ? placement.applications[a].device : schedule.devices[a]] =
        true;
  }
  for (const Transfer& t : placement.transfers) receiver_used[receiver_track(t.to)] = true;
  for (std::uint32_t d = 0; d < n; ++d) {
    if (device_used[d]) name_track(d, target.devices[d].name);
  }
  for (std::uint32_t tid = n; tid <= 2 * n; ++tid) {
    if (receiver_used[tid])
      name_track(tid, device_name(tid == 2 * n ? kHost : tid - n) + " receives");
  }
  for (std::uint32_t a = 0; a < placement.applications.size(); ++a) {
    const PlacedApplication& app = placement.applications[a];
    const PlacedOperation& op = placement.operations[app.operation];
    const Schedule::Interval& when = schedule.applications[a];
    events.push_back({{"name", node_name(app.id)},
                      {"cat", op.kernel},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", schedule.devices.empty() ? app.device : schedule.devices[a]},
                      {"ts", when.start * 1e6},
                      {"dur", (when.end - when.start) * 1e6},
                      {"args",
                       {{"operation", op.name},
                        {"flops", app.work.flops},
                        {"bytes_read", app.work.bytes_read},
                        {"bytes_written", app.work.bytes_written}}}});
  }
  for (std::uint32_t t = 0; t < placement.transfers.size(); ++t) {
    const Transfer& tr = placement.transfers[t];
    const Schedule::Interval& when = schedule.transfers[t];
    nlohmann::json args = {
        {"tensor", node_name(tr.tensor)}, {"from", device_name(tr.from)}, {"bytes", tr.bytes}};
    if (tr.collective != kNoCollective) {
      const Collective& c = placement.collectives[tr.collective];
      args["collective"] = fmt::format("{} ({})", kind_name(c.kind),
                                       algorithm_name(price_collective(c, target).algorithm));
    }
    events.push_back({{"name", fmt::format("{} -> {}", device_name(tr.from), device_name(tr.to))},
                      {"cat", "transfer"},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", receiver_track(tr.to)},
                      {"ts", when.start * 1e6},
                      {"dur", (when.end - when.start) * 1e6},
                      {"args", std::move(args)}});
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

}  // namespace tapestry::cost
