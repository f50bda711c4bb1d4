#include "tapestry/search/objectives.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>

#include "tapestry/support/error.h"

namespace tapestry::search {

namespace {

constexpr std::array<Objective, 4> kAll = {Objective::kTime, Objective::kMemory,
                                           Objective::kDevices, Objective::kEnergy};

std::string bytes_text(double b) {
  if (b < 1024) return fmt::format("{:.0f} B", b);
  if (b < 1024.0 * 1024) return fmt::format("{:.1f} KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
}

std::string seconds_text(double s) {
  if (s == 0) return "0 s";
  if (s < 1e-3) return fmt::format("{:.1f} µs", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

}  // namespace

std::string_view objective_name(Objective objective) {
  switch (objective) {
    case Objective::kTime:
      return "time";
    case Objective::kMemory:
      return "memory";
    case Objective::kDevices:
      return "devices";
    case Objective::kEnergy:
      return "energy";
  }
  return "?";
}

std::string_view objective_unit(Objective objective) {
  switch (objective) {
    case Objective::kTime:
      return "s";
    case Objective::kMemory:
      return "B";
    case Objective::kDevices:
      return "devices";
    case Objective::kEnergy:
      return "J";
  }
  return "?";
}

std::vector<Objective> parse_objectives(std::string_view text) {
  std::vector<Objective> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view name = text.substr(at, comma - at);
    bool known = false;
    for (Objective o : kAll) {
      if (objective_name(o) != name) continue;
      if (std::find(out.begin(), out.end(), o) != out.end()) {
        throw Error(fmt::format("--objectives {}: '{}' is named twice", text, name));
      }
      out.push_back(o);
      known = true;
    }
    if (!known) {
      throw Error(fmt::format(
          "--objectives {}: unknown objective '{}' (expected a comma-separated list of time, "
          "memory, devices, energy)",
          text, name));
    }
    at = comma + 1;
  }
  return out;
}

double objective_value(const cost::CostVector& cost, Objective objective) {
  switch (objective) {
    case Objective::kTime:
      return cost.makespan_s;
    case Objective::kMemory:
      return static_cast<double>(cost.peak_memory_bytes);
    case Objective::kDevices:
      return static_cast<double>(cost.devices_used);
    case Objective::kEnergy:
      return cost.energy_j;
  }
  return 0;
}

std::vector<double> score_of(const cost::CostVector& cost,
                             const std::vector<Objective>& objectives) {
  std::vector<double> score;
  score.reserve(objectives.size());
  for (Objective o : objectives) score.push_back(objective_value(cost, o));
  return score;
}

std::optional<std::string> violation(const cost::CostVector& cost, const Constraints& constraints) {
  if (!cost.fits) {
    return fmt::format("peak memory {} on one device exceeds the target's device memory",
                       bytes_text(static_cast<double>(cost.peak_memory_bytes)));
  }
  if (constraints.max_memory_per_device > 0 &&
      cost.peak_memory_bytes > constraints.max_memory_per_device) {
    return fmt::format("peak memory {} on one device exceeds the cap {}",
                       bytes_text(static_cast<double>(cost.peak_memory_bytes)),
                       bytes_text(static_cast<double>(constraints.max_memory_per_device)));
  }
  if (constraints.max_devices > 0 && cost.devices_used > constraints.max_devices) {
    return fmt::format("{} devices used, more than the limit {}", cost.devices_used,
                       constraints.max_devices);
  }
  return std::nullopt;
}

std::int64_t parse_byte_size(std::string_view text, std::string_view option) {
  const std::string s(text);
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = s.substr(used);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  if (unit == "K") scale = 0x1p10;
  if (unit == "M") scale = 0x1p20;
  if (unit == "G") scale = 0x1p30;
  if (unit == "T") scale = 0x1p40;
  if (used == 0 || scale == 0 || !(value * scale >= 1) || value * scale > 0x1p62) {
    throw Error(
        fmt::format("{} {}: expected a size such as 512M, 40G or 1073741824", option, text));
  }
  return static_cast<std::int64_t>(std::llround(value * scale));
}

std::string format_objective(Objective objective, double value) {
  switch (objective) {
    case Objective::kTime:
      return seconds_text(value);
    case Objective::kMemory:
      return bytes_text(value);
    case Objective::kDevices:
      return fmt::format("{:.0f} device{}", value, value == 1 ? "" : "s");
    case Objective::kEnergy:
      return fmt::format("{:.3g} J", value);
  }
  return "?";
}

}  // namespace tapestry::search
