// The builder Graph: calls -> evaluated signatures -> IR nodes, plus the naming rules.
#include "tapestry/metakernel/builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "tapestry/ir/state_update.h"
#include "tapestry/metakernel/signature.h"
#include "tapestry/support/error.h"
#include "verbatim_operation.h"

namespace tapestry::metakernel {

namespace {
constexpr int kMaxSugarDepth = 16;
}  // namespace

Graph& Tensor::graph() const {
  if (!graph_) throw Error("use of an empty Tensor handle");
  return *graph_;
}

TensorType Tensor::type() const {
  return tensor_type(graph().graph_, id_);
}

const std::string& Tensor::name() const {
  return graph().graph_.tensor(id_).label();
}

Graph::Graph(const SignatureRegistry& signatures, ApplyOptions options)
    : signatures_(signatures), options_(options) {}

Tensor Graph::input(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape) {
  for (std::int64_t extent : shape) {
    if (extent < 0) throw Error(fmt::format("input {}: size {} is negative", name, extent));
  }
  return input(name, TensorType{dtype, zspace::Range::of_shape(zspace::Point(shape))});
}

Tensor Graph::input(const std::string& name, const TensorType& type) {
  if (!ir::is_tap_dtype(type.dtype)) {
    throw Error(fmt::format("input {}: dtype {} is not one kernels take ({})", name,
                            ir::dtype_name(type.dtype), tap_dtype_names(" ")));
  }
  return declare(name, type.dtype, type.range);
}

Tensor Graph::declare(const std::string& name, const ir::LoomDType& dtype,
                      const zspace::Range& range) {
  if (name.empty()) throw Error("a tensor name cannot be empty");
  if (names_.is_taken(name)) throw Error(fmt::format("{} is already defined", name));
  names_.take(name);
  const ir::TensorId id =
      graph_.add_tensor(ir::TensorBody{dtype, range}, ir::NodeOptions{name, ""});
  return Tensor(this, id);
}

void Graph::add_verbatim(const nlohmann::json& node,
                         const std::function<std::optional<Tensor>(std::string_view)>& lookup) {
  add_verbatim_operation(
      graph_, node,
      [&](std::string_view name) -> std::optional<ir::TensorId> {
        const std::optional<Tensor> t = lookup(name);
        if (t) check_same_graph("operation", {*t});
        return t ? std::optional(t->id()) : std::nullopt;
      },
      options_.add_application);
}

void Graph::check_same_graph(std::string_view kernel, const std::vector<Tensor>& inputs) const {
  for (const Tensor& t : inputs) {
    if (t.graph_ != this) {
      throw Error(
          fmt::format("{}: an input belongs to another graph (or is an empty handle)", kernel));
    }
  }
}

Tensor Graph::call(std::string_view kernel_name, const std::vector<Tensor>& inputs,
                   const nlohmann::json& params) {
  check_same_graph(kernel_name, inputs);
  const Metakernel& kernel = signatures_.resolve(kernel_name, inputs.size());
  if (std::optional<Tensor> expanded = expand_sugar(kernel, inputs, params)) return *expanded;
  return add(kernel, inputs, params);
}

Tensor Graph::add(const Metakernel& kernel, const std::vector<Tensor>& inputs,
                  const nlohmann::json& params) {
  std::vector<Argument> args;
  std::vector<ir::TensorId> ids;
  for (const Tensor& t : inputs) {
    args.push_back(Argument{t.name(), t.type()});
    ids.push_back(t.id());
  }
  const Signature sig = evaluate_signature(kernel, args, params);
  const std::string name = names_.fresh(kernel.name);
  names_.take(name);
  AddedOperation added = add_operation(graph_, sig, ids, name, options_);
  pending_.push_back(Pending{added.operation, added.outputs, kernel.name, name});
  return Tensor(this, added.outputs.front());
}

// Sugar: when a rule's condition holds on the resolved params, the call is replaced by the
// rule's call, whose tensor arguments name this kernel's inputs and whose identifier-valued
// keywords name this kernel's params.
std::optional<Tensor> Graph::expand_sugar(const Metakernel& kernel,
                                          const std::vector<Tensor>& inputs,
                                          const nlohmann::json& params) {
  if (kernel.sugar.empty()) return std::nullopt;
  std::vector<Argument> args;
  for (const Tensor& t : inputs) args.push_back(Argument{t.name(), t.type()});
  const nlohmann::json resolved = resolve_parameters(kernel, args, params);
  ExprEnv env;
  env.param = [&resolved](std::string_view name) -> std::optional<std::int64_t> {
    if (!resolved.contains(name)) return std::nullopt;
    const nlohmann::json& v = resolved.at(std::string(name));
    if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
    if (v.is_number_integer()) return v.get<std::int64_t>();
    return std::nullopt;
  };
  for (const SugarSpec& rule : kernel.sugar) {
    if (rule.when.evaluate(env) == 0) continue;
    if (sugar_depth_ >= kMaxSugarDepth) {
      throw Error(
          fmt::format("{}: sugar expands more than {} levels deep (a rule that never stops?)",
                      kernel.name, kMaxSugarDepth));
    }
    ++sugar_depth_;
    struct Restore {
      int& depth;
      ~Restore() { --depth; }
    } restore{sugar_depth_};
    return run_sugar_call(rule.call, kernel, inputs, resolved);
  }
  return std::nullopt;
}

Tensor Graph::run_sugar_call(const tap::Call& call, const Metakernel& kernel,
                             const std::vector<Tensor>& inputs, const nlohmann::json& params) {
  std::vector<Tensor> args;
  for (const tap::TensorExpr& arg : call.args) {
    if (arg.is_call()) {
      args.push_back(run_sugar_call(*arg.call, kernel, inputs, params));
      continue;
    }
    const InputSpec* in = kernel.find_input(arg.name);
    if (!in)
      throw Error(
          fmt::format("{}: its sugar names {}, which is not an input", kernel.name, arg.name));
    args.push_back(inputs[static_cast<std::size_t>(in - kernel.inputs.data())]);
  }
  nlohmann::json keywords = nlohmann::json::object();
  for (const tap::Keyword& k : call.keywords) {
    const bool is_param =
        k.value.is_identifier && params.contains(k.value.value.get<std::string>());
    keywords[k.name] = is_param ? params.at(k.value.value.get<std::string>()) : k.value.value;
  }
  return this->call(call.callee, args, keywords);
}

// The pending operations of the statement rooted at pending_[root]: those that feed it,
// transitively through pending operations, in creation order, then the root.
std::vector<std::size_t> Graph::statement_operations(std::size_t root) const {
  std::set<ir::TensorId> wanted(pending_[root].outputs.begin(), pending_[root].outputs.end());
  std::vector<bool> in_statement(pending_.size(), false);
  for (std::size_t i = pending_.size(); i-- > 0;) {
    const Pending& p = pending_[i];
    const bool feeds = std::any_of(p.outputs.begin(), p.outputs.end(),
                                   [&](ir::TensorId t) { return wanted.count(t) > 0; });
    if (!feeds) continue;
    in_statement[i] = true;
    for (const auto& entry : graph_.operation(p.op).inputs().entries()) {
      wanted.insert(entry.value.tensor);
    }
  }
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    if (in_statement[i] && i != root) order.push_back(i);
  }
  order.push_back(root);
  return order;
}

Tensor Graph::assign(const std::string& name, Tensor value) {
  check_same_graph("assign", {value});
  auto produces = [&](const Pending& p) {
    return std::find(p.outputs.begin(), p.outputs.end(), value.id()) != p.outputs.end();
  };
  const auto root = std::find_if(pending_.begin(), pending_.end(), produces);
  if (root == pending_.end()) {
    throw Error(
        fmt::format("{} = {}: an assignment names a new operation, and {} is not the result "
                    "of one (use {} directly)",
                    name, value.name(), value.name(), value.name()));
  }
  const std::vector<std::size_t> order =
      statement_operations(static_cast<std::size_t>(root - pending_.begin()));
  std::vector<std::string> kernels;
  for (std::size_t i : order) kernels.push_back(pending_[i].kernel);
  const std::vector<std::string> names = nested_names(name, kernels);
  for (std::size_t i : order) names_.release(pending_[i].name);
  for (const std::string& n : names) {
    if (names_.is_taken(n)) {
      for (std::size_t i : order) names_.take(pending_[i].name);  // leave everything as it was
      throw Error(fmt::format("{} is already defined", n));
    }
  }
  for (std::size_t k = 0; k < order.size(); ++k) rename(pending_[order[k]], names[k]);
  std::vector<Pending> rest;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    if (std::find(order.begin(), order.end(), i) == order.end())
      rest.push_back(std::move(pending_[i]));
  }
  pending_ = std::move(rest);
  return value;
}

void Graph::rename(const Pending& record, const std::string& name) {
  names_.take(name);
  graph_.set_label(record.op, name);
  for (std::size_t i = 0; i < record.outputs.size(); ++i) {
    const std::string& old = graph_.tensor(record.outputs[i]).label();
    const std::string suffix =
        old.size() > record.name.size() ? old.substr(record.name.size()) : "";
    graph_.set_label(record.outputs[i], name + suffix);
  }
}

void Graph::output(Tensor value) {
  check_same_graph("output", {value});
  mark_graph_output(graph_, value.id());
}

std::optional<Tensor> Graph::find(std::string_view name) {
  for (ir::TensorId t : graph_.tensors()) {
    if (graph_.tensor(t).label() == name) return Tensor(this, t);
  }
  return std::nullopt;
}

void Graph::update(Tensor state, Tensor next) {
  check_same_graph("update", {state, next});
  if (std::optional<std::string> problem =
          ir::update_problem(graph_, state.id(), next.id(), graph_.updates())) {
    throw Error(std::move(*problem));
  }
  graph_.add_update({state.id(), next.id()});
}

ir::Graph Graph::take() {
  // An update's next value is a result: marked an output unless it is one already (keeping
  // the implicit outputs of a graph that declares none).
  for (const ir::StateUpdate& u : graph_.updates()) {
    const std::vector<ir::TensorId> outputs = graph_outputs(graph_);
    if (std::find(outputs.begin(), outputs.end(), u.next) != outputs.end()) continue;
    for (ir::TensorId t : outputs) mark_graph_output(graph_, t);
    mark_graph_output(graph_, u.next);
  }
  ir::Graph out = std::move(graph_);
  graph_ = ir::Graph();
  names_ = NameTable();
  pending_.clear();
  return out;
}

}  // namespace tapestry::metakernel
