// operation-index-names: Tapestry's index names and reductions agree with the index.
//
// `indexNames` must have one distinct name per dimension of the IPFIndex; every key of
// `reductions` must name an index dimension (explicit, or the default d0, d1, …):
//
//   error[operation-index-names]: Reduction of an unknown index dimension
//     reductions names "k", but the index dimensions are batch, out, in
#include <fmt/format.h>

#include <set>

#include "tapestry/ir/constraints.h"

namespace tapestry::ir::constraints {

namespace {

constexpr std::string_view kRequires[] = {"tag-schema"};

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

class OperationIndexNames final : public Constraint {
 public:
  std::string_view name() const override { return "operation-index-names"; }
  std::string_view description() const override {
    return "indexNames has one distinct name per index dimension; reductions name index dims.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (OperationId op : ctx.graph.operations()) {
      OperationView v = ctx.graph.operation(op);
      const OperationBody& body = v.body();
      const std::optional<zspace::Range> index = v.ipf_index();
      if (!body.index_names.empty() && index && body.index_names.size() != index->rank()) {
        report(
            ctx, op, ".body.indexNames", "Index names do not match the index rank",
            fmt::format("{} names for an index of rank {}", body.index_names.size(), index->rank()),
            out);
      }
      std::set<std::string_view> seen;
      for (const std::string& n : body.index_names) {
        if (!seen.insert(n).second) {
          report(ctx, op, ".body.indexNames", "Duplicate index name",
                 fmt::format("\"{}\" names two index dimensions", n), out);
        }
      }
      std::vector<std::string> names = v.index_names();
      for (const Reduction& r : body.reductions) {
        if (v.index_dim(r.dim)) continue;
        report(ctx, op, ".body.reductions." + r.dim, "Reduction of an unknown index dimension",
               fmt::format("reductions names \"{}\", but the index dimensions are {}", r.dim,
                           names.empty() ? std::string("(none)") : join(names)),
               out);
      }
    }
  }

 private:
  void report(const CheckContext& ctx, OperationId op, const std::string& path, std::string summary,
              std::string message, std::vector<Issue>& out) const {
    Issue issue = make_issue(std::move(summary), std::move(message));
    issue.contexts.push_back(ctx.node_context(op, path));
    out.push_back(std::move(issue));
  }
};

}  // namespace

std::shared_ptr<const Constraint> operation_index_names() {
  return std::make_shared<OperationIndexNames>();
}

}  // namespace tapestry::ir::constraints
