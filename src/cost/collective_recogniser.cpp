// Collectives: recognition from a placement's transfers (collective.h).
//
// Per placement:
// 1. The device → device transfers, grouped by tensor (sorted by node index).
// 2. Per tensor, its transfers split into connected components over devices (union-find): each
//    component is one candidate — two data-parallel groups reduce-scatter independently.
// 3. Each candidate of two or more transfers is classified by the table of collective.h, the
//    partial kinds (reduce-scatter, reduce) first; what matches nothing stays point-to-point.
// 4. The collectives are ordered by their first transfer and every Transfer is told its one.
// The scratch is per-device arrays reset by generation stamps, so a recogniser that runs for
// every plan of a search allocates only when a placement is larger than every one before.
#include <algorithm>
#include <optional>

#include "tapestry/cost/collective.h"
#include "tapestry/cost/placement.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/support/cancel.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::cost {

namespace {

// Lexicographic order of boxes (start, then end), to compare lists of boxes as multisets.
bool box_less(const zspace::Range& a, const zspace::Range& b) {
  for (std::size_t d = 0; d < a.rank(); ++d) {
    if (a.start()[d] != b.start()[d]) return a.start()[d] < b.start()[d];
  }
  for (std::size_t d = 0; d < a.rank(); ++d) {
    if (a.end()[d] != b.end()[d]) return a.end()[d] < b.end()[d];
  }
  return false;
}

// Dims 1.. of two boxes (of one tensor) are equal.
bool same_tail(const zspace::Range& a, const zspace::Range& b) {
  for (std::size_t d = 1; d < a.rank(); ++d) {
    if (a.start()[d] != b.start()[d] || a.end()[d] != b.end()[d]) return false;
  }
  return true;
}

// Points of dims 1.. of a box.
std::int64_t tail_size(const zspace::Range& box) {
  std::int64_t n = 1;
  for (std::size_t d = 1; d < box.rank(); ++d) n *= box.extent(d);
  return n;
}

// Whether a ∩ u is exactly `box` (a.intersect(u) == box, without making the intersection).
bool intersection_is(const zspace::Range& a, const zspace::Range& u, const zspace::Range& box) {
  for (std::size_t d = 0; d < a.rank(); ++d) {
    const std::int64_t lo = std::max(a.start()[d], u.start()[d]);
    const std::int64_t hi = std::min(a.end()[d], u.end()[d]);
    if (lo > hi || lo != box.start()[d] || hi != box.end()[d]) return false;
  }
  return a.rank() == box.rank();
}

// Points of a ∩ u; 0 when they are disjoint (a.intersect(u)->size(), or nothing).
std::int64_t intersection_size(const zspace::Range& a, const zspace::Range& u) {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < a.rank(); ++d) {
    const std::int64_t lo = std::max(a.start()[d], u.start()[d]);
    const std::int64_t hi = std::min(a.end()[d], u.end()[d]);
    if (lo > hi) return 0;
    n = zspace::checked_mul(n, hi - lo);
  }
  return n;
}

// Whether dims 1.. of two boxes overlap.
bool tails_overlap(const zspace::Range& a, const zspace::Range& b) {
  for (std::size_t d = 1; d < a.rank(); ++d) {
    if (std::max(a.start()[d], b.start()[d]) >= std::min(a.end()[d], b.end()[d])) return false;
  }
  return true;
}

// Whether the fused operation reads `tensor` only through reduce stages' `x`.
bool fused_reduces(const ir::Graph& graph, ir::OperationId op, ir::TensorId tensor) {
  const ir::OperationView view = graph.operation(op);
  std::vector<std::string> lists;
  for (const auto& e : view.inputs().entries()) {
    if (e.value.tensor == tensor) lists.push_back(e.name);
  }
  bool read = false;
  const auto stages = rewrite::shared_fused_stages(view.params());
  for (const rewrite::FusedStage& stage : *stages) {
    for (const rewrite::FusedPort& port : stage.inputs) {
      if (std::find(lists.begin(), lists.end(), port.source) == lists.end()) continue;
      if (stage.kernel != "reduce" || port.name != "x") return false;
      read = true;
    }
  }
  return read;
}

}  // namespace

bool is_partial(const ir::Graph& graph, ir::TensorId t) {
  const auto consumers = graph.consumers(t);
  if (consumers.empty()) return false;
  for (ir::OperationId op : consumers) {
    const std::string& kernel = graph.operation(op).kernel();
    if (kernel == "reduce") {
      // Its only input is x, whose dim 0 is the block (reduction) dim.
      continue;
    }
    if (kernel == rewrite::kFusedKernel && fused_reduces(graph, op, t)) continue;
    return false;
  }
  return true;
}

// is_partial for every tensor, reading each fused operation's stages once (not once per tensor
// it reads): per operation, whether it reads each of its inputs only as a reduce's x; a tensor is
// partial when it has readers and every reader does.
std::vector<std::uint8_t> partial_tensors(const ir::Graph& graph) {
  std::vector<std::uint8_t> partial(graph.size(), 0);
  for (ir::TensorId t : graph.tensors()) {
    if (!graph.consumers(t).empty()) partial[t.index()] = 1;
  }
  std::vector<std::string> lists;
  for (ir::OperationId op : graph.operations()) {
    const ir::OperationView view = graph.operation(op);
    const std::string& kernel = view.kernel();
    if (kernel == "reduce") continue;  // its only input is x, whose dim 0 is the block dim
    if (kernel != rewrite::kFusedKernel) {
      for (const auto& e : view.inputs().entries()) partial[e.value.tensor.index()] = 0;
      continue;
    }
    const auto stages = rewrite::shared_fused_stages(view.params());
    for (const auto& e : view.inputs().entries()) {
      const ir::TensorId tensor = e.value.tensor;
      if (partial[tensor.index()] == 0) continue;
      // fused_reduces(graph, op, tensor), with the stages read once.
      lists.clear();
      for (const auto& f : view.inputs().entries()) {
        if (f.value.tensor == tensor) lists.push_back(f.name);
      }
      bool read = false, only_reduces = true;
      for (const rewrite::FusedStage& stage : *stages) {
        for (const rewrite::FusedPort& port : stage.inputs) {
          if (std::find(lists.begin(), lists.end(), port.source) == lists.end()) continue;
          if (stage.kernel != "reduce" || port.name != "x") only_reduces = false;
          read = true;
        }
      }
      if (!(read && only_reduces)) partial[tensor.index()] = 0;
    }
  }
  return partial;
}

namespace {

// One device of a candidate group.
struct Participant {
  std::uint32_t device = 0;
  std::uint32_t sends = 0, receives = 0;   // transfers
  std::int64_t sent = 0, received = 0;     // bytes
  std::uint32_t first_box = 0, boxes = 0;  // its written boxes: Scratch::owned[first, first + n)
};

std::uint32_t find_root(std::vector<std::uint32_t>& parent, std::uint32_t d) {
  while (parent[d] != d) {
    parent[d] = parent[parent[d]];
    d = parent[d];
  }
  return d;
}

// When `boxes` (of one tensor) share one dim-0 range and tile their bounding box — pairwise
// disjoint, no gap — that box (one block of a partial tensor, or one slice of it); else nullopt.
std::optional<zspace::Range> tiled(std::span<const zspace::Range> boxes) {
  if (boxes.empty()) return std::nullopt;
  std::int64_t points = 0;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    if (boxes[i].start()[0] != boxes[0].start()[0] || boxes[i].end()[0] != boxes[0].end()[0]) {
      return std::nullopt;
    }
    points += boxes[i].size();
    for (std::size_t j = 0; j < i; ++j) {
      if (boxes[i].overlaps(boxes[j])) return std::nullopt;
    }
  }
  zspace::Range box = zspace::Range::bounding(boxes);
  if (box.size() != points) return std::nullopt;
  return box;
}

}  // namespace

struct CollectiveRecogniser::Scratch {
  // Device → device transfers as (tensor node index, transfer), sorted: grouped by tensor.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> by_tensor;
  std::vector<std::uint32_t> parent, uf_stamp;      // per device: union-find of one tensor
  std::vector<std::uint32_t> member_stamp, member;  // per device: its participant, if any
  std::uint32_t generation = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> components;  // (root, transfer)
  std::vector<std::uint32_t> group;  // one component's transfers, ascending
  std::vector<Participant> participants;
  std::vector<std::uint32_t> owned;   // written boxes (positions in WriterIndex::boxes)
  std::vector<zspace::Range> blocks;  // per participant: the block its boxes tile
  std::vector<std::pair<std::uint64_t, std::uint32_t>> by_pair;  // ((to, from), transfer)
  std::vector<zspace::Range> boxes, slices, other;
  std::vector<std::uint32_t> counts;
  std::vector<Collective> found;     // storage reused from call to call
  std::vector<std::uint32_t> order;  // the collectives found, by first transfer
};

CollectiveRecogniser::CollectiveRecogniser() : s_(std::make_unique<Scratch>()) {}
CollectiveRecogniser::~CollectiveRecogniser() = default;
CollectiveRecogniser::CollectiveRecogniser(CollectiveRecogniser&&) noexcept = default;
CollectiveRecogniser& CollectiveRecogniser::operator=(CollectiveRecogniser&&) noexcept = default;

void CollectiveRecogniser::recognise(Placement& p, const WriterIndex& writers,
                                     std::span<const std::uint8_t> partial,
                                     std::span<const std::int64_t> element_bytes) {
  Scratch& s = *s_;
  for (Transfer& t : p.transfers) t.collective = kNoCollective;
  // 1. Device → device transfers by tensor (a sort of few pairs, not a pass over every node).
  std::uint32_t devices = 0;
  s.by_tensor.clear();
  for (std::uint32_t k = 0; k < p.transfers.size(); ++k) {
    const Transfer& t = p.transfers[k];
    if (t.from == kHost || t.to == kHost) continue;
    s.by_tensor.emplace_back(t.tensor.index(), k);
    devices = std::max({devices, t.from + 1, t.to + 1});
  }
  std::sort(s.by_tensor.begin(), s.by_tensor.end());
  if (s.parent.size() < devices) {
    s.parent.resize(devices);
    s.uf_stamp.resize(devices, 0);
    s.member_stamp.resize(devices, 0);
    s.member.resize(devices);
  }
  // 2–3. Components per tensor, each classified.
  std::size_t found = 0;
  for (std::size_t begin = 0, end = 0, tensors = 0; begin < s.by_tensor.size(); begin = end) {
    // Cancellable (support/cancel.h) before step 4: the scratch is stamped per call, and the
    // placement's collectives are only written there.
    if (++tensors % 64 == 0) support::check_cancelled();
    const std::uint32_t tensor = s.by_tensor[begin].first;
    while (end < s.by_tensor.size() && s.by_tensor[end].first == tensor) ++end;
    if (end - begin < 2) continue;
    const std::uint32_t gen = ++s.generation;
    const auto join = [&](std::uint32_t d) {
      if (s.uf_stamp[d] != gen) {
        s.uf_stamp[d] = gen;
        s.parent[d] = d;
      }
      return find_root(s.parent, d);
    };
    for (std::size_t k = begin; k < end; ++k) {
      const Transfer& t = p.transfers[s.by_tensor[k].second];
      const std::uint32_t a = join(t.from), b = join(t.to);
      if (a != b) s.parent[std::max(a, b)] = std::min(a, b);
    }
    s.components.clear();
    for (std::size_t k = begin; k < end; ++k) {
      const std::uint32_t t = s.by_tensor[k].second;
      s.components.emplace_back(find_root(s.parent, p.transfers[t].from), t);
    }
    std::sort(s.components.begin(), s.components.end());
    for (std::size_t i = 0; i < s.components.size();) {
      s.group.clear();
      const std::uint32_t root = s.components[i].first;
      for (; i < s.components.size() && s.components[i].first == root; ++i) {
        s.group.push_back(s.components[i].second);
      }
      if (s.group.size() < 2) continue;
      if (s.found.size() == found) s.found.emplace_back();
      if (classify(p, writers, partial[tensor] != 0, element_bytes[tensor], s.found[found])) {
        ++found;
      }
    }
  }
  // 4. In the order of their first transfers; the placement's previous collectives go back to
  // the scratch, their storage kept for the next call.
  s.order.resize(found);
  for (std::uint32_t c = 0; c < found; ++c) s.order[c] = c;
  std::sort(s.order.begin(), s.order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return s.found[a].transfers.front() < s.found[b].transfers.front();
  });
  if (p.collectives.size() < found) p.collectives.resize(found);
  for (std::uint32_t c = 0; c < found; ++c) {
    std::swap(p.collectives[c], s.found[s.order[c]]);
    for (std::uint32_t t : p.collectives[c].transfers) p.transfers[t].collective = c;
  }
  p.collectives.resize(found);
}

// Classifies the transfers of s.group (one component of one tensor, ascending) into `out`;
// false when they form no collective.
bool CollectiveRecogniser::classify(const Placement& p, const WriterIndex& writers, bool partial,
                                    std::int64_t element_bytes, Collective& out) {
  Scratch& s = *s_;
  // Participants, with what each sends and receives and the boxes of the tensor it writes.
  const std::uint32_t gen = ++s.generation;
  s.participants.clear();
  const auto slot = [&](std::uint32_t d) -> Participant& {
    if (s.member_stamp[d] != gen) {
      s.member_stamp[d] = gen;
      s.member[d] = static_cast<std::uint32_t>(s.participants.size());
      s.participants.push_back(Participant{d});
    }
    return s.participants[s.member[d]];
  };
  const ir::TensorId tensor = p.transfers[s.group.front()].tensor;
  for (std::uint32_t t : s.group) {
    const Transfer& tr = p.transfers[t];
    Participant& from = slot(tr.from);
    ++from.sends;
    from.sent += tr.bytes;
    Participant& to = slot(tr.to);
    ++to.receives;
    to.received += tr.bytes;
  }
  const std::size_t n = s.participants.size();
  const std::uint32_t wbegin = writers.begin[tensor.index()];
  const std::uint32_t wend = writers.begin[tensor.index() + 1];
  const auto participant_of = [&](std::uint32_t device) -> Participant* {
    if (device >= s.member_stamp.size() || s.member_stamp[device] != gen) return nullptr;
    return &s.participants[s.member[device]];
  };
  for (std::uint32_t k = wbegin; k < wend; ++k) {
    if (Participant* q =
            participant_of(p.applications[writers.boxes[writers.order[k]].application].device)) {
      ++q->boxes;
    }
  }
  std::uint32_t at = 0;
  for (Participant& q : s.participants) {
    q.first_box = at;
    at += q.boxes;
    q.boxes = 0;
  }
  s.owned.resize(at);
  for (std::uint32_t k = wbegin; k < wend; ++k) {
    const std::uint32_t w = writers.order[k];
    if (Participant* q = participant_of(p.applications[writers.boxes[w].application].device)) {
      s.owned[q->first_box + q->boxes++] = w;
    }
  }
  std::size_t senders = 0, receivers = 0;
  for (const Participant& q : s.participants) {
    senders += q.sends > 0 ? 1 : 0;
    receivers += q.receives > 0 ? 1 : 0;
  }

  const auto finish = [&](CollectiveKind kind, std::int64_t bytes, std::int64_t chunk,
                          std::int64_t port) {
    out.kind = kind;
    out.tensor = tensor;
    out.devices.clear();
    for (const Participant& q : s.participants) out.devices.push_back(q.device);
    std::sort(out.devices.begin(), out.devices.end());
    out.transfers.assign(s.group.begin(), s.group.end());
    out.bytes = bytes;
    out.chunk_bytes = chunk;
    out.port_bytes = port;
    return true;
  };
  if (partial) {
    if (std::int64_t chunk = 0, block = 0;
        senders == n && receivers == n && is_reduce_scatter(p, writers, block, chunk)) {
      return finish(CollectiveKind::kReduceScatter, block * element_bytes, chunk, 0);
    }
    if (std::int64_t block = 0;
        receivers == 1 && senders >= 2 && senders + 1 == n && is_reduce(p, writers, block)) {
      return finish(CollectiveKind::kReduce, block * element_bytes, block * element_bytes, 0);
    }
  }
  if (std::int64_t bytes = 0;
      senders == 1 && receivers >= 2 && receivers + 1 == n && is_broadcast(p, bytes)) {
    return finish(CollectiveKind::kBroadcast, bytes, bytes, 0);
  }
  // An all-gather's every participant receives: a pure sender cannot write all of U, since at
  // least one other sender writes part of it.
  if (std::int64_t bytes = 0, chunk = 0;
      senders >= 2 && receivers == n && is_all_gather(p, writers, element_bytes, bytes, chunk)) {
    return finish(CollectiveKind::kAllGather, bytes, chunk, 0);
  }
  if (senders >= 2 && receivers >= 2) {
    std::int64_t port = 0;
    for (const Participant& q : s.participants) port = std::max({port, q.sent, q.received});
    return finish(CollectiveKind::kAllToAll, port, 0, port);
  }
  return false;
}

// Every participant's written boxes tile one block, all blocks of one shape (s.blocks); false
// when a participant other than a pure receiver (when `receivers_may_not_write`) writes none.
bool CollectiveRecogniser::blocks_of(const WriterIndex& writers, bool receivers_may_not_write) {
  Scratch& s = *s_;
  s.blocks.assign(s.participants.size(), zspace::Range());
  const zspace::Range* shape = nullptr;
  for (std::size_t i = 0; i < s.participants.size(); ++i) {
    const Participant& q = s.participants[i];
    if (q.boxes == 0 && receivers_may_not_write && q.sends == 0) continue;
    s.boxes.clear();
    for (std::uint32_t k = 0; k < q.boxes; ++k)
      s.boxes.push_back(writers.boxes[s.owned[q.first_box + k]].box);
    std::optional<zspace::Range> block = tiled(s.boxes);
    if (!block) return false;
    s.blocks[i] = *block;
    if (shape == nullptr) {
      shape = &s.blocks[i];
    } else if (!same_tail(*shape, *block) || shape->extent(0) != block->extent(0)) {
      return false;
    }
  }
  return shape != nullptr;
}

// Reduce-scatter (precondition: every participant sends and receives): every participant writes
// one block; receiver r gets from every other one the same slice S_r of its block (one or more
// transfers tiling it), and the S_r partition the block's dims 1... `block`: points of one
// block; `chunk`: the largest bytes one receiver gets from one writer.
bool CollectiveRecogniser::is_reduce_scatter(const Placement& p, const WriterIndex& writers,
                                             std::int64_t& block, std::int64_t& chunk) {
  Scratch& s = *s_;
  if (!blocks_of(writers, false)) return false;
  const std::size_t n = s.participants.size();
  s.by_pair.clear();
  for (std::uint32_t t : s.group) {
    const Transfer& tr = p.transfers[t];
    s.by_pair.emplace_back(std::uint64_t{s.member[tr.to]} << 32 | s.member[tr.from], t);
  }
  std::sort(s.by_pair.begin(), s.by_pair.end());
  s.slices.assign(n, zspace::Range());
  std::vector<std::uint32_t>& writers_seen = s.counts;  // per receiver: the writers sending to it
  writers_seen.assign(n, 0);
  for (std::size_t i = 0; i < s.by_pair.size();) {
    const std::uint64_t pair = s.by_pair[i].first;
    const auto r = static_cast<std::uint32_t>(pair >> 32), w = static_cast<std::uint32_t>(pair);
    s.boxes.clear();
    std::int64_t bytes = 0;
    for (; i < s.by_pair.size() && s.by_pair[i].first == pair; ++i) {
      const Transfer& tr = p.transfers[s.by_pair[i].second];
      s.boxes.push_back(tr.box);
      bytes += tr.bytes;
    }
    const std::optional<zspace::Range> slice = tiled(s.boxes);
    const zspace::Range& from = s.blocks[w];
    if (!slice || slice->start()[0] != from.start()[0] || slice->end()[0] != from.end()[0]) {
      return false;
    }
    // The first writer fixes S_r; every other must send the same slice.
    if (writers_seen[r]++ == 0) {
      s.slices[r] = *slice;
    } else if (!same_tail(s.slices[r], *slice)) {
      return false;
    }
    chunk = std::max(chunk, bytes);
  }
  std::int64_t points = 0;
  for (std::size_t a = 0; a < n; ++a) {
    if (writers_seen[a] != n - 1) return false;  // the pairs are distinct: n − 1 writers
    points += tail_size(s.slices[a]);
    for (std::size_t b = 0; b < a; ++b) {
      if (tails_overlap(s.slices[a], s.slices[b])) return false;
    }
  }
  if (points != tail_size(s.blocks[0])) return false;
  block = s.blocks[0].size();
  return true;
}

// Reduce (precondition: one receiver, every other participant a sender): every sender sends the
// receiver exactly the boxes it writes, which tile one block; blocks of one shape (the
// receiver's too, if it writes). `block`: points of one block.
bool CollectiveRecogniser::is_reduce(const Placement& p, const WriterIndex& writers,
                                     std::int64_t& block) {
  Scratch& s = *s_;
  if (!blocks_of(writers, true)) return false;
  for (std::size_t i = 0; i < s.participants.size(); ++i) {
    const Participant& q = s.participants[i];
    if (q.sends == 0) continue;
    if (q.sends != q.boxes) return false;
    for (std::uint32_t t : s.group) {
      const Transfer& tr = p.transfers[t];
      if (tr.from != q.device) continue;
      bool whole = false;
      for (std::uint32_t k = 0; k < q.boxes && !whole; ++k) {
        whole = writers.boxes[s.owned[q.first_box + k]].box == tr.box;
      }
      if (!whole) return false;
    }
    block = s.blocks[i].size();
  }
  return true;
}

// Broadcast (precondition: one sender, every other participant a receiver): every receiver gets
// the same boxes. `bytes`: what one receiver gets.
bool CollectiveRecogniser::is_broadcast(const Placement& p, std::int64_t& bytes) {
  Scratch& s = *s_;
  // The same boxes: first the same count and bytes (cheap), then the boxes themselves.
  const Participant* one = nullptr;
  for (const Participant& q : s.participants) {
    if (q.receives == 0) continue;
    if (one != nullptr && (q.receives != one->receives || q.received != one->received))
      return false;
    one = &q;
  }
  bool first = true;
  for (const Participant& q : s.participants) {
    if (q.receives == 0) continue;
    s.other.clear();
    for (std::uint32_t t : s.group) {
      if (p.transfers[t].to == q.device) s.other.push_back(p.transfers[t].box);
    }
    std::sort(s.other.begin(), s.other.end(), box_less);
    if (first) {
      s.boxes = s.other;
      bytes = q.received;
      first = false;
    } else if (s.boxes != s.other) {
      return false;
    }
  }
  return true;
}

// All-gather: with U the bounding box of the boxes moved, every transfer moves a whole written
// box ∩ U and every participant holds U afterwards. `bytes`: bytes of U; `chunk`: the largest
// part of U one participant writes.
bool CollectiveRecogniser::is_all_gather(const Placement& p, const WriterIndex& writers,
                                         std::int64_t element_bytes, std::int64_t& bytes,
                                         std::int64_t& chunk) {
  Scratch& s = *s_;
  s.boxes.clear();
  for (std::uint32_t t : s.group) s.boxes.push_back(p.transfers[t].box);
  const zspace::Range u = zspace::Range::bounding(s.boxes);
  const ir::TensorId tensor = p.transfers[s.group.front()].tensor;
  const auto first = writers.order.begin() + writers.begin[tensor.index()];
  const auto last = writers.order.begin() + writers.begin[tensor.index() + 1];
  for (std::uint32_t t : s.group) {
    const Transfer& tr = p.transfers[t];
    // The box its producer writes (an application writes one box of a tensor).
    const auto w = std::lower_bound(
        first, last, tr.producer,
        [&](std::uint32_t k, std::uint32_t a) { return writers.boxes[k].application < a; });
    if (w == last || writers.boxes[*w].application != tr.producer) return false;
    if (!intersection_is(writers.boxes[*w].box, u, tr.box)) return false;
  }
  bytes = u.size() * element_bytes;
  chunk = 0;
  for (const Participant& q : s.participants) {
    std::int64_t own = 0;
    for (std::uint32_t k = 0; k < q.boxes; ++k) {
      own += intersection_size(writers.boxes[s.owned[q.first_box + k]].box, u) * element_bytes;
    }
    if (own + q.received != bytes) return false;
    chunk = std::max(chunk, own);
  }
  return true;
}

WriterIndex WriterIndex::of(std::vector<WrittenBox> boxes, std::size_t nodes) {
  WriterIndex index;
  index.boxes = std::move(boxes);
  index.begin.assign(nodes + 1, 0);
  for (const WrittenBox& w : index.boxes) ++index.begin[w.tensor + 1];
  for (std::size_t i = 1; i < index.begin.size(); ++i) index.begin[i] += index.begin[i - 1];
  std::vector<std::uint32_t> by_app(index.boxes.size());
  for (std::uint32_t k = 0; k < by_app.size(); ++k) by_app[k] = k;
  std::stable_sort(by_app.begin(), by_app.end(), [&](std::uint32_t a, std::uint32_t b) {
    return index.boxes[a].application < index.boxes[b].application;
  });
  index.order.resize(index.boxes.size());
  std::vector<std::uint32_t> at(index.begin.begin(), index.begin.end() - 1);
  for (std::uint32_t k : by_app) index.order[at[index.boxes[k].tensor]++] = k;
  return index;
}

}  // namespace tapestry::cost
