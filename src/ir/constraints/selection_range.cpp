// selection-range: every selection (of an Operation or Application) has the rank of its tensor
// and lies inside the tensor's range.
//
//   error[selection-range]: Selection outside its tensor's range
//     inputs.tensors[1].range zr[200:211, 50:55] is not inside t1's range zr[200:210, 50:55]
#include <fmt/format.h>

#include "tapestry/ir/constraints.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/json.h"

namespace tapestry::ir::constraints {

namespace {

constexpr std::string_view kRequires[] = {"node-reference"};

class SelectionRange final : public Constraint {
 public:
  std::string_view name() const override { return "selection-range"; }
  std::string_view description() const override {
    return "Every selection has its tensor's rank and lies inside the tensor's range.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (OperationId op : ctx.graph.operations()) {
      check_map(ctx, op, "inputs", ctx.graph.operation(op).inputs(), out);
      check_map(ctx, op, "outputs", ctx.graph.operation(op).outputs(), out);
    }
    for (ApplicationId app : ctx.graph.applications()) {
      check_map(ctx, app, "inputs", ctx.graph.application(app).inputs(), out);
      check_map(ctx, app, "outputs", ctx.graph.application(app).outputs(), out);
    }
  }

 private:
  void check_map(const CheckContext& ctx, NodeId node, const char* side, const SelectionMap& map,
                 std::vector<Issue>& out) const {
    bool all_inside = true;
    map.for_each_raw([&](const SelectionMap::RawEntry& e) {
      if (!e.tensor.is_valid()) return true;
      const zspace::Range& whole = ctx.graph.tensor(e.tensor).range();
      all_inside = e.start.size() == whole.rank();
      for (std::size_t k = 0; all_inside && k < e.start.size(); ++k) {
        all_inside = e.start[k] >= whole.start()[k] && e.end[k] <= whole.end()[k];
      }
      return all_inside;
    });
    if (!all_inside) report_map(ctx, node, side, map, out);
  }

  // The slow path, for a map known to hold a bad selection: one issue per bad selection.
  void report_map(const CheckContext& ctx, NodeId node, const char* side, const SelectionMap& map,
                  std::vector<Issue>& out) const {
    for (const auto& e : map.entries()) {
      const TensorSelection& sel = e.value;
      if (!sel.tensor.is_valid()) continue;
      TensorView tensor = ctx.graph.tensor(sel.tensor);
      const zspace::Range& whole = tensor.range();
      bool rank_ok = sel.range.rank() == whole.rank();
      if (rank_ok && whole.contains(sel.range)) continue;
      std::string where = fmt::format("{}.{}[{}].range", side, e.name, e.position);
      std::string name(tensor.display_name());
      Issue issue = rank_ok
                        ? make_issue("Selection outside its tensor's range",
                                     fmt::format("{} {} is not inside {}'s range {}", where,
                                                 sel.range, name, whole))
                        : make_issue("Selection rank differs from its tensor's rank",
                                     fmt::format("{} {} has rank {}, but {} has rank {}", where,
                                                 sel.range, sel.range.rank(), name, whole.rank()));
      issue.params = {{"selection", zspace::to_json(sel.range)},
                      {"tensorRange", zspace::to_json(whole)}};
      issue.contexts.push_back(ctx.node_context(node, fmt::format(".body.{}", where)));
      issue.contexts.push_back(ctx.node_context(sel.tensor, ".body.range"));
      out.push_back(std::move(issue));
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> selection_range() {
  return std::make_shared<SelectionRange>();
}

}  // namespace tapestry::ir::constraints
