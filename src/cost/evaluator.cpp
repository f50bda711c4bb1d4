// Evaluator: memoised rewrites, then shard-grid + placement + simulation without Applications
// (evaluator.h).
//
// 1. The plan's memo key (rewrite::SymbolicPlans, rewrite/symbolic.h): what the patterns may
//    read of a plan — pattern.h's obligation. The same walk checks what check_plan checks of
//    counts (1 <= count <= max(extent, 1)) and collects the values of the count classes.
// 2. On a miss: check_plan, then the rewrites on the *symbolic* plan (each class of counts a
//    symbol, each place list a marker naming its entry) and, per operation of the result
//    (topological order), its index, IPFs and where its counts and place list come from; its
//    work rule and the graph's TensorFacts once a plan of the key passes the cut check (a refused
//    plan needs neither: 121 of the 400 plans of search_bench's megatron8 walk are refused).
// 3. Per evaluation: the counts of every operation (symbols resolved), the cuts checked as
//    shard-grid checks them, then every cell of the operation's zspace::Grid — the boxes
//    shard-grid gives Applications — handed to the PlacementBuilder with the Application id lower
//    would have given it (rewrite::first_application_ids); an operation the rewrites colocate —
//    a combine — takes the devices of the operation it follows, as place() gives them; the
//    plan's replicated outputs, which no rewrite reads, go to the builder as they are. Then
//    simulate().
// 4. Reuse across plans: an operation's fragment — per shard its work and boxes, per box read the
//    writers it overlaps (detail::ReadHit), its kernel shares — is kept by its content, its counts
//    and its producers' content, port and counts (fragment_key), so a plan that changed one
//    operation's cut re-cuts that operation and its readers only, and one that moved devices
//    none; devices, Application ids and everything that sees the whole plan (transfers,
//    collectives, buffers, the simulation) are still derived per plan. E.g. on search_bench's
//    megatron8 walk 1,577 of 2,006 operations placed came from a fragment.
// Whatever the fast path cannot decide goes to the reference path (lower → place → simulate),
// except a cut shard-grid refuses: lower's message for it (check_cuts) is written here
// (refuse_cuts), so a refused plan is not rewritten a second time.
#include "tapestry/cost/evaluator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "placement_builder.h"
#include "tapestry/cost/work_rule.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/rewrite/cut_refusal.h"
#include "tapestry/rewrite/decompose_linear.h"
#include "tapestry/rewrite/incremental.h"
#include "tapestry/rewrite/shard_grid.h"
#include "tapestry/rewrite/split_reduction.h"
#include "tapestry/rewrite/symbolic.h"
#include "tapestry/rewrite/zero.h"
#include "tapestry/support/cancel.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/grid.h"

namespace tapestry::cost {

namespace {

struct Port {
  std::uint32_t tensor = 0;  // node index
  zspace::IndexProjection ipf;
  std::vector<std::size_t> used;  // the index dims its IPF reads (a non-zero coefficient)
  /// When every row of the IPF has at most one non-zero coefficient (the usual projection):
  /// per tensor dim, that index dim (-1: none), its coefficient, the offset and the tile, so a
  /// box is a few multiplications (box_of); empty otherwise (IndexProjection::apply).
  struct Row {
    int col = -1;
    std::int64_t coef = 0, offset = 0, tile = 1;
  };
  std::vector<Row> rows;
};

// The port's box over the index box `cell` (non-empty): IndexProjection::apply, without its
// general interval arithmetic when the IPF is a projection. Coordinates stay far inside int64:
// they are a graph's own (checked when it was built) and a cell lies inside its operation.
zspace::Range box_of(const Port& port, const zspace::Range& cell) {
  if (port.rows.empty()) return port.ipf.apply(cell);
  zspace::InlineVector<std::int64_t, zspace::kInlineRank> lo(port.rows.size()),
      hi(port.rows.size());
  for (std::size_t r = 0; r < port.rows.size(); ++r) {
    const Port::Row& row = port.rows[r];
    std::int64_t a = row.offset, b = row.offset + row.tile;
    if (row.col >= 0) {
      const auto c = static_cast<std::size_t>(row.col);
      const std::int64_t x = row.coef * cell.start()[c], y = row.coef * (cell.end()[c] - 1);
      a += std::min(x, y);
      b += std::max(x, y);
    }
    lo[r] = a;
    hi[r] = b;
  }
  return zspace::Range(zspace::Point(lo.span()), zspace::Point(hi.span()));
}

std::vector<Port::Row> projection_rows(const zspace::IndexProjection& ipf) {
  std::vector<Port::Row> rows;
  const zspace::AffineMap& map = ipf.map();
  for (std::size_t r = 0; r < map.out_rank(); ++r) {
    Port::Row row{-1, 0, map.offset()[r], ipf.shape()[r]};
    for (std::size_t c = 0; c < map.in_rank(); ++c) {
      const std::int64_t a = map.at(r, c);
      if (a == 0) continue;
      if (row.col >= 0) return {};
      row.col = static_cast<int>(c);
      row.coef = a;
    }
    rows.push_back(row);
  }
  return rows;
}

// One operation of the rewritten graph, ready to be cut.
struct CutOperation {
  ir::OperationId id;
  std::string name;
  std::string kernel;
  std::vector<std::string> index_names;
  zspace::Range index;
  std::vector<std::int64_t> counts;   // per index dim: a count, or a symbol
  std::vector<Port> inputs, outputs;  // in selection order (parallel to the IPFSignature)
  WorkRule rule;                      // set with Rewritten::facts (Rewritten::placeable)
  std::string place_from;             // the entry of the plan whose place list it has; empty: none
  std::map<std::string, std::string> mesh;
  /// The operation whose shards it follows (a combine, rewrite::OpPlan::colocate), and that
  /// operation's index dims; nullopt: none, or one that is not in the graph.
  std::optional<rewrite::OpPlan::Colocation> colocate;
  std::vector<std::string> colocate_index_names;
  std::int64_t first_application = 0;  // node index of its first Application (per evaluation)
  /// How lower's check of the cuts names it: "operation 'X'", or "operation 'P' (as 'X' after
  /// the rewrites)" for an operation a rewrite made of the plan's P.
  std::string subject;
  std::vector<bool> reduction;  // per index dim
  /// The rewrites refused decompose-linear or split-reduction on the operation it comes from:
  /// lower explains a cut reduction dim by those refusals (their text may hold symbols here).
  bool refused_split = false;
  /// Set with rule: what its shards' boxes and work depend on besides its counts, as an id
  /// (Evaluator::Impl::content_id: equal ids, equal index box, ports' IPFs and element sizes and
  /// work rule), and per input port the operation and output port that write its tensor
  /// (Source::op: a position in Rewritten::ops, kGraphInput, or kSeveral: no reuse).
  std::uint32_t content = 0;
  struct Source {
    static constexpr std::int32_t kGraphInput = -1, kSeveral = -2;
    std::int32_t op = kGraphInput;
    std::uint32_t port = 0;
  };
  std::vector<Source> sources;
};

// The values of a content key (CutOperation::content), appended as they are.
using Key = std::vector<std::int64_t>;

void put(Key& key, const zspace::Range& box) {
  key.push_back(static_cast<std::int64_t>(box.rank()));
  for (std::size_t d = 0; d < box.rank(); ++d) {
    key.push_back(box.start()[d]);
    key.push_back(box.end()[d]);
  }
}

void put(Key& key, const zspace::IndexProjection& ipf) {
  const zspace::AffineMap& map = ipf.map();
  key.push_back(static_cast<std::int64_t>(map.in_rank()));
  key.push_back(static_cast<std::int64_t>(map.out_rank()));
  for (std::size_t r = 0; r < map.out_rank(); ++r) {
    for (std::size_t c = 0; c < map.in_rank(); ++c) key.push_back(map.at(r, c));
    key.push_back(map.offset()[r]);
    key.push_back(ipf.shape()[r]);
  }
}

// What a fragment (Evaluator::Impl::Fragment) of the operation depends on besides its counts and
// its producers, into `key`: its index box, each port's IPF and element size, its work rule.
void content_of(const CutOperation& op, const detail::TensorFacts& facts, Key& key) {
  key.clear();
  put(key, op.index);
  for (const std::vector<Port>* ports : {&op.inputs, &op.outputs}) {
    key.push_back(static_cast<std::int64_t>(ports->size()));
    for (const Port& port : *ports) {
      key.push_back(facts.element_bytes[port.tensor]);
      put(key, port.ipf);
    }
  }
  key.push_back(static_cast<std::int64_t>(op.rule.dtype));
  key.push_back(static_cast<std::int64_t>(op.rule.stages.size()));
  for (const WorkRule::Stage& stage : op.rule.stages) {
    key.push_back(static_cast<std::int64_t>(stage.kernel.size()));
    for (std::size_t at = 0; at < stage.kernel.size(); at += sizeof(std::int64_t)) {
      std::int64_t chars = 0;  // the name's bytes, eight to a value
      std::memcpy(&chars, stage.kernel.data() + at,
                  std::min(sizeof chars, stage.kernel.size() - at));
      key.push_back(chars);
    }
    std::int64_t flops = 0;
    static_assert(sizeof flops == sizeof stage.flops_per_point);
    std::memcpy(&flops, &stage.flops_per_point, sizeof flops);
    key.push_back(flops);
    key.push_back(stage.gemm ? 1 : 0);
    key.push_back(stage.index_map ? 1 : 0);
    if (stage.index_map) put(key, *stage.index_map);
  }
}

struct KeyHash {
  std::size_t operator()(const std::vector<std::int64_t>& key) const {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (std::int64_t v : key) {
      h ^= static_cast<std::uint64_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdULL;
    }
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

// The rewritten graph for one memo key.
struct Rewritten {
  std::uint64_t used = 0;  // when it was last used (Impl::clock)
  bool fast = false;       // false: every plan of this key takes the reference path
  ir::Graph graph;
  /// Whether facts and every operation's rule are set: by the first plan of the key whose cuts
  /// pass (cut_and_place), not by the rewrite.
  bool placeable = false;
  detail::TensorFacts facts;
  std::vector<CutOperation> ops;        // topological order
  std::vector<std::uint32_t> id_order;  // positions in ops, in graph.operations() order
  /// The new values of the parameters the zero pass shards (rewrite/zero.h), graph outputs it
  /// replicates (stages 1–2, unless the plan says otherwise) or leaves sharded (stage 3) whatever
  /// the plan of this key says.
  std::vector<std::string> zero_outputs;
  /// What its rewrites leave for the next miss's (rewrite/incremental.h); null when refused.
  std::unique_ptr<rewrite::RewriteRecord> record;
};

// An entry's size for the memo's bound: its operations (at least 1: a refused rewrite).
std::size_t weight(const Rewritten& r) {
  return std::max<std::size_t>(r.graph.operations().size(), 1);
}

// The ports of selections and their IPFs, entry by entry; false when they are not parallel.
bool ports_of(const ir::SelectionMap& selections, const ir::IpfMap& ipfs,
              std::vector<Port>& ports) {
  const auto& entries = ipfs.entries();
  if (selections.size() != entries.size()) return false;
  std::size_t i = 0;
  for (const auto& s : selections.entries()) {
    if (s.name != entries[i].name || s.position != entries[i].position) return false;
    Port port{s.value.tensor.index(), entries[i].value, {}, projection_rows(entries[i].value)};
    const zspace::AffineMap& map = port.ipf.map();
    for (std::size_t c = 0; c < map.in_rank(); ++c) {
      for (std::size_t r = 0; r < map.out_rank(); ++r) {
        if (map.at(r, c) != 0) {
          port.used.push_back(c);
          break;
        }
      }
    }
    ports.push_back(std::move(port));
    ++i;
  }
  return true;
}

}  // namespace

struct Evaluator::Impl {
  ir::Graph graph;
  Target target;
  rewrite::LowerOptions options;
  rewrite::SymbolicPlans symbols;  // the key and symbolic plan of a plan (rewrite/symbolic.h)
  /// The rewrites of a miss, redone only in the components whose entries changed since the
  /// last plan rewritten (`last`, a memo entry; null when evicted).
  rewrite::IncrementalRewrites incremental;
  Rewritten* last = nullptr;
  std::unordered_map<std::string, std::unique_ptr<Rewritten>> memo;
  std::size_t memo_bound;           // Evaluator::kMemoOperations unless the caller chose
  std::size_t memo_operations = 0;  // the sum of weight() over the memo
  std::uint64_t clock = 0;
  EvaluatorStats stats;
  Placement placement;
  /// Places every plan (its storage reused from one to the next), on the facts of the plan's
  /// rewritten graph.
  std::unique_ptr<detail::PlacementBuilder> placement_builder;
  /// Set by cut_and_place when lower would refuse the plan's cuts: lower's message.
  std::string refusal;
  // Scratch, reused.
  std::vector<std::int64_t> counts;
  std::vector<std::int64_t> shards;  // per operation, in graph.operations() order
  std::vector<std::int64_t> odometer;
  std::vector<std::uint32_t> devices;
  zspace::Grid cut;  // the current operation's cells
  detail::ShardGrid grid;
  // The boxes of the current operation's ports, memoised by the grid coordinates of the dims each
  // IPF reads (a box depends on nothing else): port k's are box_memo[memo_at[k] + …].
  std::vector<zspace::Range> box_memo;
  std::vector<char> box_known;
  std::vector<std::size_t> memo_at;

  // Reuse across plans (docs/optimizer.md, "Placement reused per operation"). An operation's
  // fragment — per shard its work and the boxes it reads and writes, per box read the writers it
  // overlaps (detail::ReadHit), and its kernel shares — depends only on
  // its content, its counts and, for each input, the content, counts and output port of the
  // operation that writes it: not on devices, node ids or Application ids, which are applied
  // afresh to a fragment each time. Kept by that key (fragment_key) from plan to plan.
  struct Fragment {
    std::vector<KernelShare> kernels;
    std::vector<Work> work;             // per shard
    std::vector<zspace::Range> boxes;   // per shard: its input boxes, then its output boxes
    std::vector<std::uint32_t> hit_at;  // per input box (shard-major), then the end: into hits
    std::vector<detail::ReadHit> hits;
    std::size_t bytes = 0;  // of the above (about): the bound's measure
  };
  /// Content keys (content_of) → ids; ids are never reused, so a memo entry's ops keep theirs
  /// when this map is cleared.
  std::unordered_map<std::vector<std::int64_t>, std::uint32_t, KeyHash> content_ids;
  std::uint32_t next_content = 1;
  std::unordered_map<std::vector<std::int64_t>, std::unique_ptr<Fragment>, KeyHash> fragments;
  std::size_t fragment_bytes = 0;  // over every fragment kept
  std::size_t plan_bytes = 0;      // of the fragments the last plan placed (kept or made)
  /// The fragments' bound: dropped all at once when a plan starts with more than this kept, or
  /// three times the last plan's, whichever is more (a 24-layer plan on 64 devices has ~10 MB:
  /// a fixed bound would drop them at every plan).
  static constexpr std::size_t kFragmentBytes = std::size_t{32} << 20;
  struct Pending {  // a fragment made by this plan, its hits filled in after connect()
    std::vector<std::int64_t> key;
    std::unique_ptr<Fragment> fragment;
    std::size_t first_input = 0;  // its first box read among the builder's inputs
    std::size_t inputs = 0;       // its boxes read
  };
  std::vector<Pending> pending;
  std::vector<std::int64_t> key;  // scratch

  Impl(const ir::Graph& g, const Target& t, const rewrite::LowerOptions& o, std::size_t bound)
      : graph(g),
        target(t),
        options(o),
        symbols(graph),
        incremental(graph, options),
        memo_bound(bound) {
    options.validate = false;
    symbols.number_per_component(
        [this](const std::string& name) { return incremental.component_of(name); });
  }

  std::unique_ptr<Rewritten> rewrite(const rewrite::Plan& plan);
  bool cut_and_place(const rewrite::Plan& plan, Rewritten& r);
  void refuse_cuts(const Rewritten& r, std::span<const std::size_t> first_count);
  void start_box_memo(const CutOperation& op, std::span<const std::int64_t> parts);
  void set_content(Rewritten& r);
  bool fragment_key(const Rewritten& r, std::size_t i, std::span<const std::size_t> first_count);
  const zspace::Range& port_box(const Port& port, std::size_t k, std::size_t shard,
                                const zspace::Range& cell);
  bool fast_place(const rewrite::Plan& plan);
  void make_room(std::size_t operations);
  void reference_place(const rewrite::Plan& plan);
};

std::unique_ptr<Rewritten> Evaluator::Impl::rewrite(const rewrite::Plan& plan) {
  auto r = std::make_unique<Rewritten>();
  std::vector<rewrite::RewriteEvent> log;
  rewrite::RewriteState state;
  // A pipeline's schedule orders Applications (rewrite/pipeline.h), which only lowering makes:
  // the reference path prices it.
  if (plan.pipeline) return r;
  auto record = std::make_unique<rewrite::RewriteRecord>();
  try {
    const bool base = last != nullptr && last->record != nullptr;
    state = incremental.rewrite(symbols.symbolic(plan), log, *record,
                                base ? last->record.get() : nullptr, base ? &last->graph : nullptr);
  } catch (const Error&) {
    return r;  // not fast: the reference path reports it, or succeeds with real counts
  }
  const rewrite::IncrementalRewrites::Stats& counted = incremental.stats();
  stats.components_rewritten = counted.components_rewritten;
  stats.components_reused = counted.components_reused;
  stats.incremental = counted.incremental;
  if (!state.problems.empty()) return r;  // a derived entry that does not fit: lower says so
  for (const rewrite::RewriteEvent& e : log) {
    if (e.pattern != rewrite::kZero || !e.applied) continue;
    const ir::Graph::Named param = graph.find_named(ir::NodeKind::kTensor, e.target);
    if (!param.node) continue;
    for (ir::OperationId op : graph.consumers(ir::TensorId(*param.node))) {
      const ir::OperationView view = graph.operation(op);
      if (!rewrite::is_optimizer_kernel(view.kernel())) continue;
      for (const auto& out : view.outputs().entries()) {
        const ir::TensorId next = out.value.tensor;
        if (out.name == "result" && metakernel::is_graph_output(graph, next))
          r->zero_outputs.push_back(graph.display_name(next));
      }
    }
  }
  r->graph = std::move(state.graph);
  if (record->reusable) r->record = std::move(record);
  const ir::Graph& g = r->graph;
  const ir::TopologicalOrder topo = g.topological_order();
  if (!topo.cycle.empty()) return r;
  std::vector<std::uint32_t> position(g.size(), 0);
  for (ir::NodeId node : topo.order) {
    auto op = g.as_operation(node);
    if (!op) continue;
    const ir::OperationView view = g.operation(*op);
    const std::optional<zspace::Range> index = view.ipf_index();
    const ir::IpfSignature* signature = view.ipf_signature();
    if (!index || signature == nullptr) return r;
    // Only the counts are left to check per plan (match_shard_counts).
    const std::vector<std::int64_t> ones(index->rank(), 1);
    if (rewrite::match_shard_grid(g, *op, ones)) return r;
    CutOperation cut{.id = *op,
                     .name = rewrite::operation_name(g, *op),
                     .kernel = view.kernel(),
                     .index_names = view.index_names(),
                     .index = *index,
                     .counts = {},
                     .inputs = {},
                     .outputs = {},
                     .rule = {},
                     .place_from = {},
                     .mesh = {},
                     .colocate = {},
                     .colocate_index_names = {},
                     .first_application = 0};
    for (const std::string& dim : cut.index_names) {
      cut.counts.push_back(state.plan.split_of(cut.name, dim));
    }
    if (!ports_of(view.inputs(), signature->inputs, cut.inputs) ||
        !ports_of(view.outputs(), signature->outputs, cut.outputs)) {
      return r;
    }
    if (auto entry = state.plan.ops.find(cut.name); entry != state.plan.ops.end()) {
      const std::vector<std::string>& place = entry->second.place;
      if (!place.empty()) {
        const std::optional<std::string_view> from = rewrite::place_source(place);
        if (!from) return r;
        cut.place_from = std::string(*from);
      }
      cut.mesh = entry->second.mesh;
      if (const auto& colocate = entry->second.colocate) {
        for (const CutOperation& with : r->ops) {
          if (with.name != colocate->with) continue;
          cut.colocate = colocate;
          cut.colocate_index_names = with.index_names;
        }
      }
    }
    const std::string origin = state.origin(cut.name);
    cut.subject = rewrite::cut_subject(origin, cut.name);
    for (std::size_t d = 0; d < cut.index_names.size(); ++d)
      cut.reduction.push_back(view.reduction(d).has_value());
    cut.refused_split = std::any_of(log.begin(), log.end(), [&](const rewrite::RewriteEvent& e) {
      return !e.applied && e.origin == origin &&
             (e.pattern == rewrite::kSplitReduction || e.pattern == rewrite::kDecomposeLinear);
    });
    position[op->index()] = static_cast<std::uint32_t>(r->ops.size());
    r->ops.push_back(std::move(cut));
  }
  for (ir::OperationId op : g.operations()) r->id_order.push_back(position[op.index()]);
  r->fast = true;
  return r;
}

// Step 3. False when a count is not one shard-grid accepts (the reference path reports it).
bool Evaluator::Impl::cut_and_place(const rewrite::Plan& plan, Rewritten& r) {
  // Counts, and the cuts checked the way lower checks them before any Application is made.
  counts.clear();
  bool cut_refused = false;
  for (const CutOperation& op : r.ops) {
    const std::size_t first = counts.size();
    for (std::int64_t c : op.counts) {
      const std::optional<std::int64_t> value = symbols.concrete(c);
      if (!value) return false;
      counts.push_back(*value);
    }
    const std::span<const std::int64_t> parts(counts.data() + first, op.counts.size());
    cut_refused = cut_refused || rewrite::match_shard_counts(r.graph, op.id, parts).has_value();
  }
  std::vector<std::size_t> first_count(r.ops.size(), 0);
  for (std::size_t i = 0, at = 0; i < r.ops.size(); ++i) {
    first_count[i] = at;
    at += r.ops[i].counts.size();
  }
  if (cut_refused) {
    refuse_cuts(r, first_count);
    return false;
  }
  // Application ids, as lower numbers them (rewrite::first_application_ids).
  shards.clear();
  for (std::uint32_t i : r.id_order) {
    std::int64_t n = 1;
    for (std::size_t d = 0; d < r.ops[i].counts.size(); ++d) n *= counts[first_count[i] + d];
    shards.push_back(n);
  }
  const std::vector<std::int64_t> first = rewrite::first_application_ids(r.graph, shards);
  for (std::size_t k = 0; k < r.id_order.size(); ++k)
    r.ops[r.id_order[k]].first_application = first[k];

  if (!r.placeable) {  // Error (the reference path says it) leaves r as it was
    std::vector<WorkRule> rules;
    for (const CutOperation& op : r.ops) rules.push_back(work_rule(r.graph, op.id));
    r.facts = detail::TensorFacts::of(r.graph);
    for (std::size_t i = 0; i < r.ops.size(); ++i) r.ops[i].rule = std::move(rules[i]);
    set_content(r);
    r.placeable = true;
  }
  // Fragments are dropped only here, before any is handed to the builder.
  if (fragment_bytes > std::max(kFragmentBytes, 3 * plan_bytes)) {
    fragments.clear();
    fragment_bytes = 0;
  }
  pending.clear();
  plan_bytes = 0;
  std::size_t inputs_added = 0;  // boxes read handed to the builder so far
  if (!placement_builder)
    placement_builder = std::make_unique<detail::PlacementBuilder>(r.facts, target);
  placement_builder->use_facts(r.facts);
  detail::PlacementBuilder& builder = *placement_builder;
  if (r.zero_outputs.empty()) {
    builder.start(placement, detail::replicated_outputs(plan, r.graph, target));
  } else {  // the outputs as the zero pass leaves them (rewrite/zero.h)
    rewrite::Plan outputs{.ops = {}, .fuse = {}, .outputs = plan.outputs};
    for (const std::string& name : r.zero_outputs) {
      if (plan.zero->stage == 3) {
        outputs.outputs.erase(name);
      } else {
        outputs.outputs.emplace(
            name, rewrite::OutputPlan{.replicate = plan.zero->axis.empty()
                                                       ? std::string(rewrite::kReplicateAll)
                                                       : plan.zero->axis});
      }
    }
    builder.start(placement, detail::replicated_outputs(outputs, r.graph, target));
  }
  for (std::size_t i = 0; i < r.ops.size(); ++i) {
    support::check_cancelled();  // the builder starts afresh on the next plan
    const CutOperation& op = r.ops[i];
    const std::size_t rank = op.index.rank();
    const std::span<const std::int64_t> parts(counts.data() + first_count[i], rank);
    builder.add_operation(op.id, op.name, op.kernel);
    // The cells of zspace::Grid(index, parts), row-major (as shard-grid cuts them).
    cut.assign(op.index, parts);
    grid.rank = rank;
    grid.shards = cut.size();
    grid.counts.assign(parts.begin(), parts.end());
    grid.coordinates.resize(grid.shards * rank);
    odometer.assign(rank, 0);  // cut.coordinate(s) for s = 0, 1, …, without dividing
    for (std::size_t s = 0; s < grid.shards; ++s) {
      std::copy(odometer.begin(), odometer.end(), grid.coordinates.begin() + s * rank);
      for (std::size_t d = rank; d-- > 0;) {
        if (++odometer[d] < parts[d]) break;
        odometer[d] = 0;
      }
    }
    std::span<const std::string> place;
    if (!op.place_from.empty()) place = plan.ops.find(op.place_from)->second.place;
    std::optional<detail::Colocated> colocated;
    if (op.colocate) colocated = builder.colocated(*op.colocate, op.colocate_index_names);
    detail::assign_devices(builder.operation(), op.index_names, grid, place, &op.mesh,
                           colocated ? &*colocated : nullptr, target, devices);
    const bool pinned = !op.place_from.empty() || !op.mesh.empty();
    const std::size_t ni = op.inputs.size(), no = op.outputs.size();
    // The fragment of an earlier plan, or one this plan makes (its hits after connect()).
    const Fragment* known = nullptr;
    Fragment* made = nullptr;
    if (fragment_key(r, i, first_count)) {
      if (auto found = fragments.find(key); found != fragments.end()) {
        known = found->second.get();
      } else {
        pending.push_back(
            Pending{key, std::make_unique<Fragment>(), inputs_added, grid.shards * ni});
        made = pending.back().fragment.get();
      }
    }
    if (known != nullptr) {
      ++stats.operations_reused;
      plan_bytes += known->bytes;
      builder.operation().kernels = known->kernels;
      for (std::size_t s = 0; s < grid.shards; ++s) {
        const zspace::Range* boxes = known->boxes.data() + s * (ni + no);
        for (std::size_t k = 0; k < ni; ++k) {
          const std::size_t at = s * ni + k;
          builder.add_input(op.inputs[k].tensor, boxes[k],
                            std::span(known->hits.data() + known->hit_at[at],
                                      known->hit_at[at + 1] - known->hit_at[at]));
        }
        for (std::size_t k = 0; k < no; ++k)
          builder.add_output(op.outputs[k].tensor, boxes[ni + k]);
        const ir::ApplicationId id{ir::NodeId(
            static_cast<std::uint32_t>(op.first_application + static_cast<std::int64_t>(s)))};
        builder.add_application(id, devices[s], known->work[s], pinned);
      }
      inputs_added += grid.shards * ni;
      continue;
    }
    start_box_memo(op, parts);
    for (std::size_t s = 0; s < grid.shards; ++s) {
      const zspace::Range cell = cut.cell_at(std::span(grid.coordinates).subspan(s * rank, rank));
      if (s == 0) kernel_shares(op.rule, cell, builder.operation().kernels);
      Work work;
      work.dtype = op.rule.dtype;
      for (const WorkRule::Stage& stage : op.rule.stages) {
        if (stage.flops_per_point == 0) continue;
        add_stage_flops(stage, stage.points(cell), work);
      }
      for (std::size_t k = 0; k < ni; ++k) {
        const zspace::Range& in = port_box(op.inputs[k], k, s, cell);
        const zspace::Range& box = made ? builder.add_input_recorded(op.inputs[k].tensor, in)
                                        : builder.add_input(op.inputs[k].tensor, in);
        work.bytes_read += box.size() * r.facts.bytes_of(op.inputs[k].tensor);
        if (made) made->boxes.push_back(box);
      }
      for (std::size_t k = 0; k < no; ++k) {
        const Port& port = op.outputs[k];
        const zspace::Range& box = builder.add_output(port.tensor, port_box(port, ni + k, s, cell));
        work.bytes_written += box.size() * r.facts.bytes_of(port.tensor);
        if (made) made->boxes.push_back(box);
      }
      const ir::ApplicationId id{ir::NodeId(
          static_cast<std::uint32_t>(op.first_application + static_cast<std::int64_t>(s)))};
      builder.add_application(id, devices[s], work, pinned);
      if (made) made->work.push_back(work);
    }
    if (made) made->kernels = builder.operation().kernels;
    inputs_added += grid.shards * ni;
  }
  builder.connect();
  // The fragments this plan made, with the hits connect() found for their boxes read.
  for (Pending& p : pending) {
    Fragment& f = *p.fragment;
    f.hit_at.push_back(0);
    for (std::size_t k = 0; k < p.inputs; ++k) {
      const std::span<const detail::ReadHit> hits = builder.recorded(p.first_input + k);
      f.hits.insert(f.hits.end(), hits.begin(), hits.end());
      f.hit_at.push_back(static_cast<std::uint32_t>(f.hits.size()));
    }
    f.bytes = f.kernels.size() * sizeof(KernelShare) + f.work.size() * sizeof(Work) +
              f.boxes.size() * sizeof(zspace::Range) + f.hit_at.size() * sizeof(std::uint32_t) +
              f.hits.size() * sizeof(detail::ReadHit);
    fragment_bytes += f.bytes;
    plan_bytes += f.bytes;
    fragments.emplace(std::move(p.key), std::move(p.fragment));
  }
  pending.clear();
  return true;
}

// Every operation's content id (content_of, interned) and the writers of its inputs.
void Evaluator::Impl::set_content(Rewritten& r) {
  using Source = CutOperation::Source;
  std::vector<Source> writer(r.graph.size());  // by tensor node index
  for (std::size_t i = 0; i < r.ops.size(); ++i) {
    for (std::size_t m = 0; m < r.ops[i].outputs.size(); ++m) {
      Source& w = writer[r.ops[i].outputs[m].tensor];
      w.op = w.op == Source::kGraphInput ? static_cast<std::int32_t>(i) : Source::kSeveral;
      w.port = static_cast<std::uint32_t>(m);
    }
  }
  if (content_ids.size() > (1u << 16)) content_ids.clear();  // ids stay unique (next_content)
  for (CutOperation& op : r.ops) {
    op.sources.clear();
    for (const Port& port : op.inputs) op.sources.push_back(writer[port.tensor]);
    content_of(op, r.facts, key);
    auto id = content_ids.find(key);
    if (id == content_ids.end()) id = content_ids.emplace(key, next_content++).first;
    op.content = id->second;
  }
}

// The key of operation i's fragment into `key`: its content and counts, and per input the
// content, output port and counts of the operation that writes it (-1: a graph input). False
// when a tensor it reads has several writers (no reuse).
bool Evaluator::Impl::fragment_key(const Rewritten& r, std::size_t i,
                                   std::span<const std::size_t> first_count) {
  const CutOperation& op = r.ops[i];
  key.clear();
  key.push_back(op.content);
  key.insert(key.end(), counts.begin() + static_cast<std::ptrdiff_t>(first_count[i]),
             counts.begin() + static_cast<std::ptrdiff_t>(first_count[i] + op.counts.size()));
  for (const CutOperation::Source& source : op.sources) {
    if (source.op == CutOperation::Source::kSeveral) return false;
    if (source.op == CutOperation::Source::kGraphInput) {
      key.push_back(-1);
      continue;
    }
    const auto j = static_cast<std::size_t>(source.op);
    const CutOperation& w = r.ops[j];
    key.push_back(w.content);
    key.push_back(source.port);
    key.insert(key.end(), counts.begin() + static_cast<std::ptrdiff_t>(first_count[j]),
               counts.begin() + static_cast<std::ptrdiff_t>(first_count[j] + w.counts.size()));
  }
  return true;
}

// lower's check of the cuts (rewrite/lower.cpp, check_cuts) as it fails for these counts: every
// operation's refusal, in graph order, each named as explain_cut names it. A cut reduction dim of
// an operation whose decompose-linear or split-reduction the rewrites refused is explained by
// those refusals, whose text the symbolic plan's rewrites may have written with symbols: left to
// the reference path (refusal stays empty).
void Evaluator::Impl::refuse_cuts(const Rewritten& r, std::span<const std::size_t> first_count) {
  std::vector<std::string> problems;
  for (std::uint32_t i : r.id_order) {
    const CutOperation& op = r.ops[i];
    const std::span<const std::int64_t> parts(counts.data() + first_count[i], op.counts.size());
    const std::optional<std::string> why = rewrite::match_shard_counts(r.graph, op.id, parts);
    if (!why) continue;
    for (std::size_t d = 0; d < parts.size(); ++d) {
      if (parts[d] != 1 && op.reduction[d] && op.refused_split) return;
    }
    problems.push_back(rewrite::shard_grid_refusal(op.subject, *why));
  }
  refusal = rewrite::plan_refusal(problems);
}

void Evaluator::Impl::start_box_memo(const CutOperation& op, std::span<const std::int64_t> parts) {
  memo_at.clear();
  std::size_t size = 0;
  for (const std::vector<Port>* ports : {&op.inputs, &op.outputs}) {
    for (const Port& port : *ports) {
      memo_at.push_back(size);
      std::size_t boxes = 1;
      for (std::size_t d : port.used) boxes *= static_cast<std::size_t>(parts[d]);
      size += boxes;
    }
  }
  // Grown, never shrunk: the Ranges already there are overwritten, not rebuilt per operation.
  if (box_memo.size() < size) box_memo.resize(size);
  box_known.assign(size, 0);
}

const zspace::Range& Evaluator::Impl::port_box(const Port& port, std::size_t k, std::size_t shard,
                                               const zspace::Range& cell) {
  std::size_t at = 0;
  for (std::size_t d : port.used) {
    at = at * static_cast<std::size_t>(grid.counts[d]) +
         static_cast<std::size_t>(grid.coordinates[shard * grid.rank + d]);
  }
  at += memo_at[k];
  if (!box_known[at]) {
    box_memo[at] = box_of(port, cell);
    box_known[at] = 1;
  }
  return box_memo[at];
}

bool Evaluator::Impl::fast_place(const rewrite::Plan& plan) {
  if (options.driver.disabled.contains(rewrite::kShardGrid)) return false;
  refusal.clear();
  if (!symbols.abstract(plan)) return false;
  auto found = memo.find(symbols.key());
  if (found == memo.end()) {
    if (!rewrite::check_plan_entries(plan, graph).empty()) return false;
    ++stats.rewrites_run;
    std::unique_ptr<Rewritten> rewritten = rewrite(plan);
    make_room(weight(*rewritten));
    memo_operations += weight(*rewritten);
    found = memo.emplace(symbols.key(), std::move(rewritten)).first;
  }
  Rewritten& r = *found->second;
  r.used = ++clock;
  if (r.record != nullptr) last = &r;
  return r.fast && cut_and_place(plan, r);
}

// Drops the least recently used entries until `operations` more fit under the bound (a scan: it
// runs on a miss, which costs far more). An entry 5-15 MB for the 24-layer transformer of
// bench/search_bench, so an unbounded memo grew by gigabytes a minute in a search.
void Evaluator::Impl::make_room(std::size_t operations) {
  while (!memo.empty() && memo_operations + operations > memo_bound) {
    auto oldest = memo.begin();
    for (auto it = memo.begin(); it != memo.end(); ++it) {
      if (it->second->used < oldest->second->used) oldest = it;
    }
    memo_operations -= weight(*oldest->second);
    if (oldest->second.get() == last) last = nullptr;
    memo.erase(oldest);
    ++stats.evicted;
  }
}

void Evaluator::Impl::reference_place(const rewrite::Plan& plan) {
  ++stats.reference;
  const rewrite::LowerResult lowered = rewrite::lower(graph, plan, options);
  support::check_cancelled();
  placement = cost::place(lowered.graph, lowered.plan, target);
}

Evaluator::Evaluator(const ir::Graph& graph, const Target& target,
                     const rewrite::LowerOptions& options, std::size_t memo_operations)
    : impl_(std::make_unique<Impl>(graph, target, options, memo_operations)) {}

Evaluator::~Evaluator() = default;

const Placement& Evaluator::place(const rewrite::Plan& plan) {
  ++impl_->stats.evaluations;
  bool placed = false;
  try {
    placed = impl_->fast_place(plan);
  } catch (const Error&) {
    placed = false;  // the reference path says it the way lower and place do
  }
  if (!placed && !impl_->refusal.empty()) {
    throw Error(impl_->refusal);
  }
  if (!placed) impl_->reference_place(plan);
  return impl_->placement;
}

CostVector Evaluator::evaluate(const rewrite::Plan& plan) {
  return simulate(place(plan), impl_->target);
}

void Evaluator::clear_memo() {
  impl_->last = nullptr;
  impl_->memo.clear();
  impl_->memo_operations = 0;
  impl_->fragments.clear();
  impl_->fragment_bytes = 0;
}

const EvaluatorStats& Evaluator::stats() const {
  return impl_->stats;
}

}  // namespace tapestry::cost
