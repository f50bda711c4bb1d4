// Graph -> .tap text. Steps:
//   1. name every tensor (its label, as a string when it is not an identifier; t<n> when it has
//      none or repeats one);
//   2. choose the operations that print as calls (their kernel is known and names their result
//      after them) and, among those, which print nested inside their consumer (see printer.h);
//   3. print declarations, statements in topological order, then the `output` line and the
//      `update` line (training state);
//   4. build the text and compare with the graph: an operation that does not come back equal
//      prints verbatim from then on; repeat until the text round-trips (at most once per
//      operation).
#include "tapestry/metakernel/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "tapestry/ir/graph_compare.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/naming.h"
#include "tapestry/metakernel/tap_ast.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/support/error.h"
#include "verbatim_operation.h"

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

// Object keys in reading order: the loom writer's (label, body, tags; kernel, params, inputs,
// outputs, …; tensorId, range; start, end), then any others alphabetically.
std::vector<std::string> ordered_keys(const nlohmann::json& object) {
  static const std::vector<std::string> kOrder = {
      "label",   "body",       "tags",       "kernel",   "params", "inputs",
      "outputs", "indexNames", "reductions", "tensorId", "range",  "start",
      "end",     "affineMap",  "projection", "offset",   "shape"};
  std::vector<std::string> keys;
  for (const std::string& k : kOrder) {
    if (object.contains(k)) keys.push_back(k);
  }
  for (const auto& [k, v] : object.items()) {
    if (std::find(kOrder.begin(), kOrder.end(), k) == kOrder.end()) keys.push_back(k);
  }
  return keys;
}

// JSON on one line, with a space after ':' and ','.
std::string one_line(const nlohmann::json& v) {
  if (v.is_object()) {
    std::vector<std::string> items;
    for (const std::string& k : ordered_keys(v))
      items.push_back(nlohmann::json(k).dump() + ": " + one_line(v.at(k)));
    return fmt::format("{{{}}}", fmt::join(items, ", "));
  }
  if (v.is_array()) {
    std::vector<std::string> items;
    for (const nlohmann::json& e : v) items.push_back(one_line(e));
    return fmt::format("[{}]", fmt::join(items, ", "));
  }
  return v.dump();
}

// JSON indented by two spaces per level, each value on one line when it fits in 100 columns.
std::string indented(const nlohmann::json& v, std::size_t indent) {
  const std::string line = one_line(v);
  if (indent + line.size() <= 100 || (!v.is_object() && !v.is_array()) || v.empty()) return line;
  const std::string pad(indent + 2, ' ');
  std::vector<std::string> items;
  if (v.is_object()) {
    for (const std::string& k : ordered_keys(v))
      items.push_back(pad + nlohmann::json(k).dump() + ": " + indented(v.at(k), indent + 2));
  } else {
    for (const nlohmann::json& e : v) items.push_back(pad + indented(e, indent + 2));
  }
  return fmt::format("{}\n{}\n{}{}", v.is_object() ? "{" : "[", fmt::join(items, ",\n"),
                     std::string(indent, ' '), v.is_object() ? "}" : "]");
}

class Printer {
 public:
  Printer(const ir::Graph& graph, const SignatureRegistry& signatures)
      : g_(graph), signatures_(signatures) {}

  std::string run() {
    if (const ir::TopologicalOrder order = g_.topological_order(); !order.cycle.empty())
      throw Error(
          "the graph has a cycle, which .tap cannot write (statements use only "
          "variables defined before them)");
    name_tensors();
    for (ir::OperationId op : g_.operations()) {
      if (!may_print_as_call(op)) verbatim_.insert(op);
    }
    std::string text;
    for (std::size_t round = 0; round <= g_.operations().size(); ++round) {
      choose_nesting();
      text = print();
      if (!mark_what_does_not_round_trip(text)) break;
    }
    return notes() + text;
  }

 private:
  // ---- 1. names ------------------------------------------------------------------------------
  void name_tensors() {
    std::set<std::string> labels;
    std::map<std::string, int> uses;
    for (ir::TensorId t : g_.tensors()) {
      labels.insert(g_.tensor(t).label());
      ++uses[g_.tensor(t).label()];
    }
    int next = 0;
    for (ir::TensorId t : g_.tensors()) {
      std::string name = g_.tensor(t).label();
      if (name.empty() || uses[name] > 1) {
        do {
          name = fmt::format("t{}", next++);
        } while (labels.count(name));
        labels.insert(name);
        renamed_.push_back(t);
      }
      names_[t] = name;
    }
  }

  std::string tensor_name(ir::TensorId t) const { return tap::name_to_string(names_.at(t)); }

  // ---- 2. calls and nesting --------------------------------------------------------------------
  // A call gives one operation with a known kernel and one result named like the operation, or
  // with several outputs, each named `<operation>.<port>` (`S = adam(…)`: S.result, S.m_next, …).
  bool may_print_as_call(ir::OperationId op) const {
    const ir::OperationView view = g_.operation(op);
    if (view.label().empty() || !signatures_.find(view.kernel()) || view.outputs().size() == 0)
      return false;
    const bool several = view.outputs().size() > 1;
    for (const auto& e : view.outputs().entries()) {
      const std::string want = several ? view.label() + "." + e.name : view.label();
      if (e.position != 0 || g_.producers(e.value.tensor).size() != 1 ||
          names_.at(e.value.tensor) != want)
        return false;
    }
    return true;
  }

  bool is_call(ir::OperationId op) const { return !verbatim_.count(op); }

  // The single operation consuming `op`'s only result exactly once, if `op` may nest there.
  std::optional<ir::OperationId> nest_target(ir::OperationId op) const {
    if (!is_call(op)) return std::nullopt;
    const ir::OperationView view = g_.operation(op);
    if (view.outputs().size() != 1) return std::nullopt;  // its other outputs need the variable
    const ir::TensorId t = (*view.outputs().entries().begin()).value.tensor;
    const auto consumers = g_.consumers(t);
    if (consumers.size() != 1 || is_graph_output(g_, t) || !is_call(consumers[0]))
      return std::nullopt;
    for (const ir::StateUpdate& u : g_.updates()) {
      if (u.next == t) return std::nullopt;  // `update W <- t` names it
    }
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
        if (nest_target(op) && !refused.count(op)) nested_.insert(op);
      }
      for (ir::OperationId op : g_.operations()) {
        if (nested_.count(op) || !is_call(op)) continue;
        std::vector<ir::OperationId> subtree;
        collect_nested(op, subtree);
        std::vector<std::string> kernels;
        for (ir::OperationId s : subtree) kernels.push_back(g_.operation(s).kernel());
        const std::vector<std::string> expected = nested_names(g_.operation(op).label(), kernels);
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

  // Input tensors in the kernel's declared order (port names sorted when they do not match).
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

  // ---- 3. text ---------------------------------------------------------------------------------
  std::string print() {
    statement_line_.clear();
    std::string out;
    int line = 1;
    auto emit = [&](const std::string& text) {
      out += text;
      line += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    };
    for (ir::TensorId t : g_.tensors()) {
      const auto producers = g_.producers(t);
      if (producers.size() != 1 || !is_call(producers[0])) emit(declaration(t));
    }
    for (ir::NodeId node : g_.topological_order().order) {
      const std::optional<ir::OperationId> op = g_.as_operation(node);
      if (!op || nested_.count(*op)) continue;
      statement_line_[line] = *op;
      emit(is_call(*op) ? fmt::format("{} = {}\n", tap::name_to_string(g_.operation(*op).label()),
                                      call_text(*op))
                        : verbatim_text(*op));
    }
    std::vector<std::string> outputs;
    for (ir::TensorId t : g_.tensors()) {
      if (is_graph_output(g_, t)) outputs.push_back(tensor_name(t));
    }
    if (!outputs.empty()) emit(fmt::format("output {}\n", fmt::join(outputs, ", ")));
    std::vector<std::string> updates;
    for (const ir::StateUpdate& u : g_.updates()) {
      updates.push_back(fmt::format("{} <- {}", tensor_name(u.state), tensor_name(u.next)));
    }
    if (!updates.empty()) emit(fmt::format("update {}\n", fmt::join(updates, ", ")));
    return out;
  }

  std::string call_text(ir::OperationId op) const {
    const ir::OperationView view = g_.operation(op);
    std::vector<std::string> args;
    for (ir::TensorId t : ordered_inputs(op)) {
      const auto producers = g_.producers(t);
      args.push_back(producers.size() == 1 && nested_.count(producers[0]) ? call_text(producers[0])
                                                                          : tensor_name(t));
    }
    const Metakernel* k = signatures_.find(view.kernel());
    if (view.params().is_object()) {
      const nlohmann::json sized = size_defaults(op, k);
      for (const auto& [name, value] : view.params().items()) {
        const ParamSpec* spec = k ? k->find_param(name) : nullptr;
        if (spec && spec->default_value && *spec->default_value == value) continue;
        if (sized.contains(name) && sized.at(name) == value) continue;
        args.push_back(fmt::format("{}={}", tap::name_to_string(name), literal(value)));
      }
    }
    return fmt::format("{}({})", tap::name_to_string(view.kernel()), fmt::join(args, ", "));
  }

  // The values the params with a size default (ParamSpec::default_expr) take on this
  // operation's inputs: a param equal to its one is left out of the call, as a default is, so
  // the printed program stays right when its shapes are edited. Empty when the kernel has none
  // or the inputs do not bind.
  nlohmann::json size_defaults(ir::OperationId op, const Metakernel* k) const {
    nlohmann::json out = nlohmann::json::object();
    if (!k || std::none_of(k->params.begin(), k->params.end(),
                           [](const ParamSpec& p) { return p.default_expr.has_value(); })) {
      return out;
    }
    std::vector<Argument> args;
    for (ir::TensorId t : ordered_inputs(op)) {
      const ir::TensorView view = g_.tensor(t);
      const std::optional<DType> dtype = view.dtype().known();
      if (!dtype) return out;
      args.push_back(Argument{tensor_name(t), TensorType{*dtype, view.range()}});
    }
    nlohmann::json given = g_.operation(op).params();
    for (const ParamSpec& p : k->params) {
      if (p.default_expr) given.erase(p.name);
    }
    try {
      const nlohmann::json resolved = resolve_parameters(*k, args, given);
      for (const ParamSpec& p : k->params) {
        if (p.default_expr && resolved.contains(p.name)) out[p.name] = resolved.at(p.name);
      }
    } catch (const Error&) {  // the inputs do not bind: print every param
    }
    return out;
  }

  std::string verbatim_text(ir::OperationId op) const {
    const nlohmann::json node =
        verbatim_operation_json(g_, op, [this](ir::TensorId t) { return names_.at(t); });
    return fmt::format("operation {}\n", indented(node, 0));
  }

  std::string declaration(ir::TensorId t) const {
    const ir::TensorView view = g_.tensor(t);
    const std::optional<DType> dtype = view.dtype().known();
    const std::string type =
        TensorType{DType::kFloat32, view.range()}.to_string().substr(3);  // "[…]"
    std::string dtype_text;
    if (dtype && ir::is_tap_dtype(*dtype)) {
      dtype_text = std::string(ir::dtype_short_name(*dtype));
    } else if (dtype) {
      dtype_text = std::string(ir::dtype_name(*dtype));
    } else {
      dtype_text = tap::literal_to_string(std::string(view.dtype().name()));
    }
    return fmt::format("{}: {}{}\n", tensor_name(t), dtype_text, type);
  }

  // ---- 4. the check ----------------------------------------------------------------------------
  // Builds `text`; marks verbatim every call-form operation that did not come back equal (or
  // whose statement failed). Returns whether it marked any.
  bool mark_what_does_not_round_trip(const std::string& text) {
    const BuildResult built =
        build_tap(std::make_shared<const SourceFile>("printed.tap", text), signatures_);
    std::set<ir::OperationId> wrong;
    if (!built.ok()) {
      for (const support::Diagnostic& d : built.diagnostics) {
        if (auto it = statement_line_.find(d.where.pos.line); it != statement_line_.end())
          wrong.insert(it->second);
      }
      if (wrong.empty()) {  // not attributable to one statement: print every call verbatim
        for (ir::OperationId op : g_.operations()) wrong.insert(op);
      }
    } else {
      const ir::OperationGraphDifference d = ir::compare_operation_graphs(g_, *built.graph);
      const std::set<std::string> missing(d.only_in_first.begin(), d.only_in_first.end());
      for (ir::OperationId op : g_.operations()) {
        bool differs = missing.count(ir::operation_graph_line(g_, op)) > 0;
        for (const auto& e : g_.operation(op).outputs().entries())
          differs = differs || missing.count(ir::operation_graph_line(g_, e.value.tensor)) > 0;
        if (differs) wrong.insert(op);
      }
    }
    bool marked = false;
    for (ir::OperationId op : wrong) {
      // A nested operation's statement is its root's: print the whole statement verbatim.
      std::vector<ir::OperationId> subtree;
      collect_nested(op, subtree);
      for (ir::OperationId s : subtree) marked = verbatim_.insert(s).second || marked;
    }
    return marked;
  }

  std::string notes() const {
    std::string out;
    for (ir::TensorId t : renamed_) {
      out += g_.tensor(t).label().empty()
                 ? fmt::format("# note: tensor {} has no label; printed as {}\n", g_.key(t),
                               names_.at(t))
                 : fmt::format(
                       "# note: the label {} is used by several tensors; one is printed "
                       "as {}\n",
                       g_.tensor(t).label(), names_.at(t));
    }
    for (ir::TensorId t : g_.tensors()) {
      const ir::TensorView view = g_.tensor(t);
      nlohmann::json extensions = view.extensions();
      if (extensions.is_object()) extensions.erase(kGraphOutputField);
      if ((extensions.is_object() && !extensions.empty()) || !view.other_tags().is_null() ||
          view.has_io_sequence_point())
        out += fmt::format("# note: tensor {} has body fields or tags .tap does not write\n",
                           names_.at(t));
    }
    if (const std::size_t n = g_.notes().size() + g_.opaque_nodes().size(); n > 0)
      out += fmt::format("# note: {} note and opaque node(s) are not printed\n", n);
    return out;
  }

  const ir::Graph& g_;
  const SignatureRegistry& signatures_;
  std::map<ir::TensorId, std::string> names_;
  std::vector<ir::TensorId> renamed_;
  std::set<ir::OperationId> verbatim_;
  std::set<ir::OperationId> nested_;
  std::map<int, ir::OperationId> statement_line_;
};

}  // namespace

std::string print_tap(const ir::Graph& graph, const SignatureRegistry& signatures) {
  return Printer(graph, signatures).run();
}

}  // namespace tapestry::metakernel
