// Rendering RunMetrics: JSON, Chrome trace events, a summary table (see run_metrics.h).
#include "tapestry/runtime/run_metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tapestry::runtime {

namespace {

double gflops_of(std::int64_t flops, double seconds) {
  return seconds > 0 ? static_cast<double>(flops) / seconds / 1e9 : 0.0;
}

KernelPath path_at(std::size_t i) {
  return static_cast<KernelPath>(i);
}

// {"onednn": 4, "vectorised": 2}: the non-zero paths, in KernelPath order.
nlohmann::json paths_json(const KernelPathCounts& counts) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) out[std::string(kernel_path_name(path_at(i)))] = counts[i];
  }
  return out;
}

// "onednn" when every application took one path, else "onednn 2, reference 2".
std::string paths_text(const KernelPathCounts& counts, bool always_count) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0)
      parts.push_back(fmt::format("{} {}", kernel_path_name(path_at(i)), counts[i]));
  }
  if (parts.size() == 1 && !always_count) {
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] > 0) return std::string(kernel_path_name(path_at(i)));
    }
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

KernelPathCounts total_paths(const RunMetrics& m) {
  KernelPathCounts total{};
  for (const OperationMetrics& op : m.operations) {
    for (std::size_t i = 0; i < total.size(); ++i) total[i] += op.paths[i];
  }
  return total;
}

// The operations with fallbacks, and how many calls fell back.
std::vector<std::pair<std::string, std::uint64_t>> fallbacks_of(const RunMetrics& m) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const OperationMetrics& op : m.operations) {
    if (op.fallbacks > 0) out.emplace_back(op.operation, op.fallbacks);
  }
  return out;
}

}  // namespace

std::string format_seconds(double s) {
  if (s >= 1.0) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.1f} ms", s * 1e3);
  return fmt::format("{:.1f} µs", s * 1e6);
}

std::string format_flops(std::int64_t flops) {
  const auto f = static_cast<double>(flops);
  if (f >= 1e9) return fmt::format("{:.1f} GFLOP", f / 1e9);
  if (f >= 1e6) return fmt::format("{:.1f} MFLOP", f / 1e6);
  if (f >= 1e3) return fmt::format("{:.1f} kFLOP", f / 1e3);
  return fmt::format("{} FLOP", flops);
}

std::string format_bytes(std::int64_t bytes) {
  static constexpr std::array<const char*, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  auto value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (std::abs(value) >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.{}f} {}", value, std::abs(value) < 10 ? 2 : 1, kUnits[unit]);
}

nlohmann::json metrics_json(const RunMetrics& m) {
  nlohmann::json operations = nlohmann::json::array();
  for (const OperationMetrics& op : m.operations) {
    operations.push_back({{"operation", op.operation},
                          {"kernel", op.kernel},
                          {"applications", op.applications},
                          {"busy_s", op.busy_s},
                          {"flops", op.flops},
                          {"gflops", gflops_of(op.flops, op.busy_s)},
                          {"bytes_read", op.bytes_read},
                          {"bytes_written", op.bytes_written},
                          {"fallbacks", op.fallbacks},
                          {"paths", paths_json(op.paths)}});
  }
  nlohmann::json records = nlohmann::json::array();
  for (const ApplicationMetrics& a : m.applications) {
    records.push_back({{"application", a.name},
                       {"operation", a.operation},
                       {"kernel", a.kernel},
                       {"thread", a.thread},
                       {"start_s", a.start_s},
                       {"duration_s", a.duration_s},
                       {"flops", a.flops},
                       {"bytes_read", a.bytes_read},
                       {"bytes_written", a.bytes_written},
                       {"fallbacks", a.fallbacks},
                       {"path", kernel_path_name(a.path)}});
  }
  std::uint64_t fallbacks = 0;
  for (const OperationMetrics& op : m.operations) fallbacks += op.fallbacks;
  return {{"wall_s", m.wall_s},
          {"flops", m.flops},
          {"gflops", m.gflops},
          {"peak_memory_bytes", m.peak_memory_bytes},
          {"estimated_peak_memory_bytes", m.estimated_peak_memory_bytes},
          {"threads", m.threads},
          {"busy_s", m.busy_s},
          {"critical_path_s", m.critical_path_s},
          {"applications", m.applications.size()},
          {"fallbacks", fallbacks},
          {"paths", paths_json(total_paths(m))},
          {"operations", std::move(operations)},
          {"application_records", std::move(records)}};
}

nlohmann::json chrome_trace(const RunMetrics& m) {
  nlohmann::json events = nlohmann::json::array();
  std::uint32_t threads = 0;
  for (const ApplicationMetrics& a : m.applications) threads = std::max(threads, a.thread + 1);
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"args", {{"name", "tapestry run"}}}});
  for (std::uint32_t t = 0; t < threads; ++t) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", t},
                      {"args", {{"name", fmt::format("worker {}", t)}}}});
  }
  for (const ApplicationMetrics& a : m.applications) {
    events.push_back({{"name", a.name},
                      {"cat", a.kernel},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", a.thread},
                      {"ts", a.start_s * 1e6},
                      {"dur", a.duration_s * 1e6},
                      {"args",
                       {{"operation", a.operation},
                        {"flops", a.flops},
                        {"bytes_read", a.bytes_read},
                        {"bytes_written", a.bytes_written}}}});
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

std::string kernel_paths_line(const KernelPathCounts& paths,
                              const std::vector<std::pair<std::string, std::uint64_t>>& fallbacks) {
  std::uint64_t applications = 0;
  for (const std::uint64_t n : paths) applications += n;
  std::vector<std::string> ops;
  for (const auto& [operation, calls] : fallbacks) {
    ops.push_back(fmt::format("{} ({} call{})", operation, calls, calls == 1 ? "" : "s"));
  }
  return fmt::format("kernel paths: {} application{}; {}\n",
                     paths_text(paths, /*always_count=*/true), applications == 1 ? "" : "s",
                     ops.empty() ? std::string("0 fallbacks")
                                 : fmt::format("fallbacks in {}", fmt::join(ops, ", ")));
}

std::string summary_table(const RunMetrics& m, std::size_t max_rows) {
  std::string out = fmt::format(
      "wall {}   {} ({:.1f} GFLOP/s)   {} applications on {} thread{}\n"
      "busy {} ({:.0f}% of {} thread{})   critical path {}   peak memory {} (estimated {})\n",
      format_seconds(m.wall_s), format_flops(m.flops), m.gflops, m.applications.size(), m.threads,
      m.threads == 1 ? "" : "s", format_seconds(m.busy_s),
      m.wall_s > 0 ? 100.0 * m.busy_s / (m.wall_s * m.threads) : 0.0, m.threads,
      m.threads == 1 ? "" : "s", format_seconds(m.critical_path_s),
      format_bytes(m.peak_memory_bytes), format_bytes(m.estimated_peak_memory_bytes));
  out += kernel_paths_line(total_paths(m), fallbacks_of(m));
  // The fallbacks column only when there are any: a run on the reference kernels, or one whose
  // every call took a fast path, keeps the table it always had.
  std::uint64_t fallbacks = 0;
  for (const OperationMetrics& op : m.operations) fallbacks += op.fallbacks;
  // The path column is padded only when the fallbacks column follows it.
  const std::size_t path_width = fallbacks > 0 ? 10 : 0;
  out += fmt::format("{:<24} {:<10} {:>6} {:>10} {:>7} {:>9}  {:<{}}{}\n", "operation", "kernel",
                     "apps", "busy", "share", "GFLOP/s", "path", path_width,
                     fallbacks > 0 ? " fallbacks" : "");
  for (std::size_t i = 0; i < m.operations.size() && i < max_rows; ++i) {
    const OperationMetrics& op = m.operations[i];
    out += fmt::format("{:<24} {:<10} {:>6} {:>10} {:>6.1f}% {:>9.1f}  {:<{}}{}\n", op.operation,
                       op.kernel, op.applications, format_seconds(op.busy_s),
                       m.busy_s > 0 ? 100.0 * op.busy_s / m.busy_s : 0.0,
                       gflops_of(op.flops, op.busy_s), paths_text(op.paths, false), path_width,
                       fallbacks > 0 ? fmt::format(" {:>9}", op.fallbacks) : "");
  }
  if (m.operations.size() > max_rows) {
    std::uint64_t hidden = 0;
    for (std::size_t i = max_rows; i < m.operations.size(); ++i)
      hidden += m.operations[i].fallbacks;
    out += fmt::format("… {} more operations{}\n", m.operations.size() - max_rows,
                       hidden > 0 ? fmt::format(" ({} fallbacks)", hidden) : "");
  }
  return out;
}

}  // namespace tapestry::runtime
