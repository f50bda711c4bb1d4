#include "tapestry/rewrite/plan.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>
#include <unordered_set>

#include "tapestry/metakernel/apply.h"
#include "tapestry/rewrite/dim_aliases.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/diagnostic.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"
#include "tapestry/zspace/json.h"

namespace tapestry::rewrite {

using nlohmann::json;

namespace {

// Substitutions a plan may request (each is a rewrite pattern of this module), with the kernel
// each rewrites.
struct Substitution {
  std::string_view name;
  std::string_view kernel;
};
constexpr Substitution kKnownSubstitutions[] = {{"decompose-linear", "linear"}};

const Substitution* find_substitution(std::string_view name) {
  for (const Substitution& s : kKnownSubstitutions) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

class PlanReader {
 public:
  explicit PlanReader(std::string_view source) : source_(source) {}

  Plan read(const json& root) {
    Plan plan;
    expect_object(root, "");
    for (const auto& [key, value] : root.items()) {
      if (key == "ops") {
        read_ops(value, plan);
      } else if (key == "fuse") {
        read_fuse(value, plan);
      } else if (key == "outputs") {
        read_outputs(value, plan);
      } else if (key == "recompute") {
        read_recompute(value, plan);
      } else if (key == "zero") {
        read_zero(value, plan);
      } else if (key == "pipeline") {
        read_pipeline(value, plan);
      } else {
        fail("/" + zspace::json_pointer_token(key),
             "unknown member (expected \"ops\", \"fuse\", \"outputs\", \"recompute\", "
             "\"zero\" or \"pipeline\")");
      }
    }
    return plan;
  }

 private:
  [[noreturn]] void fail(const std::string& path, std::string message) const {
    throw support::DiagnosticError(
        support::Diagnostic::at_pointer(path, std::move(message), std::string(source_)));
  }
  void expect_object(const json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, fmt::format("expected an object, got {}", j.type_name()));
  }
  void expect_array(const json& j, const std::string& path) const {
    if (!j.is_array()) fail(path, fmt::format("expected an array, got {}", j.type_name()));
  }
  std::string read_string(const json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, fmt::format("expected a string, got {}", j.type_name()));
    return j.get<std::string>();
  }

  void read_ops(const json& ops, Plan& plan) const {
    expect_object(ops, "/ops");
    for (const auto& [name, body] : ops.items()) {
      const std::string path = "/ops/" + zspace::json_pointer_token(name);
      expect_object(body, path);
      OpPlan op;
      for (const auto& [key, value] : body.items()) {
        if (key == "split") {
          read_split(value, path + "/split", op);
        } else if (key == "substitute") {
          expect_array(value, path + "/substitute");
          for (std::size_t i = 0; i < value.size(); ++i) {
            op.substitute.push_back(
                read_string(value[i], fmt::format("{}/substitute/{}", path, i)));
          }
        } else if (key == "place") {
          read_place(value, path + "/place", op);
        } else if (key == "mesh") {
          read_mesh(value, path + "/mesh", op);
        } else {
          fail(path + "/" + zspace::json_pointer_token(key),
               "unknown member (expected \"split\", \"substitute\", \"place\" or \"mesh\")");
        }
      }
      if (!op.place.empty() && !op.mesh.empty()) {
        fail(path, "\"place\" and \"mesh\" both say where the shards run: give one");
      }
      plan.ops.emplace(name, std::move(op));
    }
  }

  void read_split(const json& split, const std::string& path, OpPlan& op) const {
    expect_object(split, path);
    for (const auto& [dim, count] : split.items()) {
      const std::string at = path + "/" + zspace::json_pointer_token(dim);
      if (!count.is_number_integer() || count.get<std::int64_t>() < 1 ||
          (count.is_number_unsigned() && count.get<std::uint64_t>() > INT64_MAX)) {
        fail(at, fmt::format("the shard count must be an integer >= 1, got {}", count.dump()));
      }
      op.split.emplace(dim, count.get<std::int64_t>());
    }
  }

  // "place": ["cpu:0", "gpu:1"]: non-empty device names, at least one.
  void read_place(const json& place, const std::string& path, OpPlan& op) const {
    expect_array(place, path);
    if (place.empty()) fail(path, "a placement needs at least one device");
    for (std::size_t i = 0; i < place.size(); ++i) {
      std::string device = read_string(place[i], fmt::format("{}/{}", path, i));
      if (device.empty()) fail(fmt::format("{}/{}", path, i), "a device name cannot be empty");
      op.place.push_back(std::move(device));
    }
  }

  // "mesh": {"batch": "dp"}: split dims onto named mesh axes, non-empty names, one dim per axis.
  void read_mesh(const json& mesh, const std::string& path, OpPlan& op) const {
    expect_object(mesh, path);
    if (mesh.empty()) fail(path, "a mesh mapping needs at least one dimension");
    std::map<std::string, std::string> dim_of_axis;
    for (const auto& [dim, axis] : mesh.items()) {
      const std::string at = path + "/" + zspace::json_pointer_token(dim);
      std::string name = read_string(axis, at);
      if (name.empty()) fail(at, "a mesh axis name cannot be empty");
      if (auto [it, added] = dim_of_axis.emplace(name, dim); !added) {
        fail(at, fmt::format("mesh axis '{}' already carries dimension '{}'", name, it->second));
      }
      op.mesh.emplace(dim, std::move(name));
    }
  }

  // "outputs": {"Y": {"replicate": "all" | "<mesh axis>"}}
  void read_outputs(const json& outputs, Plan& plan) const {
    expect_object(outputs, "/outputs");
    for (const auto& [name, body] : outputs.items()) {
      const std::string path = "/outputs/" + zspace::json_pointer_token(name);
      expect_object(body, path);
      OutputPlan out;
      for (const auto& [key, value] : body.items()) {
        if (key != "replicate") {
          fail(path + "/" + zspace::json_pointer_token(key),
               "unknown member (expected \"replicate\")");
        }
        out.replicate = read_string(value, path + "/replicate");
        if (out.replicate.empty()) {
          fail(path + "/replicate", "expected \"all\" or a mesh axis name, got \"\"");
        }
      }
      if (out.replicate.empty()) fail(path, "expected {\"replicate\": \"all\" | AXIS}");
      plan.outputs.emplace(name, std::move(out));
    }
  }

  // "recompute": ["H/linear", "L2/*"]: operation names or patterns, each once.
  void read_recompute(const json& recompute, Plan& plan) const {
    expect_array(recompute, "/recompute");
    for (std::size_t i = 0; i < recompute.size(); ++i) {
      const std::string path = fmt::format("/recompute/{}", i);
      std::string name = read_string(recompute[i], path);
      if (name.empty()) fail(path, "an operation name cannot be empty");
      if (std::find(plan.recompute.begin(), plan.recompute.end(), name) != plan.recompute.end()) {
        fail(path, fmt::format("names '{}' again", name));
      }
      plan.recompute.push_back(std::move(name));
    }
  }

  // "zero": {"stage": 1|2|3, "params": [names or patterns], "shards": N >= 2[, "axis": "dp"]}
  void read_zero(const json& zero, Plan& plan) const {
    expect_object(zero, "/zero");
    ZeroPlan out;
    for (const auto& [key, value] : zero.items()) {
      const std::string path = "/zero/" + zspace::json_pointer_token(key);
      if (key == "stage") {
        if (!value.is_number_integer() || value.get<std::int64_t>() < 1 ||
            value.get<std::int64_t>() > 3) {
          fail(path, fmt::format("the ZeRO stage is 1, 2 or 3 (1: optimizer state sharded, 2: and "
                                 "gradients, 3: and parameters), got {}",
                                 value.dump()));
        }
        out.stage = static_cast<int>(value.get<std::int64_t>());
      } else if (key == "params") {
        expect_array(value, path);
        if (value.empty()) fail(path, "name at least one parameter");
        for (std::size_t i = 0; i < value.size(); ++i) {
          const std::string at = fmt::format("{}/{}", path, i);
          std::string name = read_string(value[i], at);
          if (name.empty()) fail(at, "a parameter name cannot be empty");
          if (std::find(out.params.begin(), out.params.end(), name) != out.params.end()) {
            fail(at, fmt::format("names '{}' again", name));
          }
          out.params.push_back(std::move(name));
        }
      } else if (key == "shards") {
        if (!value.is_number_integer() || value.get<std::int64_t>() < 2 ||
            (value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX)) {
          fail(path, fmt::format("the shard count must be an integer >= 2, got {}", value.dump()));
        }
        out.shards = value.get<std::int64_t>();
      } else if (key == "axis") {
        out.axis = read_string(value, path);
        if (out.axis.empty()) fail(path, "a mesh axis name cannot be empty");
      } else {
        fail(path, "unknown member (expected \"stage\", \"params\", \"shards\" or \"axis\")");
      }
    }
    for (const char* member : {"stage", "params", "shards"}) {
      if (!zero.contains(member)) {
        fail("/zero", fmt::format("missing \"{}\" (expected {{\"stage\": 1-3, \"params\": [...], "
                                  "\"shards\": N[, \"axis\": AXIS]}})",
                                  member));
      }
    }
    plan.zero = std::move(out);
  }

  // "pipeline": {"stages": [[names or patterns], …], "microbatches": M >= 1,
  //              "schedule": "1f1b" | "gpipe"[, "devices": [one per stage: a device or an
  //              array of devices, a group]]}
  void read_pipeline(const json& pipeline, Plan& plan) const {
    expect_object(pipeline, "/pipeline");
    PipelinePlan out;
    for (const auto& [key, value] : pipeline.items()) {
      const std::string path = "/pipeline/" + zspace::json_pointer_token(key);
      if (key == "stages") {
        expect_array(value, path);
        if (value.empty()) fail(path, "name at least one stage");
        for (std::size_t s = 0; s < value.size(); ++s) {
          const std::string at = fmt::format("{}/{}", path, s);
          expect_array(value[s], at);
          if (value[s].empty()) fail(at, "a stage names at least one operation");
          std::vector<std::string> stage;
          for (std::size_t i = 0; i < value[s].size(); ++i) {
            std::string name = read_string(value[s][i], fmt::format("{}/{}", at, i));
            if (name.empty())
              fail(fmt::format("{}/{}", at, i), "an operation name cannot be empty");
            stage.push_back(std::move(name));
          }
          out.stages.push_back(std::move(stage));
        }
      } else if (key == "microbatches") {
        if (!value.is_number_integer() || value.get<std::int64_t>() < 1 ||
            (value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX)) {
          fail(path,
               fmt::format("the microbatch count must be an integer >= 1, got {}", value.dump()));
        }
        out.microbatches = value.get<std::int64_t>();
      } else if (key == "schedule") {
        out.schedule = read_string(value, path);
        if (std::find(std::begin(kPipelineSchedules), std::end(kPipelineSchedules), out.schedule) ==
            std::end(kPipelineSchedules)) {
          fail(path,
               fmt::format("unknown schedule '{}' (expected \"1f1b\" or \"gpipe\")", out.schedule));
        }
      } else if (key == "devices") {
        expect_array(value, path);
        // A device name, or a group of them (an array).
        const auto device_name = [&](const json& v, const std::string& at) {
          std::string device = read_string(v, at);
          if (device.empty()) fail(at, "a device name cannot be empty");
          if (device.find(',') != std::string::npos)
            fail(at, fmt::format("'{}': a device name has no ','; a group of devices is an array",
                                 device));
          return device;
        };
        for (std::size_t i = 0; i < value.size(); ++i) {
          const std::string at = fmt::format("{}/{}", path, i);
          if (!value[i].is_array()) {
            out.devices.push_back({device_name(value[i], at)});
            continue;
          }
          if (value[i].empty()) fail(at, "a group of devices names at least one");
          std::vector<std::string> group;
          for (std::size_t j = 0; j < value[i].size(); ++j) {
            const std::string in = fmt::format("{}/{}", at, j);
            std::string device = device_name(value[i][j], in);
            if (std::find(group.begin(), group.end(), device) != group.end())
              fail(in, fmt::format("'{}' is in this group already: a group names each device once",
                                   device));
            group.push_back(std::move(device));
          }
          out.devices.push_back(std::move(group));
        }
      } else {
        fail(path,
             "unknown member (expected \"stages\", \"microbatches\", \"schedule\" or "
             "\"devices\")");
      }
    }
    for (const char* member : {"stages", "microbatches", "schedule"}) {
      if (!pipeline.contains(member)) {
        fail("/pipeline",
             fmt::format("missing \"{}\" (expected {{\"stages\": [[OP, …], …], \"microbatches\": "
                         "M, \"schedule\": \"1f1b\" | \"gpipe\"}})",
                         member));
      }
    }
    if (!out.devices.empty() && out.devices.size() != out.stages.size()) {
      fail("/pipeline/devices", fmt::format("{} devices for {} stages: name one per stage",
                                            out.devices.size(), out.stages.size()));
    }
    plan.pipeline = std::move(out);
  }

  void read_fuse(const json& fuse, Plan& plan) const {
    if (fuse.is_string()) {
      if (fuse.get<std::string>() != "auto") fail("/fuse", "expected \"auto\" or a list of groups");
      plan.fuse_auto = true;
      return;
    }
    expect_array(fuse, "/fuse");
    for (std::size_t g = 0; g < fuse.size(); ++g) {
      const std::string path = fmt::format("/fuse/{}", g);
      expect_array(fuse[g], path);
      if (fuse[g].size() < 2) fail(path, "a fusion group needs at least two operations");
      std::vector<std::string> group;
      for (std::size_t i = 0; i < fuse[g].size(); ++i) {
        group.push_back(read_string(fuse[g][i], fmt::format("{}/{}", path, i)));
      }
      plan.fuse.push_back(std::move(group));
    }
  }

  std::string source_;
};

}  // namespace

std::int64_t Plan::split_of(std::string_view op, std::string_view dim) const {
  auto it = ops.find(std::string(op));
  if (it == ops.end()) return 1;
  auto d = it->second.split.find(std::string(dim));
  return d == it->second.split.end() ? 1 : d->second;
}

json Plan::to_json() const {
  json out = json::object();
  json ops_json = json::object();
  for (const auto& [name, op] : ops) {
    json o = json::object();
    if (!op.split.empty()) o["split"] = op.split;
    if (!op.substitute.empty()) o["substitute"] = op.substitute;
    if (!op.place.empty()) o["place"] = op.place;
    if (!op.mesh.empty()) o["mesh"] = op.mesh;
    ops_json[name] = std::move(o);
  }
  out["ops"] = std::move(ops_json);
  if (fuse_auto) {
    out["fuse"] = "auto";
  } else if (!fuse.empty()) {
    out["fuse"] = fuse;
  }
  if (!outputs.empty()) {
    json outputs_json = json::object();
    for (const auto& [name, output] : outputs) {
      outputs_json[name] = {{"replicate", output.replicate}};
    }
    out["outputs"] = std::move(outputs_json);
  }
  if (!recompute.empty()) out["recompute"] = recompute;
  if (zero) {
    json z = {{"stage", zero->stage}, {"params", zero->params}, {"shards", zero->shards}};
    if (!zero->axis.empty()) z["axis"] = zero->axis;
    out["zero"] = std::move(z);
  }
  if (pipeline) {
    json p = {{"stages", pipeline->stages},
              {"microbatches", pipeline->microbatches},
              {"schedule", pipeline->schedule}};
    if (!pipeline->devices.empty()) {
      json devices = json::array();
      for (const std::vector<std::string>& group : pipeline->devices) {
        if (group.size() == 1) {
          devices.push_back(group.front());  // one device: its name
        } else {
          devices.push_back(group);  // a group: an array
        }
      }
      p["devices"] = std::move(devices);
    }
    out["pipeline"] = std::move(p);
  }
  return out;
}

bool matches_name_pattern(std::string_view pattern, std::string_view name) {
  const std::size_t star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == name;
  // The text before the first `*` is a prefix; the rest matches any suffix of what follows.
  if (name.substr(0, star) != pattern.substr(0, star)) return false;
  const std::string_view rest = pattern.substr(star + 1);
  for (std::size_t at = star; at <= name.size(); ++at) {
    if (matches_name_pattern(rest, name.substr(at))) return true;
  }
  return false;
}

Plan parse_plan(std::string_view text, std::string_view source_name) {
  const json root = zspace::parse_json_text(text, source_name);
  zspace::reject_duplicate_keys(text, source_name);
  return PlanReader(source_name).read(root);
}

Plan read_plan_file(const std::filesystem::path& path) {
  return parse_plan(read_file(path), path.string());
}

void add_split_shorthand(Plan& plan, std::string_view shorthand) {
  const auto bad = [&](std::string_view why) {
    return Error(
        fmt::format("--split '{}': {} (expected OP.DIM=N, e.g. H/linear.out=2)", shorthand, why));
  };
  const auto eq = shorthand.rfind('=');
  if (eq == std::string_view::npos) throw bad("missing '='");
  const auto dot = shorthand.rfind('.', eq);
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == eq) throw bad("missing OP.DIM");
  const std::string_view count_text = shorthand.substr(eq + 1);
  std::int64_t count = 0;
  auto [ptr, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
  if (ec != std::errc() || ptr != count_text.data() + count_text.size() || count < 1) {
    throw bad("N must be an integer >= 1");
  }
  plan.ops[std::string(shorthand.substr(0, dot))]
      .split[std::string(shorthand.substr(dot + 1, eq - dot - 1))] = count;
}

std::optional<ir::OperationId> find_operation(const ir::Graph& graph, std::string_view name) {
  // An ambiguous label finds nothing: check_plan reports it.
  const std::optional<ir::NodeId> node = graph.find_named(ir::NodeKind::kOperation, name).node;
  if (!node) return std::nullopt;
  return ir::OperationId(*node);
}

OperationFinder::OperationFinder(const ir::Graph& graph) : graph_(&graph) {
  for (ir::OperationId op : graph.operations()) {
    Labelled& l = labels_[std::string_view(graph.operation(op).label())];
    ++l.count;
    l.node = op;
  }
}

std::optional<ir::OperationId> OperationFinder::find(std::string_view name) const {
  // Graph::find_named's rule: a label of one operation, none when ambiguous, else a key.
  if (auto l = labels_.find(name); l != labels_.end()) {
    if (l->second.count > 1) return std::nullopt;
    return ir::OperationId(l->second.node);
  }
  const std::optional<ir::NodeId> keyed = graph_->find(name);
  if (keyed && graph_->kind(*keyed) == ir::NodeKind::kOperation && !graph_->is_removed(*keyed))
    return ir::OperationId(*keyed);
  return std::nullopt;
}

std::string operation_name(const ir::Graph& graph, ir::OperationId op) {
  return graph.display_name(op);
}

std::optional<ir::TensorId> find_output(const ir::Graph& graph, std::string_view name) {
  for (ir::TensorId t : metakernel::graph_outputs(graph)) {
    if (output_name(graph, t) == name) return t;
  }
  return std::nullopt;
}

std::string output_name(const ir::Graph& graph, ir::TensorId tensor) {
  return graph.display_name(tensor);
}

bool is_empty(const OpPlan& op) {
  return op.split.empty() && op.substitute.empty() && !is_placed(op);
}

bool is_placed(const OpPlan& op) {
  return !op.place.empty() || !op.mesh.empty() || op.colocate.has_value();
}

Plan without_placement(Plan plan) {
  for (auto& [name, op] : plan.ops) {
    op.place.clear();
    op.mesh.clear();
    op.colocate.reset();
  }
  std::erase_if(plan.ops, [](const auto& entry) { return is_empty(entry.second); });
  std::erase_if(plan.outputs, [](const auto& entry) {
    return entry.second.replicate != kReplicateAll;  // a mesh axis of the target it was made for
  });
  if (plan.zero) plan.zero->axis.clear();
  if (plan.pipeline) plan.pipeline->devices.clear();
  return plan;
}

namespace {

// An operation's index dims by name: its own names, and the aliases of dim_aliases.h.
class DimNames {
 public:
  DimNames(const ir::Graph& graph, ir::OperationId op)
      : view_(graph.operation(op)), aliases_(index_dim_aliases(graph, op)) {}

  [[nodiscard]] std::optional<std::size_t> find(const std::string& name) const {
    if (auto d = view_.index_dim(name)) return d;
    auto alias = aliases_.find(name);
    return alias == aliases_.end() ? std::nullopt : view_.index_dim(alias->second);
  }
  /// The operation's own name for `name` (precondition: find(name)).
  [[nodiscard]] std::string own(const std::string& name) const {
    return view_.index_name(*find(name));
  }
  /// "(it has: batch, out, in)", with "; aliases: batch = d0, …" when there are some.
  [[nodiscard]] std::string listed() const {
    std::vector<std::string> aliases;
    for (const auto& [alias, dim] : aliases_) aliases.push_back(alias + " = " + dim);
    return fmt::format("(it has: {}{}{})", fmt::join(view_.index_names(), ", "),
                       aliases.empty() ? "" : "; aliases: ", fmt::join(aliases, ", "));
  }

 private:
  ir::OperationView view_;
  std::map<std::string, std::string> aliases_;
};

}  // namespace

std::vector<support::Diagnostic> check_entry(const OpPlan& op_plan, std::string_view name,
                                             const std::string& path, const ir::Graph& graph,
                                             ir::OperationId op) {
  std::vector<support::Diagnostic> problems;
  const auto problem = [&](std::string pointer, std::string message) {
    problems.push_back(support::Diagnostic::at_pointer(std::move(pointer), std::move(message)));
  };
  const ir::OperationView view = graph.operation(op);
  const std::optional<zspace::Range> index = view.ipf_index();
  const DimNames dims(graph, op);
  std::map<std::size_t, std::string> split_named;  // dim → the name the plan used
  for (const auto& [dim, count] : op_plan.split) {
    auto d = dims.find(dim);
    if (!d) {
      problem(
          path + "/split/" + zspace::json_pointer_token(dim),
          fmt::format("operation '{}' has no index dimension '{}' {}", name, dim, dims.listed()));
      continue;
    }
    if (auto [it, added] = split_named.emplace(*d, dim); !added) {
      problem(path + "/split/" + zspace::json_pointer_token(dim),
              fmt::format("names dimension '{}' of '{}' again (as '{}')", view.index_name(*d), name,
                          it->second));
      continue;
    }
    const std::int64_t extent = index ? index->extent(*d) : 0;
    if (count > std::max<std::int64_t>(extent, 1)) {
      problem(
          path + "/split/" + zspace::json_pointer_token(dim),
          fmt::format("cannot cut dimension '{}' of extent {} into {} shards", dim, extent, count));
    }
  }
  for (const auto& [dim, axis] : op_plan.mesh) {
    if (!dims.find(dim)) {
      problem(
          path + "/mesh/" + zspace::json_pointer_token(dim),
          fmt::format("operation '{}' has no index dimension '{}' {}", name, dim, dims.listed()));
    }
  }
  for (std::size_t i = 0; i < op_plan.substitute.size(); ++i) {
    const std::string& s = op_plan.substitute[i];
    const Substitution* known_substitution = find_substitution(s);
    if (known_substitution == nullptr) {
      std::vector<std::string_view> names;
      for (const Substitution& k : kKnownSubstitutions) names.push_back(k.name);
      problem(fmt::format("{}/substitute/{}", path, i),
              fmt::format("unknown substitution '{}' (known: {})", s, fmt::join(names, ", ")));
    } else if (view.kernel() != known_substitution->kernel) {
      problem(fmt::format("{}/substitute/{}", path, i),
              fmt::format("{} rewrites a {}, but operation '{}' is a {}", s,
                          known_substitution->kernel, name, view.kernel()));
    }
  }
  return problems;
}

OpPlan resolve_entry(const OpPlan& op_plan, const ir::Graph& graph, ir::OperationId op) {
  const DimNames dims(graph, op);
  OpPlan resolved = op_plan;  // dims by the operation's own names, aliases resolved
  resolved.split.clear();
  resolved.mesh.clear();
  for (const auto& [dim, count] : op_plan.split) resolved.split[dims.own(dim)] = count;
  for (const auto& [dim, axis] : op_plan.mesh) resolved.mesh[dims.own(dim)] = axis;
  return resolved;
}

namespace {

// The graph inputs a `zero` entry names or matches, in graph order.
std::vector<ir::TensorId> zero_params(const ZeroPlan& zero, const ir::Graph& graph) {
  std::vector<ir::TensorId> found;
  for (ir::TensorId t : graph.tensors()) {
    if (!graph.producers(t).empty()) continue;
    const std::string name = output_name(graph, t);
    if (std::any_of(zero.params.begin(), zero.params.end(),
                    [&](const std::string& p) { return matches_name_pattern(p, name); })) {
      found.push_back(t);
    }
  }
  return found;
}

// `zero`: every entry names or matches a graph input; each such input has a dim 0 the shard
// count divides.
void check_zero(const ZeroPlan& zero, const ir::Graph& graph,
                std::vector<support::Diagnostic>& problems) {
  std::vector<std::string> inputs;
  for (ir::TensorId t : graph.tensors()) {
    if (graph.producers(t).empty()) inputs.push_back(output_name(graph, t));
  }
  for (std::size_t i = 0; i < zero.params.size(); ++i) {
    const std::string& name = zero.params[i];
    if (std::any_of(inputs.begin(), inputs.end(),
                    [&](const std::string& in) { return matches_name_pattern(name, in); })) {
      continue;
    }
    const bool computed = name.find('*') == std::string::npos &&
                          graph.find_named(ir::NodeKind::kTensor, name).node.has_value();
    problems.push_back(support::Diagnostic::at_pointer(
        fmt::format("/zero/params/{}", i),
        fmt::format(
            "{} '{}'{} (graph inputs: {})",
            name.find('*') == std::string::npos ? "no graph input named" : "no graph input matches",
            name, computed ? ": it is computed by the graph, not a parameter" : "",
            fmt::join(inputs, ", "))));
  }
  for (ir::TensorId t : zero_params(zero, graph)) {
    const zspace::Range& range = graph.tensor(t).range();
    const std::string name = output_name(graph, t);
    if (range.rank() == 0) {
      problems.push_back(support::Diagnostic::at_pointer(
          "/zero/params",
          fmt::format("parameter '{}' is a scalar: it has no dim 0 to shard", name)));
    } else if (range.shape()[0] % zero.shards != 0) {
      problems.push_back(support::Diagnostic::at_pointer(
          "/zero/shards",
          fmt::format("parameter '{}' has {} rows (dim 0), not a multiple of {} shards: ZeRO "
                      "shards a parameter evenly",
                      name, range.shape()[0], zero.shards)));
    }
  }
}

// `pipeline`: every stage entry names or matches an operation; no operation is in two stages.
// An entry names the operations whose name (label, else key) it is or matches (a `*` pattern),
// and the one the OperationFinder finds by it (a key); `known` is every operation's name, in
// graph order. Each entry without a `*` is looked up, not compared with every operation by a
// scan per operation (a 24-layer step's pipeline plan names ~1,800 operations: that was
// ~10^10 label comparisons, tens of seconds of every pricing of such a plan).
void check_pipeline(const PipelinePlan& pipeline, const ir::Graph& graph,
                    const std::vector<std::string>& known, const OperationFinder& finder,
                    std::vector<support::Diagnostic>& problems) {
  const std::span<const ir::OperationId> ops = graph.operations();
  std::unordered_map<std::string_view, std::vector<std::size_t>> by_name;  // → positions in ops
  std::unordered_map<std::uint32_t, std::size_t> position;                 // op index → position
  for (std::size_t i = 0; i < ops.size(); ++i) {
    by_name[known[i]].push_back(i);
    position.emplace(ops[i].index(), i);
  }
  std::map<std::uint32_t, std::size_t> stage_of;  // operation index → stage
  std::vector<std::size_t> named;                 // positions an entry names, in graph order
  for (std::size_t s = 0; s < pipeline.stages.size(); ++s) {
    for (std::size_t i = 0; i < pipeline.stages[s].size(); ++i) {
      const std::string& name = pipeline.stages[s][i];
      const std::string path = fmt::format("/pipeline/stages/{}/{}", s, i);
      named.clear();
      if (name.find('*') != std::string::npos) {
        for (std::size_t k = 0; k < ops.size(); ++k) {
          if (matches_name_pattern(name, known[k])) named.push_back(k);
        }
      } else {
        if (auto found = by_name.find(name); found != by_name.end()) named = found->second;
        if (const std::optional<ir::OperationId> op = finder.find(name)) {
          const std::size_t k = position.at(op->index());
          const auto at = std::lower_bound(named.begin(), named.end(), k);
          if (at == named.end() || *at != k) named.insert(at, k);
        }
      }
      for (std::size_t k : named) {
        const ir::OperationId op = ops[k];
        if (auto [it, added] = stage_of.emplace(op.index(), s); !added && it->second != s) {
          problems.push_back(support::Diagnostic::at_pointer(
              path, fmt::format("operation '{}' is in stage {} already: a stage list names each "
                                "operation once",
                                known[k], it->second)));
        }
      }
      if (!named.empty()) continue;
      problems.push_back(support::Diagnostic::at_pointer(
          path, fmt::format("{} '{}' (operations: {})",
                            name.find('*') == std::string::npos ? "no operation named"
                                                                : "no operation matches",
                            name, fmt::join(known, ", "))));
    }
  }
}

// check_plan_entries; `fitting`, when given, receives the plan without the entries and fusion
// groups that have a problem (derived entries kept), on which the rewrites can still run.
std::vector<support::Diagnostic> check_entries(const Plan& plan, const ir::Graph& graph,
                                               Plan* fitting) {
  std::vector<support::Diagnostic> problems;
  const auto problem = [&](std::string pointer, std::string message) {
    problems.push_back(support::Diagnostic::at_pointer(std::move(pointer), std::move(message)));
  };
  if (fitting != nullptr) {
    *fitting = Plan{.ops = {},
                    .fuse = {},
                    .fuse_auto = plan.fuse_auto,
                    .outputs = {},
                    .recompute = {},
                    .zero = {},
                    .pipeline = {}};
  }
  std::vector<std::string> known;
  for (ir::OperationId op : graph.operations()) known.push_back(operation_name(graph, op));
  std::unordered_map<std::string_view, std::size_t> carrying;  // operations per name
  for (const std::string& name : known) ++carrying[name];
  const auto count_of = [&](std::string_view name) {
    auto found = carrying.find(name);
    return found == carrying.end() ? std::size_t{0} : found->second;
  };
  const auto ambiguous = [&](std::string_view name) { return count_of(name) > 1; };
  const OperationFinder finder(graph);
  std::map<std::uint32_t, std::string> entry_of;  // operation index → the entry naming it
  for (const auto& [name, op_plan] : plan.ops) {
    const std::string path = "/ops/" + zspace::json_pointer_token(name);
    if (ambiguous(name)) {
      problem(path, fmt::format("operation name '{}' is ambiguous ({} operations carry that label)",
                                name, count_of(name)));
      continue;
    }
    auto op = finder.find(name);
    if (!op) {  // a derived entry: the rewrites check it
      if (fitting != nullptr) fitting->ops.emplace(name, op_plan);
      continue;
    }
    const std::string canonical = operation_name(graph, *op);
    if (canonical != name && ambiguous(canonical)) {  // named by its key: the label must tell it
      problem(path, fmt::format("operation '{}' shares its label '{}' with other operations, so a "
                                "plan cannot address it (give it a label of its own)",
                                name, canonical));
      continue;
    }
    if (auto [it, added] = entry_of.emplace(op->index(), name); !added) {
      problem(path, fmt::format("names operation '{}' again (/ops/{} does too)", canonical,
                                zspace::json_pointer_token(it->second)));
      continue;
    }
    std::vector<support::Diagnostic> found = check_entry(op_plan, name, path, graph, *op);
    if (found.empty() && fitting != nullptr) fitting->ops.emplace(name, op_plan);
    for (support::Diagnostic& p : found) problems.push_back(std::move(p));
  }
  for (std::size_t g = 0; g < plan.fuse.size(); ++g) {
    bool fits = true;
    for (std::size_t i = 0; i < plan.fuse[g].size(); ++i) {
      const std::string& name = plan.fuse[g][i];
      if (ambiguous(name)) {
        fits = false;
        problem(fmt::format("/fuse/{}/{}", g, i),
                fmt::format("operation name '{}' is ambiguous ({} operations carry that label)",
                            name, count_of(name)));
      }
    }
    if (fits && fitting != nullptr) fitting->fuse.push_back(plan.fuse[g]);
  }
  if (!plan.outputs.empty()) {
    std::vector<std::string> outputs;
    for (ir::TensorId t : metakernel::graph_outputs(graph))
      outputs.push_back(output_name(graph, t));
    for (const auto& [name, output] : plan.outputs) {
      if (find_output(graph, name)) {
        if (fitting != nullptr) fitting->outputs.emplace(name, output);
        continue;
      }
      problem("/outputs/" + zspace::json_pointer_token(name),
              fmt::format("no graph output named '{}' (outputs: {})", name,
                          outputs.empty() ? std::string("none")
                                          : fmt::format("{}", fmt::join(outputs, ", "))));
    }
  }
  for (std::size_t i = 0; i < plan.recompute.size(); ++i) {
    const std::string& name = plan.recompute[i];
    const bool pattern = name.find('*') != std::string::npos;
    const bool found =
        pattern ? std::any_of(known.begin(), known.end(),
                              [&](const std::string& k) { return matches_name_pattern(name, k); })
                : count_of(name) > 0 || finder.find(name);
    if (found) {
      if (fitting != nullptr) fitting->recompute.push_back(name);
      continue;
    }
    problem(fmt::format("/recompute/{}", i),
            fmt::format(
                "{} '{}' (operations: {})",
                name.find('*') == std::string::npos ? "no operation named" : "no operation matches",
                name, fmt::join(known, ", ")));
  }
  if (plan.zero) {
    const std::size_t before = problems.size();
    check_zero(*plan.zero, graph, problems);
    if (problems.size() == before && fitting != nullptr) fitting->zero = plan.zero;
  }
  if (plan.pipeline) {
    const std::size_t before = problems.size();
    check_pipeline(*plan.pipeline, graph, known, finder, problems);
    if (problems.size() == before && fitting != nullptr) fitting->pipeline = plan.pipeline;
  }
  return problems;
}

}  // namespace

std::vector<support::Diagnostic> check_plan_entries(const Plan& plan, const ir::Graph& graph) {
  return check_entries(plan, graph, nullptr);
}

std::vector<support::Diagnostic> check_plan(const Plan& plan, const ir::Graph& graph) {
  Plan fitting;
  std::vector<support::Diagnostic> problems = check_entries(plan, graph, &fitting);
  const OperationFinder finder(graph);
  bool derived = false;
  for (const auto& [name, op_plan] : plan.ops) derived |= !finder.find(name);
  for (const auto& group : plan.fuse) {
    for (const std::string& name : group) derived |= !finder.find(name);
  }
  if (!derived) return problems;
  // The rewrites of the entries that fit say which derived names exist and fit.
  const LowerOptions options;
  std::vector<RewriteEvent> log;
  std::vector<support::Diagnostic> found =
      rewrite_operations(graph, fitting, options, log).problems;
  problems.insert(problems.end(), found.begin(), found.end());
  return problems;
}

Plan resolve_plan_names(const Plan& plan, const ir::Graph& graph) {
  const OperationFinder finder(graph);
  const auto canonical = [&](const std::string& name) {
    auto op = finder.find(name);
    return op ? operation_name(graph, *op) : name;
  };
  // names_operation through the finder: whether an entry of `entries` names or matches `op`
  // (a full plan's recompute list names hundreds of operations; a scan per entry per operation
  // was a fifth of a 24-layer training step's evaluation).
  const auto naming = [&](const std::vector<std::string>& entries) {
    std::unordered_set<std::uint32_t> named;     // what the names find
    std::unordered_set<std::string_view> exact;  // the names
    std::vector<std::string_view> patterns;
    for (const std::string& entry : entries) {
      if (entry.find('*') != std::string::npos) {
        patterns.push_back(entry);
        continue;
      }
      exact.insert(entry);
      if (const auto op = finder.find(entry)) named.insert(op->index());
    }
    return [&graph, named = std::move(named), patterns = std::move(patterns),
            exact = std::move(exact)](ir::OperationId op) {
      if (named.contains(op.index())) return true;
      const std::string name = operation_name(graph, op);
      return exact.contains(name) ||
             std::any_of(patterns.begin(), patterns.end(),
                         [&](std::string_view p) { return matches_name_pattern(p, name); });
    };
  };
  Plan out;
  out.fuse_auto = plan.fuse_auto;
  out.outputs = plan.outputs;
  if (plan.zero) {  // the parameters by name, patterns expanded, in graph order
    out.zero = plan.zero;
    out.zero->params.clear();
    for (ir::TensorId t : zero_params(*plan.zero, graph))
      out.zero->params.push_back(output_name(graph, t));
  }
  if (plan.pipeline) {  // each stage's operations by name, patterns expanded, in graph order
    out.pipeline = plan.pipeline;
    for (std::size_t s = 0; s < plan.pipeline->stages.size(); ++s) {
      std::vector<std::string>& names = out.pipeline->stages[s];
      names.clear();
      const auto named = naming(plan.pipeline->stages[s]);
      for (ir::OperationId op : graph.operations()) {
        if (named(op)) names.push_back(operation_name(graph, op));
      }
    }
  }
  // Recomputed operations by name, patterns expanded, each once, in graph order.
  if (!plan.recompute.empty()) {
    const auto named = naming(plan.recompute);
    std::unordered_set<std::string> taken;
    for (ir::OperationId op : graph.operations()) {
      if (!named(op)) continue;
      std::string name = operation_name(graph, op);
      if (taken.insert(name).second) out.recompute.push_back(std::move(name));
    }
  }
  for (const auto& [name, op_plan] : plan.ops) {
    const auto op = finder.find(name);
    out.ops.emplace(op ? operation_name(graph, *op) : name,
                    op ? resolve_entry(op_plan, graph, *op) : op_plan);
  }
  for (const auto& group : plan.fuse) {
    std::vector<std::string> names;
    for (const std::string& name : group) names.push_back(canonical(name));
    out.fuse.push_back(std::move(names));
  }
  return out;
}

}  // namespace tapestry::rewrite
