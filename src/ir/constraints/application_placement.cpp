// application-placement (the placement dialect): every Application carries a Placement tag
// naming its device, and every cell it reads that an application on another device writes
// arrives by a transfer it lists under "receives" (same tensor, a range containing the cells,
// "from" the writer's device). Which device names exist is the target's business
// (cost::check_devices); this constraint checks the graph against itself.
//
//   error[application-placement]: Cross-device read without a transfer
//     application 'Y #1' on gpu:1 reads zr[2048:4096, 0:4096] of tensor Y/linear, written on
//     gpu:0, but receives no transfer of it from gpu:0
#include <fmt/format.h>

#include <map>

#include "tapestry/ir/constraints.h"
#include "tapestry/ir/type_names.h"
#include "tapestry/zspace/box_index.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/json.h"

namespace tapestry::ir::constraints {

namespace {

constexpr std::string_view kRequires[] = {"node-reference", "tag-schema"};

struct Received {
  std::string tensor;  // key
  zspace::Range range;
  std::string from;
};

// The device and the receives of an application's Placement tag (nullopt: no tag).
std::optional<std::pair<std::string, std::vector<Received>>> placement_of(const NodeView& node) {
  const nlohmann::json& tags = node.other_tags();
  if (!tags.is_object()) return std::nullopt;
  auto tag = tags.find(std::string(kPlacementTagUrl));
  if (tag == tags.end()) tag = tags.find("tapestry:Placement");
  if (tag == tags.end() || !tag->is_object() || !tag->contains("device")) return std::nullopt;
  std::vector<Received> receives;
  if (tag->contains("receives")) {
    for (const nlohmann::json& r : (*tag)["receives"]) {
      receives.push_back({r.at("tensorId").get<std::string>(),
                          zspace::range_from_json(r.at("range")), r.at("from").get<std::string>()});
    }
  }
  return std::pair{(*tag)["device"].get<std::string>(), std::move(receives)};
}

class ApplicationPlacement final : public Constraint {
 public:
  std::string_view name() const override { return "application-placement"; }
  std::string_view description() const override {
    return "Every application names its device, and every cell it reads from another device "
           "arrives by a transfer it lists.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    const Graph& g = ctx.graph;
    std::map<std::uint32_t, std::pair<std::string, std::vector<Received>>> placed;
    for (ApplicationId app : g.applications()) {
      auto p = placement_of(g.node(app));
      if (!p) {
        Issue issue = make_issue("Application not placed",
                                 "application has no Placement tag naming its device");
        issue.contexts.push_back(ctx.node_context(app, ".tags"));
        out.push_back(std::move(issue));
        continue;
      }
      placed.emplace(app.index(), std::move(*p));
    }
    // Writers per tensor: boxes and their applications.
    std::map<std::uint32_t, std::pair<std::vector<zspace::Range>, std::vector<ApplicationId>>>
        writers;
    for (ApplicationId app : g.applications()) {
      for (const auto& e : g.application(app).outputs().entries()) {
        auto& w = writers[e.value.tensor.index()];
        w.first.push_back(e.value.range);
        w.second.push_back(app);
      }
    }
    std::map<std::uint32_t, zspace::BoxIndex> index;
    for (const auto& [tensor, w] : writers) index.emplace(tensor, zspace::BoxIndex(w.first));
    for (ApplicationId app : g.applications()) {
      auto me = placed.find(app.index());
      if (me == placed.end()) continue;
      const auto& [device, receives] = me->second;
      for (const auto& e : g.application(app).inputs().entries()) {
        auto w = writers.find(e.value.tensor.index());
        if (w == writers.end() || e.value.range.is_empty()) continue;
        for (std::uint32_t k : index.at(w->first).overlapping(e.value.range)) {
          const ApplicationId writer = w->second.second[k];
          auto theirs = placed.find(writer.index());
          if (theirs == placed.end() || theirs->second.first == device) continue;
          const zspace::Range cells = *e.value.range.intersect(w->second.first[k]);
          const std::string tensor_key(g.key(e.value.tensor));
          bool covered = false;
          for (const Received& r : receives) {
            covered = covered || (r.tensor == tensor_key && r.from == theirs->second.first &&
                                  r.range.rank() == cells.rank() && r.range.contains(cells));
          }
          if (covered) continue;
          const std::string& label = g.tensor(e.value.tensor).label();
          Issue issue = make_issue(
              "Cross-device read without a transfer",
              fmt::format("application on {} reads {} of tensor {}, written on {}, but receives no "
                          "transfer of it from {}",
                          device, cells, label.empty() ? tensor_key : label, theirs->second.first,
                          theirs->second.first));
          issue.contexts.push_back(ctx.node_context(app, ".tags"));
          issue.contexts.push_back(ctx.node_context(writer));
          out.push_back(std::move(issue));
        }
      }
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> application_placement() {
  return std::make_shared<ApplicationPlacement>();
}

}  // namespace tapestry::ir::constraints
