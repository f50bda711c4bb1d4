// application-index-partition: the IPFIndex boxes of an operation's applications partition the
// operation's IPFIndex exactly — every index point in exactly one box, no box outside.
//
// Checked per operation on the packed boxes (box_cover.h): a grid in O(n·r·log k), anything else
// by signed corner counting in O(n·2^r·log n); the Java original only compared the sum of sizes,
// which accepts an overlap plus an equal gap.
//
//   error[application-index-partition]: Application index boxes do not partition the
//   operation index
//     index point (5, 0) of op:add is covered by 2 applications
#include <fmt/format.h>

#include "tapestry/ir/box_cover.h"
#include "tapestry/ir/constraints.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/json.h"

namespace tapestry::ir::constraints {

namespace {

constexpr std::string_view kRequires[] = {"node-reference", "tag-schema"};

class ApplicationIndexPartition final : public Constraint {
 public:
  std::string_view name() const override { return "application-index-partition"; }
  std::string_view description() const override {
    return "The applications' index boxes exactly partition their operation's index.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    zspace::RangeList boxes;
    for (OperationId op : ctx.graph.operations()) {
      OperationView v = ctx.graph.operation(op);
      const std::optional<zspace::Range> index = v.ipf_index();
      std::span<const ApplicationId> apps = v.applications();
      if (!index) {
        if (!apps.empty()) {
          report(ctx, op, "Operation with applications has no IPFIndex",
                 fmt::format("{} has {} applications but no index to partition", v.display_name(),
                             apps.size()),
                 out);
        }
        continue;
      }
      if (apps.empty()) {
        report(ctx, op, "Operation has no applications",
               fmt::format("nothing computes {} (index {})", v.display_name(), *index), out);
        continue;
      }
      if (collect_boxes(ctx, v, *index, boxes, out)) check_cover(ctx, v, *index, boxes, out);
    }
  }

 private:
  // The applications' boxes; false (with issues) when one is missing, of the wrong rank, or
  // outside the operation's index. Read raw: a Range is built only to describe a problem.
  bool collect_boxes(const CheckContext& ctx, const OperationView& op, const zspace::Range& index,
                     zspace::RangeList& boxes, std::vector<Issue>& out) const {
    boxes.clear(index.rank());
    boxes.reserve(op.applications().size());
    bool ok = true;
    for (ApplicationId app : op.applications()) {
      const auto corners = ctx.graph.node(app).ipf_index_corners();
      if (corners && inside(index, corners->start, corners->end)) {
        boxes.push_back(corners->start, corners->end);
        continue;
      }
      const std::optional<zspace::Range> box = ctx.graph.node(app).ipf_index();
      std::string problem;
      if (!box) {
        problem = "has no IPFIndex";
      } else if (box->rank() != index.rank()) {
        problem = fmt::format("has an index {} of rank {}, but {}'s index {} has rank {}", *box,
                              box->rank(), op.display_name(), index, index.rank());
      } else if (!index.contains(*box)) {
        problem =
            fmt::format("has an index {} outside {}'s index {}", *box, op.display_name(), index);
      }
      if (problem.empty()) {
        boxes.push_back(*box);
        continue;
      }
      ok = false;
      Issue issue = make_issue("Application index box is not part of its operation's index",
                               fmt::format("application {}", problem));
      issue.contexts.push_back(ctx.node_context(app, ".tags"));
      issue.contexts.push_back(ctx.node_context(op.id()));
      out.push_back(std::move(issue));
    }
    return ok;
  }

  // [start, end) has the rank of `index` and lies inside it (as Range::contains).
  static bool inside(const zspace::Range& index, std::span<const std::int64_t> start,
                     std::span<const std::int64_t> end) {
    if (start.size() != index.rank()) return false;
    for (std::size_t d = 0; d < start.size(); ++d) {
      if (start[d] < index.start()[d] || end[d] > index.end()[d]) return false;
    }
    return true;
  }

  void check_cover(const CheckContext& ctx, const OperationView& op, const zspace::Range& index,
                   const zspace::RangeList& boxes, std::vector<Issue>& out) const {
    if (index.rank() > kMaxCoverRank) {
      report(ctx, op.id(), "Index rank too high to check the partition",
             fmt::format("rank {} > {}", index.rank(), kMaxCoverRank), out, Severity::kWarning);
      return;
    }
    std::optional<CoverDefect> defect = find_cover_defect(index, boxes);
    if (!defect) return;
    std::string message =
        defect->count == 0 ? fmt::format("index point {} of {} is not covered by any application",
                                         defect->point, op.display_name())
                           : fmt::format("index point {} of {} is covered by {} applications",
                                         defect->point, op.display_name(), defect->count);
    Issue issue =
        make_issue("Application index boxes do not partition the operation index", message);
    issue.params = {{"point", zspace::to_json(defect->point)},
                    {"count", defect->count},
                    {"index", zspace::to_json(index)}};
    issue.contexts.push_back(ctx.node_context(op.id()));
    std::span<const ApplicationId> apps = op.applications();
    for (std::size_t i = 0; i < apps.size(); ++i) {
      if (boxes.contains(i, defect->point))
        issue.contexts.push_back(ctx.node_context(apps[i], ".tags"));
    }
    out.push_back(std::move(issue));
  }

  void report(const CheckContext& ctx, NodeId node, std::string summary, std::string message,
              std::vector<Issue>& out, Severity severity = Severity::kError) const {
    Issue issue = make_issue(std::move(summary), std::move(message), severity);
    issue.contexts.push_back(ctx.node_context(node));
    out.push_back(std::move(issue));
  }
};

}  // namespace

std::shared_ptr<const Constraint> application_index_partition() {
  return std::make_shared<ApplicationIndexPartition>();
}

}  // namespace tapestry::ir::constraints
