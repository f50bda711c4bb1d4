// PlacementBuilder: local producers, transfers and resident inputs from shards' boxes
// (placement_builder.h; the rules are placement.h's).
//
// 1. Every box an application writes is listed per tensor (CSR by node index, application order).
// 2. For every box an application reads: the writers it overlaps (all of them compared when a
//    tensor has few writers, a zspace::BoxIndex when it has many — the same answer) on the same
//    device become local producers; those on other devices become transfers of the intersection,
//    one per (writer, destination device, box). Graph inputs are resident (or loaded from the
//    host); graph outputs stay (or are gathered to the host).
// 3. The collectives among the transfers (collective.h), from the same index of writers.
// Deduplication uses open-addressing sets over the transfers and resident boxes themselves, so a
// placement costs no allocation per transfer beyond its consumer list.
#include "placement_builder.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tapestry/ir/ordering.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/cancel.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/json.h"

namespace tapestry::cost::detail {

namespace {

// Writers per tensor above which a BoxIndex answers overlap queries instead of a scan.
constexpr std::size_t kIndexAbove = 16;

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

std::uint64_t hash_of(std::uint64_t a, std::uint64_t b, std::uint32_t tensor,
                      const zspace::Range& box) {
  std::uint64_t h = mix(mix(mix(0, a), b), tensor);
  for (std::size_t d = 0; d < box.rank(); ++d) {
    h = mix(mix(h, static_cast<std::uint64_t>(box.start()[d])),
            static_cast<std::uint64_t>(box.end()[d]));
  }
  return h;
}

// a ∩ b for boxes that overlap: Range::intersect without its rank check, optional and
// temporaries (a transfer's box; every read box of a fragment kept across plans makes it again).
zspace::Range overlap_of(const zspace::Range& a, const zspace::Range& b) {
  zspace::InlineVector<std::int64_t, zspace::kInlineRank> lo(a.rank()), hi(a.rank());
  for (std::size_t d = 0; d < a.rank(); ++d) {
    lo[d] = std::max(a.start()[d], b.start()[d]);
    hi[d] = std::min(a.end()[d], b.end()[d]);
  }
  return zspace::Range(zspace::Point(lo.span()), zspace::Point(hi.span()));
}

// The next slot of `v` for reuse (its old contents, storage kept) or a new one.
template <typename T>
T& next_slot(std::vector<T>& v, std::size_t& used) {
  if (used == v.size()) v.emplace_back();
  return v[used++];
}

}  // namespace

std::string device_list(const Target& target) {
  if (target.devices.size() <= 4) {
    std::vector<std::string_view> names;
    for (const Device& d : target.devices) names.push_back(d.name);
    return fmt::format("{}", fmt::join(names, ", "));
  }
  return fmt::format("{} … {}", target.devices.front().name, target.devices.back().name);
}

TensorFacts TensorFacts::of(const ir::Graph& graph) {
  TensorFacts facts;
  facts.graph = &graph;
  facts.element_bytes.assign(graph.size(), 0);
  for (ir::TensorId t : graph.tensors()) {
    if (const std::optional<ir::DType> dtype = graph.tensor(t).dtype().known()) {
      facts.element_bytes[t.index()] = static_cast<std::int64_t>(ir::dtype_size_bytes(*dtype));
    }
  }
  facts.outputs = metakernel::graph_outputs(graph);
  facts.partial = partial_tensors(graph);
  facts.after.resize(graph.size());
  for (ir::OperationId op : graph.operations()) {
    for (ir::TensorId t : ir::after(graph, op)) facts.after[op.index()].push_back(t.index());
  }
  return facts;
}

std::int64_t TensorFacts::bytes_of(std::uint32_t tensor) const {
  const std::int64_t bytes = element_bytes[tensor];
  if (bytes > 0) return bytes;
  const ir::TensorId id{ir::NodeId(tensor)};
  throw Error(fmt::format("tensor '{}' has dtype '{}', which the cost model does not know",
                          graph->key(id), graph->tensor(id).dtype()));
}

std::size_t ShardGrid::linear(std::size_t i) const {
  std::int64_t at = 0;
  for (std::size_t d = 0; d < rank; ++d) at = at * counts[d] + coordinates[i * rank + d];
  return static_cast<std::size_t>(at);
}

namespace {

// Shard i of `grid` runs where the corresponding shard of the operation it is colocated with
// runs (rewrite::OpPlan::Colocation): along every mapped dim the same coordinate (mod that
// operation's count there), coordinate 0 along its other dims.
void colocate(PlacedOperation& placed, std::span<const std::string> index_names,
              const ShardGrid& grid, const Colocated& c, std::vector<std::uint32_t>& devices) {
  const PlacedOperation& with = *c.with;
  const std::size_t with_rank = with.grid.size();
  std::vector<std::pair<std::size_t, std::size_t>> mapped;  // (my dim, its dim)
  for (const auto& [dim, with_dim] : c.colocation->dims) {
    auto d = std::find(index_names.begin(), index_names.end(), dim);
    auto w = std::find(c.with_index_names.begin(), c.with_index_names.end(), with_dim);
    TAPESTRY_ASSERT(d != index_names.end() && w != c.with_index_names.end() &&
                        c.with_index_names.size() == with_rank,
                    "a colocation maps dims both operations have");
    mapped.emplace_back(d - index_names.begin(), w - c.with_index_names.begin());
    placed.mesh_axis[mapped.back().first] = with.mesh_axis[mapped.back().second];
  }
  for (std::size_t i = 0; i < grid.shards; ++i) {
    std::size_t at = 0;
    for (std::size_t w = 0; w < with_rank; ++w) {
      std::int64_t k = 0;
      for (const auto& [d, wd] : mapped) {
        if (wd == w) k = grid.coordinates[i * grid.rank + d] % with.grid[w];
      }
      at = at * static_cast<std::size_t>(with.grid[w]) + static_cast<std::size_t>(k);
    }
    TAPESTRY_ASSERT(at < with.applications.size(), "a colocated shard's partner exists");
    devices[i] = c.applications[with.applications[at]].device;
  }
}

}  // namespace

void assign_devices(PlacedOperation& placed, std::span<const std::string> index_names,
                    const ShardGrid& grid, std::span<const std::string> place,
                    const std::map<std::string, std::string>* mesh, const Colocated* colocated,
                    const Target& target, std::vector<std::uint32_t>& devices) {
  const std::size_t rank = grid.rank;
  placed.grid.assign(grid.counts.begin(), grid.counts.end());
  placed.mesh_axis.resize(rank);
  for (std::string& axis : placed.mesh_axis) axis.clear();
  devices.assign(grid.shards, 0);
  const auto path = [&] { return "/ops/" + zspace::json_pointer_token(placed.name); };
  if (!place.empty()) {
    std::vector<std::uint32_t> listed;
    for (std::size_t k = 0; k < place.size(); ++k) {
      auto d = target.find_device(place[k]);
      if (!d) {
        throw Error(fmt::format(
            "{}/place/{}: operation '{}': target '{}' has no device '{}' (it has {}); "
            "--ignore-placement places the plan's shards on this target by the default rule",
            path(), k, placed.name, target.name, place[k], device_list(target)));
      }
      listed.push_back(static_cast<std::uint32_t>(*d));
    }
    for (std::size_t i = 0; i < grid.shards; ++i)
      devices[i] = listed[grid.linear(i) % listed.size()];
    return;
  }
  if (mesh != nullptr && !mesh->empty()) {
    const std::vector<MeshAxis> axes = target.mesh_axes();
    std::vector<std::optional<std::size_t>> dim_of_axis(axes.size());
    for (const auto& mapping : *mesh) {
      // Named, not structured bindings: clang 14 (the fuzz preset) cannot capture those.
      const std::string& dim = mapping.first;
      const std::string& axis = mapping.second;
      const auto at = [&] {
        return fmt::format("{}/mesh/{}", path(), zspace::json_pointer_token(dim));
      };
      auto a =
          std::find_if(axes.begin(), axes.end(), [&](const MeshAxis& m) { return m.name == axis; });
      if (a == axes.end()) {
        std::vector<std::string_view> names;
        for (const MeshAxis& m : axes) names.push_back(m.name);
        throw Error(fmt::format(
            "{}: operation '{}': target '{}' has no mesh axis '{}' (its mesh: {}); "
            "--ignore-placement places the plan's shards on this target by the default rule",
            at(), placed.name, target.name, axis, fmt::join(names, ", ")));
      }
      auto d = std::find(index_names.begin(), index_names.end(), dim);
      if (d == index_names.end()) {
        throw Error(fmt::format("{}: operation '{}' has no index dimension '{}' (it has: {})", at(),
                                placed.name, dim, fmt::join(index_names, ", ")));
      }
      const auto position = static_cast<std::size_t>(d - index_names.begin());
      dim_of_axis[static_cast<std::size_t>(a - axes.begin())] = position;
      placed.mesh_axis[position] = axis;
    }
    std::vector<std::int64_t> coordinate(axes.size(), 0);
    for (std::size_t i = 0; i < grid.shards; ++i) {
      for (std::size_t a = 0; a < axes.size(); ++a) {
        coordinate[a] =
            dim_of_axis[a] ? grid.coordinates[i * rank + *dim_of_axis[a]] % axes[a].size : 0;
      }
      devices[i] = static_cast<std::uint32_t>(target.device_at(coordinate));
    }
    return;
  }
  if (colocated != nullptr) {
    colocate(placed, index_names, grid, *colocated, devices);
    return;
  }
  for (std::size_t i = 0; i < grid.shards; ++i) {
    devices[i] = static_cast<std::uint32_t>(grid.linear(i) % target.devices.size());
  }
}

std::vector<ReplicatedOutput> replicated_outputs(const rewrite::Plan& plan, const ir::Graph& graph,
                                                 const Target& target) {
  std::vector<ReplicatedOutput> out;
  if (plan.outputs.empty()) return out;
  const std::vector<MeshAxis> axes = target.mesh_axes();
  for (const auto& [name, output] : plan.outputs) {
    const std::string path = "/outputs/" + zspace::json_pointer_token(name);
    const std::optional<ir::TensorId> tensor = rewrite::find_output(graph, name);
    if (!tensor) throw Error(fmt::format("{}: no graph output named '{}'", path, name));
    ReplicatedOutput r{.tensor = tensor->index(), .axis = std::nullopt};
    if (output.replicate != rewrite::kReplicateAll) {
      auto a = std::find_if(axes.begin(), axes.end(),
                            [&](const MeshAxis& m) { return m.name == output.replicate; });
      if (a == axes.end()) {
        std::vector<std::string_view> names;
        for (const MeshAxis& m : axes) names.push_back(m.name);
        throw Error(fmt::format(
            "{}/replicate: target '{}' has no mesh axis '{}' (its mesh: {}; or \"all\"); "
            "--ignore-placement drops it",
            path, target.name, output.replicate, fmt::join(names, ", ")));
      }
      r.axis = static_cast<std::size_t>(a - axes.begin());
    }
    out.push_back(r);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// PositionSet

void PositionSet::clear() {
  std::fill(slots_.begin(), slots_.end(), Slot{});
  size_ = 0;
}

void PositionSet::place(Slot slot) {
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = slot.hash & mask;
  while (slots_[i].position != 0) i = (i + 1) & mask;
  slots_[i] = slot;
}

void PositionSet::insert(std::uint64_t hash, std::uint32_t position) {
  if (2 * (size_ + 1) > slots_.size()) {  // keep the load at most 1/2
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<std::size_t>(64, 2 * old.size()), Slot{});
    for (const Slot& s : old) {
      if (s.position != 0) place(s);
    }
  }
  place(Slot{hash, position + 1});
  ++size_;
}

// ---------------------------------------------------------------------------------------------
// PlacementBuilder

PlacementBuilder::PlacementBuilder(const TensorFacts& facts, const Target& target)
    : facts_(&facts), target_(target) {
  TAPESTRY_ASSERT(!target.devices.empty(), "a target has devices");
}

void PlacementBuilder::start(Placement& out, std::span<const ReplicatedOutput> replicated) {
  out_ = &out;
  replicated_.assign(replicated.begin(), replicated.end());
  n_operations_ = n_applications_ = n_transfers_ = 0;
  out.resident_input_bytes.assign(target_.devices.size(), 0);
  inputs_.clear();
  in_hits_.clear();
  n_recorded_ = 0;
  written_.boxes.clear();
  in_begin_.assign(1, 0);
  transfer_set_.clear();
  resident_set_.clear();
  resident_.clear();
}

void PlacementBuilder::add_operation(ir::OperationId id, std::string_view name,
                                     std::string_view kernel) {
  PlacedOperation& op = next_slot(out_->operations, n_operations_);
  op.id = id;
  op.name.assign(name);
  op.kernel.assign(kernel);
  op.applications.clear();
  op.kernels.clear();
}

std::optional<Colocated> PlacementBuilder::colocated(
    const rewrite::OpPlan::Colocation& colocation,
    std::span<const std::string> with_index_names) const {
  for (std::size_t k = 0; k + 1 < n_operations_; ++k) {
    const PlacedOperation& with = out_->operations[k];
    if (with.name != colocation.with) continue;
    return Colocated{.colocation = &colocation,
                     .with = &with,
                     .with_index_names = with_index_names,
                     .applications = {out_->applications.data(), n_applications_}};
  }
  return std::nullopt;
}

const zspace::Range& PlacementBuilder::add_input(std::uint32_t tensor, const zspace::Range& box) {
  inputs_.emplace_back(tensor, box);
  in_hits_.emplace_back();
  return inputs_.back().box;
}

const zspace::Range& PlacementBuilder::add_input(std::uint32_t tensor, const zspace::Range& box,
                                                 std::span<const ReadHit> known) {
  inputs_.emplace_back(tensor, box);
  in_hits_.push_back(
      InputHits{known.data(), static_cast<std::uint32_t>(known.size()), InputHits::kKnown, 0});
  return inputs_.back().box;
}

const zspace::Range& PlacementBuilder::add_input_recorded(std::uint32_t tensor,
                                                          const zspace::Range& box) {
  inputs_.emplace_back(tensor, box);
  in_hits_.push_back(InputHits{nullptr, 0, InputHits::kRecord, 0});
  return inputs_.back().box;
}

std::span<const ReadHit> PlacementBuilder::recorded(std::size_t input) const {
  const InputHits& h = in_hits_[input];
  TAPESTRY_ASSERT(h.mode == InputHits::kRecord,
                  "recorded() of an input added with add_input_recorded");
  return {recorded_.data() + h.first, h.n};
}

const zspace::Range& PlacementBuilder::add_output(std::uint32_t tensor, const zspace::Range& box) {
  written_.boxes.push_back(WrittenBox{tensor, static_cast<std::uint32_t>(n_applications_), box});
  return written_.boxes.back().box;
}

void PlacementBuilder::add_application(ir::ApplicationId id, std::uint32_t device, const Work& work,
                                       bool pinned) {
  const auto position = static_cast<std::uint32_t>(n_applications_);
  PlacedApplication& app = next_slot(out_->applications, n_applications_);
  app.id = id;
  app.operation = static_cast<std::uint32_t>(n_operations_ - 1);
  app.device = device;
  app.work = work;
  app.local_producers.clear();
  app.ordering_predecessors.clear();
  app.incoming.clear();
  app.writes_output = false;
  app.pinned = pinned;
  operation().applications.push_back(position);
  in_begin_.push_back(static_cast<std::uint32_t>(inputs_.size()));
}

void PlacementBuilder::index_writers() {
  const std::size_t nodes = facts_->element_bytes.size();
  std::vector<std::uint32_t>& begin = written_.begin;
  begin.assign(nodes + 1, 0);
  for (const WrittenBox& out : written_.boxes) ++begin[out.tensor + 1];
  for (std::size_t t = 0; t < nodes; ++t) begin[t + 1] += begin[t];
  written_.order.resize(written_.boxes.size());
  cursor_.assign(begin.begin(), begin.end() - 1);
  for (std::uint32_t k = 0; k < written_.boxes.size(); ++k) {
    written_.order[cursor_[written_.boxes[k].tensor]++] = k;
  }
  indexed_.clear();
  indexed_.resize(nodes);
}

void PlacementBuilder::add_transfer(std::uint32_t consumer, std::uint32_t producer,
                                    std::uint32_t from, std::uint32_t tensor,
                                    const zspace::Range& box) {
  std::vector<Transfer>& transfers = out_->transfers;
  const std::uint32_t to = out_->applications[consumer].device;
  const std::uint64_t hash = hash_of(producer, to, tensor, box);
  std::int64_t found = transfer_set_.find(hash, [&](std::uint32_t t) {
    const Transfer& tr = transfers[t];
    return tr.producer == producer && tr.to == to && tr.tensor.index() == tensor && tr.box == box;
  });
  if (found < 0) {
    const std::int64_t bytes = box.size() * facts_->bytes_of(tensor);
    found = static_cast<std::int64_t>(n_transfers_);
    Transfer& tr = next_slot(transfers, n_transfers_);
    tr.tensor = ir::TensorId(ir::NodeId(tensor));
    tr.box = box;
    tr.bytes = bytes;
    tr.from = from;
    tr.to = to;
    tr.producer = producer;
    tr.consumers.clear();
    tr.replicates_output = false;
    transfer_set_.insert(hash, static_cast<std::uint32_t>(found));
  }
  const auto t = static_cast<std::uint32_t>(found);
  std::vector<std::uint32_t>& consumers = transfers[t].consumers;
  if (consumers.empty() || consumers.back() != consumer) consumers.push_back(consumer);
  std::vector<std::uint32_t>& incoming = out_->applications[consumer].incoming;
  if (std::find(incoming.begin(), incoming.end(), t) == incoming.end()) incoming.push_back(t);
}

void PlacementBuilder::add_resident(std::uint32_t device, std::uint32_t tensor,
                                    const zspace::Range& box) {
  const std::uint64_t hash = hash_of(device, 0, tensor, box);
  const std::int64_t found = resident_set_.find(hash, [&](std::uint32_t r) {
    const Resident& e = resident_[r];
    return e.device == device && e.tensor == tensor && e.box == box;
  });
  if (found >= 0) return;
  out_->resident_input_bytes[device] += box.size() * facts_->bytes_of(tensor);
  resident_set_.insert(hash, static_cast<std::uint32_t>(resident_.size()));
  resident_.push_back(Resident{device, tensor, box});
}

void PlacementBuilder::read(std::uint32_t a, std::uint32_t input) {
  const ShardBox& in = inputs_[input];
  InputHits& given = in_hits_[input];
  if (given.mode == InputHits::kRecord) {
    given.first = static_cast<std::uint32_t>(n_recorded_);
    given.n = 0;
  }
  if (in.box.is_empty()) return;
  const std::uint32_t begin = written_.begin[in.tensor];
  const std::uint32_t end = written_.begin[in.tensor + 1];
  const std::uint32_t device = out_->applications[a].device;
  if (begin == end) {  // a graph input
    if (target_.inputs == Residence::kHost) {
      add_transfer(a, kHost, kHost, in.tensor, in.box);
    } else {
      add_resident(device, in.tensor, in.box);
    }
    return;
  }
  if (given.mode == InputHits::kKnown) {  // the hits of an earlier search (ReadHit)
    for (std::uint32_t i = 0; i < given.n; ++i) {
      const ReadHit& hit = given.known[i];
      TAPESTRY_ASSERT(hit.writer < end - begin, "a known hit names a writer of its tensor");
      const WrittenBox& written = written_.boxes[written_.order[begin + hit.writer]];
      const std::uint32_t producer = written.application;
      const std::uint32_t from = out_->applications[producer].device;
      if (from == device) {
        out_->applications[a].local_producers.push_back(producer);
      } else {
        add_transfer(a, producer, from, in.tensor, overlap_of(in.box, written.box));
      }
    }
    return;
  }
  hits_.clear();
  if (end - begin > kIndexAbove) {
    std::unique_ptr<Indexed>& indexed = indexed_[in.tensor];
    if (!indexed) {
      indexed = std::make_unique<Indexed>();
      for (std::uint32_t k = begin; k < end; ++k)
        indexed->boxes.push_back(written_.boxes[written_.order[k]].box);
      indexed->index = std::make_unique<zspace::BoxIndex>(indexed->boxes);
    }
    indexed->index->append_overlapping(in.box, hits_);
    std::sort(hits_.begin(), hits_.end());
    hits_.erase(std::unique(hits_.begin(), hits_.end()), hits_.end());
  } else {
    for (std::uint32_t h = 0; h < end - begin; ++h) {
      if (written_.boxes[written_.order[begin + h]].box.overlaps(in.box)) hits_.push_back(h);
    }
  }
  for (std::uint32_t h : hits_) {
    const WrittenBox& written = written_.boxes[written_.order[begin + h]];
    const std::uint32_t producer = written.application;
    const std::uint32_t from = out_->applications[producer].device;
    if (given.mode == InputHits::kRecord) {
      next_slot(recorded_, n_recorded_).writer = h;
      ++given.n;
    }
    if (from == device) {
      out_->applications[a].local_producers.push_back(producer);
    } else {
      add_transfer(a, producer, from, in.tensor, overlap_of(in.box, written.box));
    }
  }
}

void PlacementBuilder::gather_outputs() {
  for (ir::TensorId tensor : facts_->outputs) {
    const std::uint32_t t = tensor.index();
    for (std::uint32_t k = written_.begin[t]; k < written_.begin[t + 1]; ++k) {
      const WrittenBox& written = written_.boxes[written_.order[k]];
      const std::uint32_t producer = written.application;
      const std::int64_t bytes = written.box.size() * facts_->bytes_of(t);
      Transfer& tr = next_slot(out_->transfers, n_transfers_);
      tr.tensor = tensor;
      tr.box = written.box;
      tr.bytes = bytes;
      tr.from = out_->applications[producer].device;
      tr.to = kHost;
      tr.producer = producer;
      tr.consumers.clear();
      tr.replicates_output = false;
    }
  }
}

// Every writer of a replicated output gets, from the other writers of its group (all of them, or
// those differing from it only along the mesh axis), every box they write: transfers read by no
// application, which deliver what the run holds at its end (Transfer::replicates_output). An
// all-gather per group once recognised (collective.h).
void PlacementBuilder::replicate_outputs() {
  if (replicated_.empty()) return;
  const std::vector<MeshAxis> axes = target_.mesh_axes();
  const auto group_of = [&](std::uint32_t device, const std::optional<std::size_t>& axis) {
    if (!axis) return std::size_t{0};
    std::size_t stride = 1;  // of the axis in the row-major device index
    for (std::size_t a = axes.size(); a-- > *axis + 1;)
      stride *= static_cast<std::size_t>(axes[a].size);
    const std::size_t along = (device / stride) % static_cast<std::size_t>(axes[*axis].size);
    return device - along * stride;
  };
  for (const ReplicatedOutput& r : replicated_) {
    support::check_cancelled();
    const std::uint32_t begin = written_.begin[r.tensor], end = written_.begin[r.tensor + 1];
    std::vector<std::uint32_t> receivers;
    for (std::uint32_t k = begin; k < end; ++k) {
      receivers.push_back(out_->applications[written_.boxes[written_.order[k]].application].device);
    }
    std::sort(receivers.begin(), receivers.end());
    receivers.erase(std::unique(receivers.begin(), receivers.end()), receivers.end());
    for (std::uint32_t to : receivers) {
      for (std::uint32_t k = begin; k < end; ++k) {
        const WrittenBox& w = written_.boxes[written_.order[k]];
        const std::uint32_t from = out_->applications[w.application].device;
        if (from == to || group_of(from, r.axis) != group_of(to, r.axis) || w.box.is_empty())
          continue;
        // A consumer on `to` may already receive this very box: that transfer is then held.
        const std::uint64_t hash = hash_of(w.application, to, r.tensor, w.box);
        const std::int64_t found = transfer_set_.find(hash, [&](std::uint32_t t) {
          const Transfer& tr = out_->transfers[t];
          return tr.producer == w.application && tr.to == to && tr.tensor.index() == r.tensor &&
                 tr.box == w.box;
        });
        if (found >= 0) {
          out_->transfers[static_cast<std::size_t>(found)].replicates_output = true;
          continue;
        }
        Transfer& tr = next_slot(out_->transfers, n_transfers_);
        tr.tensor = ir::TensorId(ir::NodeId(r.tensor));
        tr.box = w.box;
        tr.bytes = w.box.size() * facts_->bytes_of(r.tensor);
        tr.from = from;
        tr.to = to;
        tr.producer = w.application;
        tr.consumers.clear();
        tr.replicates_output = true;
      }
    }
  }
}

// Per tensor with several writers and per device: the rows of the boxes its applications there
// write and read, merged where they overlap (the executors' row pieces of an intermediate,
// runtime.md "Memory"; a graph output's rows on a device are one buffer); a piece two or more
// of them write is a SharedBuffer.
void PlacementBuilder::share_buffers() {
  Placement& p = *out_;
  p.shared_buffers.clear();
  const std::size_t nodes = facts_->element_bytes.size();
  shares_.assign(nodes, 0);
  // Only tensors two of whose writers are on one device (a data-parallel split over as many
  // devices has none): the last tensor that wrote on each device marks them.
  last_writer_of_.assign(target_.devices.size(), kHost);
  bool any = false;
  for (std::uint32_t t = 0; t < nodes; ++t) {
    if (written_.begin[t + 1] - written_.begin[t] < 2) continue;
    for (std::uint32_t k = written_.begin[t]; k < written_.begin[t + 1]; ++k) {
      const std::uint32_t device =
          p.applications[written_.boxes[written_.order[k]].application].device;
      if (last_writer_of_[device] == t) any = shares_[t] = 1;
      last_writer_of_[device] = t;
    }
  }
  if (!any) return;
  // A graph output is one buffer per device, whichever rows its writers there write.
  for (ir::TensorId tensor : facts_->outputs) {
    if (shares_[tensor.index()] != 0) shares_[tensor.index()] = 2;
  }
  spans_.clear();
  const auto rows = [&](std::uint32_t tensor, const zspace::Range& box) {
    return box.rank() == 0 || shares_[tensor] == 2 ? std::pair<std::int64_t, std::int64_t>(0, 1)
                                                   : std::pair(box.start()[0], box.end()[0]);
  };
  for (const WrittenBox& w : written_.boxes) {
    if (shares_[w.tensor] == 0 || w.box.is_empty()) continue;
    const auto [start, end] = rows(w.tensor, w.box);
    spans_.push_back({w.tensor, p.applications[w.application].device, start, end, w.application,
                      w.box.size() * facts_->bytes_of(w.tensor)});
  }
  for (std::uint32_t a = 0; a < n_applications_; ++a) {
    for (std::uint32_t k = in_begin_[a]; k < in_begin_[a + 1]; ++k) {
      const ShardBox& in = inputs_[k];
      if (shares_[in.tensor] == 0 || in.box.is_empty()) continue;
      const auto [start, end] = rows(in.tensor, in.box);
      spans_.push_back({in.tensor, p.applications[a].device, start, end, kHost, 0});
    }
  }
  std::sort(spans_.begin(), spans_.end());
  SharedBuffer piece;
  std::int64_t piece_end = 0;
  const auto close = [&] {
    if (piece.writers.size() >= 2) p.shared_buffers.push_back(std::move(piece));
    piece = SharedBuffer{};
  };
  for (std::size_t k = 0; k < spans_.size(); ++k) {
    const RowSpan& r = spans_[k];
    if (k == 0 || r.tensor != spans_[k - 1].tensor || r.device != spans_[k - 1].device ||
        r.start >= piece_end) {
      if (k > 0) close();
      piece.tensor = ir::TensorId(ir::NodeId(r.tensor));
      piece.device = r.device;
      piece_end = r.end;
    }
    piece_end = std::max(piece_end, r.end);
    if (r.writer == kHost) continue;
    piece.writers.push_back(r.writer);
    piece.bytes.push_back(r.bytes);
  }
  if (!spans_.empty()) close();
  for (SharedBuffer& b : p.shared_buffers) {  // writers ascending, one entry each
    std::vector<std::pair<std::uint32_t, std::int64_t>> w;
    for (std::size_t i = 0; i < b.writers.size(); ++i) w.emplace_back(b.writers[i], b.bytes[i]);
    std::sort(w.begin(), w.end());
    b.writers.clear();
    b.bytes.clear();
    for (const auto& [writer, bytes] : w) {
      if (!b.writers.empty() && b.writers.back() == writer) {
        b.bytes.back() += bytes;
      } else {
        b.writers.push_back(writer);
        b.bytes.push_back(bytes);
      }
    }
  }
  std::erase_if(p.shared_buffers, [](const SharedBuffer& b) { return b.writers.size() < 2; });
}

void PlacementBuilder::connect() {
  Placement& p = *out_;
  index_writers();
  for (ir::TensorId tensor : facts_->outputs) {
    const std::uint32_t t = tensor.index();
    for (std::uint32_t k = written_.begin[t]; k < written_.begin[t + 1]; ++k) {
      p.applications[written_.boxes[written_.order[k]].application].writes_output = true;
    }
  }
  std::vector<std::uint32_t> placed_index;  // by node index, made when a schedule needs it
  const bool scheduled = !facts_->graph->applications().empty();
  for (std::uint32_t a = 0; a < n_applications_; ++a) {
    // Cancellable (support/cancel.h): start() begins the next placement afresh.
    if (a % 64 == 0) support::check_cancelled();
    for (std::uint32_t k = in_begin_[a]; k < in_begin_[a + 1]; ++k) read(a, k);
    // Ordering edges: the writers, on this device, of the tensors its operation starts after.
    const PlacedApplication& app = p.applications[a];
    std::vector<std::uint32_t>& ordered = p.applications[a].ordering_predecessors;
    for (std::uint32_t t : facts_->after[p.operations[app.operation].id.index()]) {
      for (std::uint32_t k = written_.begin[t]; k < written_.begin[t + 1]; ++k) {
        const std::uint32_t writer = written_.boxes[written_.order[k]].application;
        if (p.applications[writer].device == app.device) ordered.push_back(writer);
      }
    }
    // And the applications it starts after (a pipeline schedule), on this device — in a graph
    // of Applications (the Evaluator's fast path numbers applications it never adds).
    for (ir::ApplicationId other : scheduled ? ir::application_after(*facts_->graph, app.id)
                                             : std::vector<ir::ApplicationId>()) {
      if (placed_index.empty()) {
        placed_index.assign(facts_->graph->size(), 0);
        for (std::uint32_t k = 0; k < n_applications_; ++k)
          placed_index[p.applications[k].id.index()] = k;
      }
      const std::uint32_t before = placed_index[other.index()];
      if (p.applications[before].device == app.device) ordered.push_back(before);
    }
    std::vector<std::uint32_t>& local = p.applications[a].local_producers;
    std::sort(local.begin(), local.end());
    local.erase(std::unique(local.begin(), local.end()), local.end());
    // An application it also reads from is a local producer only (its output is held).
    std::sort(ordered.begin(), ordered.end());
    ordered.erase(std::unique(ordered.begin(), ordered.end()), ordered.end());
    ordered.erase(std::remove_if(ordered.begin(), ordered.end(),
                                 [&](std::uint32_t q) {
                                   return std::binary_search(local.begin(), local.end(), q);
                                 }),
                  ordered.end());
  }
  support::check_cancelled();
  share_buffers();
  support::check_cancelled();
  replicate_outputs();
  support::check_cancelled();
  if (target_.outputs == Residence::kHost) gather_outputs();
  p.operations.erase(p.operations.begin() + static_cast<std::ptrdiff_t>(n_operations_),
                     p.operations.end());
  p.applications.erase(p.applications.begin() + static_cast<std::ptrdiff_t>(n_applications_),
                       p.applications.end());
  p.transfers.erase(p.transfers.begin() + static_cast<std::ptrdiff_t>(n_transfers_),
                    p.transfers.end());
  support::check_cancelled();
  collectives_.recognise(p, written_, facts_->partial, facts_->element_bytes);
}

}  // namespace tapestry::cost::detail
