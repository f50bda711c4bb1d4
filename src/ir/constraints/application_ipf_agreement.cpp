// application-ipf-agreement: an application's selections are its operation's IPFs applied to
// the application's sub-box — same ports as the operation, the same tensors, and
// `selection == IPF(sub-box)` for every input and output.
//
//   error[application-ipf-agreement]: Application selection differs from IPF(sub-box)
//     inputs.tensors[0]: the IPF maps the sub-box zr[5:10, 0:5] to zr[5:10, 0:5], but the
//     selection is zr[5:10, 0:4]
#include <fmt/format.h>

#include "port_match.h"
#include "projection.h"
#include "tapestry/ir/constraints.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/json.h"

namespace tapestry::ir::constraints {

namespace {

constexpr std::string_view kRequires[] = {"node-reference", "operation-ipf-agreement"};

class ApplicationIpfAgreement final : public Constraint {
 public:
  std::string_view name() const override { return "application-ipf-agreement"; }
  std::string_view description() const override {
    return "Application selections equal IPF(sub-box), port by port, on the operation's tensors.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  // Per operation: its entries and IPFs are gathered once, then each application is checked
  // on raw words (no Range built). Anything that does not match goes to the detailed check,
  // which says what is wrong.
  void check(const CheckContext& ctx, std::vector<Issue>& out) const override {
    OpSide inputs, outputs;
    for (OperationId op_id : ctx.graph.operations()) {
      OperationView op = ctx.graph.operation(op_id);
      if (op.applications().empty()) continue;
      const IpfSignature* sig = op.ipf_signature();
      const std::optional<zspace::Range> op_index = op.ipf_index();
      if (!sig || !op_index) {
        for (ApplicationId app : op.applications()) report_no_signature(ctx, app, op, out);
        continue;
      }
      inputs.gather(op.inputs(), sig->inputs);
      outputs.gather(op.outputs(), sig->outputs);
      for (ApplicationId app_id : op.applications()) {
        ApplicationView app = ctx.graph.application(app_id);
        const auto corners = app.ipf_index_corners();
        if (!corners || corners->start.size() != op_index->rank()) {
          continue;  // application-index-partition
        }
        if (inputs.agrees(app.inputs(), *corners) && outputs.agrees(app.outputs(), *corners)) {
          continue;
        }
        const zspace::Range box = *app.ipf_index();
        check_side(ctx, app, op, box, "inputs", app.inputs(), op.inputs(), sig->inputs, out);
        check_side(ctx, app, op, box, "outputs", app.outputs(), op.outputs(), sig->outputs, out);
      }
    }
  }

 private:
  // One side (inputs or outputs) of an operation, flattened for the fast path.
  struct OpSide {
    std::vector<SelectionMap::RawEntry> entries;
    std::vector<FlatIpf> ipfs;

    void gather(const SelectionMap& sels, const IpfMap& sig) {
      entries.clear();
      ipfs.clear();
      sels.for_each_raw([&](const SelectionMap::RawEntry& e) {
        entries.push_back(e);
        return true;
      });
      for (const auto& e : sig.entries()) ipfs.emplace_back(e.value);
    }

    // Same ports and tensors as the operation, and every selection == IPF(box).
    bool agrees(const SelectionMap& sels, const NodeView::IndexCorners& box) const {
      if (sels.size() != entries.size() || ipfs.size() != entries.size()) return false;
      std::size_t i = 0;
      bool ok = true;
      sels.for_each_raw([&](const SelectionMap::RawEntry& e) {
        const SelectionMap::RawEntry& o = entries[i];
        ok = e.name_id == o.name_id && e.position == o.position && e.tensor == o.tensor &&
             ipfs[i].projects_to(box.start, box.end, e.start, e.end) == true;
        ++i;
        return ok;
      });
      return ok;
    }
  };

  void report_no_signature(const CheckContext& ctx, ApplicationId app, const OperationView& op,
                           std::vector<Issue>& out) const {
    Issue issue = make_issue("Application of an operation without an IPF signature",
                             "its selections cannot be checked, nor the operation sharded");
    issue.contexts.push_back(ctx.node_context(app));
    issue.contexts.push_back(ctx.node_context(op.id(), ".tags"));
    out.push_back(std::move(issue));
  }

  void check_side(const CheckContext& ctx, const ApplicationView& app, const OperationView& op,
                  const zspace::Range& box, std::string_view side, const SelectionMap& sels,
                  const SelectionMap& op_sels, const IpfMap& ipfs, std::vector<Issue>& out) const {
    for (std::string& m :
         port_mismatches(sels, op_sels, side, "application selection", "operation selection")) {
      add(ctx, app, op, fmt::format(".body.{}", side),
          "Application ports differ from its operation's", std::move(m), out);
    }
    for (const auto& e : sels.entries()) {
      auto op_list = op_sels.list(e.name);
      auto ipf_list = ipfs.list(e.name);
      if (e.position >= op_list.size() || e.position >= ipf_list.size()) continue;
      // The common, valid case allocates nothing: names are formatted only for an issue.
      auto where = [&] { return fmt::format("{}.{}[{}]", side, e.name, e.position); };
      if (e.value.tensor != op_list[e.position].tensor) {
        add(ctx, app, op, ".body." + where() + ".tensorId",
            "Application selects a different tensor than its operation",
            fmt::format("{}: the application names {}, the operation {}", where(),
                        ctx.graph.key(e.value.tensor), ctx.graph.key(op_list[e.position].tensor)),
            out);
        continue;
      }
      std::string message;
      try {
        zspace::Range projected = ipf_list[e.position].apply(box);
        if (projected == e.value.range) continue;
        message = fmt::format("{}: the IPF maps the sub-box {} to {}, but the selection is {}",
                              where(), box, projected, e.value.range);
      } catch (const Error& err) {
        message = fmt::format("{}: {}", where(), err.what());
      }
      add(ctx, app, op, ".body." + where() + ".range",
          "Application selection differs from IPF(sub-box)", std::move(message), out);
    }
  }

  void add(const CheckContext& ctx, const ApplicationView& app, const OperationView& op,
           const std::string& path, std::string summary, std::string message,
           std::vector<Issue>& out) const {
    Issue issue = make_issue(std::move(summary), std::move(message));
    issue.contexts.push_back(ctx.node_context(app.id(), path));
    issue.contexts.push_back(ctx.node_context(op.id()));
    out.push_back(std::move(issue));
  }
};

}  // namespace

std::shared_ptr<const Constraint> application_ipf_agreement() {
  return std::make_shared<ApplicationIpfAgreement>();
}

}  // namespace tapestry::ir::constraints
