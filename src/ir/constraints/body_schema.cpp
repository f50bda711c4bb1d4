// body-schema: node bodies match the loom schema of their type.
//
// Bodies that matched were read into typed values (and are valid by construction); the reader
// kept the others verbatim as Opaque nodes, which this constraint re-checks with the hand-written
// schema (body_schema.h) to list every problem with its JSON path:
//
//   error[body-schema]: Node body does not match the loom:Tensor schema
//     $.nodes[?(@.id=='t0')].body.range.end[0]: integer 99999999999999999999 does not fit in int64
#include <fmt/format.h>

#include "body_schema.h"
#include "tapestry/ir/constraints.h"

namespace tapestry::ir::constraints {

namespace {

class BodySchema final : public Constraint {
 public:
  std::string_view name() const override { return "body-schema"; }
  std::string_view description() const override {
    return "Node bodies match the loom schema of their node type.";
  }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (NodeId id : ctx.graph.opaque_nodes()) {
      const OpaqueBody& opaque = ctx.graph.opaque(id);
      std::optional<NodeKind> kind = node_kind_from_type(opaque.type);
      if (!kind) continue;  // unknown types are node-type's business
      std::string summary = fmt::format("Node body does not match the {} schema",
                                        node_type_url(*kind, /*short_form=*/true));
      std::vector<SchemaProblem> problems = check_node_body(*kind, opaque.body);
      if (problems.empty()) {  // the reader saw something the schema walk does not (rare)
        problems.push_back(
            {"", opaque.problem.empty() ? "body could not be read" : opaque.problem});
      }
      for (SchemaProblem& p : problems) {
        Issue issue = make_issue(summary, fmt::format("body{}: {}", p.path, p.message));
        IssueContext context = ctx.node_context(id, ".body" + p.path);
        context.data = std::move(p.value);
        issue.contexts.push_back(std::move(context));
        out.push_back(std::move(issue));
      }
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> body_schema() {
  return std::make_shared<BodySchema>();
}

}  // namespace tapestry::ir::constraints
