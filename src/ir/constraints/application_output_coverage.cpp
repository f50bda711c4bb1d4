// application-output-coverage: every output selection of an operation is written exactly once
// by its applications — no cell twice, none missed. Splitting a reduction dimension across
// applications makes two of them write the same cells, and is reported here (a reduction split
// is a rewrite that introduces partial tensors; see docs/design.md §5).
//
//   error[application-output-coverage]: Operation output not covered exactly once
//     cell (0, 0) of outputs.result[0] (tensor z) is written by 2 applications
#include <fmt/format.h>

#include "tapestry/ir/box_cover.h"
#include "tapestry/ir/constraints.h"
#include "tapestry/ir/names.h"
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

  // Per output port of each operation, the boxes its applications write there, packed; the
  // applications' selections are read raw (no Range built for a million of them).
  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    zspace::RangeList parts;
    std::vector<ApplicationId> writers;
    for (OperationId op : ctx.graph.operations()) {
      OperationView v = ctx.graph.operation(op);
      if (v.applications().empty()) continue;  // application-index-partition reports it
      v.outputs().for_each_raw([&](const SelectionMap::RawEntry& port) {
        parts.clear(port.start.size());
        parts.reserve(v.applications().size());
        writers.clear();
        for (ApplicationId app : v.applications()) {
          ctx.graph.application(app).outputs().for_each_raw([&](const SelectionMap::RawEntry& e) {
            if (e.name_id != port.name_id || e.position != port.position) return true;
            if (e.tensor == port.tensor && e.start.size() == port.start.size()) {
              parts.push_back(e.start, e.end);
              writers.push_back(app);
            }
            return false;
          });
        }
        const TensorSelection whole{
            port.tensor, zspace::Range(zspace::Point(port.start), zspace::Point(port.end))};
        check_port(ctx, v, interned_name(port.name_id), port.position, whole, parts, writers, out);
        return true;
      });
    }
  }

 private:
  void check_port(const CheckContext& ctx, const OperationView& op, const std::string& name,
                  std::uint32_t position, const TensorSelection& whole,
                  const zspace::RangeList& parts, const std::vector<ApplicationId>& writers,
                  std::vector<Issue>& out) const {
    if (whole.range.rank() > kMaxCoverRank) return;
    std::optional<CoverDefect> defect = find_cover_defect(whole.range, parts);
    if (!defect) return;
    std::string where = fmt::format("outputs.{}[{}]", name, position);
    TensorView tensor = ctx.graph.tensor(whole.tensor);
    std::string tensor_name(tensor.display_name());
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
      if (parts.contains(i, defect->point)) {
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
