// Objectives and constraints: what the optimizer minimises, and what a plan must respect.
//
// An objective reads one number off a CostVector (cost/simulate.h); every objective is
// minimised:
//
//   time     makespan_s          seconds
//   memory   peak_memory_bytes   bytes (the largest per-device peak)
//   devices  devices_used        devices
//   energy   energy_j            joules
//
// The command line names them as a comma-separated list, `--objectives time,memory`; an unknown
// or repeated name is an Error listing the known ones.
//
// Constraints are limits a plan must respect to be *feasible*: a per-device memory cap, a
// device count, and always the target's own memory (CostVector::fits). Infeasible plans are
// priced but never enter the Pareto front (archive.h).
//
//   std::vector<Objective> o = parse_objectives("time,memory");
//   objective_value(cost, Objective::kMemory) == double(cost.peak_memory_bytes)
//   violation(cost, {.max_memory_per_device = 40 << 30})   // nullopt, or the reason
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/cost/simulate.h"

namespace tapestry::search {

enum class Objective : std::uint8_t { kTime, kMemory, kDevices, kEnergy };

/// "time", "memory", "devices", "energy".
std::string_view objective_name(Objective objective);
/// The unit of its value: "s", "B", "devices", "J".
std::string_view objective_unit(Objective objective);
/// "time,memory" → {kTime, kMemory}. Error on an empty list, an unknown or a repeated name.
std::vector<Objective> parse_objectives(std::string_view text);
/// The value the objective minimises.
double objective_value(const cost::CostVector& cost, Objective objective);
/// The values of `objectives`, in order.
std::vector<double> score_of(const cost::CostVector& cost,
                             const std::vector<Objective>& objectives);

struct Constraints {
  std::int64_t max_memory_per_device = 0;  // bytes; 0: only the target's own memory
  std::int64_t max_devices = 0;            // 0: no limit

  friend bool operator==(const Constraints&, const Constraints&) = default;
};

/// Why `cost` is infeasible ("peak memory 672.0 MiB on one device exceeds the cap 256.0 MiB"),
/// or nullopt when it respects every constraint and fits the target's memory.
std::optional<std::string> violation(const cost::CostVector& cost, const Constraints& constraints);

/// "2G", "512M", "1.5GiB", "40e9", "100000" → bytes (K, M, G, T are powers of 1024). Error naming
/// `option` for anything else, zero or negative.
std::int64_t parse_byte_size(std::string_view text, std::string_view option);

/// A value of `objective` for people: "834.6 µs", "88.0 MiB", "2 devices", "1.09 J".
std::string format_objective(Objective objective, double value);

}  // namespace tapestry::search
