// Evaluator: memoised rewrites, then shard-grid + placement + simulation without Applications
// (evaluator.h).
//
// 1. The plan's memo key: its names, substitutions, fusion groups, meshes, whether each entry
//    places, reduction counts, and every other count as "1", "=v" (equal to a reduction count v)
//    or "#k" (the k-th distinct other value). The same walk checks what check_plan checks of
//    counts (1 <= count <= max(extent, 1)) and collects the values of the classes #k. Entries
//    naming an operation the graph lacks (derived entries, rewrite/plan.h) keep their counts
//    exactly, as reduction counts do — which dims of a derived operation reduce is not known
//    before the rewrites — and so does every other count equal to one of them.
// 2. On a miss: check_plan, then the rewrites on the *symbolic* plan — class #k's counts become
//    kSymbol + k, each place list becomes one marker naming its entry — and, per operation of the
//    result (topological order), its index, IPFs, work rule and where its counts and place list
//    come from.
// 3. Per evaluation: the counts of every operation (symbols resolved), the cuts checked as
//    shard-grid checks them, then every grid cell's boxes handed to the PlacementBuilder with the
//    Application id lower would have given it (an operation the rewrites colocate — a combine —
//    takes the devices of the operation it follows, as place() gives them; the plan's replicated
//    outputs, which no rewrite reads, go to the builder as they are), then simulate().
// Whatever the fast path cannot decide goes to the reference path (lower → place → simulate).
#include "tapestry/cost/evaluator.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <unordered_map>

#include "placement_builder.h"
#include "tapestry/cost/work_rule.h"
#include "tapestry/rewrite/shard_grid.h"
#include "tapestry/support/error.h"

namespace tapestry::cost {

namespace {

// Symbolic counts: kSymbol + k stands for the k-th class of equal non-reduction counts. Far above
// any extent, so no symbol equals a real count; the rewrites only compare such counts.
constexpr std::int64_t kSymbol = std::int64_t{1} << 40;
// A place list in the symbolic plan: this marker, then the name of the plan entry it comes from.
constexpr std::string_view kPlaceMarker = "\x01place:";

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
  WorkRule rule;
  std::string place_from;  // the entry of the plan whose place list it has; empty: none
  std::map<std::string, std::string> mesh;
  /// The operation whose shards it follows (a combine, rewrite::OpPlan::colocate), and that
  /// operation's index dims; nullopt: none, or one that is not in the graph.
  std::optional<rewrite::OpPlan::Colocation> colocate;
  std::vector<std::string> colocate_index_names;
  std::int64_t first_application = 0;  // node index of its first Application (per evaluation)
};

// The rewritten graph for one memo key.
struct Rewritten {
  std::uint64_t used = 0;  // when it was last used (Impl::clock)
  bool fast = false;       // false: every plan of this key takes the reference path
  ir::Graph graph;
  detail::TensorFacts facts;
  std::vector<CutOperation> ops;        // topological order
  std::vector<std::uint32_t> id_order;  // positions in ops, in graph.operations() order
  std::unique_ptr<detail::PlacementBuilder> builder;
};

// An entry's size for the memo's bound: its operations (at least 1: a refused rewrite).
std::size_t weight(const Rewritten& r) {
  return std::max<std::size_t>(r.graph.operations().size(), 1);
}

// What a plan may name, per name: the operation's index dims, extents and reduction flags.
struct Named {
  std::vector<std::string> dims;
  std::vector<std::int64_t> extents;
  std::vector<bool> reduction;
};

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

void append_int(std::string& out, std::int64_t v) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  out.append(buffer, end);
}

}  // namespace

struct Evaluator::Impl {
  ir::Graph graph;
  Target target;
  rewrite::LowerOptions options;
  std::unordered_map<std::string, Named> named;  // by every name find_operation resolves
  std::unordered_map<std::string, std::unique_ptr<Rewritten>> memo;
  std::size_t memo_bound;           // Evaluator::kMemoOperations unless the caller chose
  std::size_t memo_operations = 0;  // the sum of weight() over the memo
  std::uint64_t clock = 0;
  EvaluatorStats stats;
  Placement placement;
  // Scratch, reused.
  std::string key;
  std::vector<std::int64_t> reduction_values, class_values, counts;
  std::vector<std::int64_t> cuts, cell_at, cell_start, cell_end;
  std::vector<std::uint32_t> devices;
  detail::ShardGrid grid;
  // The boxes of the current operation's ports, memoised by the grid coordinates of the dims each
  // IPF reads (a box depends on nothing else): port k's are box_memo[memo_at[k] + …].
  std::vector<zspace::Range> box_memo;
  std::vector<char> box_known;
  std::vector<std::size_t> memo_at;

  Impl(const ir::Graph& g, const Target& t, const rewrite::LowerOptions& o, std::size_t bound)
      : graph(g), target(t), options(o), memo_bound(bound) {
    options.validate = false;
    for (ir::OperationId op : graph.operations()) {
      const ir::OperationView view = graph.operation(op);
      for (const std::string& name : {view.label(), std::string(view.key())}) {
        if (name.empty() || rewrite::find_operation(graph, name) != op) continue;
        Named n;
        n.dims = view.index_names();
        const std::optional<zspace::Range> index = view.ipf_index();
        for (std::size_t d = 0; d < n.dims.size(); ++d) {
          n.extents.push_back(index ? index->extent(d) : 0);
          n.reduction.push_back(view.reduction(d).has_value());
        }
        named.emplace(name, std::move(n));
      }
    }
  }

  bool make_key(const rewrite::Plan& plan);
  rewrite::Plan symbolic(const rewrite::Plan& plan) const;
  std::unique_ptr<Rewritten> rewrite(const rewrite::Plan& plan);
  bool cut_and_place(const rewrite::Plan& plan, Rewritten& r);
  void start_box_memo(const CutOperation& op, std::span<const std::int64_t> parts);
  const zspace::Range& port_box(const Port& port, std::size_t k, std::size_t shard,
                                const zspace::Range& cell);
  bool fast_place(const rewrite::Plan& plan);
  void make_room(std::size_t operations);
  void reference_place(const rewrite::Plan& plan);
};

// Step 1. False when the plan names something the graph lacks or a count is out of range.
bool Evaluator::Impl::make_key(const rewrite::Plan& plan) {
  key.clear();
  reduction_values.clear();
  class_values.clear();
  for (const auto& [name, op] : plan.ops) {
    auto n = named.find(name);
    if (n == named.end()) {  // a derived entry: its counts are kept exactly
      for (const auto& [dim, count] : op.split) {
        if (count < 1) return false;
        reduction_values.push_back(count);
      }
      continue;
    }
    for (const auto& [dim, count] : op.split) {
      auto d = std::find(n->second.dims.begin(), n->second.dims.end(), dim);
      if (d == n->second.dims.end()) return false;
      const auto at = static_cast<std::size_t>(d - n->second.dims.begin());
      if (count < 1 || count > std::max<std::int64_t>(n->second.extents[at], 1)) return false;
      if (n->second.reduction[at]) reduction_values.push_back(count);
    }
  }
  for (const auto& [name, op] : plan.ops) {
    auto found = named.find(name);
    key += name;
    key += found == named.end() ? '\x1a' : '\x1f';
    for (const auto& [dim, count] : op.split) {
      key += dim;
      if (found == named.end()) {  // a derived entry
        key += 'r';
        append_int(key, count);
        key += '\x1f';
        continue;
      }
      const Named& n = found->second;
      const auto at =
          static_cast<std::size_t>(std::find(n.dims.begin(), n.dims.end(), dim) - n.dims.begin());
      if (n.reduction[at]) {
        key += 'r';
        append_int(key, count);
      } else if (count == 1) {
        key += '1';
      } else if (std::find(reduction_values.begin(), reduction_values.end(), count) !=
                 reduction_values.end()) {
        key += '=';
        append_int(key, count);
      } else {
        auto c = std::find(class_values.begin(), class_values.end(), count);
        if (c == class_values.end()) c = class_values.insert(c, count);
        key += '#';
        append_int(key, c - class_values.begin());
      }
      key += '\x1f';
    }
    for (const std::string& s : op.substitute) (key += s) += '\x1e';
    key += op.place.empty() ? '-' : 'P';
    for (const auto& [dim, axis] : op.mesh) {
      key += dim;
      key += '\x1e';
      key += axis;
      key += '\x1e';
    }
    key += '\x1d';
  }
  key += '\x1c';
  for (const auto& group : plan.fuse) {
    for (const std::string& name : group) (key += name) += '\x1e';
    key += '\x1d';
  }
  key += plan.fuse_auto ? 'A' : '-';
  return true;
}

// Step 2: the plan the rewrites run on (precondition: make_key(plan) succeeded).
rewrite::Plan Evaluator::Impl::symbolic(const rewrite::Plan& plan) const {
  rewrite::Plan out = plan;
  for (auto& [name, op] : out.ops) {
    if (!op.place.empty()) op.place = {std::string(kPlaceMarker) + name};
    auto found = named.find(name);
    if (found == named.end()) continue;  // a derived entry: exact counts
    const Named& n = found->second;
    for (auto& [dim, count] : op.split) {
      auto c = std::find(class_values.begin(), class_values.end(), count);
      const auto at =
          static_cast<std::size_t>(std::find(n.dims.begin(), n.dims.end(), dim) - n.dims.begin());
      if (!n.reduction[at] && count != 1 && c != class_values.end()) {
        count = kSymbol + (c - class_values.begin());
      }
    }
  }
  return out;
}

std::unique_ptr<Rewritten> Evaluator::Impl::rewrite(const rewrite::Plan& plan) {
  auto r = std::make_unique<Rewritten>();
  std::vector<rewrite::RewriteEvent> log;
  rewrite::RewriteState state;
  try {
    state = rewrite::rewrite_operations(graph, symbolic(plan), options, log);
  } catch (const Error&) {
    return r;  // not fast: the reference path reports it, or succeeds with real counts
  }
  if (!state.problems.empty()) return r;  // a derived entry that does not fit: lower says so
  r->graph = std::move(state.graph);
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
                     .rule = work_rule(g, *op),
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
        if (place.size() != 1 || !place[0].starts_with(kPlaceMarker)) return r;
        cut.place_from = place[0].substr(kPlaceMarker.size());
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
    position[op->index()] = static_cast<std::uint32_t>(r->ops.size());
    r->ops.push_back(std::move(cut));
  }
  for (ir::OperationId op : g.operations()) r->id_order.push_back(position[op.index()]);
  r->facts = detail::TensorFacts::of(g);
  r->builder = std::make_unique<detail::PlacementBuilder>(r->facts, target);
  r->fast = true;
  return r;
}

// Step 3. False when a count is not one shard-grid accepts (the reference path reports it).
bool Evaluator::Impl::cut_and_place(const rewrite::Plan& plan, Rewritten& r) {
  // Counts, and the cuts checked the way lower checks them before any Application is made.
  counts.clear();
  for (const CutOperation& op : r.ops) {
    const std::size_t first = counts.size();
    for (std::int64_t c : op.counts) {
      if (c >= kSymbol) {
        const auto k = static_cast<std::size_t>(c - kSymbol);
        if (k >= class_values.size()) return false;
        c = class_values[k];
      }
      counts.push_back(c);
    }
    const std::span<const std::int64_t> parts(counts.data() + first, op.counts.size());
    if (rewrite::match_shard_counts(r.graph, op.id, parts)) return false;
  }
  // Application ids: lower adds each operation's grid in graph order, after every other node.
  std::vector<std::size_t> first_count(r.ops.size(), 0);
  for (std::size_t i = 0, at = 0; i < r.ops.size(); ++i) {
    first_count[i] = at;
    at += r.ops[i].counts.size();
  }
  std::int64_t next = static_cast<std::int64_t>(r.graph.size());
  for (std::uint32_t i : r.id_order) {
    r.ops[i].first_application = next;
    std::int64_t shards = 1;
    for (std::size_t d = 0; d < r.ops[i].counts.size(); ++d) shards *= counts[first_count[i] + d];
    next += shards;
  }

  detail::PlacementBuilder& builder = *r.builder;
  builder.start(placement, detail::replicated_outputs(plan, r.graph, target));
  for (std::size_t i = 0; i < r.ops.size(); ++i) {
    const CutOperation& op = r.ops[i];
    const std::size_t rank = op.index.rank();
    const std::span<const std::int64_t> parts(counts.data() + first_count[i], rank);
    builder.add_operation(op.id, op.name, op.kernel);
    // The cells of Range::split_grid(parts), row-major (as shard-grid cuts them).
    cuts.clear();
    grid.rank = rank;
    grid.shards = 1;
    grid.counts.assign(parts.begin(), parts.end());
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t n = op.index.extent(d), p = parts[d];
      std::int64_t at = op.index.start()[d];
      cuts.push_back(at);
      for (std::int64_t k = 0; k < p; ++k) cuts.push_back(at += n / p + (k < n % p ? 1 : 0));
      grid.shards *= static_cast<std::size_t>(p);
    }
    grid.coordinates.resize(grid.shards * rank);
    cell_at.assign(rank, 0);
    for (std::size_t s = 0; s < grid.shards; ++s) {
      std::copy(cell_at.begin(), cell_at.end(), grid.coordinates.begin() + s * rank);
      for (std::size_t d = rank; d-- > 0;) {
        if (++cell_at[d] < parts[d]) break;
        cell_at[d] = 0;
      }
    }
    std::span<const std::string> place;
    if (!op.place_from.empty()) place = plan.ops.find(op.place_from)->second.place;
    std::optional<detail::Colocated> colocated;
    if (op.colocate) colocated = builder.colocated(*op.colocate, op.colocate_index_names);
    detail::assign_devices(builder.operation(), op.index_names, grid, place, &op.mesh,
                           colocated ? &*colocated : nullptr, target, devices);
    start_box_memo(op, parts);
    const bool pinned = !op.place_from.empty() || !op.mesh.empty();
    for (std::size_t s = 0; s < grid.shards; ++s) {
      cell_start.resize(rank);
      cell_end.resize(rank);
      std::size_t offset = 0;  // of this dim's cut points in `cuts`
      for (std::size_t d = 0; d < rank; ++d) {
        const auto k = static_cast<std::size_t>(grid.coordinates[s * rank + d]);
        cell_start[d] = cuts[offset + k];
        cell_end[d] = cuts[offset + k + 1];
        offset += static_cast<std::size_t>(parts[d]) + 1;
      }
      const zspace::Range cell{zspace::Point(cell_start), zspace::Point(cell_end)};
      if (s == 0) kernel_shares(op.rule, cell, builder.operation().kernels);
      Work work;
      work.dtype = op.rule.dtype;
      for (const WorkRule::Stage& stage : op.rule.stages) {
        if (stage.flops_per_point == 0) continue;
        add_stage_flops(stage, stage.points(cell), work);
      }
      for (std::size_t k = 0; k < op.inputs.size(); ++k) {
        const zspace::Range& box =
            builder.add_input(op.inputs[k].tensor, port_box(op.inputs[k], k, s, cell));
        work.bytes_read += box.size() * r.facts.bytes_of(op.inputs[k].tensor);
      }
      for (std::size_t k = 0; k < op.outputs.size(); ++k) {
        const Port& port = op.outputs[k];
        const zspace::Range& box =
            builder.add_output(port.tensor, port_box(port, op.inputs.size() + k, s, cell));
        work.bytes_written += box.size() * r.facts.bytes_of(port.tensor);
      }
      const ir::ApplicationId id{ir::NodeId(
          static_cast<std::uint32_t>(op.first_application + static_cast<std::int64_t>(s)))};
      builder.add_application(id, devices[s], work, pinned);
    }
  }
  builder.connect();
  return true;
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
  if (!make_key(plan)) return false;
  auto found = memo.find(key);
  if (found == memo.end()) {
    if (!rewrite::check_plan_entries(plan, graph).empty()) return false;
    ++stats.rewrites_run;
    std::unique_ptr<Rewritten> rewritten = rewrite(plan);
    make_room(weight(*rewritten));
    memo_operations += weight(*rewritten);
    found = memo.emplace(key, std::move(rewritten)).first;
  }
  Rewritten& r = *found->second;
  r.used = ++clock;
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
    memo.erase(oldest);
    ++stats.evicted;
  }
}

void Evaluator::Impl::reference_place(const rewrite::Plan& plan) {
  ++stats.reference;
  const rewrite::LowerResult lowered = rewrite::lower(graph, plan, options);
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
  if (!placed) impl_->reference_place(plan);
  return impl_->placement;
}

CostVector Evaluator::evaluate(const rewrite::Plan& plan) {
  return simulate(place(plan), impl_->target);
}

void Evaluator::clear_memo() {
  impl_->memo.clear();
  impl_->memo_operations = 0;
}

const EvaluatorStats& Evaluator::stats() const {
  return impl_->stats;
}

}  // namespace tapestry::cost
