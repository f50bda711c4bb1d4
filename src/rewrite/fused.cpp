#include "tapestry/rewrite/fused.h"

#include <unordered_map>
#include <utility>

#include <fmt/core.h>

#include "tapestry/support/error.h"
#include "tapestry/zspace/json.h"

namespace tapestry::rewrite {

using nlohmann::json;

namespace {

json port_json(const FusedPort& p) {
  json j = {{"name", p.name}, {"ipf", zspace::to_json(p.ipf)}};
  j["source"] = p.source;
  if (p.dtype) j["dtype"] = p.dtype->name();
  return j;
}

const json& member(const json& j, const char* key, const std::string& path) {
  if (!j.is_object() || !j.contains(key))
    throw Error(fmt::format("fused params: {}: missing \"{}\"", path, key));
  return j.at(key);
}

std::string string_member(const json& j, const char* key, const std::string& path) {
  const json& v = member(j, key, path);
  if (!v.is_string()) throw Error(fmt::format("fused params: {}/{}: expected a string", path, key));
  return v.get<std::string>();
}

template <typename Fn>
auto wrap(const std::string& path, Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    throw Error(fmt::format("fused params: {}: {}", path, e.what()));
  }
}

// A map with no rows is written as `"projection": []`, which loses its input rank (a rank-0
// tensor read by a stage of rank 2: a 0×2 matrix). Restore it from the rank the map must have;
// maps with rows carry it in their row length.
zspace::AffineMap with_in_rank(zspace::AffineMap map, std::size_t in_rank) {
  if (map.out_rank() != 0 || map.in_rank() == in_rank) return map;
  return zspace::AffineMap(in_rank, {}, zspace::Point());
}

// A port's IPF, over the index of its stage (rank `stage_rank`).
zspace::IndexProjection ipf_from(const json& j, std::size_t stage_rank, const std::string& at) {
  return wrap(at + "/ipf", [&] {
    zspace::IndexProjection ipf = zspace::index_projection_from_json(member(j, "ipf", at));
    return zspace::IndexProjection(with_in_rank(ipf.map(), stage_rank), ipf.shape());
  });
}

// The ports of a stage whose index has rank `stage_rank`.
std::vector<FusedPort> ports_from(const json& j, std::size_t stage_rank, const std::string& path) {
  if (!j.is_array()) throw Error(fmt::format("fused params: {}: expected an array", path));
  std::vector<FusedPort> ports;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string at = fmt::format("{}/{}", path, i);
    std::optional<ir::LoomDType> dtype;
    if (j[i].contains("dtype")) dtype = ir::LoomDType::parse(string_member(j[i], "dtype", at));
    ports.push_back({string_member(j[i], "name", at), string_member(j[i], "source", at),
                     ipf_from(j[i], stage_rank, at), std::move(dtype)});
  }
  return ports;
}

}  // namespace

json fused_params(const std::vector<FusedStage>& stages) {
  json list = json::array();
  for (const FusedStage& s : stages) {
    json reductions = json::object();
    for (const ir::Reduction& r : s.reductions) reductions[r.dim] = ir::monoid_name(r.monoid);
    json inputs = json::array();
    for (const FusedPort& p : s.inputs) inputs.push_back(port_json(p));
    json outputs = json::array();
    for (const FusedPort& p : s.outputs) outputs.push_back(port_json(p));
    list.push_back({{"kernel", s.kernel},
                    {"label", s.label},
                    {"params", s.params.is_null() ? json::object() : s.params},
                    {"indexNames", s.index_names},
                    {"reductions", std::move(reductions)},
                    {"indexMap", zspace::to_json(s.index_map)},
                    {"inputs", std::move(inputs)},
                    {"outputs", std::move(outputs)}});
  }
  return {{"stages", std::move(list)}};
}

namespace {
thread_local bool fused_stage_cache_on = true;

// shared_fused_stages' hash: its stages' kernels and labels (which tell a graph's fused
// operations apart), not the whole params — hashing every port's IPF cost as much as the
// comparison that follows. Params not of the fused shape hash whole.
std::size_t stages_fingerprint(const json& params) {
  const auto list = params.is_object() ? params.find("stages") : params.end();
  if (!params.is_object() || list == params.end() || !list->is_array()) {
    return std::hash<json>{}(params);
  }
  std::size_t h = list->size();
  const auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const json& stage : *list) {
    for (const char* key : {"kernel", "label"}) {
      const auto v = stage.is_object() ? stage.find(key) : stage.end();
      mix(stage.is_object() && v != stage.end() && v->is_string()
              ? std::hash<std::string>{}(v->get_ref<const std::string&>())
              : 0);
    }
  }
  return h;
}
}  // namespace

bool use_fused_stage_cache(bool on) {
  return std::exchange(fused_stage_cache_on, on);
}

std::shared_ptr<const std::vector<FusedStage>> shared_fused_stages(const json& params) {
  if (!fused_stage_cache_on) {
    return std::make_shared<const std::vector<FusedStage>>(fused_stages(params));
  }
  struct Entry {
    json params;
    std::shared_ptr<const std::vector<FusedStage>> stages;
  };
  thread_local std::unordered_map<std::size_t, std::vector<Entry>> cache;
  thread_local std::size_t entries = 0;
  const std::size_t hash = stages_fingerprint(params);
  if (auto found = cache.find(hash); found != cache.end()) {
    for (const Entry& e : found->second) {
      if (e.params == params) return e.stages;
    }
  }
  auto stages = std::make_shared<const std::vector<FusedStage>>(fused_stages(params));
  if (++entries > kFusedStageCache) {
    cache.clear();
    entries = 1;
  }
  cache[hash].push_back(Entry{params, stages});
  return stages;
}

std::vector<FusedStage> fused_stages(const json& params) {
  const json& list = member(params, "stages", "");
  if (!list.is_array() || list.empty())
    throw Error("fused params: /stages: expected a non-empty array");
  std::vector<FusedStage> stages;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("/stages/{}", i);
    const json& j = list[i];
    FusedStage s;
    s.kernel = string_member(j, "kernel", at);
    s.label = string_member(j, "label", at);
    s.params = member(j, "params", at);
    for (const json& n : member(j, "indexNames", at)) s.index_names.push_back(n.get<std::string>());
    for (const auto& [dim, op] : member(j, "reductions", at).items()) {
      auto monoid = ir::parse_monoid(op.get<std::string>());
      if (!monoid)
        throw Error(fmt::format("fused params: {}/reductions/{}: unknown monoid", at, dim));
      s.reductions.push_back({dim, *monoid});
    }
    s.index_map = wrap(at + "/indexMap",
                       [&] { return zspace::affine_map_from_json(member(j, "indexMap", at)); });
    // Stage 0 (the producer) runs over the fused operation's index: its map is the identity,
    // whose rank is the input rank of every later stage's map (a rank-0 stage has no rows).
    if (i > 0) s.index_map = with_in_rank(s.index_map, stages[0].index_map.in_rank());
    const std::size_t rank = s.index_names.size();
    s.inputs = ports_from(member(j, "inputs", at), rank, at + "/inputs");
    s.outputs = ports_from(member(j, "outputs", at), rank, at + "/outputs");
    stages.push_back(std::move(s));
  }
  return stages;
}

}  // namespace tapestry::rewrite
