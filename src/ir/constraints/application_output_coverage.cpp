// application-output-coverage: every output selection of an operation is written exactly once
// by its applications — no cell twice, none missed. Splitting a reduction dimension across
// applications makes two of them write the same cells, and is reported here (a reduction split
// is a rewrite that introduces partial tensors; see DESIGN.md §5).
//
//   error[application-output-coverage]: Operation output not covered exactly once
//     cell (0, 0) of outputs.result[0] (tensor z) is written by 2 applications
#include <fmt/format.h>

#include "tapestry/ir/box_cover.h"
#include "tapestry/ir/constraints.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/json.h"

namespace tapestry::ir::constraints {

namespace {

constexpr std::string_view kRequires[] = {"node-reference"};

class ApplicationOutputCoverage final : public Constraint {
 public:
  std::string_view name() const override { return "application-output-coverage"; }
  std::string_view description() const override {
    return "Each operation output is written exactly once by the operation's applications.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    std::vector<zspace::Range> parts;
    std::vector<ApplicationId> writers;
    for (OperationId op : ctx.graph.operations()) {
      OperationView v = ctx.graph.operation(op);
      if (v.applications().empty()) continue;  // application-index-partition reports it
      for (const auto& e : v.outputs().entries()) {
        parts.clear();
        writers.clear();
        for (ApplicationId app : v.applications()) {
          auto list = ctx.graph.application(app).outputs().list(e.name);
          if (e.position >= list.size()) continue;
          const TensorSelection& sel = list[e.position];
          if (sel.tensor != e.value.tensor || sel.range.rank() != e.value.range.rank()) continue;
          parts.push_back(sel.range);
          writers.push_back(app);
        }
        check_port(ctx, v, e.name, e.position, e.value, parts, writers, out);
      }
    }
  }

 private:
  void check_port(const CheckContext& ctx, const OperationView& op, const std::string& name,
                  std::uint32_t position, const TensorSelection& whole,
                  const std::vector<zspace::Range>& parts,
                  const std::vector<ApplicationId>& writers, std::vector<Issue>& out) const {
    if (whole.range.rank() > kMaxCoverRank) return;
    std::optional<CoverDefect> defect = find_cover_defect(whole.range, parts);
    if (!defect) return;
    std::string where = fmt::format("outputs.{}[{}]", name, position);
    TensorView tensor = ctx.graph.tensor(whole.tensor);
    std::string tensor_name = tensor.label().empty() ? std::string(tensor.key()) : tensor.label();
    std::string message =
        !defect->inside
            ? fmt::format("cell {} outside {} {} (tensor {}) is written by {} application{}",
                          defect->point, where, whole.range, tensor_name, defect->count,
                          defect->count == 1 ? "" : "s")
        : defect->count == 0
            ? fmt::format("cell {} of {} (tensor {}) is not written by any application",
                          defect->point, where, tensor_name)
            : fmt::format("cell {} of {} (tensor {}) is written by {} applications", defect->point,
                          where, tensor_name, defect->count);
    Issue issue = make_issue("Operation output not covered exactly once", message);
    issue.params = {
        {"port", where}, {"cell", zspace::to_json(defect->point)}, {"count", defect->count}};
    issue.contexts.push_back(ctx.node_context(op.id(), ".body." + where));
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].contains(defect->point)) {
        issue.contexts.push_back(ctx.node_context(writers[i], ".body." + where));
      }
    }
    out.push_back(std::move(issue));
  }
};

}  // namespace

std::shared_ptr<const Constraint> application_output_coverage() {
  return std::make_shared<ApplicationOutputCoverage>();
}

}  // namespace tapestry::ir::constraints
