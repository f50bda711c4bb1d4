#include "op_spec.h"

#include <algorithm>

#include "tapestry/support/assert.h"

namespace tapestry::rewrite::detail {

namespace {

std::vector<Port> ports_of(const ir::SelectionMap& selections, const ir::IpfMap& ipfs) {
  std::vector<Port> ports;
  const auto& p = ipfs.entries();
  std::size_t i = 0;
  for (const auto& s : selections.entries())
    ports.push_back({s.name, s.value.tensor, p[i++].value});
  return ports;
}

bool parallel(const ir::SelectionMap& selections, const ir::IpfMap& ipfs) {
  const auto& p = ipfs.entries();
  if (selections.size() != p.size()) return false;
  std::size_t i = 0;
  for (const auto& s : selections.entries()) {
    if (s.name != p[i].name || s.position != p[i].position) return false;
    ++i;
  }
  return true;
}

}  // namespace

std::optional<std::size_t> OpSpec::dim(std::string_view name) const {
  auto it = std::find(index_names.begin(), index_names.end(), name);
  if (it == index_names.end()) return std::nullopt;
  return static_cast<std::size_t>(it - index_names.begin());
}

const ir::Reduction* OpSpec::reduction(std::string_view dim) const {
  for (const ir::Reduction& r : reductions) {
    if (r.dim == dim) return &r;
  }
  return nullptr;
}

std::optional<std::string> why_not_rewritable(const ir::Graph& graph, ir::OperationId op) {
  const ir::OperationView view = graph.operation(op);
  if (!view.has_ipf_index()) return "the operation has no IPFIndex tag";
  const ir::IpfSignature* signature = view.ipf_signature();
  if (signature == nullptr) return "the operation has no IPFSignature tag";
  if (!parallel(view.inputs(), signature->inputs) ||
      !parallel(view.outputs(), signature->outputs)) {
    return "the IPFSignature does not list one IPF per input and output selection";
  }
  return std::nullopt;
}

OpSpec spec_of(const ir::Graph& graph, ir::OperationId op, bool with_params) {
  TAPESTRY_ASSERT(!why_not_rewritable(graph, op), "spec_of on an operation without IPF tags");
  const ir::OperationView view = graph.operation(op);
  const ir::OperationBody& body = view.body();
  return OpSpec{.label = operation_name(graph, op),
                .kernel = body.kernel,
                .params = with_params ? body.params : nlohmann::json(),
                .index = *view.ipf_index(),
                .index_names = view.index_names(),
                .reductions = body.reductions,
                .inputs = ports_of(body.inputs, view.ipf_signature()->inputs),
                .outputs = ports_of(body.outputs, view.ipf_signature()->outputs)};
}

ir::OperationId add_op(ir::Graph& graph, OpSpec spec) {
  ir::OperationBody body{.kernel = std::move(spec.kernel),
                         .params = std::move(spec.params),
                         .index_names = std::move(spec.index_names),
                         .reductions = std::move(spec.reductions)};
  ir::IpfSignature signature;
  for (const Port& p : spec.inputs) {
    body.inputs.append(p.name, {p.tensor, p.ipf.apply(spec.index)});
    signature.inputs.append(p.name, p.ipf);
  }
  for (const Port& p : spec.outputs) {
    body.outputs.append(p.name, {p.tensor, p.ipf.apply(spec.index)});
    signature.outputs.append(p.name, p.ipf);
  }
  std::sort(body.reductions.begin(), body.reductions.end(),
            [](const ir::Reduction& a, const ir::Reduction& b) { return a.dim < b.dim; });
  ir::OperationId op = graph.add_operation(std::move(body), ir::NodeOptions{.label = spec.label});
  graph.set_ipf_index(op, spec.index);
  graph.set_ipf_signature(op, std::move(signature));
  return op;
}

std::optional<std::size_t> followed_dim(const zspace::IndexProjection& ipf, std::size_t row) {
  std::optional<std::size_t> found;
  for (std::size_t c = 0; c < ipf.index_rank(); ++c) {
    if (ipf.map().at(row, c) == 0) continue;
    if (found) return std::nullopt;
    found = c;
  }
  return found;
}

void transfer_splits(const OpSpec& old, const OpPlan& old_plan,
                     const zspace::IndexProjection& old_ipf, const zspace::IndexProjection& new_ipf,
                     const std::vector<std::string>& new_names,
                     std::map<std::string, std::int64_t>& out) {
  for (std::size_t t = 0; t < old_ipf.tensor_rank() && t < new_ipf.tensor_rank(); ++t) {
    auto d = followed_dim(old_ipf, t);
    auto c = followed_dim(new_ipf, t);
    if (!d || !c) continue;
    auto split = old_plan.split.find(old.index_names[*d]);
    if (split != old_plan.split.end()) out[new_names[*c]] = split->second;
  }
}

void transfer_mesh(const OpSpec& old, const OpPlan& old_plan,
                   const zspace::IndexProjection& old_ipf, const zspace::IndexProjection& new_ipf,
                   const std::vector<std::string>& new_names,
                   std::map<std::string, std::string>& out) {
  for (std::size_t t = 0; t < old_ipf.tensor_rank() && t < new_ipf.tensor_rank(); ++t) {
    auto d = followed_dim(old_ipf, t);
    auto c = followed_dim(new_ipf, t);
    if (!d || !c) continue;
    auto axis = old_plan.mesh.find(old.index_names[*d]);
    if (axis != old_plan.mesh.end()) out[new_names[*c]] = axis->second;
  }
}

std::string fresh_name(const std::vector<std::string>& names, const std::string& base) {
  std::string name = base;
  for (int i = 1; std::find(names.begin(), names.end(), name) != names.end(); ++i) {
    name = base + std::to_string(i);
  }
  return name;
}

}  // namespace tapestry::rewrite::detail
