// Reverse-mode autodiff (autodiff.h): Graph::grad on a builder graph, and grad on an ir::Graph,
// which replays the forward operations into a builder graph first.
#include "tapestry/metakernel/autodiff.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "autodiff_vjp.h"
#include "tapestry/support/error.h"

namespace tapestry::metakernel {

namespace {

// The tensors the loss depends on (walking producers back from it).
std::set<ir::TensorId> ancestors(const ir::Graph& g, ir::TensorId loss) {
  std::set<ir::TensorId> seen{loss};
  std::vector<ir::TensorId> stack{loss};
  while (!stack.empty()) {
    const ir::TensorId t = stack.back();
    stack.pop_back();
    for (ir::OperationId op : g.producers(t)) {
      for (const auto& entry : g.operation(op).inputs().entries()) {
        if (seen.insert(entry.value.tensor).second) stack.push_back(entry.value.tensor);
      }
    }
  }
  return seen;
}

// The tensors that depend on one of `roots` (walking consumers forward), the roots included.
std::set<ir::TensorId> descendants(const ir::Graph& g, const std::vector<ir::TensorId>& roots) {
  std::set<ir::TensorId> seen(roots.begin(), roots.end());
  std::vector<ir::TensorId> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    const ir::TensorId t = stack.back();
    stack.pop_back();
    for (ir::OperationId op : g.consumers(t)) {
      for (const auto& entry : g.operation(op).outputs().entries()) {
        if (seen.insert(entry.value.tensor).second) stack.push_back(entry.value.tensor);
      }
    }
  }
  return seen;
}

// The operations of `g` in dependency order; Error on a cycle.
std::vector<ir::OperationId> operations_in_order(const ir::Graph& g) {
  const ir::TopologicalOrder order = g.topological_order();
  if (!order.cycle.empty()) throw Error("grad: the graph has a cycle");
  std::vector<ir::OperationId> ops;
  for (ir::NodeId node : order.order) {
    if (const std::optional<ir::OperationId> op = g.as_operation(node)) ops.push_back(*op);
  }
  return ops;
}

bool is_float_tensor(const Tensor& t) {
  return ir::is_float(t.type().dtype);
}

ir::Issue unused_input_issue(const std::string& wrt, const std::string& loss) {
  ir::Issue issue;
  issue.type = "grad-unused-input";
  issue.severity = ir::Severity::kWarning;
  issue.summary = fmt::format("{} does not depend on {}", loss, wrt);
  issue.message = fmt::format("its gradient d{} is zeros (zeros_like({}))", wrt, wrt);
  issue.contexts.push_back(ir::IssueContext{"Tensor", wrt, "", nullptr});
  return issue;
}

}  // namespace

std::vector<Tensor> Graph::grad(Tensor loss, std::span<const Tensor> wrt) {
  return grad(loss, wrt, GradOptions{});
}

// The steps: check the request; find the tensors on a path from a wrt tensor to the loss; seed
// the loss's cotangent; walk the operations backwards applying each one's VJP; sum and name the
// gradients.
std::vector<Tensor> Graph::grad(Tensor loss, std::span<const Tensor> wrt,
                                const GradOptions& options) {
  check_same_graph("grad", {loss});
  check_same_graph("grad", std::vector<Tensor>(wrt.begin(), wrt.end()));
  if (!options.names.empty() && options.names.size() != wrt.size()) {
    throw Error(fmt::format("grad: {} names for {} gradients", options.names.size(), wrt.size()));
  }
  if (!is_float_tensor(loss)) {
    throw Error(fmt::format("grad: the loss {} is {}; gradients are of float tensors", loss.name(),
                            loss.type().to_string()));
  }
  for (std::size_t i = 0; i < wrt.size(); ++i) {
    if (std::find(wrt.begin(), wrt.begin() + static_cast<std::ptrdiff_t>(i), wrt[i]) !=
        wrt.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw Error(fmt::format("grad: {} is asked for twice", wrt[i].name()));
    }
  }
  for (const Tensor& w : wrt) {
    if (!is_float_tensor(w)) {
      throw Error(fmt::format("grad: {} is {}; only float tensors have gradients", w.name(),
                              w.type().to_string()));
    }
  }
  if (options.seed) {
    check_same_graph("grad", {*options.seed});
    if (options.seed->type().shape() != loss.type().shape() ||
        options.seed->type().dtype != loss.type().dtype) {
      throw Error(fmt::format("grad: the seed {} is {} but the loss {} is {}", options.seed->name(),
                              options.seed->type().to_string(), loss.name(),
                              loss.type().to_string()));
    }
  } else if (loss.type().rank() != 0) {
    throw Error(
        fmt::format("grad: the loss {} is {}, not a scalar; reduce it (sum, mean) or give "
                    "a seed cotangent of its shape (grad({}, …, seed=S))",
                    loss.name(), loss.type().to_string(), loss.name()));
  }

  // Only tensors on a path from a wrt tensor to the loss carry cotangents.
  std::vector<ir::TensorId> roots;
  for (const Tensor& w : wrt) roots.push_back(w.id());
  const std::set<ir::TensorId> upstream = ancestors(graph_, loss.id());
  const std::set<ir::TensorId> downstream = descendants(graph_, roots);
  auto on_path = [&](ir::TensorId t) { return upstream.count(t) && downstream.count(t); };

  std::map<ir::TensorId, std::vector<Tensor>> cotangents;
  auto total = [&](ir::TensorId t) -> std::optional<Tensor> {
    const auto it = cotangents.find(t);
    if (it == cotangents.end() || it->second.empty()) return std::nullopt;
    Tensor sum = it->second.front();
    for (std::size_t i = 1; i < it->second.size(); ++i) sum = call("add", {sum, it->second[i]});
    it->second = {sum};
    return sum;
  };
  if (on_path(loss.id())) {
    cotangents[loss.id()].push_back(options.seed ? *options.seed : call("ones_like", {loss}));
  }

  const std::vector<ir::OperationId> order = operations_in_order(graph_);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const ir::OperationView op = graph_.operation(*it);
    std::vector<ir::TensorId> outputs;
    for (const auto& entry : op.outputs().entries()) outputs.push_back(entry.value.tensor);
    if (outputs.empty() || !on_path(outputs.front())) continue;
    const std::optional<Tensor> d_result = total(outputs.front());
    if (!d_result) continue;
    const std::string op_name = graph_.display_name(*it);
    const Metakernel* kernel = signatures_.find(op.kernel());
    if (kernel == nullptr) {
      throw Error(fmt::format("grad: operation {} calls kernel {}, which is not loaded", op_name,
                              op.kernel()));
    }
    if (!kernel->vjp) {
      throw Error(
          fmt::format("grad: operation {} (kernel {}) has no VJP, and the loss {} depends "
                      "on it through the tensors asked for (docs/training.md lists the "
                      "kernels with one)",
                      op_name, kernel->name, loss.name()));
    }
    if (outputs.size() != 1 || kernel->outputs.size() != 1) {
      throw Error(fmt::format("grad: operation {} (kernel {}) has {} outputs; grad handles one",
                              op_name, kernel->name, outputs.size()));
    }
    detail::VjpScope scope{
        *kernel, op_name, {}, op.params().is_object() ? op.params() : nlohmann::json::object()};
    std::vector<std::optional<Tensor>> port_tensors;
    for (const InputSpec& in : kernel->inputs) {
      const ir::SelectionMap::List list = op.inputs().list(in.name);
      if (list.empty()) {
        throw Error(fmt::format("grad: operation {} (kernel {}) has no input {}", op_name,
                                kernel->name, in.name));
      }
      const Tensor t(this, list[0].tensor);
      scope.tensors.emplace(in.name, t);
      port_tensors.emplace_back(t);
    }
    const std::string& out_name = kernel->outputs.front().name;
    scope.tensors.emplace(out_name, Tensor(this, outputs.front()));
    scope.tensors.emplace("d_" + out_name, *d_result);
    for (std::size_t i = 0; i < kernel->inputs.size(); ++i) {
      const Tensor& x = *port_tensors[i];
      if (!on_path(x.id()) || !is_float_tensor(x)) continue;
      const VjpSpec& spec = (*kernel->vjp)[i];
      if (!spec.expr) continue;  // `none`: no gradient flows to this port
      Tensor dx;
      try {
        dx = detail::apply_vjp(*this, *spec.expr, scope);
      } catch (const Error& e) {
        throw Error(fmt::format("grad: the VJP of operation {} (kernel {}) for {}: {}", op_name,
                                kernel->name, spec.port, e.what()));
      }
      if (dx.type().shape() != x.type().shape() || dx.type().dtype != x.type().dtype) {
        throw Error(
            fmt::format("grad: the VJP of kernel {} for {} gives {}, but {} is {} (a "
                        "mistake in {}'s vjp: {})",
                        kernel->name, spec.port, dx.type().to_string(), x.name(),
                        x.type().to_string(), kernel->name, spec.text));
      }
      cotangents[x.id()].push_back(dx);
    }
  }

  std::vector<Tensor> grads;
  for (std::size_t i = 0; i < wrt.size(); ++i) {
    const Tensor& w = wrt[i];
    std::optional<Tensor> g = total(w.id());
    if (!g) {
      if (options.issues) options.issues->push_back(unused_input_issue(w.name(), loss.name()));
      g = call("zeros_like", {w});
    }
    const bool pending = std::any_of(pending_.begin(), pending_.end(), [&](const Pending& p) {
      return std::find(p.outputs.begin(), p.outputs.end(), g->id()) != p.outputs.end();
    });
    if (!pending) g = call("mul_scalar", {*g});  // an input or an assigned tensor: a copy to name
    const std::string name = options.names.empty() ? "d" + w.name() : options.names[i];
    grads.push_back(assign(name, *g));
  }
  return grads;
}

GradResult grad(const ir::Graph& graph, const GradRequest& request,
                const SignatureRegistry& signatures) {
  Graph builder(signatures);
  std::map<ir::TensorId, Tensor> tensors;
  for (ir::TensorId t : graph.tensors()) {
    if (!graph.producers(t).empty()) continue;
    const ir::TensorView view = graph.tensor(t);
    const std::optional<DType> dtype = view.dtype().known();
    if (!dtype) {
      throw Error(fmt::format("grad: tensor {} has dtype {}, which no kernel takes",
                              graph.display_name(t), view.dtype().name()));
    }
    tensors[t] = builder.input(graph.display_name(t), TensorType{*dtype, view.range()});
  }
  for (ir::OperationId id : operations_in_order(graph)) {
    const ir::OperationView op = graph.operation(id);
    const std::string name = graph.display_name(id);
    const Metakernel* kernel = signatures.find(op.kernel());
    if (kernel == nullptr) {
      throw Error(fmt::format("grad: operation {} calls kernel {}, which is not loaded", name,
                              op.kernel()));
    }
    std::vector<Tensor> args;
    for (const InputSpec& in : kernel->inputs) {
      const ir::SelectionMap::List list = op.inputs().list(in.name);
      if (list.size() != 1 || !tensors.count(list[0].tensor)) {
        throw Error(fmt::format("grad: operation {} (kernel {}) does not have one input {}", name,
                                kernel->name, in.name));
      }
      args.push_back(tensors.at(list[0].tensor));
    }
    const nlohmann::json params = op.params().is_object() ? op.params() : nlohmann::json::object();
    Tensor result;
    try {
      result = builder.assign(name, builder.call(kernel->name, args, params));
    } catch (const Error& e) {
      throw Error(fmt::format("grad: replaying operation {}: {}", name, e.what()));
    }
    for (const auto& entry : op.outputs().entries()) tensors[entry.value.tensor] = result;
  }
  auto find = [&](const std::string& label) -> Tensor {
    const ir::Graph::Named named = graph.find_named(ir::NodeKind::kTensor, label);
    if (!named.node) {
      throw Error(named.labelled > 1
                      ? fmt::format("grad: {} names {} tensors", label, named.labelled)
                      : fmt::format("grad: no tensor is named {}", label));
    }
    return tensors.at(*graph.as_tensor(*named.node));
  };
  const Tensor loss = find(request.loss);
  std::vector<Tensor> wrt;
  for (const std::string& w : request.wrt) wrt.push_back(find(w));
  GradResult result;
  GradOptions options;
  if (request.seed) options.seed = find(*request.seed);
  options.names = request.names;
  options.issues = &result.issues;
  const std::vector<Tensor> grads = builder.grad(loss, wrt, options);
  for (ir::TensorId t : graph.tensors()) {
    if (is_graph_output(graph, t) && tensors.count(t)) builder.output(tensors.at(t));
  }
  builder.output(loss);
  for (const Tensor& g : grads) builder.output(g);
  for (const ir::StateUpdate& u : graph.updates()) {
    if (tensors.count(u.state) && tensors.count(u.next)) {
      builder.update(tensors.at(u.state), tensors.at(u.next));
    }
  }
  result.graph = builder.take();
  return result;
}

}  // namespace tapestry::metakernel
