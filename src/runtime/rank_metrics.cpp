// Per-rank metrics of an MPI run and their merge on rank 0 (rank_metrics.h).
#include "tapestry/runtime/rank_metrics.h"

#include <algorithm>

#include <fmt/format.h>

#include "tapestry/runtime/kernel_path.h"

namespace tapestry::runtime {

namespace {

constexpr int kMessageTrack = 1000;  // the tid of a rank's "messages" track

nlohmann::json trace_of(const RankMetrics& m) {
  nlohmann::json trace = chrome_trace(m.run);
  nlohmann::json& events = trace["traceEvents"];
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", kMessageTrack},
                    {"args", {{"name", "messages"}}}});
  for (const MessageEvent& e : m.messages) {
    events.push_back({{"name", e.collective ? e.what
                                            : fmt::format("{} {} rank {}", e.sent ? "send" : "recv",
                                                          e.sent ? "to" : "from", e.peer)},
                      {"cat", "mpi"},
                      {"ph", "i"},
                      {"s", "t"},
                      {"pid", 0},
                      {"tid", kMessageTrack},
                      {"ts", e.at_s * 1e6},
                      {"args", {{"box", e.what}, {"bytes", e.bytes}}}});
  }
  return trace;
}

// "collectives: 2 reduce (A, B), 1 allgather (H)\n", kinds in first-use order.
std::string collective_summary(const nlohmann::json& collectives) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_kind;
  for (const nlohmann::json& c : collectives) {
    const auto kind = c.at("kind").get<std::string>();
    auto it = std::find_if(by_kind.begin(), by_kind.end(),
                           [&](const auto& entry) { return entry.first == kind; });
    if (it == by_kind.end()) it = by_kind.insert(by_kind.end(), {kind, {}});
    it->second.push_back(c.at("what").get<std::string>() +
                         (c.at("bitwise").get<bool>() ? "" : ", MPI's order"));
  }
  if (by_kind.empty()) return "collectives: none (point-to-point messages only)\n";
  std::vector<std::string> parts;
  for (const auto& [kind, whats] : by_kind) {
    parts.push_back(fmt::format("{} {} ({})", whats.size(), kind, fmt::join(whats, "; ")));
  }
  return fmt::format("collectives: {}\n", fmt::join(parts, ", "));
}

// The ranks' kernel paths summed ({"onednn": 6, "vectorised": 4}, in KernelPath order), and
// their fallbacks per operation ({"Y": 2}, operations that had any).
nlohmann::json merged_paths(const std::vector<nlohmann::json>& ranks) {
  KernelPathCounts counts{};
  for (const nlohmann::json& r : ranks) {
    const nlohmann::json paths = r.value("paths", nlohmann::json::object());
    for (const auto& [name, n] : paths.items()) {
      for (std::size_t i = 0; i < kKernelPathCount; ++i) {
        if (kernel_path_name(static_cast<KernelPath>(i)) == name)
          counts[i] += n.get<std::uint64_t>();
      }
    }
  }
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t i = 0; i < kKernelPathCount; ++i) {
    if (counts[i] > 0) out[std::string(kernel_path_name(static_cast<KernelPath>(i)))] = counts[i];
  }
  return out;
}

nlohmann::json merged_fallbacks(const std::vector<nlohmann::json>& ranks) {
  nlohmann::json out = nlohmann::json::object();
  for (const nlohmann::json& r : ranks) {
    for (const nlohmann::json& op : r.value("operations", nlohmann::json::array())) {
      const auto n = op.value("fallbacks", std::uint64_t{0});
      if (n == 0) continue;
      const auto name = op.at("operation").get<std::string>();
      out[name] = out.value(name, std::uint64_t{0}) + n;
    }
  }
  return out;
}

// The summary's paths line (run_metrics.h) from the merged report's paths and fallbacks.
std::string paths_line(const nlohmann::json& merged) {
  KernelPathCounts counts{};
  const nlohmann::json paths = merged.value("paths", nlohmann::json::object());
  for (std::size_t i = 0; i < kKernelPathCount; ++i) {
    counts[i] =
        paths.value(std::string(kernel_path_name(static_cast<KernelPath>(i))), std::uint64_t{0});
  }
  std::vector<std::pair<std::string, std::uint64_t>> fallbacks;
  const nlohmann::json by_operation =
      merged.value("fallbacks_by_operation", nlohmann::json::object());
  for (const auto& [name, n] : by_operation.items()) {
    fallbacks.emplace_back(name, n.get<std::uint64_t>());
  }
  return kernel_paths_line(counts, fallbacks);
}

}  // namespace

nlohmann::json rank_metrics_json(const RankMetrics& m) {
  nlohmann::json j = metrics_json(m.run);
  j["rank"] = m.rank;
  j["name"] = m.name;
  j["bytes_sent"] = m.bytes_sent;
  j["bytes_received"] = m.bytes_received;
  j["messages_sent"] = m.messages_sent;
  j["messages_received"] = m.messages_received;
  j["wait_s"] = m.wait_s;
  j["unpack_s"] = m.unpack_s;
  j["collectives"] = nlohmann::json::array();
  for (const CollectiveRecord& c : m.collectives) {
    j["collectives"].push_back({{"kind", c.kind},
                                {"what", c.what},
                                {"ranks", c.ranks},
                                {"bytes", c.bytes},
                                {"bitwise", c.bitwise}});
  }
  j["trace"] = trace_of(m);
  return j;
}

nlohmann::json merge_rank_metrics(const std::vector<nlohmann::json>& ranks) {
  double wall = 0;
  double busy = 0;
  double wait = 0;
  std::int64_t flops = 0;
  std::int64_t moved = 0;
  std::int64_t peak = 0;
  std::uint64_t fallbacks = 0;
  nlohmann::json list = nlohmann::json::array();
  for (const nlohmann::json& r : ranks) {
    wall = std::max(wall, r.at("wall_s").get<double>());
    busy += r.at("busy_s").get<double>();
    wait += r.at("wait_s").get<double>();
    flops += r.at("flops").get<std::int64_t>();
    moved += r.at("bytes_sent").get<std::int64_t>();
    peak = std::max(peak, r.at("peak_memory_bytes").get<std::int64_t>());
    fallbacks += r.value("fallbacks", std::uint64_t{0});
    nlohmann::json without = r;
    without.erase("trace");
    list.push_back(std::move(without));
  }
  return {
      {"executor", "mpi"},
      {"ranks_count", ranks.size()},
      {"wall_s", wall},
      {"flops", flops},
      {"gflops", wall > 0 ? static_cast<double>(flops) / wall / 1e9 : 0.0},
      {"busy_s", busy},
      {"wait_s", wait},
      {"bytes_moved", moved},
      {"peak_memory_bytes", peak},
      {"fallbacks", fallbacks},
      {"fallbacks_by_operation", merged_fallbacks(ranks)},
      {"paths", merged_paths(ranks)},
      {"collectives", ranks.empty() ? nlohmann::json::array()
                                    : ranks.front().value("collectives", nlohmann::json::array())},
      {"ranks", std::move(list)}};
}

nlohmann::json merge_rank_traces(const std::vector<nlohmann::json>& ranks) {
  nlohmann::json events = nlohmann::json::array();
  for (const nlohmann::json& r : ranks) {
    const auto rank = r.at("rank").get<std::uint32_t>();
    for (nlohmann::json e : r.at("trace").at("traceEvents")) {
      e["pid"] = rank;
      if (e.value("name", "") == "process_name") {
        e["args"]["name"] = fmt::format("rank {} ({})", rank, r.at("name").get<std::string>());
      }
      events.push_back(std::move(e));
    }
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

std::string rank_summary_table(const nlohmann::json& merged) {
  const auto wall = merged.at("wall_s").get<double>();
  const auto flops = merged.at("flops").get<std::int64_t>();
  std::string out = fmt::format(
      "wall {}   {} ({:.1f} GFLOP/s)   {} ranks   {} moved between ranks\n", format_seconds(wall),
      format_flops(flops), merged.at("gflops").get<double>(), merged.at("ranks_count").get<int>(),
      format_bytes(merged.at("bytes_moved").get<std::int64_t>()));
  out += paths_line(merged);
  out += collective_summary(merged.value("collectives", nlohmann::json::array()));
  out += fmt::format("{:<16} {:>5} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "rank", "apps",
                     "threads", "busy", "waiting", "sent", "received", "peak mem");
  for (const nlohmann::json& r : merged.at("ranks")) {
    out += fmt::format(
        "{:<16} {:>5} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
        fmt::format("{} {}", r.at("rank").get<int>(), r.at("name").get<std::string>()),
        r.at("applications").get<std::size_t>(), r.at("threads").get<int>(),
        format_seconds(r.at("busy_s").get<double>()), format_seconds(r.at("wait_s").get<double>()),
        format_bytes(r.at("bytes_sent").get<std::int64_t>()),
        format_bytes(r.at("bytes_received").get<std::int64_t>()),
        format_bytes(r.at("peak_memory_bytes").get<std::int64_t>()));
  }
  return out;
}

}  // namespace tapestry::runtime
