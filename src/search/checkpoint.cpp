#include "checkpoint.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tapestry/support/error.h"
#include "tapestry/support/file.h"

namespace tapestry::search {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "tapestry-optimize-checkpoint";
constexpr int kVersion = 1;

std::string hex(std::uint64_t v) {
  return fmt::format("{:016x}", v);
}

std::uint64_t from_hex(const json& j) {
  const std::string s = j.get<std::string>();
  std::size_t used = 0;
  const std::uint64_t v = std::stoull(s, &used, 16);
  if (used != s.size() || s.size() != 16) throw Error(fmt::format("bad fingerprint \"{}\"", s));
  return v;
}

rewrite::Plan plan_of(const json& j) {
  return rewrite::parse_plan(j.dump(), "checkpoint plan");
}

}  // namespace

void write_checkpoint(const std::filesystem::path& path, const CheckpointState& s) {
  json objectives = json::array();
  for (Objective o : s.objectives) objectives.push_back(objective_name(o));
  json seen = json::array();
  for (std::uint64_t f : s.seen) seen.push_back(hex(f));
  json front = json::array();
  for (const auto& [genome, found_at] : s.front) {
    front.push_back({{"genome", genome.to_json()}, {"found_at", found_at}});
  }
  json pool = json::array();
  for (const rewrite::Plan& genome : s.pool) pool.push_back(genome.to_json());
  const json out = {{"format", kFormat},
                    {"version", kVersion},
                    {"graph", hex(s.graph)},
                    {"target", s.target},
                    {"objectives", objectives},
                    {"constraints",
                     {{"max_memory_per_device", s.constraints.max_memory_per_device},
                      {"max_devices", s.constraints.max_devices}}},
                    {"seed", s.seed},
                    {"tie_layers", s.tie_layers},
                    {"generation", s.generation},
                    {"evaluations", s.evaluations},
                    {"refused", s.refused},
                    {"infeasible", s.infeasible},
                    {"seen", seen},
                    {"front", front},
                    {"pool", pool},
                    {"ranks", s.ranks}};
  write_file_atomically(path, out.dump() + "\n");
}

CheckpointState read_checkpoint(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot read the checkpoint", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  try {
    const json j = json::parse(text.str());
    if (!j.is_object() || j.value("format", "") != kFormat) {
      throw Error(
          fmt::format("not a tapestry optimize checkpoint (no \"format\": \"{}\")", kFormat));
    }
    if (j.at("version").get<int>() != kVersion) {
      throw Error(fmt::format("checkpoint version {} (this tapestry reads {})",
                              j.at("version").dump(), kVersion));
    }
    CheckpointState s;
    s.graph = from_hex(j.at("graph"));
    s.target = j.at("target").get<std::string>();
    std::vector<std::string> names;
    for (const json& o : j.at("objectives")) names.push_back(o.get<std::string>());
    s.objectives = parse_objectives(fmt::format("{}", fmt::join(names, ",")));
    s.constraints.max_memory_per_device =
        j.at("constraints").at("max_memory_per_device").get<std::int64_t>();
    s.constraints.max_devices = j.at("constraints").at("max_devices").get<std::int64_t>();
    s.seed = j.at("seed").get<std::uint64_t>();
    s.tie_layers = j.at("tie_layers").get<bool>();
    s.generation = j.at("generation").get<std::uint64_t>();
    s.evaluations = j.at("evaluations").get<std::uint64_t>();
    s.refused = j.at("refused").get<std::uint64_t>();
    s.infeasible = j.at("infeasible").get<std::uint64_t>();
    for (const json& f : j.at("seen")) s.seen.push_back(from_hex(f));
    for (const json& e : j.at("front")) {
      s.front.emplace_back(plan_of(e.at("genome")), e.at("found_at").get<std::uint64_t>());
    }
    for (const json& p : j.at("pool")) s.pool.push_back(plan_of(p));
    s.ranks = j.value("ranks", std::uint32_t{1});
    return s;
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: not a valid checkpoint: {}", path.string(), e.what()));
  } catch (const std::invalid_argument&) {
    throw Error(fmt::format("{}: not a valid checkpoint: a fingerprint is not hex", path.string()));
  } catch (const std::out_of_range&) {
    throw Error(
        fmt::format("{}: not a valid checkpoint: a fingerprint is too long", path.string()));
  } catch (const Error& e) {
    throw e.with_context(path.string());
  }
}

void check_compatible(const CheckpointState& saved, const CheckpointState& current,
                      const std::string& source) {
  const auto refuse = [&](const std::string& what) {
    throw Error(fmt::format("{}: the checkpoint was made with {}; resume with the same settings",
                            source, what));
  };
  if (saved.graph != current.graph) refuse("another graph");
  if (saved.target != current.target) refuse(fmt::format("target '{}'", saved.target));
  if (saved.objectives != current.objectives) refuse("other objectives");
  if (saved.constraints != current.constraints) refuse("other constraints");
  if (saved.seed != current.seed) refuse(fmt::format("--seed {}", saved.seed));
  if (saved.tie_layers != current.tie_layers) {
    refuse(saved.tie_layers ? "--tie-layers" : "no --tie-layers");
  }
}

}  // namespace tapestry::search
