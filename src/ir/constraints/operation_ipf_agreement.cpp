// operation-ipf-agreement: an operation's selections are the projections of its index through
// its IPF signature — same port names and list lengths, IPF ranks matching the index and the
// tensor, and `selection == IPF(index)` for every input and output.
//
//   error[operation-ipf-agreement]: Operation selection differs from IPF(index)
//     inputs.tensors[1]: the IPF maps index zr[0:10, 0:5] to zr[200:210, 50:55],
//     but the selection is zr[200:210, 50:56]
#include <fmt/format.h>

#include "port_match.h"
#include "tapestry/ir/constraints.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/json.h"

namespace tapestry::ir::constraints {

namespace {

constexpr std::string_view kRequires[] = {"tag-schema"};

class OperationIpfAgreement final : public Constraint {
 public:
  std::string_view name() const override { return "operation-ipf-agreement"; }
  std::string_view description() const override {
    return "Operation selections equal IPF(index) for every input and output.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    for (OperationId op : ctx.graph.operations()) {
      OperationView v = ctx.graph.operation(op);
      const std::optional<zspace::Range> index = v.ipf_index();
      const IpfSignature* sig = v.ipf_signature();
      if (!index || !sig) continue;  // operation-ipf-present
      check_side(ctx, op, *index, "inputs", v.inputs(), sig->inputs, out);
      check_side(ctx, op, *index, "outputs", v.outputs(), sig->outputs, out);
    }
  }

 private:
  void check_side(const CheckContext& ctx, OperationId op, const zspace::Range& index,
                  std::string_view side, const SelectionMap& sels, const IpfMap& ipfs,
                  std::vector<Issue>& out) const {
    for (std::string& m : port_mismatches(sels, ipfs, side, "selection", "IPF")) {
      Issue issue = make_issue("Operation ports differ from its IPF signature", std::move(m));
      issue.contexts.push_back(ctx.node_context(op, fmt::format(".body.{}", side)));
      out.push_back(std::move(issue));
    }
    for (const auto& e : sels.entries()) {
      auto list = ipfs.list(e.name);
      if (e.position >= list.size()) continue;
      std::string where = fmt::format("{}.{}[{}]", side, e.name, e.position);
      if (auto problem = mismatch(list[e.position], index, e.value.range, where)) {
        Issue issue = make_issue(problem->first, problem->second);
        issue.params = {{"port", where},
                        {"selection", zspace::to_json(e.value.range)},
                        {"ipf", zspace::to_json(list[e.position])}};
        issue.contexts.push_back(ctx.node_context(op, ".body." + where));
        out.push_back(std::move(issue));
      }
    }
  }

  // (summary, message) when `selection` is not IPF(index).
  static std::optional<std::pair<std::string, std::string>> mismatch(
      const zspace::IndexProjection& ipf, const zspace::Range& index,
      const zspace::Range& selection, const std::string& where) {
    if (ipf.index_rank() != index.rank()) {
      return std::pair{
          std::string("IPF rank differs from the index rank"),
          fmt::format("{}: the IPF takes a rank-{} index, the operation index {} has rank {}",
                      where, ipf.index_rank(), index, index.rank())};
    }
    if (ipf.tensor_rank() != selection.rank()) {
      return std::pair{std::string("IPF rank differs from the selection rank"),
                       fmt::format("{}: the IPF gives rank-{} boxes, the selection {} has rank {}",
                                   where, ipf.tensor_rank(), selection, selection.rank())};
    }
    try {
      zspace::Range projected = ipf.apply(index);
      if (projected == selection) return std::nullopt;
      return std::pair{std::string("Operation selection differs from IPF(index)"),
                       fmt::format("{}: the IPF maps index {} to {}, but the selection is {}",
                                   where, index, projected, selection)};
    } catch (const Error& e) {
      return std::pair{std::string("IPF cannot be applied to the index"),
                       fmt::format("{}: {}", where, e.what())};
    }
  }
};

}  // namespace

std::shared_ptr<const Constraint> operation_ipf_agreement() {
  return std::make_shared<OperationIpfAgreement>();
}

}  // namespace tapestry::ir::constraints
