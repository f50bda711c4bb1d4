// operation-reduction: a reduction dimension is summed (max-ed, …) away, so no output may depend
// on it: its column is zero in every output IPF.
//
//   error[operation-reduction]: Output depends on a reduction dimension
//     outputs.result[0] moves along "in" (column 2 of its IPF is [1, 0]), but "in" is a sum
//     reduction
#include <fmt/format.h>

#include "tapestry/ir/constraints.h"

namespace tapestry::ir::constraints {

namespace {

constexpr std::string_view kRequires[] = {"operation-index-names", "operation-ipf-agreement"};

class OperationReduction final : public Constraint {
 public:
  std::string_view name() const override { return "operation-reduction"; }
  std::string_view description() const override {
    return "Reduction dimensions map to a zero column of every output IPF.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (OperationId op : ctx.graph.operations()) {
      OperationView v = ctx.graph.operation(op);
      const IpfSignature* sig = v.ipf_signature();
      if (!sig || v.body().reductions.empty()) continue;
      for (std::size_t dim = 0; dim < v.index_rank(); ++dim) {
        std::optional<Monoid> monoid = v.reduction(dim);
        if (!monoid) continue;
        for (const auto& e : sig->outputs.entries()) {
          const zspace::AffineMap& map = e.value.map();
          if (dim >= map.in_rank() || map.is_zero_column(dim)) continue;
          std::string column;
          for (std::size_t r = 0; r < map.out_rank(); ++r) {
            column += fmt::format("{}{}", r == 0 ? "" : ", ", map.at(r, dim));
          }
          std::string where = fmt::format("outputs.{}[{}]", e.name, e.position);
          Issue issue = make_issue(
              "Output depends on a reduction dimension",
              fmt::format("{} moves along \"{}\" (column {} of its IPF is [{}]), but \"{}\" is a "
                          "{} reduction",
                          where, v.index_name(dim), dim, column, v.index_name(dim),
                          monoid_name(*monoid)));
          issue.params = {{"dim", v.index_name(dim)}, {"port", where}};
          issue.contexts.push_back(
              ctx.node_context(op, fmt::format(".tags['{}'].{}", kIpfSignatureTagUrl, where)));
          out.push_back(std::move(issue));
        }
      }
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> operation_reduction() {
  return std::make_shared<OperationReduction>();
}

}  // namespace tapestry::ir::constraints
