// The float64 oracle and its per-cell error scales (oracle.h; the math is in the header and in
// docs/runtime.md).
//
// 1. Order and checks come from NaiveExecutor (cycles, tags, known kernels).
// 2. Every operation runs once on float64 values (integer tensors stay integer); an input is
//    promoted to float64 when an operation first reads it.
// 3. Its error rule (error_rules.h) derives the outputs' sigma, bound and magnitude, running the
//    operation's own kernel on |x|, σ² … where the rule is a sum of products.
// 4. Every tensor no later operation reads is freed (the outputs are kept) and its memory given
//    back: the oracle holds the tensors live at once, not the graph.
// 5. Exact mode is decided last, from the kernels seen and the magnitudes.
#include "tapestry/runtime/oracle.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "error_rules.h"
#include "oracle_chains.h"
#include "run_support.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/support/stopwatch.h"

namespace tapestry::runtime {

namespace {

Buffer promote(const Buffer& in) {
  if (is_half_float(in.dtype())) {  // bf16, f16: exact in float64
    Buffer out(DType::kFloat64, in.range(), Buffer::Uninitialized{});
    convert_elements(in.view(), out.view());
    return out;
  }
  if (in.dtype() != DType::kFloat32) return in;
  Buffer out(DType::kFloat64, in.range(), Buffer::Uninitialized{});
  const std::span<const float> from = in.values<float>();
  const std::span<double> to = out.values<double>();
  detail::for_cells(from.size(), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) to[i] = from[i];
  });
  return out;
}

// The smallest power of two above every value a float of `dtype` holds exactly as an integer.
double exact_integer_limit(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 0x1p24;
    case DType::kBFloat16:
      return 0x1p8;
    case DType::kFloat16:
      return 0x1p11;
    default:
      return 0x1p53;
  }
}

// Each cell of a float buffer as a double, in order: f(v) until f returns true.
template <typename F>
void for_each_double(const Buffer& b, F f) {
  if (b.dtype() == DType::kFloat32) {
    for (float v : b.values<float>())
      if (f(static_cast<double>(v))) return;
  } else if (b.dtype() == DType::kFloat64) {
    for (double v : b.values<double>())
      if (f(v)) return;
  } else if (b.dtype() == DType::kBFloat16) {
    for (BFloat16 v : b.values<BFloat16>())
      if (f(static_cast<double>(v))) return;
  } else if (b.dtype() == DType::kFloat16) {
    for (Float16 v : b.values<Float16>())
      if (f(static_cast<double>(v))) return;
  }
}

double largest_magnitude(const Buffer& b) {
  double m = 0;
  for_each_double(b, [&m](double v) {
    m = std::max(m, std::abs(v));
    return false;
  });
  return m;
}

// Why `inputs` (the graph inputs' buffers) are not all small integers (empty: they are).
std::string non_integer_input(const ir::Graph& graph,
                              const std::map<ir::TensorId, Buffer>& inputs) {
  for (ir::TensorId t : graph_inputs(graph)) {
    const double limit = exact_integer_limit(tensor_dtype(graph, t));
    std::string why;
    for_each_double(inputs.at(t), [&](double v) {
      if (v == std::nearbyint(v) && std::abs(v) < limit) return false;
      why = fmt::format("input '{}' holds {}, not a small integer", tensor_name(graph, t), v);
      return true;
    });
    if (!why.empty()) return why;
  }
  return {};
}

// A value, sigma and bound map: the oracle's, or a chain block's (keyed by its graph's tensors).
struct Maps {
  BufferMap* value;
  BufferMap* sigma;
  BufferMap* bound;
};

// The bytes of the buffers in the oracle's value, sigma and bound maps and a chain block's, and
// the most they held at once.
class LiveBytes {
 public:
  explicit LiveBytes(Oracle& oracle) : oracle_(oracle) {}

  void insert(BufferMap& map, ir::TensorId t, Buffer b) {
    now_ += bytes(b);
    if (auto old = map.find(t); old != map.end()) now_ -= bytes(old->second);
    map.insert_or_assign(t, std::move(b));
    oracle_.peak_bytes = std::max(oracle_.peak_bytes, now_);
  }
  // t's σ and D became an output's (RuleResult::taken): gone from the maps, `bytes` with them.
  void taken(Maps maps, ir::TensorId t, std::int64_t bytes) {
    maps.sigma->erase(t);
    maps.bound->erase(t);
    now_ -= bytes;
  }
  void erase(Maps maps, ir::TensorId t) {
    for (BufferMap* map : {maps.value, maps.sigma, maps.bound}) {
      auto it = map->find(t);
      if (it == map->end()) continue;
      now_ -= bytes(it->second);
      map->erase(it);
    }
  }
  static std::int64_t bytes(const Buffer& b) {  // a borrowed view (shared zeros) holds none
    return b.is_borrowed() ? 0
                           : b.size() * static_cast<std::int64_t>(ir::dtype_size_bytes(b.dtype()));
  }

 private:
  Oracle& oracle_;
  std::int64_t now_ = 0;
};

// The cells `region` of `parent` as a buffer of their own: a view where they are contiguous (a
// block of rows), else a copy; a block of shared zeros is a view of the zeros.
Buffer part_of(const Buffer& parent, const Range& region, const detail::SharedZeros& zeros) {
  if (zeros.holds(parent)) return zeros.view(region, parent.dtype());
  auto* data = const_cast<std::byte*>(parent.bytes());  // NOLINT: views are only read
  const std::int64_t offset = detail::contiguous_offset(parent.range(), region);
  if (offset >= 0 && data != nullptr) {
    return Buffer::borrow(
        parent.dtype(), region,
        data + offset * static_cast<std::int64_t>(ir::dtype_size_bytes(parent.dtype())));
  }
  Buffer out(parent.dtype(), region, Buffer::Uninitialized{});
  copy_elements(parent.view(region), out.view());
  return out;
}

// The cells `region` of a graph input, promoted as `promote` does the whole.
Buffer promote_part(const Buffer& in, const Range& region) {
  const bool widen = in.dtype() == DType::kFloat32 || is_half_float(in.dtype());
  Buffer out(widen ? DType::kFloat64 : in.dtype(), region, Buffer::Uninitialized{});
  if (widen) {
    convert_elements(in.view(region), out.view());
  } else {
    copy_elements(in.view(region), out.view());
  }
  return out;
}

}  // namespace

Buffer Oracle::bar(ir::TensorId t) const {
  const Buffer& s = sigma.at(t);
  const Buffer& d = bound.at(t);
  Buffer out(DType::kFloat64, s.range(), Buffer::Uninitialized{});
  const std::span<const double> sv = s.values<double>(), dv = d.values<double>();
  const std::span<double> o = out.values<double>();
  detail::for_cells(o.size(), [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) o[i] = std::min(lambda * sv[i], dv[i]);
  });
  return out;
}

Oracle evaluate_oracle(const ir::Graph& graph, const BufferMap& inputs,
                       const OracleOptions& options) {
  const ExecutableKernels& kernels = options.kernels ? *options.kernels : fast_kernels();
  const NaiveExecutor naive(graph, kernels);  // checks the graph, fixes the order
  Oracle oracle;
  oracle.lambda = options.lambda;
  LiveBytes live(oracle);

  // 1. Every input is given and fits its tensor; its magnitude. Each is promoted to float64
  //    (with σ = D = 0: exact) only when an operation first reads it.
  std::map<ir::TensorId, Buffer> given;  // borrowed views of the caller's buffers
  for (ir::TensorId t : graph_inputs(graph)) {
    auto found = inputs.find(t);
    if (found == inputs.end()) {
      throw Error(fmt::format("no buffer for input tensor '{}'", tensor_name(graph, t)));
    }
    const Buffer& b = found->second;
    Buffer view = bind_buffer(
        graph, t,
        Buffer::borrow(b.dtype(), b.range(), const_cast<std::byte*>(b.bytes())));  // NOLINT
    if (ir::is_float(tensor_dtype(graph, t))) oracle.magnitude[t] = largest_magnitude(view);
    given.emplace(t, std::move(view));
  }
  std::int64_t largest = 0;
  for (const auto& [t, b] : given) largest = std::max(largest, b.size());
  const detail::SharedZeros zeros(largest);  // the inputs' σ and D: exact
  const auto enter = [&](ir::TensorId t) {
    auto g = given.find(t);
    if (g == given.end() || oracle.value.contains(t)) return;
    Buffer v = promote(g->second);
    if (ir::is_float(tensor_dtype(graph, t))) {
      live.insert(oracle.sigma, t, zeros.view(v.range()));
      live.insert(oracle.bound, t, zeros.view(v.range()));
    }
    live.insert(oracle.value, t, std::move(v));
  };

  // 2. Each operation in order: its value and error rule; then every tensor no later operation
  //    reads is freed (graph outputs are kept), unless every tensor is to be kept. A chain
  //    (oracle_chains.h) runs a block at a time instead.
  const std::vector<ir::OperationId>& order = naive.order();
  const std::vector<std::vector<ir::TensorId>> release = detail::releases_after(graph, order);
  const std::vector<detail::OracleChain> chains =
      detail::oracle_chains(graph, order, options.chain_cells);
  const Maps whole{&oracle.value, &oracle.sigma, &oracle.bound};
  const auto& sink = options.output_sink;
  const detail::SingleSums single_sums =
      options.single_precision_sums ? detail::SingleSums::kWherePays : detail::SingleSums::kNever;
  const double product_roundoff = options.tf32_products ? 0x1p-11 : 0.0;
  std::string not_exact;
  std::map<std::string, std::size_t> seconds_at;  // an operation's entry in options.seconds
  // Evaluates operation `op` of `g` on `maps` (σ and D of `spent`, the tensors freed after it,
  // may become its outputs'), and notes whether it is exact.
  const auto evaluate = [&](const ir::Graph& g, ir::OperationId op, Maps maps,
                            const std::vector<ir::TensorId>& spent,
                            detail::ChainSingles* chain_singles) {
    const detail::OperationEval eval(g, op, kernels, options.lambda, &zeros, single_sums,
                                     product_roundoff, chain_singles);
    // The σ and D of tensors freed after this operation: its outputs' may be written over them.
    detail::SpareBuffers spare;
    std::map<ir::TensorId, std::int64_t> spare_bytes;
    for (ir::TensorId t : spent) {
      auto s = maps.sigma->find(t);
      auto b = maps.bound->find(t);
      if (s == maps.sigma->end() || b == maps.bound->end()) continue;
      spare.emplace(t, std::pair{&s->second, &b->second});
      spare_bytes[t] = LiveBytes::bytes(s->second) + LiveBytes::bytes(b->second);
    }
    double s = 0;
    detail::RuleResult r = [&] {
      const Stopwatch ruling(s);
      return eval.run(*maps.value, *maps.sigma, *maps.bound, spare);
    }();
    if (options.seconds != nullptr) {
      std::string name = g.display_name(op);
      auto [at, fresh] = seconds_at.try_emplace(name, options.seconds->size());
      if (fresh) options.seconds->push_back({std::move(name), g.operation(op).kernel(), 0});
      (*options.seconds)[at->second].seconds += s;
    }
    for (ir::TensorId t : r.taken) live.taken(maps, t, spare_bytes.at(t));
    if (!r.exact && not_exact.empty()) {
      not_exact = fmt::format("operation '{}' ({}) is not exact", g.display_name(op),
                              g.operation(op).kernel());
    }
    return r;
  };
  // A chain, block by block: each block's operations on the cells of that block (a graph of
  // their own, chain_block); a tensor the chain makes is assembled whole when a later operation
  // reads it or it is kept, else it lives only as each block's cells.
  const auto run_chain = [&](const detail::OracleChain& chain) {
    std::set<ir::TensorId> assembled;  // tensors whose whole buffers exist (after block 0)
    // The float32 transforms of the tensors every block reads whole, made once for all blocks.
    detail::ChainSingles shared{.blocks = static_cast<std::int64_t>(chain.blocks())};
    for (std::size_t b = 0; b < chain.blocks(); ++b) {
      const detail::ChainBlock block = detail::chain_block(graph, order, chain, b);
      shared.whole.clear();  // this block's tensor ids
      BufferMap value, sigma, bound;
      const Maps mine{&value, &sigma, &bound};
      // Each of the block's tensors is freed after its last reader in the block (or its maker).
      std::map<ir::TensorId, std::size_t> last;
      for (std::size_t j = 0; j < block.ops.size(); ++j) {
        const ir::OperationView op = block.graph.operation(block.ops[j]);
        for (const auto& e : op.inputs().entries()) last[e.value.tensor] = j;
        for (const auto& e : op.outputs().entries()) last[e.value.tensor] = j;
      }
      std::vector<std::vector<ir::TensorId>> spent(block.ops.size());
      for (const auto& [t, j] : last) spent[j].push_back(t);
      for (std::size_t j = 0; j < block.ops.size(); ++j) {
        const ir::OperationView op = block.graph.operation(block.ops[j]);
        // The tensors made before the chain: whole, or this block's cells of them.
        for (const auto& e : op.inputs().entries()) {
          const ir::TensorId mine_t = e.value.tensor;
          if (value.contains(mine_t)) continue;
          const ir::TensorId t = block.original.at(mine_t);
          const Range& region = block.graph.tensor(mine_t).range();
          if (!oracle.value.contains(t) && !chain.partial.contains(t)) enter(t);
          if (oracle.value.contains(t)) {
            // Made before the chain and read whole: the same buffers in every block.
            if (region == graph.tensor(t).range() && !assembled.contains(t))
              shared.whole[mine_t] = t;
            live.insert(value, mine_t, part_of(oracle.value.at(t), region, zeros));
            if (oracle.sigma.contains(t)) {
              live.insert(sigma, mine_t, part_of(oracle.sigma.at(t), region, zeros));
              live.insert(bound, mine_t, part_of(oracle.bound.at(t), region, zeros));
            }
          } else {  // an input only the chain reads, and only in parts: this block's, promoted
            live.insert(value, mine_t, promote_part(given.at(t), region));
            if (ir::is_float(tensor_dtype(graph, t))) {
              live.insert(sigma, mine_t, zeros.view(region));
              live.insert(bound, mine_t, zeros.view(region));
            }
          }
        }
        detail::RuleResult r = evaluate(block.graph, block.ops[j], mine, spent[j], &shared);
        for (std::size_t i = 0; i < r.outputs.size(); ++i) {
          const ir::TensorId mine_t = r.outputs[i];
          const ir::TensorId t = block.original.at(mine_t);
          const Range region = r.values[i].range();
          const bool errors = !r.sigmas.empty();
          const bool sunk = sink && !options.keep_all && chain.final_outputs.contains(t);
          if (sunk) {  // a block of an output no later operation reads: handed over, not kept
            sink(t, r.values[i], errors ? &r.sigmas[i] : nullptr, errors ? &r.bounds[i] : nullptr);
          } else if (options.keep_all || !chain.internal.contains(t)) {
            if (assembled.insert(t).second) {
              const Range& range = graph.tensor(t).range();
              live.insert(oracle.value, t,
                          Buffer(r.values[i].dtype(), range, Buffer::Uninitialized{}));
              if (errors) {
                live.insert(oracle.sigma, t,
                            Buffer(DType::kFloat64, range, Buffer::Uninitialized{}));
                live.insert(oracle.bound, t,
                            Buffer(DType::kFloat64, range, Buffer::Uninitialized{}));
              }
            }
            copy_elements(r.values[i].view(), oracle.value.at(t).view(region));
            if (errors) {
              copy_elements(r.sigmas[i].view(), oracle.sigma.at(t).view(region));
              copy_elements(r.bounds[i].view(), oracle.bound.at(t).view(region));
            }
          }
          live.insert(value, mine_t, std::move(r.values[i]));
          if (errors) {
            live.insert(sigma, mine_t, std::move(r.sigmas[i]));
            live.insert(bound, mine_t, std::move(r.bounds[i]));
            double& m = oracle.magnitude[t];  // the largest of any block
            m = b == 0 ? r.magnitudes[i] : std::max(m, r.magnitudes[i]);
          }
          if (!r.unmodelled.empty()) oracle.unmodelled[t] = r.unmodelled;
        }
        for (ir::TensorId t : spent[j]) live.erase(mine, t);
      }
    }
  };
  for (std::size_t k = 0, c = 0; k < order.size();) {
    if (c < chains.size() && chains[c].begin == k) {
      run_chain(chains[c]);
      for (; k < chains[c].end; ++k) {
        if (!options.keep_all)
          for (ir::TensorId t : release[k]) live.erase(whole, t);
      }
      ++c;
      continue;
    }
    const ir::OperationId op = order[k];
    for (const auto& e : graph.operation(op).inputs().entries()) enter(e.value.tensor);
    detail::RuleResult r = evaluate(
        graph, op, whole, options.keep_all ? std::vector<ir::TensorId>{} : release[k], nullptr);
    for (std::size_t i = 0; i < r.outputs.size(); ++i) {
      const ir::TensorId t = r.outputs[i];
      live.insert(oracle.value, t, std::move(r.values[i]));
      if (!r.sigmas.empty()) {
        live.insert(oracle.sigma, t, std::move(r.sigmas[i]));
        live.insert(oracle.bound, t, std::move(r.bounds[i]));
        oracle.magnitude[t] = r.magnitudes[i];
      }
      if (!r.unmodelled.empty()) oracle.unmodelled[t] = r.unmodelled;
    }
    if (!options.keep_all) {
      for (ir::TensorId t : release[k]) live.erase(whole, t);
    }
    // The blocks just freed (the released tensors, the rule's temporaries) stay mapped in
    // buffer.h's cache: the next operations' buffers take pieces of them, and one that no block
    // holds unmaps as much as it maps, so the cache adds nothing to the peak.
    ++k;
  }
  // Outputs that are inputs, and with keep_all every input.
  for (const auto& [t, b] : given) {
    if (options.keep_all) enter(t);
  }
  for (ir::TensorId t : graph_outputs(graph)) enter(t);
  if (sink) {  // the outputs kept whole, handed over (and freed, unless every tensor is kept)
    std::set<ir::TensorId> handed;
    for (ir::TensorId t : graph_outputs(graph)) {
      auto v = oracle.value.find(t);
      if (v == oracle.value.end() || !handed.insert(t).second) continue;
      auto s = oracle.sigma.find(t);
      auto b = oracle.bound.find(t);
      const bool errors = s != oracle.sigma.end() && b != oracle.bound.end();
      sink(t, v->second, errors ? &s->second : nullptr, errors ? &b->second : nullptr);
      if (!options.keep_all) live.erase(whole, t);
    }
  }
  for (BufferMap* map : {&oracle.sigma, &oracle.bound}) {  // kept past `zeros`: owned zeros
    for (auto& [t, b] : *map)
      if (zeros.holds(b)) b = Buffer(DType::kFloat64, b.range());
  }

  // 3. Exact mode: exact kernels only, small-integer inputs, partial sums below 2^24.
  oracle.exact_reason = not_exact.empty() ? non_integer_input(graph, given) : not_exact;
  if (oracle.exact_reason.empty()) {
    for (const auto& [t, m] : oracle.magnitude) {
      const double limit = exact_integer_limit(tensor_dtype(graph, t));
      if (m >= limit) {
        oracle.exact_reason =
            fmt::format("sums in '{}' reach {} ≥ 2^{}: not exact in {}", tensor_name(graph, t), m,
                        std::log2(limit), graph.tensor(t).dtype());
        break;
      }
    }
  }
  return oracle;
}

}  // namespace tapestry::runtime
