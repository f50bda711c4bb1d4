// GraphRoles: batch-like dims, activations and weights, contractions (graph_roles.h).
#include "tapestry/rewrite/graph_roles.h"

#include <algorithm>
#include <array>

#include "tapestry/rewrite/fused.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/support/assert.h"

namespace tapestry::rewrite {

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

constexpr std::array<std::string_view, 5> kContractions = {"matmul", "linear", "linear_nobias",
                                                           "conv2d", "grouped_conv2d"};

// The index dim tensor dim `row` of `ipf` follows: the largest positive coefficient's column.
std::optional<std::size_t> followed(const zspace::IndexProjection& ipf, std::size_t row) {
  std::optional<std::size_t> best;
  std::int64_t coefficient = 0;
  for (std::size_t c = 0; c < ipf.index_rank(); ++c) {
    const std::int64_t a = ipf.map().at(row, c);
    if (a > coefficient) {
      coefficient = a;
      best = c;
    }
  }
  return best;
}

bool fused_contraction(const ir::OperationView& view) {
  for (const FusedStage& stage : fused_stages(view.params())) {
    if (is_contraction_kernel(stage.kernel)) return true;
  }
  return false;
}

OperationRoles roles_of(const ir::Graph& graph, ir::OperationId id) {
  const ir::OperationView view = graph.operation(id);
  OperationRoles op;
  op.id = id;
  op.name = operation_name(graph, id);
  op.kernel = view.kernel();
  op.dims = view.index_names();
  const std::optional<zspace::Range> index = view.ipf_index();
  for (std::size_t d = 0; d < op.dims.size(); ++d) {
    op.extents.push_back(index ? index->extent(d) : 1);
    op.reductions.push_back(view.reduction(d));
  }
  op.batch.assign(op.dims.size(), false);
  if (const ir::IpfSignature* sig = view.ipf_signature()) {
    op.inputs = port_roles(view.inputs(), sig->inputs);
    op.outputs = port_roles(view.outputs(), sig->outputs);
  }
  op.contraction =
      is_contraction_kernel(op.kernel) || (op.kernel == kFusedKernel && fused_contraction(view));
  return op;
}

// Whether `op` reads tensor dim 0 of `port` through a non-reduction index dim that dim 0 of its
// first output follows too.
bool leads_to_output(const OperationRoles& op, const PortRoles& port) {
  if (port.follows.empty() || !port.follows[0] || op.outputs.empty() ||
      op.outputs[0].follows.empty()) {
    return false;
  }
  const std::size_t d = *port.follows[0];
  return !op.reductions[d] && op.outputs[0].follows[0] == d;
}

}  // namespace

std::vector<PortRoles> port_roles(const ir::SelectionMap& selections, const ir::IpfMap& ipfs) {
  std::vector<PortRoles> ports;
  const auto& ipf = ipfs.entries();
  std::size_t i = 0;
  for (const auto& s : selections.entries()) {
    PortRoles port{.name = std::string(s.name), .tensor = s.value.tensor, .follows = {}};
    if (i < ipf.size()) {
      for (std::size_t row = 0; row < ipf[i].value.tensor_rank(); ++row) {
        port.follows.push_back(followed(ipf[i].value, row));
      }
    }
    ports.push_back(std::move(port));
    ++i;
  }
  return ports;
}

bool is_contraction_kernel(std::string_view kernel) {
  return std::find(kContractions.begin(), kContractions.end(), kernel) != kContractions.end();
}

std::optional<std::size_t> OperationRoles::dim(std::string_view name) const {
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == name) return d;
  }
  return std::nullopt;
}

std::optional<std::size_t> OperationRoles::batch_dim() const {
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (batch[d] && !reductions[d]) return d;
  }
  return std::nullopt;
}

std::optional<std::size_t> OperationRoles::batch_reduction_dim() const {
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (batch[d] && reductions[d]) return d;
  }
  return std::nullopt;
}

std::optional<std::size_t> GraphRoles::find(std::string_view name) const {
  for (std::size_t i = 0; i < operations.size(); ++i) {
    if (operations[i].name == name) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> GraphRoles::position(ir::OperationId op) const {
  if (op.index() >= position_.size() || position_[op.index()] == kNone) return std::nullopt;
  return position_[op.index()];
}

const std::vector<bool>& GraphRoles::batch_dims(ir::TensorId t) const {
  static const std::vector<bool> kEmpty;
  return t.index() < tensor_batch_.size() ? tensor_batch_[t.index()] : kEmpty;
}

bool GraphRoles::is_weight(ir::TensorId t) const {
  return t.index() < depends_on_activation_.size() && depends_on_activation_[t.index()] == 0;
}

bool GraphRoles::is_activation(ir::TensorId t) const {
  return t.index() < activation_.size() && activation_[t.index()] != 0;
}

GraphRoles graph_roles(const ir::Graph& graph) {
  const ir::TopologicalOrder order = graph.topological_order();
  TAPESTRY_ASSERT(order.cycle.empty(), "graph_roles needs an acyclic graph");
  GraphRoles roles;
  roles.position_.assign(graph.size(), kNone);
  roles.tensor_batch_.resize(graph.size());
  roles.depends_on_activation_.assign(graph.size(), 0);
  roles.activation_.assign(graph.size(), 0);
  for (ir::NodeId node : order.order) {
    if (auto op = graph.as_operation(node)) {
      roles.position_[op->index()] = roles.operations.size();
      roles.operations.push_back(roles_of(graph, *op));
    }
  }
  // 1. Activations: graph inputs whose dim 0 readers carry, result dim 0 to result dim 0, into
  //    a contraction's result dim 0 (X through relu into linear's x). A training step's
  //    parameters are not: their updates (sgd, adam: elementwise) carry dim 0 too, but into no
  //    contraction. A graph without such a path (no contraction) takes every input some reader
  //    carries.
  std::vector<std::uint8_t> carries(graph.size(), 0);  // by node index: dim 0 reaches one
  for (auto op = roles.operations.rbegin(); op != roles.operations.rend(); ++op) {
    const bool onward =
        op->contraction || (!op->outputs.empty() && carries[op->outputs[0].tensor.index()] != 0);
    if (!onward) continue;
    for (const PortRoles& port : op->inputs) {
      if (leads_to_output(*op, port)) carries[port.tensor.index()] = 1;
    }
  }
  const auto is_input = [&](const PortRoles& port) { return graph.producers(port.tensor).empty(); };
  bool through_contraction = false;
  for (const OperationRoles& op : roles.operations) {
    for (const PortRoles& port : op.inputs) {
      through_contraction =
          through_contraction || (is_input(port) && carries[port.tensor.index()] != 0);
    }
  }
  for (const OperationRoles& op : roles.operations) {
    for (const PortRoles& port : op.inputs) {
      if (is_input(port) && leads_to_output(op, port) &&
          (!through_contraction || carries[port.tensor.index()] != 0)) {
        roles.activation_[port.tensor.index()] = 1;
        roles.depends_on_activation_[port.tensor.index()] = 1;
      }
    }
  }
  // 2. Batch-like dims and activation dependence, producers first.
  for (OperationRoles& op : roles.operations) {
    bool depends = false;
    for (const PortRoles& port : op.inputs) {
      const std::size_t t = port.tensor.index();
      depends = depends || roles.depends_on_activation_[t] != 0;
      std::vector<bool>& tensor = roles.tensor_batch_[t];
      if (tensor.empty()) {
        tensor.assign(port.follows.size(), false);
        if (roles.activation_[t] != 0 && !tensor.empty()) tensor[0] = true;
      }
      for (std::size_t row = 0; row < port.follows.size() && row < tensor.size(); ++row) {
        if (tensor[row] && port.follows[row]) op.batch[*port.follows[row]] = true;
      }
    }
    for (const PortRoles& port : op.outputs) {
      const std::size_t t = port.tensor.index();
      roles.depends_on_activation_[t] = depends ? 1 : 0;
      std::vector<bool>& tensor = roles.tensor_batch_[t];
      tensor.assign(port.follows.size(), false);
      for (std::size_t row = 0; row < port.follows.size(); ++row) {
        tensor[row] = port.follows[row] && op.batch[*port.follows[row]];
      }
    }
  }
  return roles;
}

}  // namespace tapestry::rewrite
