#include "tapestry/rewrite/dim_aliases.h"

#include <algorithm>
#include <optional>
#include <set>

namespace tapestry::rewrite {

namespace {

// The column of row `row` of `ipf` when that row is a unit vector and its cell is 1: the one
// index dim that tensor dim `row` follows one to one.
std::optional<std::size_t> unit_column(const zspace::IndexProjection& ipf, std::size_t row) {
  if (ipf.shape()[row] != 1) return std::nullopt;
  std::optional<std::size_t> column;
  for (std::size_t c = 0; c < ipf.index_rank(); ++c) {
    const std::int64_t a = ipf.map().at(row, c);
    if (a == 0) continue;
    if (a != 1 || column) return std::nullopt;
    column = c;
  }
  return column;
}

// `d0`, `d1`, …: the generic names of elementwise kernels, which say nothing worth aliasing.
bool is_generic(const std::string& name) {
  return name.size() > 1 && name[0] == 'd' &&
         std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_identity(const zspace::IndexProjection& ipf) {
  if (ipf.tensor_rank() != ipf.index_rank()) return false;
  for (std::size_t r = 0; r < ipf.tensor_rank(); ++r) {
    if (unit_column(ipf, r) != r) return false;
  }
  return true;
}

// Whether `op` takes aliases (above): elementwise — no reductions, one output, identity IPF — or
// a `reduce`, whose output IPF is the identity on its dims d0, d1, … before `block`.
bool takes_aliases(const ir::OperationView& view) {
  const ir::IpfSignature* sig = view.ipf_signature();
  if (sig == nullptr || sig->outputs.size() != 1) return false;
  const zspace::IndexProjection& out = sig->outputs.entries().front().value;
  if (view.kernel() == "reduce") {
    for (std::size_t r = 0; r < out.tensor_rank(); ++r) {
      if (unit_column(out, r) != r) return false;
    }
    return true;
  }
  for (std::size_t d = 0; d < view.index_rank(); ++d) {
    if (view.reduction(d)) return false;
  }
  return is_identity(out);
}

// The IPF with which `producer` writes `tensor`, if it writes it through exactly one port.
const zspace::IndexProjection* output_ipf(const ir::Graph& graph, ir::OperationId producer,
                                          ir::TensorId tensor) {
  const ir::OperationView view = graph.operation(producer);
  const ir::IpfSignature* sig = view.ipf_signature();
  if (sig == nullptr) return nullptr;
  const zspace::IndexProjection* found = nullptr;
  for (const auto& entry : view.outputs().entries()) {
    if (entry.value.tensor != tensor) continue;
    const auto list = sig->outputs.list(entry.name);
    if (found != nullptr || entry.position >= list.size()) return nullptr;
    found = &list[entry.position];
  }
  return found;
}

}  // namespace

std::map<std::string, std::string> index_dim_aliases(const ir::Graph& graph, ir::OperationId op) {
  const ir::OperationView view = graph.operation(op);
  std::map<std::string, std::string> aliases;
  if (!takes_aliases(view)) return aliases;
  const std::vector<std::string> own = view.index_names();
  std::set<std::string> dropped;
  const ir::IpfSignature& sig = *view.ipf_signature();
  for (const auto& entry : view.inputs().entries()) {
    const auto ipfs = sig.inputs.list(entry.name);
    if (entry.position >= ipfs.size()) continue;
    const zspace::IndexProjection& in = ipfs[entry.position];
    for (ir::OperationId producer : graph.producers(entry.value.tensor)) {
      const zspace::IndexProjection* out = output_ipf(graph, producer, entry.value.tensor);
      if (out == nullptr || out->tensor_rank() != in.tensor_rank()) continue;
      const ir::OperationView pview = graph.operation(producer);
      for (std::size_t row = 0; row < in.tensor_rank(); ++row) {
        const std::optional<std::size_t> mine = unit_column(in, row);
        const std::optional<std::size_t> theirs = unit_column(*out, row);
        if (!mine || !theirs) continue;
        const std::string alias = pview.index_name(*theirs);
        if (is_generic(alias) || std::find(own.begin(), own.end(), alias) != own.end()) continue;
        const auto [it, added] = aliases.emplace(alias, own[*mine]);
        if (!added && it->second != own[*mine]) dropped.insert(alias);
      }
    }
  }
  for (const std::string& alias : dropped) aliases.erase(alias);
  return aliases;
}

}  // namespace tapestry::rewrite
