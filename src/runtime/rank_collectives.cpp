// Collectives found among a rank schedule's messages (rank_collectives.h).
#include "rank_collectives.h"

#include <algorithm>
#include <map>
#include <optional>

#include "rank_program.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime::detail {

namespace {

struct Inputs {
  const BlockProgram& p;
  const std::vector<std::uint32_t>& rank_of;
  const std::vector<std::vector<SlotBox>>& reads;
  const std::vector<std::vector<SlotBox>>& writes;
  const std::vector<RankMessageInfo>& messages;
  const std::vector<std::vector<std::uint32_t>>& consumers;
  std::vector<char>& taken;  // per message: replaced by a collective found already
};

bool is_reducible(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64;
}

// The one task that writes a box of `slot` containing `box`; nullopt when none or several do.
std::optional<std::uint32_t> sole_writer(const Inputs& in, std::uint32_t slot, const Range& box) {
  std::optional<std::uint32_t> found;
  for (std::uint32_t t = 0; t < in.p.tasks.size(); ++t) {
    for (const SlotBox& w : in.writes[t]) {
      if (w.slot != slot || !w.box.overlaps(box)) continue;
      if (found || !w.box.contains(box)) return std::nullopt;
      found = t;
    }
  }
  return found;
}

// The one message not yet taken from `producer` to `to` carrying exactly (slot, box), whose
// consumers are `only_consumer` when given; nullopt otherwise.
std::optional<std::uint32_t> exact_message(const Inputs& in, std::uint32_t producer,
                                           std::uint32_t to, std::uint32_t slot, const Range& box,
                                           std::optional<std::uint32_t> only_consumer) {
  for (std::uint32_t m = 0; m < in.messages.size(); ++m) {
    const RankMessageInfo& msg = in.messages[m];
    if (in.taken[m] != 0 || msg.gather || msg.producer != producer || msg.to != to ||
        msg.slot != slot || msg.box != box) {
      continue;
    }
    if (only_consumer && in.consumers[m] != std::vector<std::uint32_t>{*only_consumer}) {
      return std::nullopt;
    }
    return m;
  }
  return std::nullopt;
}

// Whether task `r` is a sum `reduce` of float partials [blocks] × OUT into OUT, reading one box
// (at least two blocks) and writing one.
bool is_sum_reduce(const Inputs& in, std::uint32_t r) {
  const BlockTask& task = in.p.tasks[r];
  if (task.call.kernel != "reduce" || in.reads[r].size() != 1 || in.writes[r].size() != 1 ||
      task.call.monoid("op", ir::Monoid::kSum) != ir::Monoid::kSum) {
    return false;
  }
  const SlotBox& partials = in.reads[r][0];
  const SlotBox& result = in.writes[r][0];
  const DType dtype = in.p.slots[result.slot].dtype;
  return is_reducible(dtype) && in.p.slots[partials.slot].dtype == dtype &&
         partials.box.rank() == result.box.rank() + 1 &&
         partials.box.slice(1, partials.box.rank()) == result.box && !result.box.is_empty() &&
         partials.box.extent(0) >= 2;
}

// Whether every message into task `r` is one of `replaced` (else r reads something the
// collective does not give).
bool fed_only_by(const Inputs& in, std::uint32_t r, const std::vector<std::uint32_t>& replaced) {
  for (std::uint32_t m = 0; m < in.messages.size(); ++m) {
    const auto& readers = in.consumers[m];
    if (std::find(readers.begin(), readers.end(), r) != readers.end() &&
        std::find(replaced.begin(), replaced.end(), m) == replaced.end()) {
      return false;
    }
  }
  return true;
}

// The reduce / allreduce pattern at task `r` (rank_collectives.h), if it is one.
std::optional<RankCollective> reduce_at(const Inputs& in, std::uint32_t r) {
  if (!is_sum_reduce(in, r)) return std::nullopt;
  const BlockTask& task = in.p.tasks[r];
  const SlotBox& partials = in.reads[r][0];
  const SlotBox& result = in.writes[r][0];
  const DType dtype = in.p.slots[result.slot].dtype;
  RankCollective c{
      .kind = CollectiveKind::kReduce,
      .root = in.rank_of[r],
      .source_slot = partials.slot,
      .result_slot = result.slot,
      .result_box = result.box,
      .reduce_task = r,
      .bitwise = partials.box.extent(0) == 2,
      .bytes = result.box.size() * static_cast<std::int64_t>(ir::dtype_size_bytes(dtype)),
      .what = std::string(task.call.operation)};
  bool root_contributes = false;
  for (std::int64_t i = partials.box.start()[0]; i < partials.box.end()[0]; ++i) {
    const Range block = partials.box.with_dim(0, i, i + 1);
    const std::optional<std::uint32_t> writer = sole_writer(in, partials.slot, block);
    if (!writer) return std::nullopt;
    const std::uint32_t rank = in.rank_of[*writer];
    if (std::find(c.members.begin(), c.members.end(), rank) != c.members.end()) return std::nullopt;
    c.members.push_back(rank);
    c.boxes.push_back(block);
    c.producers.push_back(*writer);
    if (rank == c.root) {
      root_contributes = true;
      continue;
    }
    const std::optional<std::uint32_t> m =
        exact_message(in, *writer, c.root, partials.slot, block, r);
    if (!m) return std::nullopt;
    c.replaced.push_back(*m);
  }
  if (!root_contributes || !fed_only_by(in, r, c.replaced)) return std::nullopt;
  // Allreduce: r sends its whole result to every other member.
  std::vector<std::uint32_t> results;
  for (std::uint32_t rank : c.members) {
    if (rank == c.root) continue;
    const std::optional<std::uint32_t> m =
        exact_message(in, r, rank, result.slot, result.box, std::nullopt);
    if (!m) break;
    results.push_back(*m);
  }
  if (results.size() + 1 == c.members.size()) {
    c.kind = CollectiveKind::kAllreduce;
    c.replaced.insert(c.replaced.end(), results.begin(), results.end());
  }
  // Members ascending (the communicator's order), boxes and producers alongside.
  std::vector<std::size_t> order(c.members.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return c.members[a] < c.members[b]; });
  RankCollective sorted = c;
  for (std::size_t i = 0; i < order.size(); ++i) {
    sorted.members[i] = c.members[order[i]];
    sorted.boxes[i] = c.boxes[order[i]];
    sorted.producers[i] = c.producers[order[i]];
  }
  return sorted;
}

// The reduce-scatter pattern among `reduces`, sum reduces of one partial slot (rank_collectives.h),
// if it is one.
std::optional<RankCollective> reduce_scatter_of(const Inputs& in,
                                                std::vector<std::uint32_t> reduces) {
  std::sort(reduces.begin(), reduces.end(),
            [&](std::uint32_t a, std::uint32_t b) { return in.rank_of[a] < in.rank_of[b]; });
  const SlotBox& first = in.reads[reduces.front()][0];
  const std::int64_t b0 = first.box.start()[0];
  const std::int64_t b1 = first.box.end()[0];
  if (b1 - b0 != static_cast<std::int64_t>(reduces.size())) return std::nullopt;
  // The slices S_i: one per rank, pairwise disjoint, tiling their hull (so what a member sends,
  // its block's slices in member order, is its block of the hull).
  std::vector<Range> slices;
  std::int64_t sliced = 0;
  for (std::size_t i = 0; i < reduces.size(); ++i) {
    const std::uint32_t r = reduces[i];
    const SlotBox& partials = in.reads[r][0];
    if (partials.box.start()[0] != b0 || partials.box.end()[0] != b1 ||
        (i > 0 && in.rank_of[r] == in.rank_of[reduces[i - 1]])) {
      return std::nullopt;
    }
    for (const Range& other : slices) {
      if (other.overlaps(in.writes[r][0].box)) return std::nullopt;
    }
    slices.push_back(in.writes[r][0].box);
    sliced += slices.back().size();
  }
  const Range hull = Range::bounding(slices);
  if (hull.size() != sliced) return std::nullopt;
  const std::uint32_t slot = first.slot;
  const DType dtype = in.p.slots[slot].dtype;
  const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(dtype));
  RankCollective c{.kind = CollectiveKind::kReduceScatter,
                   .source_slot = slot,
                   .result_slot = in.writes[reduces.front()][0].slot,
                   .bitwise = reduces.size() == 2,
                   .bytes = sliced * element,
                   .what = std::string(in.p.tasks[reduces.front()].call.operation)};
  for (std::uint32_t r : reduces) {
    if (in.writes[r][0].slot != c.result_slot) return std::nullopt;
    c.members.push_back(in.rank_of[r]);
    c.result_boxes.push_back(in.writes[r][0].box);
    c.reduce_tasks.push_back(r);
  }
  c.root = c.members.front();
  c.boxes.resize(reduces.size());
  c.producers.resize(reduces.size());
  std::vector<char> has_block(reduces.size(), 0);
  for (std::int64_t j = b0; j < b1; ++j) {
    const Range whole(Point{j}.concat(hull.start()), Point{j + 1}.concat(hull.end()));
    const std::optional<std::uint32_t> writer = sole_writer(in, slot, whole);
    if (!writer) return std::nullopt;
    const auto at = std::find(c.members.begin(), c.members.end(), in.rank_of[*writer]);
    if (at == c.members.end()) return std::nullopt;
    const auto member = static_cast<std::size_t>(at - c.members.begin());
    if (has_block[member] != 0) return std::nullopt;
    has_block[member] = 1;
    c.boxes[member] = whole;
    c.producers[member] = *writer;
    for (std::size_t i = 0; i < reduces.size(); ++i) {
      if (i == member) continue;
      const Range piece(Point{j}.concat(slices[i].start()), Point{j + 1}.concat(slices[i].end()));
      const std::optional<std::uint32_t> m =
          exact_message(in, *writer, c.members[i], slot, piece, reduces[i]);
      if (!m) return std::nullopt;
      c.replaced.push_back(*m);
    }
  }
  for (std::uint32_t r : reduces) {
    if (!fed_only_by(in, r, c.replaced)) return std::nullopt;
  }
  return c;
}

// The allgather pattern on `slot` (rank_collectives.h), if it is one.
std::optional<RankCollective> allgather_of(const ir::Graph& graph, const Inputs& in,
                                           std::uint32_t slot) {
  std::map<std::uint32_t, std::pair<std::uint32_t, Range>> writer_on;  // rank → (task, box)
  for (std::uint32_t t = 0; t < in.p.tasks.size(); ++t) {
    for (const SlotBox& w : in.writes[t]) {
      if (w.slot != slot) continue;
      if (writer_on.contains(in.rank_of[t]) || w.box.is_empty()) return std::nullopt;
      writer_on.emplace(in.rank_of[t], std::pair{t, w.box});
    }
  }
  if (writer_on.size() < 2) return std::nullopt;
  std::vector<std::uint32_t> replaced;
  for (std::uint32_t m = 0; m < in.messages.size(); ++m) {
    const RankMessageInfo& msg = in.messages[m];
    if (msg.slot != slot || msg.gather) continue;
    if (in.taken[m] != 0 || !writer_on.contains(msg.to)) return std::nullopt;
    replaced.push_back(m);
  }
  if (replaced.size() != writer_on.size() * (writer_on.size() - 1)) return std::nullopt;
  RankCollective c{.kind = CollectiveKind::kAllgather,
                   .source_slot = slot,
                   .result_slot = slot,
                   .what = tensor_name(graph, in.p.slots[slot].tensor)};
  for (const auto& [rank, writer] : writer_on) {
    c.members.push_back(rank);
    c.producers.push_back(writer.first);
    c.boxes.push_back(writer.second);
    for (const auto& [to, other] : writer_on) {
      if (to == rank) continue;
      const std::optional<std::uint32_t> m =
          exact_message(in, writer.first, to, slot, writer.second, std::nullopt);
      if (!m) return std::nullopt;
    }
  }
  c.replaced = std::move(replaced);
  c.bytes = c.boxes.front().size() *
            static_cast<std::int64_t>(ir::dtype_size_bytes(in.p.slots[slot].dtype));
  return c;
}

}  // namespace

std::string_view collective_kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kReduce:
      return "reduce";
    case CollectiveKind::kAllreduce:
      return "allreduce";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllgather:
      return "allgather";
  }
  return "?";
}

std::vector<RankCollective> find_collectives(
    const ir::Graph& graph, const BlockProgram& p, const std::vector<std::uint32_t>& rank_of,
    const std::vector<std::vector<SlotBox>>& reads, const std::vector<std::vector<SlotBox>>& writes,
    const std::vector<RankMessageInfo>& messages,
    const std::vector<std::vector<std::uint32_t>>& consumers, CollectiveUse use) {
  std::vector<RankCollective> out;
  if (use == CollectiveUse::kNone) return out;
  std::vector<char> taken(messages.size(), 0);
  const Inputs in{p, rank_of, reads, writes, messages, consumers, taken};
  const auto take = [&](RankCollective c) {
    for (std::uint32_t m : c.replaced) taken[m] = 1;
    out.push_back(std::move(c));
  };
  // Reduce-scatters first: each of their reduces alone is also a reduce to its own rank.
  std::map<std::uint32_t, std::vector<std::uint32_t>> reduces_of;  // partial slot → sum reduces
  for (std::uint32_t t = 0; t < p.tasks.size(); ++t) {
    if (is_sum_reduce(in, t)) reduces_of[reads[t][0].slot].push_back(t);
  }
  for (const auto& [slot, reduces] : reduces_of) {
    if (reduces.size() < 2) continue;
    std::optional<RankCollective> c = reduce_scatter_of(in, reduces);
    if (c && (c->bitwise || use == CollectiveUse::kAll)) take(std::move(*c));
  }
  for (std::uint32_t t = 0; t < p.tasks.size(); ++t) {
    std::optional<RankCollective> c = reduce_at(in, t);
    if (c && (c->bitwise || use == CollectiveUse::kAll)) take(std::move(*c));
  }
  for (std::uint32_t s = 0; s < p.slots.size(); ++s) {
    if (p.slots[s].input) continue;
    if (std::optional<RankCollective> c = allgather_of(graph, in, s)) take(std::move(*c));
  }
  return out;
}

}  // namespace tapestry::runtime::detail
