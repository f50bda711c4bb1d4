// Chains of operations the oracle evaluates a block of rows at a time (oracle_chains.h).
#include "oracle_chains.h"

#include <algorithm>
#include <optional>
#include <string>

#include "operation_blocks.h"
#include "tapestry/metakernel/kernel_facts.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime::detail {

namespace {

// The IPFs of `op`'s output entries (selection order).
std::vector<const zspace::IndexProjection*> output_ipfs(const ir::OperationView& op) {
  std::vector<const zspace::IndexProjection*> out;
  const ir::IpfSignature& signature = *op.ipf_signature();
  for (const auto& e : op.outputs().entries())
    out.push_back(&signature.outputs.list(e.name)[e.position]);
  return out;
}

// Whether `op` may be part of a chain: its IPF tags are complete, every output is made whole (the
// selection is the tensor) and its error rule is a cell's own (the worst-case fallback takes the
// largest input of the whole operation: a block would change its number).
bool chainable(const ir::Graph& graph, const ir::OperationView& op) {
  if (!op.ipf_index() || op.ipf_signature() == nullptr || op.ipf_index()->is_empty()) return false;
  const ir::IpfSignature& signature = *op.ipf_signature();
  for (const auto& e : op.inputs().entries())
    if (e.position >= signature.inputs.list(e.name).size()) return false;
  for (const auto& e : op.outputs().entries()) {
    if (e.position >= signature.outputs.list(e.name).size()) return false;
    if (e.value.range != graph.tensor(e.value.tensor).range()) return false;
  }
  const metakernel::ErrorRule rule = metakernel::kernel_facts(op.kernel()).error_rule;
  if (rule == metakernel::ErrorRule::kFallback) return false;
  return rule != metakernel::ErrorRule::kMonoid || !op.body().reductions.empty();
}

// The index dims of `op` a chain may cut: at least 2 long, taken one-to-one by every output.
std::vector<std::size_t> cut_dims(const ir::OperationView& op) {
  const Range index = *op.ipf_index();
  const std::vector<const zspace::IndexProjection*> outs = output_ipfs(op);
  std::vector<std::size_t> dims;
  for (std::size_t d = 0; d < index.rank(); ++d)
    if (index.extent(d) >= 2 && one_to_one(outs, d)) dims.push_back(d);
  return dims;
}

using Regions = std::vector<Range>;  // a tensor's cells in each block

// A chain being grown from one operation and one cut.
struct Growing {
  OracleChain chain;
  std::map<ir::TensorId, Regions> made;     // the cells of each tensor the chain makes, per block
  std::map<ir::TensorId, Regions> partial;  // of each earlier tensor it reads a part of
  std::set<ir::TensorId> whole;             // earlier tensors every block reads whole
};

// Adds `op`, cut along `dim`, to `g` when every block reads exactly the cells of a tensor the
// chain made in that block, every earlier tensor whole in every block or the same part of it in
// every operation, and makes tensors of its own. False (g unchanged) otherwise.
bool try_add(const ir::Graph& graph, const ir::OperationView& op, std::size_t dim, Growing& g,
             std::int64_t blocks) {
  const Range index = *op.ipf_index();
  const ir::IpfSignature& signature = *op.ipf_signature();
  const std::vector<Range> boxes = index.split_even(dim, blocks);
  const auto regions = [&](const zspace::IndexProjection& ipf) {
    Regions r;
    r.reserve(boxes.size());
    for (const Range& box : boxes) r.push_back(ipf.apply(box));
    return r;
  };
  std::map<ir::TensorId, Regions> partial;
  std::set<ir::TensorId> whole;
  for (const auto& e : op.inputs().entries()) {
    const ir::TensorId t = e.value.tensor;
    const Regions r = regions(signature.inputs.list(e.name)[e.position]);
    if (auto made = g.made.find(t); made != g.made.end()) {
      if (r != made->second) return false;
      continue;
    }
    const Range& range = graph.tensor(t).range();
    if (std::all_of(r.begin(), r.end(), [&](const Range& x) { return x == e.value.range; }) &&
        e.value.range == range) {
      if (g.partial.contains(t) || partial.contains(t)) return false;
      whole.insert(t);
      continue;
    }
    if (!std::all_of(r.begin(), r.end(), [&](const Range& x) { return range.contains(x); }))
      return false;
    if (g.whole.contains(t) || whole.contains(t)) return false;
    for (const auto* seen : {&g.partial, &partial}) {
      if (auto p = seen->find(t); p != seen->end() && p->second != r) return false;
    }
    partial.emplace(t, r);
  }
  std::map<ir::TensorId, Regions> made;
  for (const auto& e : op.outputs().entries()) {
    const ir::TensorId t = e.value.tensor;
    if (g.made.contains(t) || made.contains(t) || g.whole.contains(t) || whole.contains(t) ||
        g.partial.contains(t) || partial.contains(t))
      return false;
    made.emplace(t, regions(signature.outputs.list(e.name)[e.position]));
  }
  g.made.merge(made);
  g.partial.merge(partial);
  g.whole.merge(whole);
  g.chain.boxes.push_back(boxes);
  return true;
}

}  // namespace

std::vector<OracleChain> oracle_chains(const ir::Graph& graph,
                                       const std::vector<ir::OperationId>& order,
                                       std::int64_t min_cells) {
  std::map<ir::OperationId, std::size_t> position;
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  const std::vector<ir::TensorId> outs = graph_outputs(graph);
  const std::set<ir::TensorId> outputs(outs.begin(), outs.end());
  std::vector<OracleChain> chains;
  if (min_cells < 0) return chains;
  for (std::size_t k = 0; k < order.size();) {
    const ir::OperationView first = graph.operation(order[k]);
    std::optional<OracleChain> best;
    std::int64_t best_cells = 0;
    if (chainable(graph, first)) {
      for (std::size_t dim : cut_dims(first)) {
        const std::int64_t extent = first.ipf_index()->extent(dim);
        const std::int64_t blocks = std::min(kChainBlocks, extent);
        Growing g;
        g.chain.begin = k;
        if (!try_add(graph, first, dim, g, blocks)) continue;
        std::size_t end = k + 1;
        for (; end < order.size(); ++end) {
          const ir::OperationView op = graph.operation(order[end]);
          if (!chainable(graph, op)) break;
          const auto& ins = op.inputs().entries();
          if (std::none_of(ins.begin(), ins.end(),
                           [&](const auto& e) { return g.made.contains(e.value.tensor); }))
            break;
          bool added = false;
          for (std::size_t d : cut_dims(op)) {
            if (op.ipf_index()->extent(d) == extent && try_add(graph, op, d, g, blocks)) {
              added = true;
              break;
            }
          }
          if (!added) break;
        }
        g.chain.end = end;
        std::int64_t cells = 0;
        for (const auto& [t, regions] : g.made) {
          const auto readers = graph.consumers(t);
          if (!std::all_of(readers.begin(), readers.end(), [&](ir::OperationId r) {
                const auto p = position.find(r);
                return p != position.end() && p->second >= k && p->second < end;
              }))
            continue;
          if (outputs.contains(t)) {
            g.chain.final_outputs.insert(t);
            continue;
          }
          g.chain.internal.insert(t);
          cells += graph.tensor(t).range().size();
        }
        for (const auto& [t, regions] : g.partial) g.chain.partial.insert(t);
        if (g.chain.end - g.chain.begin >= 2 && g.chain.blocks() >= 2 &&
            (!best || cells > best_cells)) {
          best = std::move(g.chain);
          best_cells = cells;
        }
      }
    }
    if (best && best_cells > 0 && best_cells >= min_cells) {
      k = best->end;
      chains.push_back(std::move(*best));
    } else {
      ++k;
    }
  }
  return chains;
}

ChainBlock chain_block(const ir::Graph& graph, const std::vector<ir::OperationId>& order,
                       const OracleChain& chain, std::size_t block) {
  ChainBlock out;
  std::map<ir::TensorId, ir::TensorId> mine;  // original → out.graph's
  const auto tensor = [&](ir::TensorId t, const Range& range) {
    if (auto it = mine.find(t); it != mine.end()) return it->second;
    const ir::TensorId id = out.graph.add_tensor(
        {.dtype = graph.tensor(t).body().dtype, .range = range}, {.label = tensor_name(graph, t)});
    mine.emplace(t, id);
    out.original.emplace(id, t);
    return id;
  };
  for (std::size_t j = 0; j < chain.boxes.size(); ++j) {
    const ir::OperationId op = order[chain.begin + j];
    const ir::OperationView view = graph.operation(op);
    const Range& box = chain.boxes[j][block];
    const ir::IpfSignature& signature = *view.ipf_signature();
    ir::OperationBody body{.kernel = view.kernel(),
                           .params = view.params(),
                           .index_names = view.body().index_names,
                           .reductions = view.body().reductions};
    for (const auto& e : view.inputs().entries()) {
      const Range cells = signature.inputs.list(e.name)[e.position].apply(box);
      body.inputs.append(e.name, {tensor(e.value.tensor, cells), cells});
    }
    for (const auto& e : view.outputs().entries()) {
      const Range cells = signature.outputs.list(e.name)[e.position].apply(box);
      body.outputs.append(e.name, {tensor(e.value.tensor, cells), cells});
    }
    const ir::OperationId id =
        out.graph.add_operation(std::move(body), {.label = graph.display_name(op)});
    out.graph.set_ipf_index(id, box);
    out.graph.set_ipf_signature(id, signature);
    out.ops.push_back(id);
  }
  return out;
}

std::int64_t contiguous_offset(const Range& range, const Range& box) {
  const std::size_t rank = range.rank();
  std::size_t partial = rank;  // the last dim the box does not take whole
  for (std::size_t d = rank; d-- > 0;) {
    if (box.extent(d) != range.extent(d)) {
      partial = d;
      break;
    }
  }
  for (std::size_t d = 0; d < partial && partial < rank; ++d)
    if (box.extent(d) != 1) return -1;
  if (box.is_empty()) return 0;
  return element_offset(range, dense_strides(range.shape()), box.start());
}

}  // namespace tapestry::runtime::detail
