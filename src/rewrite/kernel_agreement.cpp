// operation-kernel-agreement: each operation against what derive_operation derives for it.
//
// One issue per difference, each naming the field ("inputs.bias", "index", "stages/1/indexMap")
// with the graph's value and the derived one in params:
//
//   error[operation-kernel-agreement]: Operation IPF differs from its kernel's
//     inputs.bias: the graph's IPF is ipf([[0, 0, 0]] + (0), shape (1)); linear derives
//     ipf([[0, 1, 0]] + (0), shape (1))
//     params:
//       derived: {"affineMap": {…}, "shape": [1]}
//       field: inputs.bias
//       form: kernel
//       graph: {"affineMap": {…}, "shape": [1]}
//       kernel: linear
//       operation: Y/linear
#include "tapestry/rewrite/kernel_agreement.h"

#include <fmt/format.h>

#include <algorithm>

#include "derive_operation.h"
#include "mixed_precision.h"
#include "spec_transforms.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/json.h"

namespace tapestry::rewrite {

namespace {

using detail::DerivedOperation;
using nlohmann::json;

constexpr std::string_view kRequires[] = {"body-schema", "node-reference", "tag-schema",
                                          "operation-index-names", "operation-ipf-agreement"};

// The JSON path (below the node) of the IPFIndex tag, or of one port's IPF in the IPFSignature.
std::string index_tag_path() {
  return fmt::format(".tags['{}']", ir::kIpfIndexTagUrl);
}
std::string ipf_tag_path(std::string_view side, std::string_view port) {
  return fmt::format(".tags['{}'].{}.{}[0]", ir::kIpfSignatureTagUrl, side, port);
}

json reductions_json(std::vector<ir::Reduction> reductions) {
  std::sort(reductions.begin(), reductions.end(),
            [](const ir::Reduction& a, const ir::Reduction& b) { return a.dim < b.dim; });
  json out = json::object();
  for (const ir::Reduction& r : reductions) out[r.dim] = ir::monoid_name(r.monoid);
  return out;
}

// The issues of one operation.
class OperationReport {
 public:
  OperationReport(const ir::CheckContext& ctx, ir::OperationId op, std::vector<ir::Issue>& out)
      : ctx_(ctx), op_(op), view_(ctx.graph.operation(op)), out_(out) {}

  void set_form(std::string form) { form_ = std::move(form); }

  // An issue about `field`, with the graph's and the derived value.
  void differs(std::string summary, const std::string& field, std::string message, json graph_value,
               json derived_value, std::string_view path) {
    json params = base_params();
    params["field"] = field;
    params["graph"] = std::move(graph_value);
    params["derived"] = std::move(derived_value);
    add(std::move(summary), field + ": " + message, std::move(params), path);
  }

  void add(std::string summary, std::string message, json params, std::string_view path,
           ir::Severity severity = ir::Severity::kError) {
    ir::Issue issue{.type = std::string(kOperationKernelAgreement),
                    .severity = severity,
                    .summary = std::move(summary),
                    .message = std::move(message),
                    .params = std::move(params),
                    .contexts = {ctx_.node_context(op_, path)}};
    out_.push_back(std::move(issue));
  }

  [[nodiscard]] json base_params() const {
    json params = {{"operation", operation_name(ctx_.graph, op_)}, {"kernel", view_.kernel()}};
    if (!form_.empty()) params["form"] = form_;
    return params;
  }

  [[nodiscard]] const ir::OperationView& view() const { return view_; }
  [[nodiscard]] const ir::Graph& graph() const { return ctx_.graph; }

 private:
  const ir::CheckContext& ctx_;
  ir::OperationId op_;
  ir::OperationView view_;
  std::vector<ir::Issue>& out_;
  std::string form_;
};

void compare_index(OperationReport& r, const DerivedOperation& d) {
  const ir::OperationView& v = r.view();
  const std::string& kernel = d.spec.kernel;
  if (const std::optional<zspace::Range> index = v.ipf_index();
      index && !(*index == d.spec.index)) {
    r.differs(
        "Operation index differs from its kernel's", "index",
        fmt::format("the graph's IPFIndex is {}; {} derives {}", *index, kernel, d.spec.index),
        zspace::to_json(*index), zspace::to_json(d.spec.index), index_tag_path());
  }
  // Names are recorded when the operation states them or has an index (then d0, d1, …).
  const std::vector<std::string> names = v.index_names();
  const bool recorded = !v.body().index_names.empty() || v.has_ipf_index();
  if (recorded && names != d.spec.index_names) {
    r.differs("Operation index names differ from its kernel's", "indexNames",
              fmt::format("the graph names the index dims ({}); {} derives ({})",
                          fmt::join(names, ", "), kernel, fmt::join(d.spec.index_names, ", ")),
              names, d.spec.index_names, ".body.indexNames");
  }
  const json graph_reductions = reductions_json(v.body().reductions);
  const json derived_reductions = reductions_json(d.spec.reductions);
  if (graph_reductions != derived_reductions) {
    r.differs("Operation reductions differ from its kernel's", "reductions",
              fmt::format("the graph reduces {}; {} derives {}", graph_reductions.dump(), kernel,
                          derived_reductions.dump()),
              graph_reductions, derived_reductions, ".body.reductions");
  }
}

// The port names of `derived` against the graph's selections, then each port's IPF (or, for an
// operation without an IPFSignature, its selection against IPF(index)).
void compare_ports(OperationReport& r, const DerivedOperation& d, std::string_view side,
                   const std::vector<detail::Port>& derived, const ir::SelectionMap& selections,
                   const ir::IpfMap* ipfs) {
  std::vector<std::string> graph_names, derived_names;
  for (const auto& e : selections.entries()) graph_names.push_back(e.name);
  for (const detail::Port& p : derived) derived_names.push_back(p.name);
  std::sort(derived_names.begin(), derived_names.end());
  if (graph_names != derived_names) {
    r.differs("Operation ports differ from its kernel's", std::string(side),
              fmt::format("the graph has ({}); {} derives ({})", fmt::join(graph_names, ", "),
                          d.spec.kernel, fmt::join(derived_names, ", ")),
              graph_names, derived_names, fmt::format(".body.{}", side));
    return;
  }
  for (const detail::Port& p : derived) {
    const std::string field = fmt::format("{}.{}", side, p.name);
    if (ipfs != nullptr && !ipfs->list(p.name).empty()) {
      const zspace::IndexProjection& ipf = ipfs->list(p.name)[0];
      if (ipf == p.ipf) continue;
      r.differs("Operation IPF differs from its kernel's", field,
                fmt::format("the graph's IPF is {}; {} derives {}", ipf, d.spec.kernel, p.ipf),
                zspace::to_json(ipf), zspace::to_json(p.ipf), ipf_tag_path(side, p.name));
      continue;
    }
    const zspace::Range& selection = selections.list(p.name)[0].range;
    const zspace::Range expected = p.ipf.apply(d.spec.index);
    if (selection == expected) continue;
    r.differs(
        "Operation selection differs from its kernel's", field,
        fmt::format("the graph selects {}; {} derives {}", selection, d.spec.kernel, expected),
        zspace::to_json(selection), zspace::to_json(expected), ".body." + field);
  }
}

void compare_output_types(OperationReport& r, const DerivedOperation& d) {
  for (std::size_t j = 0; j < d.spec.outputs.size(); ++j) {
    const ir::TensorView t = r.graph().tensor(d.spec.outputs[j].tensor);
    const metakernel::TensorType& want = d.output_types[j];
    const std::string_view want_dtype = ir::dtype_name(want.dtype);
    // A float32 tensor may hold a 16-bit output and the reverse (mixed_precision.h).
    const std::optional<ir::DType> stored = t.dtype().known();
    if (stored && detail::stores_as(*stored, want.dtype) && t.range().shape() == want.shape())
      continue;
    const json graph_type = {{"dtype", t.dtype().name()},
                             {"shape", zspace::to_json(t.range().shape())}};
    const json derived_type = {{"dtype", want_dtype}, {"shape", zspace::to_json(want.shape())}};
    r.differs("Operation output type differs from its kernel's",
              fmt::format("outputs.{}", d.spec.outputs[j].name),
              fmt::format("tensor {} is {} {}; {} derives {} {}", t.display_name(), t.dtype(),
                          metakernel::shape_string(t.range().shape()), d.spec.kernel, want_dtype,
                          metakernel::shape_string(want.shape())),
              graph_type, derived_type, ".body.outputs");
  }
}

json ports_json(const std::vector<FusedPort>& ports) {
  json out = json::array();
  for (const FusedPort& p : ports) {
    json j = {{"name", p.name}, {"source", p.source}, {"ipf", zspace::to_json(p.ipf)}};
    if (p.dtype) j["dtype"] = p.dtype->name();
    out.push_back(std::move(j));
  }
  return out;
}

// The derived ports with each dtype the graph's where the graph may store it so: float32 for a
// derived bf16/f16 or the reverse (mixed_precision.h).
std::vector<FusedPort> as_stored(const std::vector<FusedPort>& graph,
                                 std::vector<FusedPort> derived) {
  for (std::size_t k = 0; k < graph.size() && k < derived.size(); ++k) {
    const std::optional<ir::DType> g = graph[k].dtype ? graph[k].dtype->known() : std::nullopt;
    const std::optional<ir::DType> e = derived[k].dtype ? derived[k].dtype->known() : std::nullopt;
    if (g && e && detail::stores_as(*g, *e)) derived[k].dtype = graph[k].dtype;
  }
  return derived;
}

// A fused operation's stages, field by field, against the derived chain's; a stage that is
// itself fused (a fused consumer fused again) has its own stages compared under `path`/i/.
void compare_stages(OperationReport& r, const json& graph_params, const json& derived_params,
                    const std::string& path) {
  const std::vector<FusedStage> graph_stages = fused_stages(graph_params);
  const std::vector<FusedStage> derived_stages = fused_stages(derived_params);
  for (std::size_t i = 0; i < graph_stages.size() && i < derived_stages.size(); ++i) {
    const FusedStage& g = graph_stages[i];
    const FusedStage& e = derived_stages[i];
    const std::string at = fmt::format("{}stages/{}", path, i);
    const std::pair<std::string_view, std::pair<json, json>> fields[] = {
        {"indexNames", {g.index_names, e.index_names}},
        {"reductions", {reductions_json(g.reductions), reductions_json(e.reductions)}},
        {"indexMap", {zspace::to_json(g.index_map), zspace::to_json(e.index_map)}},
        {"inputs", {ports_json(g.inputs), ports_json(as_stored(g.inputs, e.inputs))}},
        {"outputs", {ports_json(g.outputs), ports_json(as_stored(g.outputs, e.outputs))}}};
    for (const auto& [name, values] : fields) {
      if (values.first == values.second) continue;
      r.differs("Fused stage differs from its kernel's", fmt::format("{}/{}", at, name),
                fmt::format("stage {} ({}): the graph has {}; {} derives {}", i, g.label,
                            values.first.dump(), g.kernel, values.second.dump()),
                values.first, values.second, ".body.params");
    }
    if (g.kernel == kFusedKernel) compare_stages(r, g.params, e.params, at + "/params/");
  }
}

// The kernels that read `t` in operation `reader`: its kernel, or the stages of a fused one that
// take `t`.
std::vector<std::string> reading_kernels(const ir::Graph& graph, ir::OperationId reader,
                                         ir::TensorId t) {
  const ir::OperationView v = graph.operation(reader);
  if (v.kernel() != kFusedKernel) return {v.kernel()};
  std::vector<std::string> out;
  try {
    for (const FusedStage& stage : fused_stages(v.params())) {
      for (const FusedPort& port : stage.inputs) {
        const auto list = v.inputs().list(port.source);
        if (!port.source.empty() && !list.empty() && list[0].tensor == t) {
          out.push_back(stage.kernel);
        }
      }
    }
  } catch (const Error&) {
    // Malformed stages: that operation's own issue says so.
  }
  return out;
}

// A partial operation (a reduction dim restricted to a sub-range) writes partial results: only
// the kernels that combine partials — the monoid's elementwise kernel, or `reduce` when the
// operation is also block split — may read them.
void check_partial_readers(OperationReport& r, const DerivedOperation& d) {
  if (!d.partial) return;
  std::vector<std::string> allowed = {"reduce"};
  if (auto combine = detail::combine_kernel(*d.partial)) allowed.emplace_back(*combine);
  const auto fine = [&](const std::string& k) {
    return std::find(allowed.begin(), allowed.end(), k) != allowed.end();
  };
  const auto report = [&](const std::string& what) {
    r.differs("Partial reduction is not combined", "index",
              fmt::format("the IPFIndex {} restricts a {} reduction of {}'s index {}, so the "
                          "operation computes partial results; only {} may combine them, but {}",
                          d.spec.index, ir::monoid_name(*d.partial), d.spec.kernel, *d.whole_index,
                          fmt::join(allowed, " or "), what),
              zspace::to_json(d.spec.index), zspace::to_json(*d.whole_index), index_tag_path());
  };
  if (d.spec.kernel == kFusedKernel) {
    const std::vector<FusedStage> stages = fused_stages(d.spec.params);
    if (!fine(stages[1].kernel)) report(fmt::format("stage 1 is {}", stages[1].kernel));
    return;
  }
  for (const detail::Port& out : d.spec.outputs) {
    const auto readers = r.graph().consumers(out.tensor);
    const std::string name = r.graph().tensor(out.tensor).label();
    if (readers.empty()) report(fmt::format("nothing reads {}", name));
    for (ir::OperationId reader : readers) {
      for (const std::string& k : reading_kernels(r.graph(), reader, out.tensor)) {
        if (!fine(k)) {
          report(fmt::format("{} reads {} ({})", operation_name(r.graph(), reader), name, k));
        }
      }
    }
  }
}

class OperationKernelAgreement final : public ir::Constraint {
 public:
  explicit OperationKernelAgreement(const metakernel::SignatureRegistry& signatures)
      : signatures_(signatures) {}

  std::string_view name() const override { return kOperationKernelAgreement; }
  std::string_view description() const override {
    return "Operation IPFs, index, reductions and output types are what the kernel derives.";
  }
  std::span<const std::string_view> requires_passed() const override { return kRequires; }

  void check(const ir::CheckContext& ctx, std::vector<ir::Issue>& out) const override {
    for (ir::OperationId op : ctx.graph.operations()) check_operation(ctx, op, out);
  }

 private:
  void check_operation(const ir::CheckContext& ctx, ir::OperationId op,
                       std::vector<ir::Issue>& out) const {
    OperationReport r(ctx, op, out);
    const std::string& kernel = r.view().kernel();
    if (kernel != kFusedKernel && signatures_.find(kernel) == nullptr) {
      // A namespaced name ("op:add") is a kernel of another system: not checkable, not an error.
      const bool foreign = kernel.find(':') != std::string::npos;
      json params = r.base_params();
      params["derivable"] = false;
      r.add("Operation's kernel is unknown",
            fmt::format("no kernel '{}' is loaded{}, so its IPFs cannot be checked", kernel,
                        foreign ? " (a kernel of another namespace)"
                                : " (--kernels DIR adds kernel files)"),
            std::move(params), ".body.kernel",
            foreign ? ir::Severity::kWarning : ir::Severity::kError);
      return;
    }
    // Deriving evaluates the kernel's expressions and IPF arithmetic (overflow-checked): any
    // Error there is this operation's issue, never an exception out of validate().
    try {
      const DerivedOperation d = detail::derive_operation(ctx.graph, op, signatures_);
      r.set_form(d.form);
      compare_index(r, d);
      compare_ports(r, d, "inputs", d.spec.inputs, r.view().inputs(),
                    r.view().ipf_signature() ? &r.view().ipf_signature()->inputs : nullptr);
      compare_ports(r, d, "outputs", d.spec.outputs, r.view().outputs(),
                    r.view().ipf_signature() ? &r.view().ipf_signature()->outputs : nullptr);
      compare_output_types(r, d);
      if (kernel == kFusedKernel) compare_stages(r, r.view().params(), d.spec.params, "");
      check_partial_readers(r, d);
    } catch (const Error& e) {
      json params = r.base_params();
      params["derivable"] = false;
      params["reason"] = e.what();
      r.add("Operation cannot be derived from its kernel", e.what(), std::move(params), ".body");
    }
  }

  const metakernel::SignatureRegistry& signatures_;
};

}  // namespace

std::shared_ptr<const ir::Constraint> operation_kernel_agreement(
    const metakernel::SignatureRegistry& signatures) {
  return std::make_shared<OperationKernelAgreement>(signatures);
}

ir::Dialect with_kernel_agreement(const ir::Dialect& dialect,
                                  const metakernel::SignatureRegistry& signatures) {
  std::vector<std::shared_ptr<const ir::Constraint>> constraints(dialect.constraints().begin(),
                                                                 dialect.constraints().end());
  constraints.push_back(operation_kernel_agreement(signatures));
  return ir::Dialect(dialect.name(), {dialect.node_kinds().begin(), dialect.node_kinds().end()},
                     {dialect.tag_kinds().begin(), dialect.tag_kinds().end()},
                     {dialect.dtypes().begin(), dialect.dtypes().end()}, std::move(constraints));
}

}  // namespace tapestry::rewrite
