// Finding PyTorch's exact-GELU chains (gelu_pattern.h).
#include "gelu_pattern.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "host_tensor.h"
#include "tapestry/support/error.h"

namespace tapestry::onnx {

namespace {

class GraphIndex {
 public:
  explicit GraphIndex(const ::onnx::GraphProto& graph) : graph_(graph) {
    for (int i = 0; i < graph.node_size(); ++i) {
      const auto& n = graph.node(i);
      for (const std::string& o : n.output()) producer_[o] = static_cast<std::size_t>(i);
      for (const std::string& in : n.input()) consumers_[in].push_back(static_cast<std::size_t>(i));
      if (n.op_type() == "Constant" && n.output_size() == 1) {
        for (const auto& a : n.attribute()) {
          if (a.name() == "value" && a.type() == ::onnx::AttributeProto::TENSOR)
            scalar(n.output(0), a.t());
          if (a.name() == "value_float") scalars_[n.output(0)] = a.f();
        }
      }
    }
    for (const auto& t : graph.initializer()) scalar(t.name(), t);
    for (const auto& o : graph.output()) outputs_.insert(o.name());
  }

  // The node that is the only reader of `name` (which must not be a graph output).
  [[nodiscard]] const ::onnx::NodeProto* sole_consumer(const std::string& name,
                                                       std::size_t* index) const {
    auto it = consumers_.find(name);
    if (it == consumers_.end() || it->second.size() != 1 || outputs_.contains(name)) return nullptr;
    *index = it->second.front();
    return &graph_.node(static_cast<int>(*index));
  }

  [[nodiscard]] const ::onnx::NodeProto* producer(const std::string& name,
                                                  std::size_t* index) const {
    auto it = producer_.find(name);
    if (it == producer_.end()) return nullptr;
    *index = it->second;
    return &graph_.node(static_cast<int>(*index));
  }

  // True when `name` is a known scalar within 1e-6 (relative) of `v`.
  [[nodiscard]] bool is_scalar(const std::string& name, double v) const {
    auto it = scalars_.find(name);
    return it != scalars_.end() && std::abs(it->second - v) <= 1e-6 * std::abs(v);
  }

 private:
  void scalar(const std::string& name, const ::onnx::TensorProto& t) {
    try {
      const HostTensor h = decode_tensor(t, name);
      if (h.size() == 1 && !h.is_int()) scalars_[name] = h.floats.front();
    } catch (const Error&) {
      // Not a scalar this pattern could use; the converters report bad tensors.
    }
  }

  const ::onnx::GraphProto& graph_;
  std::map<std::string, std::size_t> producer_;
  std::map<std::string, std::vector<std::size_t>> consumers_;
  std::map<std::string, double> scalars_;
  std::set<std::string> outputs_;
};

bool is_binary(const ::onnx::NodeProto* n, std::string_view op) {
  return n != nullptr && n->op_type() == op && n->input_size() == 2 && n->output_size() == 1;
}

// The operand of binary node `n` other than `name`, or nullopt when `name` is not one of them.
std::optional<std::string> other_operand(const ::onnx::NodeProto& n, const std::string& name) {
  if (n.input(0) == name) return n.input(1);
  if (n.input(1) == name) return n.input(0);
  return std::nullopt;
}

std::optional<GeluMatch> match_at(const GraphIndex& g, const ::onnx::GraphProto& graph,
                                  std::size_t erf_index) {
  const ::onnx::NodeProto& erf = graph.node(static_cast<int>(erf_index));
  if (erf.input_size() != 1 || erf.output_size() != 1) return std::nullopt;
  GeluMatch m;
  std::size_t d_index = 0, a_index = 0, m1_index = 0, m2_index = 0;
  const ::onnx::NodeProto* d = g.producer(erf.input(0), &d_index);
  std::size_t erf_check = 0;
  if (d == nullptr || g.sole_consumer(erf.input(0), &erf_check) == nullptr) return std::nullopt;
  if (is_binary(d, "Div") && g.is_scalar(d->input(1), std::sqrt(2.0))) {
    m.x = d->input(0);
  } else if (is_binary(d, "Mul") && g.is_scalar(d->input(1), std::sqrt(0.5))) {
    m.x = d->input(0);
  } else {
    return std::nullopt;
  }
  const ::onnx::NodeProto* a = g.sole_consumer(erf.output(0), &a_index);
  if (!is_binary(a, "Add")) return std::nullopt;
  const auto one = other_operand(*a, erf.output(0));
  if (!one || !g.is_scalar(*one, 1.0)) return std::nullopt;
  const ::onnx::NodeProto* m1 = g.sole_consumer(a->output(0), &m1_index);
  if (!is_binary(m1, "Mul")) return std::nullopt;
  const auto other = other_operand(*m1, a->output(0));
  if (!other) return std::nullopt;
  m.absorbed = {d_index, erf_index, a_index};
  if (*other == m.x) {  // y = Mul(Mul(x, a), 0.5)
    const ::onnx::NodeProto* m2 = g.sole_consumer(m1->output(0), &m2_index);
    if (!is_binary(m2, "Mul")) return std::nullopt;
    const auto half = other_operand(*m2, m1->output(0));
    if (!half || !g.is_scalar(*half, 0.5)) return std::nullopt;
    m.absorbed.push_back(m1_index);
    m.last = m2_index;
    return m;
  }
  std::size_t h_index = 0;  // y = Mul(Mul(x, 0.5), a)
  const ::onnx::NodeProto* h = g.producer(*other, &h_index);
  std::size_t check = 0;
  if (!is_binary(h, "Mul") || g.sole_consumer(*other, &check) == nullptr) return std::nullopt;
  const auto half = other_operand(*h, m.x);
  if (!half || !g.is_scalar(*half, 0.5)) return std::nullopt;
  m.absorbed.push_back(h_index);
  m.last = m1_index;
  return m;
}

}  // namespace

std::vector<GeluMatch> find_gelu_patterns(const ::onnx::GraphProto& graph) {
  const GraphIndex index(graph);
  std::vector<GeluMatch> out;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (graph.node(i).op_type() != "Erf") continue;
    if (auto m = match_at(index, graph, static_cast<std::size_t>(i))) out.push_back(*m);
  }
  return out;
}

}  // namespace tapestry::onnx
