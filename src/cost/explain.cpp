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

std::vector<Communication> communication_of(const ir::Graph& graph, const Placement& p,
                                            const Target& target, const Schedule& schedule) {
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
    const std::string producer = tr.producer == kHost ? "host" : op_of(tr.producer).name;
    const std::string consumer = tr.to == kHost ? "host" : op_of(tr.consumers.front()).name;
    auto [it, added] =
        group_of.emplace(std::tuple(producer, consumer, tr.tensor.index()), groups.size());
    if (added) {
      groups.push_back(Communication{"", label_of(graph, tr.tensor), producer, consumer});
      members.emplace_back();
    }
    Communication& c = groups[it->second];
    members[it->second].push_back(t);
    ++c.transfers;
    c.bytes += tr.bytes;
    c.seconds += schedule.transfers[t].end - schedule.transfers[t].start;
    for (auto [list, d] : {std::pair{&c.from, tr.from}, std::pair{&c.to, tr.to}}) {
      const std::string name = device_name(d);
      if (std::find(list->begin(), list->end(), name) == list->end()) list->push_back(name);
    }
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    Communication& c = groups[g];
    const Transfer& first = p.transfers[members[g].front()];
    if (first.from == kHost) {
      c.pattern = "host load";
      continue;
    }
    if (first.to == kHost) {
      c.pattern = "host gather";
      continue;
    }
    if (op_of(first.consumers.front()).kernel == "reduce" &&
        combining_reduce(graph, first.tensor)) {
      c.pattern = "reduce";
      continue;
    }
    // All-gather: each destination receives everything the producer wrote elsewhere.
    std::int64_t total = 0;
    std::map<std::uint32_t, std::int64_t> written_on;
    const PlacedOperation& producer = op_of(first.producer);
    for (std::uint32_t a : producer.applications) {
      for (const auto& out : graph.application(p.applications[a].id).outputs().entries()) {
        if (out.value.tensor != first.tensor) continue;
        const std::int64_t bytes = out.value.range.size() * element_bytes(graph, first.tensor);
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

CriticalPath critical_path_of(const Placement& p, const Schedule& s, const Target& target) {
  CriticalPath path;
  // The element that ends last: (is_transfer, index).
  bool is_transfer = false;
  std::uint32_t at = 0;
  double end = -1;
  for (std::uint32_t a = 0; a < s.applications.size(); ++a) {
    if (s.applications[a].end > end)
      std::tie(end, is_transfer, at) = std::tuple(s.applications[a].end, false, a);
  }
  for (std::uint32_t t = 0; t < s.transfers.size(); ++t) {
    if (s.transfers[t].end > end)
      std::tie(end, is_transfer, at) = std::tuple(s.transfers[t].end, true, t);
  }
  if (end < 0) return path;
  const auto same_port = [&](const Transfer& x, const Transfer& y) {
    const auto node = [&](std::uint32_t d) {
      return d == kHost ? ~0u : static_cast<std::uint32_t>(target.devices[d].node);
    };
    const bool x_host = x.from == kHost || x.to == kHost;
    const bool y_host = y.from == kHost || y.to == kHost;
    if (x_host != y_host) return false;
    const bool x_inter = !x_host && node(x.from) != node(x.to);
    const bool y_inter = !y_host && node(y.from) != node(y.to);
    if (x_inter != y_inter) return false;
    return (x.from != kHost && x.from == y.from) || (x.to != kHost && x.to == y.to);
  };
  for (std::size_t guard = 0; guard < s.applications.size() + s.transfers.size() + 1; ++guard) {
    const Schedule::Interval iv = is_transfer ? s.transfers[at] : s.applications[at];
    if (is_transfer) {
      path.communication_s += iv.end - iv.start;
      ++path.transfers;
    } else {
      path.compute_s += iv.end - iv.start;
      ++path.applications;
    }
    if (iv.start <= 0) break;
    // What it waited for: an element ending exactly at its start (times are copied by max, so
    // equality is exact); otherwise the latest dependency, the gap counted as waiting.
    std::optional<std::pair<bool, std::uint32_t>> cause;
    double latest = -1;
    std::pair<bool, std::uint32_t> latest_cause{false, 0};
    const auto consider = [&](bool transfer, std::uint32_t k) {
      const double e = transfer ? s.transfers[k].end : s.applications[k].end;
      if (e == iv.start && !cause) cause = std::pair{transfer, k};
      if (e > latest && e <= iv.start)
        std::tie(latest, latest_cause) = std::tuple(e, std::pair{transfer, k});
    };
    if (is_transfer) {
      const Transfer& tr = p.transfers[at];
      if (tr.producer != kHost) consider(false, tr.producer);
      for (std::uint32_t t = 0; t < p.transfers.size(); ++t) {
        if (t != at && same_port(tr, p.transfers[t])) consider(true, t);
      }
    } else {
      const PlacedApplication& app = p.applications[at];
      for (std::uint32_t t : app.incoming) consider(true, t);
      for (std::uint32_t q : app.local_producers) consider(false, q);
      for (std::uint32_t q = 0; q < p.applications.size(); ++q) {
        if (q != at && s.devices[q] == s.devices[at]) consider(false, q);
      }
    }
    if (!cause) {
      if (latest < 0) {
        path.waiting_s += iv.start;
        break;
      }
      path.waiting_s += iv.start - latest;
      cause = latest_cause;
    }
    std::tie(is_transfer, at) = *cause;
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
    out += fmt::format("  {:<13} {} of {} → {}: {} transfer{}, {}, {} → {}, {}\n", c.pattern,
                       c.tensor, c.producer, c.consumer, c.transfers, c.transfers == 1 ? "" : "s",
                       bytes_text(c.bytes), fmt::join(c.from, ","), fmt::join(c.to, ","),
                       seconds_text(c.seconds));
  }
  const CostVector& c = e.cost;
  out += fmt::format(
      "\nCost\n  makespan {}, peak memory {} (max over devices){}, {} device{}, energy {:.3g} J, "
      "moved {}\n",
      seconds_text(c.makespan_s), bytes_text(c.peak_memory_bytes), c.fits ? "" : " — DOES NOT FIT",
      c.devices_used, c.devices_used == 1 ? "" : "s", c.energy_j, bytes_text(c.bytes_moved));
  out += fmt::format("  {:<8} {:>5} {:>11} {:>11} {:>11} {:>11} {:>10}\n", "device", "apps",
                     "compute", "comm", "idle", "peak mem", "energy J");
  for (const DeviceCost& d : c.per_device) {
    out += fmt::format("  {:<8} {:>5} {:>11} {:>11} {:>11} {:>11} {:>10.3g}\n", d.device,
                       d.applications, seconds_text(d.compute_s), seconds_text(d.comm_s),
                       seconds_text(d.idle_s), bytes_text(d.peak_memory_bytes), d.energy_j);
  }
  const CriticalPath& p = e.critical_path;
  out += fmt::format(
      "  critical path: {} application{} ({} compute), {} transfer{} ({} communication), {} "
      "waiting: bound by {}\n",
      p.applications, p.applications == 1 ? "" : "s", seconds_text(p.compute_s), p.transfers,
      p.transfers == 1 ? "" : "s", seconds_text(p.communication_s), seconds_text(p.waiting_s),
      p.bound);
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
    comms.push_back({{"pattern", c.pattern},
                     {"tensor", c.tensor},
                     {"producer", c.producer},
                     {"consumer", c.consumer},
                     {"transfers", c.transfers},
                     {"bytes", c.bytes},
                     {"seconds", c.seconds},
                     {"from", c.from},
                     {"to", c.to}});
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
    events.push_back({{"name", fmt::format("{} -> {}", device_name(tr.from), device_name(tr.to))},
                      {"cat", "transfer"},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", receiver_track(tr.to)},
                      {"ts", when.start * 1e6},
                      {"dur", (when.end - when.start) * 1e6},
                      {"args",
                       {{"tensor", node_name(tr.tensor)},
                        {"from", device_name(tr.from)},
                        {"bytes", tr.bytes}}}});
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

}  // namespace tapestry::cost
