#include "tapestry/metakernel/apply.h"

#include <fmt/core.h>

#include <algorithm>

#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"

namespace tapestry::metakernel {

TensorType tensor_type(const ir::Graph& graph, ir::TensorId tensor) {
  const ir::TensorView view = graph.tensor(tensor);
  const std::optional<DType> dtype = view.dtype().known();
  if (!dtype || !ir::is_tap_dtype(*dtype)) {
    throw Error(fmt::format("tensor {} has dtype {}, which no kernel takes ({})",
                            view.display_name(), view.dtype(), tap_dtype_names(" ")));
  }
  return TensorType{*dtype, view.range()};
}

namespace {

std::string output_label(const Signature& sig, const std::string& name, std::size_t port) {
  return sig.outputs.size() == 1 ? name : fmt::format("{}.{}", name, sig.outputs[port].name);
}

ir::OperationBody operation_body(const Signature& sig, std::span<const ir::TensorId> inputs,
                                 std::span<const ir::TensorId> outputs) {
  const zspace::Range index = sig.index();
  ir::OperationBody body;
  body.kernel = sig.kernel;
  if (!sig.params.empty()) body.params = sig.params;
  for (std::size_t i = 0; i < sig.inputs.size(); ++i) {
    body.inputs.append(sig.inputs[i].name,
                       ir::TensorSelection{inputs[i], sig.inputs[i].ipf.apply(index)});
  }
  for (std::size_t i = 0; i < sig.outputs.size(); ++i) {
    body.outputs.append(sig.outputs[i].name,
                        ir::TensorSelection{outputs[i], sig.outputs[i].ipf.apply(index)});
  }
  body.index_names = sig.dim_names();
  for (const IndexDim& d : sig.index_dims) {
    if (d.reduction) body.reductions.push_back(ir::Reduction{d.name, *d.reduction});
  }
  std::sort(body.reductions.begin(), body.reductions.end(),
            [](const ir::Reduction& a, const ir::Reduction& b) { return a.dim < b.dim; });
  return body;
}

ir::IpfSignature ipf_signature(const Signature& sig) {
  ir::IpfSignature out;
  for (const Port& p : sig.inputs) out.inputs.append(p.name, p.ipf);
  for (const Port& p : sig.outputs) out.outputs.append(p.name, p.ipf);
  return out;
}

}  // namespace

AddedOperation add_operation(ir::Graph& graph, const Signature& sig,
                             std::span<const ir::TensorId> inputs, const std::string& name,
                             const ApplyOptions& options) {
  TAPESTRY_ASSERT(inputs.size() == sig.inputs.size(), "one tensor per input port");
  AddedOperation added;
  TAPESTRY_ASSERT(options.outputs.empty() || options.outputs.size() == sig.outputs.size(),
                  "one existing tensor per output port");
  for (std::size_t i = 0; i < sig.outputs.size(); ++i) {
    const TensorType& type = sig.outputs[i].type;
    if (!options.outputs.empty()) {
      TAPESTRY_ASSERT(graph.tensor(options.outputs[i]).range() == type.range,
                      "existing output tensor has another range than the signature's");
      added.outputs.push_back(options.outputs[i]);
      continue;
    }
    added.outputs.push_back(graph.add_tensor(ir::TensorBody{type.dtype, type.range},
                                             ir::NodeOptions{output_label(sig, name, i), ""}));
  }
  ir::OperationBody body = operation_body(sig, inputs, added.outputs);
  ir::SelectionMap app_inputs = body.inputs;
  ir::SelectionMap app_outputs = body.outputs;
  added.operation = graph.add_operation(std::move(body), ir::NodeOptions{name, ""});
  graph.set_ipf_index(added.operation, sig.index());
  graph.set_ipf_signature(added.operation, ipf_signature(sig));
  if (options.add_application) {
    ir::ApplicationBody app{added.operation, std::move(app_inputs), std::move(app_outputs)};
    added.application = graph.add_application(std::move(app));
    graph.set_ipf_index(*added.application, sig.index());
  }
  return added;
}

void mark_graph_output(ir::Graph& graph, ir::TensorId tensor) {
  nlohmann::json extensions = graph.tensor(tensor).extensions();
  if (!extensions.is_object()) extensions = nlohmann::json::object();
  extensions[kGraphOutputField] = true;
  graph.set_extensions(tensor, std::move(extensions));
}

bool is_graph_output(const ir::Graph& graph, ir::TensorId tensor) {
  const nlohmann::json& extensions = graph.tensor(tensor).extensions();
  return extensions.is_object() && extensions.value(kGraphOutputField, false) == true;
}

std::vector<ir::TensorId> graph_outputs(const ir::Graph& graph) {
  std::vector<ir::TensorId> outputs;
  for (ir::TensorId t : graph.tensors()) {
    if (is_graph_output(graph, t)) outputs.push_back(t);
  }
  if (!outputs.empty()) return outputs;  // the declared outputs
  for (ir::TensorId t : graph.tensors()) {
    if (!graph.producers(t).empty() && graph.consumers(t).empty()) outputs.push_back(t);
  }
  return outputs;
}

}  // namespace tapestry::metakernel
