#include "tapestry/search/mutate.h"

#include <algorithm>
#include <array>
#include <set>

#include "tapestry/support/assert.h"
#include "tapestry/support/text.h"

namespace tapestry::search {

namespace {

using rewrite::OpPlan;
using rewrite::Plan;

// How often each mutation is drawn (out of the sum), in Mutation order. Align and resplit are
// the workhorses; the others change fewer plans' costs.
// The training step's three (recompute, zero, pipeline) draw only on a training step.
constexpr std::array<int, kMutationCount> kWeights = {6, 2, 2, 2, 2, 1, 6, 2, 2, 1};
constexpr double kResplitCarries = 0.3;

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::int64_t shard_limit(const PlanSpace& space) {
  return 8 * std::max<std::int64_t>(space.device_count(), 1);
}

std::int64_t shards(const OpPlan& op) {
  std::int64_t n = 1;
  for (const auto& [dim, count] : op.split) n *= count;
  return n;
}

std::int64_t split_of(const Plan& genome, const std::string& op, const std::string& dim) {
  return genome.split_of(op, dim);
}

// A count to cut a dim of `extent` into (>= 2, <= extent): see the file comment of mutate.h.
std::int64_t draw_count(const PlanSpace& space, std::int64_t extent, Rng& rng) {
  const std::int64_t devices = std::max<std::int64_t>(space.device_count(), 2);
  const std::int64_t limit = std::min(extent, devices);
  if (limit < 2) return 1;
  if (rng.chance(0.125)) return 2 + static_cast<std::int64_t>(rng.below(limit - 1));
  std::vector<std::int64_t> options;
  for (std::int64_t c = 2; c <= limit; c *= 2) options.push_back(c);
  if (space.device_count() <= extent) options.push_back(space.device_count());
  for (const cost::MeshAxis& axis : space.mesh_axes()) {
    if (axis.size > 1 && axis.size <= extent) options.push_back(axis.size);
  }
  return options[rng.below(options.size())];
}

template <typename Pred>
std::optional<std::size_t> pick_representative(const PlanSpace& space, Rng& rng, Pred&& pred) {
  std::vector<std::size_t> fit;
  for (std::size_t r : space.representatives()) {
    if (pred(space.operations()[r])) fit.push_back(r);
  }
  if (fit.empty()) return std::nullopt;
  return fit[rng.below(fit.size())];
}

bool set_split(const PlanSpace& space, OpPlan& op, const std::string& dim, std::int64_t count) {
  OpPlan next = op;
  if (count <= 1) {
    next.split.erase(dim);
  } else {
    next.split[dim] = count;
  }
  if (shards(next) > shard_limit(space)) return false;
  if (next == op) return false;
  op = std::move(next);
  return true;
}

bool can_split_reduction(const OperationInfo& info) {
  return info.kernel != "linear" || info.decomposable;
}

// Carries the cut of `op`'s index dim `dim` (`count` ways) to every dim that follows it through
// a tensor, downstream and upstream, and on from those: one logical axis (attention's heads,
// the rows) cut alike wherever it reaches, everything else of each operation left as it was.
// Stops at a dim it cannot cut (a linear's reduction, an extent below `count`, too many shards).
void carry(const PlanSpace& space, Plan& genome, std::size_t op, std::size_t dim,
           std::int64_t count) {
  const auto& ops = space.operations();
  std::set<std::pair<std::size_t, std::size_t>> done = {{space.representative(op), dim}};
  std::vector<std::pair<std::size_t, std::size_t>> todo = {{op, dim}};
  auto reach = [&](std::size_t to, std::size_t to_dim) {
    const OperationInfo& info = ops[space.representative(to)];
    if (!done.insert({space.representative(to), to_dim}).second) return;
    const DimInfo& d = info.dims[to_dim];
    if (count > d.extent || (d.reduction && !can_split_reduction(info))) return;
    OpPlan& entry = genome.ops[info.name];
    OpPlan next = entry;
    if (count <= 1) {
      next.split.erase(d.name);
    } else {
      next.split[d.name] = count;
    }
    next.mesh.erase(d.name);
    if (shards(next) > shard_limit(space)) return;
    entry = std::move(next);
    todo.emplace_back(to, to_dim);
  };
  while (!todo.empty()) {
    const auto [at, at_dim] = todo.back();
    todo.pop_back();
    for (std::size_t e : space.edges_from(at)) {
      const Edge& edge = space.edges()[e];
      const PortDims& out = ops[at].outputs[edge.output];
      const PortDims& in = ops[edge.consumer].inputs[edge.input];
      for (std::size_t t = 0; t < out.follows.size() && t < in.follows.size(); ++t) {
        if (out.follows[t] == at_dim && in.follows[t]) reach(edge.consumer, *in.follows[t]);
      }
    }
    for (std::size_t e : space.edges_into(at)) {
      const Edge& edge = space.edges()[e];
      const PortDims& out = ops[edge.producer].outputs[edge.output];
      const PortDims& in = ops[at].inputs[edge.input];
      for (std::size_t t = 0; t < out.follows.size() && t < in.follows.size(); ++t) {
        if (in.follows[t] == at_dim && out.follows[t]) reach(edge.producer, *out.follows[t]);
      }
    }
  }
}

bool resplit(const PlanSpace& space, Plan& genome, Rng& rng) {
  const auto op = pick_representative(space, rng, [](const OperationInfo& info) {
    return std::any_of(info.dims.begin(), info.dims.end(),
                       [](const DimInfo& d) { return !d.reduction && d.extent > 1; });
  });
  if (!op) return false;
  const OperationInfo& info = space.operations()[*op];
  std::vector<const DimInfo*> dims;
  for (const DimInfo& d : info.dims) {
    if (!d.reduction && d.extent > 1) dims.push_back(&d);
  }
  const DimInfo& dim = *dims[rng.below(dims.size())];
  OpPlan& entry = genome.ops[info.name];
  const bool split = entry.split.contains(dim.name);
  const std::int64_t count = split && rng.chance(0.25) ? 1 : draw_count(space, dim.extent, rng);
  if (!set_split(space, entry, dim.name, count)) return false;
  // Some of the time the new cut is carried along its axis (carry): a cut of attention's heads
  // must reach a dozen operations at once to pay.
  if (rng.chance(kResplitCarries)) {
    const auto d = static_cast<std::size_t>(&dim - info.dims.data());
    carry(space, genome, *op, d, count);
  }
  return true;
}

bool reduction(const PlanSpace& space, Plan& genome, Rng& rng) {
  const auto op = pick_representative(space, rng, [](const OperationInfo& info) {
    return can_split_reduction(info) &&
           std::any_of(info.dims.begin(), info.dims.end(),
                       [](const DimInfo& d) { return d.reduction && d.extent > 1; });
  });
  if (!op) return false;
  const OperationInfo& info = space.operations()[*op];
  std::vector<const DimInfo*> dims;
  for (const DimInfo& d : info.dims) {
    if (d.reduction && d.extent > 1) dims.push_back(&d);
  }
  const DimInfo& dim = *dims[rng.below(dims.size())];
  OpPlan& entry = genome.ops[info.name];
  const bool split = entry.split.contains(dim.name);
  const std::int64_t count = split && rng.chance(0.5) ? 1 : draw_count(space, dim.extent, rng);
  return set_split(space, entry, dim.name, count);
}

bool mesh(const PlanSpace& space, Plan& genome, Rng& rng) {
  const auto op = pick_representative(space, rng, [&](const OperationInfo& info) {
    auto it = genome.ops.find(info.name);
    return it != genome.ops.end() && !it->second.split.empty();
  });
  if (!op) return false;
  const OperationInfo& info = space.operations()[*op];
  OpPlan& entry = genome.ops[info.name];
  if (!entry.mesh.empty() && rng.chance(0.3)) {
    entry.mesh.clear();
    return true;
  }
  std::vector<std::string> split_dims;
  for (const auto& [dim, count] : entry.split) split_dims.push_back(dim);
  const std::string& dim = split_dims[rng.below(split_dims.size())];
  const cost::MeshAxis& axis = space.mesh_axes()[rng.below(space.mesh_axes().size())];
  OpPlan next = entry;
  std::erase_if(next.mesh, [&](const auto& m) { return m.second == axis.name; });
  next.mesh[dim] = axis.name;
  next.place.clear();
  const auto d = std::find_if(info.dims.begin(), info.dims.end(),
                              [&](const DimInfo& x) { return x.name == dim; });
  if (d != info.dims.end() && axis.size > 1 && axis.size <= d->extent && rng.chance(0.5)) {
    next.split[dim] = axis.size;
    if (shards(next) > shard_limit(space)) return false;
  }
  if (next == entry) return false;
  entry = std::move(next);
  return true;
}

// The operations whose outputs only `op` reads (its one operation producer), on up, and those
// that only read `op`'s outputs (its one reader), on down — `op`'s branch between where the
// graph forks and where it joins: K's projection, its reshape into heads, its permute and the
// transpose of attention's scores, but not the matmul that also reads Q. In graph order.
std::vector<std::size_t> chain_of(const PlanSpace& space, std::size_t op) {
  const auto only = [&](const std::vector<std::size_t>& edges, bool producers) {
    std::optional<std::size_t> one;
    for (std::size_t e : edges) {
      const Edge& edge = space.edges()[e];
      const std::size_t other = producers ? edge.producer : edge.consumer;
      if (one && *one != other) return std::optional<std::size_t>{};
      one = other;
    }
    return one;
  };
  std::vector<std::size_t> up, down;
  for (std::size_t at = op;;) {
    const auto p = only(space.edges_into(at), true);
    if (!p || only(space.edges_from(*p), false) != at) break;
    up.push_back(at = *p);
  }
  for (std::size_t at = op;;) {
    const auto c = only(space.edges_from(at), false);
    if (!c || only(space.edges_into(*c), true) != at) break;
    down.push_back(at = *c);
  }
  std::vector<std::size_t> chain(up.rbegin(), up.rend());
  chain.push_back(op);
  chain.insert(chain.end(), down.begin(), down.end());
  return chain;
}

// Moves `op`'s branch (chain_of) onto one run of devices: as many as its shards (a power of two,
// at most the device count), starting at a random multiple of that — so a branch can run beside
// the others on devices of its own (attention's K beside Q), which moving its operations one at a
// time reaches only through plans that move data between them.
bool place_branch(const PlanSpace& space, Plan& genome, Rng& rng, std::size_t op) {
  const auto devices = static_cast<std::uint64_t>(space.device_count());
  const auto found = genome.ops.find(space.operations()[op].name);
  const std::int64_t n = found == genome.ops.end() ? 1 : shards(found->second);
  std::uint64_t m = 1;
  while (m * 2 <= devices && static_cast<std::int64_t>(m * 2) <= n) m *= 2;
  const std::uint64_t from = m * rng.below(devices / m);
  std::vector<std::string> run;
  for (std::uint64_t i = 0; i < m; ++i) run.push_back(space.device_names()[from + i]);
  bool changed = false;
  for (std::size_t member : chain_of(space, op)) {
    if (space.representative(member) != member) continue;
    OpPlan& entry = genome.ops[space.operations()[member].name];
    if (entry.place == run && entry.mesh.empty()) continue;
    entry.place = run;
    entry.mesh.clear();
    changed = true;
  }
  return changed;
}

bool place(const PlanSpace& space, Plan& genome, Rng& rng) {
  const auto op = pick_representative(space, rng, [](const OperationInfo&) { return true; });
  if (!op) return false;
  OpPlan& entry = genome.ops[space.operations()[*op].name];
  const auto devices = static_cast<std::uint64_t>(space.device_count());
  OpPlan next = entry;
  const std::uint64_t how = rng.below(4);
  if (how == 3) return place_branch(space, genome, rng, *op);
  if (how == 0 && (!entry.place.empty() || !entry.mesh.empty())) {
    next.place.clear();
    next.mesh.clear();
  } else if (how == 1 && entry.place.size() >= 2) {
    const std::uint64_t a = rng.below(entry.place.size());
    const std::uint64_t b = rng.below(entry.place.size());
    std::swap(next.place[a], next.place[b]);
  } else {
    std::uint64_t m = 1;
    const std::uint64_t runs = 1 + rng.below(64);
    for (std::uint64_t i = 1; i < runs && m * 2 <= devices; ++i) m *= 2;
    if (rng.chance(0.25)) m = devices;
    const std::uint64_t from = rng.below(devices - m + 1);
    next.place.clear();
    next.mesh.clear();
    for (std::uint64_t i = 0; i < m; ++i) next.place.push_back(space.device_names()[from + i]);
  }
  if (next == entry) return false;
  entry = std::move(next);
  return true;
}

bool in_a_group(const Plan& genome, const std::string& name) {
  for (const auto& group : genome.fuse) {
    if (std::find(group.begin(), group.end(), name) != group.end()) return true;
  }
  return false;
}

bool fusion(const PlanSpace& space, Plan& genome, Rng& rng) {
  if (rng.chance(0.5)) {
    genome.fuse_auto = !genome.fuse_auto;
    return true;
  }
  // Pairs of representatives where the producer's output has one reader.
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::size_t r : space.representatives()) {
    const auto& out = space.edges_from(r);
    if (out.size() != 1) continue;
    const Edge& e = space.edges()[out.front()];
    if (space.representative(e.consumer) != e.consumer) continue;
    pairs.emplace_back(space.operations()[r].name, space.operations()[e.consumer].name);
  }
  if (pairs.empty()) return false;
  const auto& [p, c] = pairs[rng.below(pairs.size())];
  const std::vector<std::string> group = {p, c};
  auto found = std::find(genome.fuse.begin(), genome.fuse.end(), group);
  if (found != genome.fuse.end()) {
    genome.fuse.erase(found);
    return true;
  }
  if (in_a_group(genome, p) || in_a_group(genome, c)) return false;
  genome.fuse.push_back(group);
  return true;
}

bool substitute(const PlanSpace& space, Plan& genome, Rng& rng) {
  const auto op =
      pick_representative(space, rng, [](const OperationInfo& info) { return info.decomposable; });
  if (!op) return false;
  auto& subs = genome.ops[space.operations()[*op].name].substitute;
  const std::string name = "decompose-linear";
  if (std::erase(subs, name) == 0) subs.push_back(name);
  return true;
}

// Copies `from`'s cut of the tensor between two ports onto `to`: for every tensor dim both ports
// follow, `to`'s dim gets `from`'s count (and mesh axis); `to` gets `from`'s place list.
bool copy_cut(const PlanSpace& space, Plan& genome, std::size_t from, const PortDims& from_port,
              std::size_t to, const PortDims& to_port) {
  const OperationInfo& src = space.operations()[space.representative(from)];
  const OperationInfo& dst = space.operations()[space.representative(to)];
  if (&src == &dst) return false;
  const auto src_entry = genome.ops.find(src.name);
  const OpPlan src_plan = src_entry == genome.ops.end() ? OpPlan{} : src_entry->second;
  OpPlan next = genome.ops[dst.name];
  for (std::size_t t = 0; t < from_port.follows.size() && t < to_port.follows.size(); ++t) {
    const auto s = from_port.follows[t];
    const auto d = to_port.follows[t];
    if (!s || !d) continue;
    const DimInfo& dim = dst.dims[*d];
    const std::int64_t count = split_of(genome, src.name, src.dims[*s].name);
    if (count > dim.extent || (dim.reduction && !can_split_reduction(dst))) continue;
    if (count <= 1) {
      next.split.erase(dim.name);
    } else {
      next.split[dim.name] = count;
    }
    next.mesh.erase(dim.name);
    if (auto axis = src_plan.mesh.find(src.dims[*s].name); axis != src_plan.mesh.end()) {
      std::erase_if(next.mesh, [&](const auto& m) { return m.second == axis->second; });
      next.mesh[dim.name] = axis->second;
    }
  }
  next.place = src_plan.place;
  if (!next.place.empty()) next.mesh.clear();
  if (shards(next) > shard_limit(space)) return false;
  OpPlan& entry = genome.ops[dst.name];
  if (next == entry) return false;
  entry = std::move(next);
  return true;
}

bool copy_forward(const PlanSpace& space, Plan& genome, const Edge& e) {
  const auto& ops = space.operations();
  return copy_cut(space, genome, e.producer, ops[e.producer].outputs[e.output], e.consumer,
                  ops[e.consumer].inputs[e.input]);
}

// Copies forward from `start` along every edge reachable from it (each operation once).
void propagate(const PlanSpace& space, Plan& genome, std::size_t start, bool stop_at_weights) {
  std::vector<std::size_t> todo = {start};
  std::set<std::size_t> done = {start};
  while (!todo.empty()) {
    const std::size_t op = todo.back();
    todo.pop_back();
    for (std::size_t e : space.edges_from(op)) {
      const Edge& edge = space.edges()[e];
      if (done.contains(edge.consumer)) continue;
      if (stop_at_weights && space.operations()[edge.consumer].weight_dim) continue;
      copy_forward(space, genome, edge);
      done.insert(edge.consumer);
      todo.push_back(edge.consumer);
    }
  }
}

bool align(const PlanSpace& space, Plan& genome, Rng& rng) {
  if (space.edges().empty()) return false;
  const Edge& e = space.edges()[rng.below(space.edges().size())];
  const auto& ops = space.operations();
  const Plan before = genome;
  if (rng.chance(0.7)) {
    copy_forward(space, genome, e);
    if (rng.chance(0.5)) propagate(space, genome, e.consumer, false);
  } else {
    copy_cut(space, genome, e.consumer, ops[e.consumer].inputs[e.input], e.producer,
             ops[e.producer].outputs[e.output]);
  }
  return !(genome == before);
}

// ---- a training step's members ----------------------------------------------------------------

bool recompute(const PlanSpace& space, Plan& genome, Rng& rng) {
  const TrainingSpace& t = space.training();
  if (t.recomputable.empty()) return false;
  const std::uint64_t how = rng.below(10);
  std::vector<std::string> next;
  if (how < 2) {
    next = t.full;
  } else if (how < 4) {
    next = t.selective;
  } else if (how < 5) {
    next.clear();
  } else {
    next = genome.recompute;
    const std::string& name =
        space.operations()[t.recomputable[rng.below(t.recomputable.size())]].name;
    if (std::erase(next, name) == 0) {
      // In the forward order, so equal sets are equal lists.
      next.push_back(name);
      std::vector<std::string> ordered;
      for (const std::string& r : t.full) {
        if (std::find(next.begin(), next.end(), r) != next.end()) ordered.push_back(r);
      }
      for (const std::string& r : next) {
        if (std::find(ordered.begin(), ordered.end(), r) == ordered.end()) ordered.push_back(r);
      }
      next = std::move(ordered);
    }
  }
  if (next == genome.recompute) return false;
  genome.recompute = std::move(next);
  return true;
}

std::string zero_axis(const PlanSpace& space, std::int64_t shards, Rng& rng) {
  std::vector<std::string> axes;
  for (const cost::MeshAxis& a : space.mesh_axes()) {
    if (a.size == shards && space.mesh_axes().size() > 1) axes.push_back(a.name);
  }
  if (axes.empty() || rng.chance(0.5)) return {};
  return axes[rng.below(axes.size())];
}

bool zero(const PlanSpace& space, Plan& genome, Rng& rng) {
  const TrainingSpace& t = space.training();
  if (t.zero_shards.empty()) return false;
  std::optional<rewrite::ZeroPlan> next = genome.zero;
  if (next && rng.chance(0.25)) {
    next.reset();
  } else if (!next) {
    const std::int64_t shards = t.zero_shards[rng.below(t.zero_shards.size())];
    next =
        rewrite::ZeroPlan{.stage = rng.chance(0.5) ? 3 : 1 + static_cast<int>(rng.below(3)),
                          .params = t.parameters,
                          .shards = shards,
                          .axis = genome.pipeline ? std::string() : zero_axis(space, shards, rng)};
  } else {
    switch (rng.below(3)) {
      case 0:
        next->stage = 1 + static_cast<int>(rng.below(3));
        break;
      case 1:
        next->shards = t.zero_shards[rng.below(t.zero_shards.size())];
        next->axis = genome.pipeline ? std::string() : zero_axis(space, next->shards, rng);
        break;
      default:
        next->axis = genome.pipeline ? std::string() : zero_axis(space, next->shards, rng);
        break;
    }
  }
  if (next == genome.zero) return false;
  genome.zero = std::move(next);
  return true;
}

// The stages of `count` runs of consecutive layers (as even as they divide).
std::vector<std::vector<std::string>> stages_of(const TrainingSpace& t, std::size_t count) {
  std::vector<std::vector<std::string>> stages(count);
  const std::size_t depth = t.layers.size();
  for (std::size_t l = 0; l < depth; ++l) {
    auto& stage = stages[l * count / depth];
    stage.insert(stage.end(), t.layers[l].begin(), t.layers[l].end());
  }
  return stages;
}

bool pipeline(const PlanSpace& space, Plan& genome, Rng& rng) {
  const TrainingSpace& t = space.training();
  const auto most = static_cast<std::int64_t>(
      std::min<std::size_t>(t.layers.size(), static_cast<std::size_t>(space.device_count())));
  if (most < 2 || t.microbatches.empty()) return false;
  const auto draw_stages = [&] {
    std::vector<std::int64_t> options;
    for (std::int64_t k = 2; k <= most; ++k) {
      if (static_cast<std::int64_t>(t.layers.size()) % k == 0 || (k & (k - 1)) == 0)
        options.push_back(k);
    }
    return static_cast<std::size_t>(options[rng.below(options.size())]);
  };
  const auto draw_microbatches = [&] { return t.microbatches[rng.below(t.microbatches.size())]; };
  std::optional<rewrite::PipelinePlan> next = genome.pipeline;
  if (next && rng.chance(0.25)) {
    next.reset();
  } else if (!next) {
    next = rewrite::PipelinePlan{.stages = stages_of(t, draw_stages()),
                                 .microbatches = draw_microbatches(),
                                 .schedule = rng.chance(0.75) ? "1f1b" : "gpipe",
                                 .devices = {}};
    // What a pipeline refuses: placements, mesh axes, batch cuts (and ZeRO's axis).
    for (auto& [name, op] : genome.ops) {
      op.place.clear();
      op.mesh.clear();
      const std::optional<std::size_t> at = space.find(name);
      if (at && space.operations()[*at].batch_dim) {
        op.split.erase(space.operations()[*at].dims[*space.operations()[*at].batch_dim].name);
      }
      for (const DimInfo& d : at ? space.operations()[*at].dims : std::vector<DimInfo>{}) {
        if (d.reduction) op.split.erase(d.name);
      }
    }
    if (genome.zero) genome.zero->axis.clear();
  } else {
    switch (rng.below(3)) {
      case 0:
        next->stages = stages_of(t, draw_stages());
        break;
      case 1:
        next->microbatches = draw_microbatches();
        break;
      default:
        next->schedule = next->schedule == "1f1b" ? "gpipe" : "1f1b";
        break;
    }
  }
  if (next == genome.pipeline) return false;
  genome.pipeline = std::move(next);
  return true;
}

std::int64_t device_cut(const PlanSpace& space, std::int64_t extent) {
  return std::min(extent, space.device_count());
}

Plan data_parallel(const PlanSpace& space) {
  Plan plan;
  for (std::size_t r : space.representatives()) {
    const OperationInfo& info = space.operations()[r];
    if (!info.batch_dim) continue;
    const DimInfo& d = info.dims[*info.batch_dim];
    if (device_cut(space, d.extent) > 1)
      plan.ops[info.name].split[d.name] = device_cut(space, d.extent);
  }
  plan.fuse_auto = true;
  return plan;
}

Plan weights_out(const PlanSpace& space) {
  Plan plan;
  for (std::size_t r : space.representatives()) {
    const OperationInfo& info = space.operations()[r];
    if (!info.weight_dim) continue;
    const DimInfo& d = info.dims[*info.weight_dim];
    if (device_cut(space, d.extent) > 1)
      plan.ops[info.name].split[d.name] = device_cut(space, d.extent);
  }
  for (std::size_t r : space.representatives()) {
    if (space.operations()[r].weight_dim) propagate(space, plan, r, true);
  }
  plan.fuse_auto = true;
  return plan;
}

// The reduction dim of `op` along which an input arrives cut by its producer, and the count.
std::optional<std::pair<std::string, std::int64_t>> arriving_cut(const PlanSpace& space,
                                                                 const Plan& plan, std::size_t op) {
  const auto& ops = space.operations();
  const OperationInfo& info = ops[op];
  if (!can_split_reduction(info)) return std::nullopt;
  for (std::size_t e : space.edges_into(op)) {
    const Edge& edge = space.edges()[e];
    const OperationInfo& producer = ops[space.representative(edge.producer)];
    const PortDims& out = ops[edge.producer].outputs[edge.output];
    const PortDims& in = info.inputs[edge.input];
    for (std::size_t t = 0; t < out.follows.size() && t < in.follows.size(); ++t) {
      if (!out.follows[t] || !in.follows[t] || !info.dims[*in.follows[t]].reduction) continue;
      const std::int64_t count = plan.split_of(producer.name, producer.dims[*out.follows[t]].name);
      if (count > 1 && count <= info.dims[*in.follows[t]].extent) {
        return std::make_pair(info.dims[*in.follows[t]].name, count);
      }
    }
  }
  return std::nullopt;
}

Plan megatron(const PlanSpace& space) {
  Plan plan;
  const auto& ops = space.operations();
  for (std::size_t r : space.representatives()) {
    const OperationInfo& info = ops[r];
    if (info.weight_dim) {
      if (auto cut = arriving_cut(space, plan, r)) {
        plan.ops[info.name].split[cut->first] = cut->second;
      } else if (const DimInfo& d = info.dims[*info.weight_dim]; device_cut(space, d.extent) > 1) {
        plan.ops[info.name].split[d.name] = device_cut(space, d.extent);
      }
      continue;
    }
    for (std::size_t e : space.edges_into(r)) {
      const Edge& edge = space.edges()[e];
      if (plan.ops.contains(ops[space.representative(edge.producer)].name)) {
        copy_forward(space, plan, edge);
        break;
      }
    }
  }
  plan.fuse_auto = true;
  return plan;
}

}  // namespace

Rng Rng::for_slot(std::uint64_t seed, std::uint64_t generation, std::uint64_t slot) {
  return Rng(mix(mix(mix(seed) ^ generation) ^ (slot * 0x632be59bd9b4e019ull)));
}

std::uint64_t Rng::next() {
  state_ += 0x9e3779b97f4a7c15ull;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t Rng::below(std::uint64_t n) {
  TAPESTRY_ASSERT(n > 0, "Rng::below(0)");
  return next() % n;
}

bool Rng::chance(double p) {
  return static_cast<double>(next() >> 11) * 0x1p-53 < p;
}

std::string_view mutation_name(Mutation mutation) {
  switch (mutation) {
    case Mutation::kResplit:
      return "resplit";
    case Mutation::kReduction:
      return "reduction";
    case Mutation::kMesh:
      return "mesh";
    case Mutation::kPlace:
      return "place";
    case Mutation::kFusion:
      return "fusion";
    case Mutation::kSubstitute:
      return "substitute";
    case Mutation::kAlign:
      return "align";
    case Mutation::kRecompute:
      return "recompute";
    case Mutation::kZero:
      return "zero";
    case Mutation::kPipeline:
      return "pipeline";
  }
  return "?";
}

bool mutate_once(const PlanSpace& space, Mutation kind, rewrite::Plan& genome, Rng& rng) {
  const Plan before = genome;
  switch (kind) {
    case Mutation::kResplit:
      resplit(space, genome, rng);
      break;
    case Mutation::kReduction:
      reduction(space, genome, rng);
      break;
    case Mutation::kMesh:
      mesh(space, genome, rng);
      break;
    case Mutation::kPlace:
      place(space, genome, rng);
      break;
    case Mutation::kFusion:
      fusion(space, genome, rng);
      break;
    case Mutation::kSubstitute:
      substitute(space, genome, rng);
      break;
    case Mutation::kAlign:
      align(space, genome, rng);
      break;
    case Mutation::kRecompute:
      recompute(space, genome, rng);
      break;
    case Mutation::kZero:
      zero(space, genome, rng);
      break;
    case Mutation::kPipeline:
      pipeline(space, genome, rng);
      break;
  }
  normalize(genome);
  return !(genome == before);
}

void mutate(const PlanSpace& space, rewrite::Plan& genome, Rng& rng, MutationSet allowed) {
  std::array<int, kMutationCount> weights{};
  int total = 0;
  for (int k = 0; k < kMutationCount; ++k) {
    weights[k] = (allowed >> k & 1u) != 0 ? kWeights[k] : 0;
    if (k >= kCutMutationCount && !space.is_training_step()) weights[k] = 0;
    total += weights[k];
  }
  if (total == 0) return;
  int count = 1;
  while (count < 4 && rng.chance(0.4)) ++count;
  for (int done = 0, tries = 0; done < count && tries < 16; ++tries) {
    auto pick = static_cast<int>(rng.below(static_cast<std::uint64_t>(total)));
    int kind = 0;
    while (pick >= weights[kind]) pick -= weights[kind++];
    if (mutate_once(space, static_cast<Mutation>(kind), genome, rng)) ++done;
  }
}

void normalize(rewrite::Plan& genome) {
  for (auto& [name, op] : genome.ops) {
    std::erase_if(op.mesh, [&](const auto& m) { return !op.split.contains(m.first); });
    if (!op.mesh.empty()) op.place.clear();
    std::set<std::string> axes;
    std::erase_if(op.mesh, [&](const auto& m) { return !axes.insert(m.second).second; });
  }
  std::erase_if(genome.ops, [](const auto& entry) { return rewrite::is_empty(entry.second); });
  std::set<std::string> grouped;
  std::erase_if(genome.fuse, [&](const std::vector<std::string>& group) {
    for (const std::string& name : group) {
      if (grouped.contains(name)) return true;
    }
    grouped.insert(group.begin(), group.end());
    return false;
  });
}

std::vector<SeedPlan> seed_plans(const PlanSpace& space) {
  std::vector<SeedPlan> seeds = {{"unsharded", Plan{}},
                                 {"data-parallel", data_parallel(space)},
                                 {"weights-out", weights_out(space)},
                                 {"megatron", megatron(space)}};
  std::vector<SeedPlan> distinct;
  for (SeedPlan& s : seeds) {
    normalize(s.genome);
    const bool seen = std::any_of(distinct.begin(), distinct.end(),
                                  [&](const SeedPlan& d) { return d.genome == s.genome; });
    if (!seen) distinct.push_back(std::move(s));
  }
  return distinct;
}

std::uint64_t fingerprint(const rewrite::Plan& plan) {
  const std::string text = plan.to_json().dump();
  return support::fnv1a(text);
}

}  // namespace tapestry::search
