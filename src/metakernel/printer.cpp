// Graph -> .tap text. Steps:
//   1. name every tensor (its label when that is a usable .tap identifier, else t<n>);
//   2. choose which operations print nested inside their consumer (see printer.h), and keep a
//      nesting only when re-parsing would give back the same operation names;
//   3. print declarations, statements in topological order, then `output` lines.
#include "tapestry/metakernel/printer.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/naming.h"
#include "tapestry/metakernel/tap_ast.h"

namespace tapestry::metakernel {

namespace {

bool is_identifier_string(const nlohmann::json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  return !s.empty() && is_tap_identifier(s) && s.find_first_of("./") == std::string::npos &&
         s != "true" && s != "false";
}

std::string literal(const nlohmann::json& v) {
  return tap::literal_to_string(v, is_identifier_string(v));
}

class Printer {
 public:
  Printer(const ir::Graph& graph, const SignatureRegistry& signatures)
      : g_(graph), signatures_(signatures) {}

  std::string run() {
    name_tensors();
    choose_nesting();
    std::string out;
    for (ir::TensorId t : g_.tensors()) {
      if (g_.producers(t).empty()) out += declaration(t);
    }
    for (ir::NodeId node : g_.topological_order().order) {
      const std::optional<ir::OperationId> op = g_.as_operation(node);
      if (op && !nested_.count(*op))
        out += fmt::format("{} = {}\n", op_name(*op), call_text(*op)) + notes(*op);
    }
    std::vector<std::string> outputs;
    for (ir::TensorId t : g_.tensors()) {
      if (is_graph_output(g_, t)) outputs.push_back(names_.at(t));
    }
    if (!outputs.empty()) out += fmt::format("output {}\n", fmt::join(outputs, ", "));
    return out;
  }

 private:
  std::string op_name(ir::OperationId op) const {
    const std::string& label = g_.operation(op).label();
    return is_tap_identifier(label) ? label : fmt::format("op{}", op.index());
  }

  void name_tensors() {
    std::set<std::string> used;
    for (ir::TensorId t : g_.tensors()) {
      const auto producers = g_.producers(t);
      std::string name = producers.size() == 1 ? op_name(producers[0]) : g_.tensor(t).label();
      if (producers.size() == 1 && g_.operation(producers[0]).outputs().size() > 1)
        name = g_.tensor(t).label();
      if (!is_tap_identifier(name) || used.count(name)) name = fmt::format("t{}", t.index());
      used.insert(name);
      names_[t] = name;
    }
  }

  // The single operation consuming `op`'s only result exactly once, if `op` may nest there.
  std::optional<ir::OperationId> nest_target(ir::OperationId op) const {
    const ir::OperationView view = g_.operation(op);
    if (view.outputs().size() != 1 || !signatures_.find(view.kernel())) return std::nullopt;
    const ir::TensorId t = (*view.outputs().entries().begin()).value.tensor;
    const auto consumers = g_.consumers(t);
    if (consumers.size() != 1 || is_graph_output(g_, t)) return std::nullopt;
    std::size_t uses = 0;
    for (const auto& e : g_.operation(consumers[0]).inputs().entries()) uses += e.value.tensor == t;
    if (uses != 1) return std::nullopt;
    // Only an operation named `<variable>/…` after the consumer's statement variable nests.
    const std::string& consumer = g_.operation(consumers[0]).label();
    const std::string variable = consumer.substr(0, consumer.find('/'));
    if (!view.label().starts_with(variable + "/")) return std::nullopt;
    return consumers[0];
  }

  // Nesting is kept for a statement only when its nested operations' names are exactly the ones
  // the front end would generate; otherwise they print as statements of their own.
  void choose_nesting() {
    std::set<ir::OperationId> refused;
    bool changed = true;
    while (changed) {
      changed = false;
      nested_.clear();
      for (ir::OperationId op : g_.operations()) {
        std::optional<ir::OperationId> target = nest_target(op);
        if (target && !refused.count(op) && signatures_.find(g_.operation(*target).kernel()))
          nested_.insert(op);
      }
      for (ir::OperationId op : g_.operations()) {
        if (nested_.count(op)) continue;
        std::vector<ir::OperationId> subtree;
        collect_nested(op, subtree);
        std::vector<std::string> kernels;
        for (ir::OperationId s : subtree) kernels.push_back(g_.operation(s).kernel());
        const std::vector<std::string> expected = nested_names(op_name(op), kernels);
        for (std::size_t i = 0; i + 1 < subtree.size(); ++i) {
          if (g_.operation(subtree[i]).label() != expected[i]) {
            refused.insert(subtree.begin(), subtree.end() - 1);
            changed = true;
            break;
          }
        }
      }
    }
  }

  // The nested operations of `op`'s statement in evaluation order (arguments left to right,
  // innermost first), ending with `op` itself.
  void collect_nested(ir::OperationId op, std::vector<ir::OperationId>& out) const {
    for (ir::TensorId t : ordered_inputs(op)) {
      const auto producers = g_.producers(t);
      if (producers.size() == 1 && nested_.count(producers[0])) collect_nested(producers[0], out);
    }
    out.push_back(op);
  }

  // Input tensors in the kernel's declared order (port names sorted for unknown kernels).
  std::vector<ir::TensorId> ordered_inputs(ir::OperationId op) const {
    const ir::OperationView view = g_.operation(op);
    std::vector<ir::TensorId> out;
    if (const Metakernel* k = signatures_.find(view.kernel())) {
      for (const InputSpec& in : k->inputs) {
        for (const ir::TensorSelection& s : view.inputs().list(in.name)) out.push_back(s.tensor);
      }
      if (out.size() == view.inputs().size()) return out;
      out.clear();
    }
    for (const auto& e : view.inputs().entries()) out.push_back(e.value.tensor);
    return out;
  }

  std::string call_text(ir::OperationId op) const {
    const ir::OperationView view = g_.operation(op);
    std::vector<std::string> args;
    for (ir::TensorId t : ordered_inputs(op)) {
      const auto producers = g_.producers(t);
      args.push_back(producers.size() == 1 && nested_.count(producers[0]) ? call_text(producers[0])
                                                                          : names_.at(t));
    }
    const Metakernel* k = signatures_.find(view.kernel());
    if (view.params().is_object()) {
      for (const auto& [name, value] : view.params().items()) {
        const ParamSpec* spec = k ? k->find_param(name) : nullptr;
        if (spec && spec->default_value && *spec->default_value == value) continue;
        args.push_back(fmt::format("{}={}", name, literal(value)));
      }
    }
    return fmt::format("{}({})", view.kernel(), fmt::join(args, ", "));
  }

  std::string notes(ir::OperationId op) const {
    const ir::OperationView view = g_.operation(op);
    if (!signatures_.find(view.kernel()))
      return fmt::format("# note: kernel {} is not known here\n", view.kernel());
    if (view.outputs().size() != 1)
      return fmt::format("# note: {} has {} outputs; .tap names only the first\n", op_name(op),
                         view.outputs().size());
    return "";
  }

  std::string declaration(ir::TensorId t) const {
    const ir::TensorView view = g_.tensor(t);
    const std::optional<DType> dtype = view.dtype().known();
    if (!dtype || !ir::is_tap_dtype(*dtype)) {
      return fmt::format("# note: {} has dtype {}, which .tap cannot write\n{}: f32{}\n",
                         names_.at(t), view.dtype(), names_.at(t),
                         TensorType{DType::kFloat32, view.range()}.to_string().substr(3));
    }
    return fmt::format("{}: {}\n", names_.at(t), TensorType{*dtype, view.range()}.to_string());
  }

  const ir::Graph& g_;
  const SignatureRegistry& signatures_;
  std::map<ir::TensorId, std::string> names_;
  std::set<ir::OperationId> nested_;
};

}  // namespace

std::string print_tap(const ir::Graph& graph, const SignatureRegistry& signatures) {
  return Printer(graph, signatures).run();
}

}  // namespace tapestry::metakernel
