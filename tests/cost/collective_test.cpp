// Collectives (cost/collective.h): every kind priced against its closed form with the presets'
// constants; recognition on hand-built placements — each kind, and the near-misses that must stay
// point-to-point or fall to a plainer kind — and through place() on programs; monotonicity
// properties of the prices.
#include "tapestry/cost/collective.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "cost/cost_testing.h"
#include "tapestry/cost/placement.h"
#include "tapestry/cost/simulate.h"
#include "zspace/zspace_testing.h"

namespace tapestry::cost {
namespace {

using testing::place_tap;
using testing::toy_target;
using zspace::testing::zr;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

std::vector<std::uint32_t> first_devices(std::uint32_t n, std::uint32_t from = 0) {
  std::vector<std::uint32_t> d(n);
  std::iota(d.begin(), d.end(), from);
  return d;
}

Collective collective(CollectiveKind kind, std::vector<std::uint32_t> devices, std::int64_t bytes,
                      std::int64_t chunk, std::int64_t port = 0) {
  Collective c;
  c.kind = kind;
  c.devices = std::move(devices);
  c.bytes = bytes;
  c.chunk_bytes = chunk;
  c.port_bytes = port;
  return c;
}

// ---------------------------------------------------------------------------------------------
// Prices: each closed form, with h100x8's collective figures B = 370e9 B/s, α = 3.4 µs.

constexpr double kB = 370e9;
constexpr double kAlpha = 3.4e-6;

// docs/cost.md's worked example: an all-gather of 64 MiB over 8 GPUs is 7 · (α + 8 MiB/B).
TEST(CollectivePrice, RingAllGatherOnH100x8) {
  const Target t = *preset_target("h100x8");
  const CollectivePrice p = price_collective(
      collective(CollectiveKind::kAllGather, first_devices(8), 64 * kMiB, 8 * kMiB), t);
  EXPECT_EQ(p.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_DOUBLE_EQ(p.seconds, 7 * (kAlpha + 8.0 * kMiB / kB));
  EXPECT_NEAR(p.seconds, 182.5e-6, 0.05e-6);
  EXPECT_EQ(p.steps, 7);
  EXPECT_EQ(p.staging_bytes, 0);
}

TEST(CollectivePrice, RingReduceScatterHoldsOneChunk) {
  const Target t = *preset_target("h100x8");
  const CollectivePrice p = price_collective(
      collective(CollectiveKind::kReduceScatter, first_devices(4), 64 * kMiB, 16 * kMiB), t);
  EXPECT_EQ(p.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_DOUBLE_EQ(p.seconds, 3 * (kAlpha + 16.0 * kMiB / kB));
  EXPECT_EQ(p.staging_bytes, 16 * kMiB);
  // An uneven split moves its largest slice at every step.
  const CollectivePrice uneven = price_collective(
      collective(CollectiveKind::kReduceScatter, first_devices(3), 3 * kMiB + 1, kMiB + 1), t);
  EXPECT_DOUBLE_EQ(uneven.seconds, 2 * (kAlpha + (kMiB + 1.0) / kB));
}

TEST(CollectivePrice, BroadcastAndReduceChainForLargeTreeForSmall) {
  const Target t = *preset_target("h100x8");
  for (CollectiveKind kind : {CollectiveKind::kBroadcast, CollectiveKind::kReduce}) {
    // 64 MiB: the chain, N/B + 7α (tree: 3 · (α + N/B), three times the bandwidth term).
    const CollectivePrice big =
        price_collective(collective(kind, first_devices(8), 64 * kMiB, 64 * kMiB), t);
    EXPECT_EQ(big.algorithm, CollectiveAlgorithm::kChain);
    EXPECT_DOUBLE_EQ(big.seconds, 64.0 * kMiB / kB + 7 * kAlpha);
    EXPECT_EQ(big.steps, 7);
    // 1 KiB: the tree, ⌈log₂ 8⌉ · (α + N/B) = 10.2 µs against the chain's 23.8 µs.
    const CollectivePrice small =
        price_collective(collective(kind, first_devices(8), 1024, 1024), t);
    EXPECT_EQ(small.algorithm, CollectiveAlgorithm::kTree);
    EXPECT_DOUBLE_EQ(small.seconds, 3 * (kAlpha + 1024.0 / kB));
    EXPECT_EQ(small.steps, 3);
  }
  // A reduce's root holds ⌈N/n⌉ at a time; a broadcast's receivers hold what they receive.
  EXPECT_EQ(price_collective(collective(CollectiveKind::kReduce, first_devices(3), 10, 10), t)
                .staging_bytes,
            4);
  EXPECT_EQ(price_collective(collective(CollectiveKind::kBroadcast, first_devices(3), 10, 10), t)
                .staging_bytes,
            0);
  // ⌈log₂ n⌉ for n not a power of two: 5 devices, 3 levels.
  EXPECT_DOUBLE_EQ(
      price_collective(collective(CollectiveKind::kBroadcast, first_devices(5), 1024, 1024), t)
          .seconds,
      3 * (kAlpha + 1024.0 / kB));
}

TEST(CollectivePrice, PairwiseAllToAll) {
  const Target t = *preset_target("h100x8");
  const CollectivePrice p =
      price_collective(collective(CollectiveKind::kAllToAll, first_devices(4), 0, 0, 12 * kMiB), t);
  EXPECT_EQ(p.algorithm, CollectiveAlgorithm::kPairwise);
  EXPECT_DOUBLE_EQ(p.seconds, 3 * kAlpha + 12.0 * kMiB / kB);
}

TEST(CollectivePrice, NvlsWhereTheLinkClassDeclaresIt) {
  Target t = *preset_target("h100x8");
  t.intra_node.collective->nvls_bandwidth_Bps = 480e9;
  const Collective ag =
      collective(CollectiveKind::kAllGather, first_devices(8), 64 * kMiB, 8 * kMiB);
  const CollectivePrice p = price_collective(ag, t);
  EXPECT_EQ(p.algorithm, CollectiveAlgorithm::kNvls);
  EXPECT_DOUBLE_EQ(p.seconds, 7 * (8.0 * kMiB) / 480e9 + kAlpha);
  EXPECT_EQ(p.steps, 1);
  // Slower than the ring: the ring is kept.
  t.intra_node.collective->nvls_bandwidth_Bps = 100e9;
  EXPECT_EQ(price_collective(ag, t).algorithm, CollectiveAlgorithm::kRing);
}

// h100x64: 16 GPUs on 2 nodes run a reduce-scatter within the nodes (g = 8) then across (m = 2):
// (g−1)(α_i + N/(g·B_i)) + (m−1)(α_e + N/(g·m·B_e)), B_e = 46e9, α_e = 14 µs.
TEST(CollectivePrice, HierarchicalAcrossNodes) {
  const Target t = *preset_target("h100x64");
  const std::int64_t n_bytes = 256 * kMiB, chunk = 16 * kMiB;
  const Collective rs =
      collective(CollectiveKind::kReduceScatter, first_devices(16), n_bytes, chunk);
  const CollectivePrice p = price_collective(rs, t);
  EXPECT_EQ(p.algorithm, CollectiveAlgorithm::kHierarchicalRing);
  EXPECT_DOUBLE_EQ(p.seconds, 7 * (kAlpha + 2.0 * chunk / kB) + 1 * (14e-6 + 1.0 * chunk / 46e9));
  EXPECT_NEAR(p.seconds, 7 * (kAlpha + n_bytes / (8 * kB)) + 1 * (14e-6 + n_bytes / (16 * 46e9)),
              1e-12);
  EXPECT_EQ(p.steps, 8);
  EXPECT_TRUE(spans_nodes(rs, t));
  // An uneven spread (8 GPUs on node 0, one on node 1): the flat ring at the inter-node figures.
  const Collective uneven =
      collective(CollectiveKind::kAllGather, first_devices(9), 9 * kMiB, kMiB);
  const CollectivePrice q = price_collective(uneven, t);
  EXPECT_EQ(q.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_DOUBLE_EQ(q.seconds, 8 * (14e-6 + 1.0 * kMiB / 46e9));
  // One GPU per node: the hierarchy has no intra-node phase; the flat ring is the same thing.
  const Collective spread = collective(CollectiveKind::kAllGather, {0, 8, 16, 24}, 4 * kMiB, kMiB);
  EXPECT_EQ(price_collective(spread, t).algorithm, CollectiveAlgorithm::kRing);
  EXPECT_DOUBLE_EQ(price_collective(spread, t).seconds, 3 * (14e-6 + 1.0 * kMiB / 46e9));
  // Broadcast, reduce and all-to-all across nodes: flat, at the slowest class.
  EXPECT_DOUBLE_EQ(
      price_collective(collective(CollectiveKind::kReduce, first_devices(16), kMiB * 64, kMiB * 64),
                       t)
          .seconds,
      64.0 * kMiB / 46e9 + 15 * 14e-6);
}

TEST(CollectivePrice, WithoutCollectiveFiguresTheLineRateAndLatency) {
  const Target t = toy_target(1, 4, 1e-6);  // 1 GB/s, 1 µs
  const CollectivePrice p =
      price_collective(collective(CollectiveKind::kAllGather, first_devices(4), 4000, 1000), t);
  EXPECT_DOUBLE_EQ(p.seconds, 3 * (1e-6 + 1000 / 1e9));
}

TEST(CollectivePrice, FreeOverSharedMemory) {
  const Target t = *preset_target("cpu-local");
  const CollectivePrice p = price_collective(
      collective(CollectiveKind::kAllGather, first_devices(2), 1 << 20, 1 << 19), t);
  EXPECT_EQ(p.algorithm, CollectiveAlgorithm::kSharedMemory);
  EXPECT_EQ(p.seconds, 0.0);
}

TEST(CollectivePrice, Names) {
  EXPECT_EQ(kind_name(CollectiveKind::kReduceScatter), "reduce-scatter");
  EXPECT_EQ(kind_name(CollectiveKind::kAllToAll), "all-to-all");
  EXPECT_EQ(algorithm_name(CollectiveAlgorithm::kHierarchicalRing), "hierarchical ring");
  EXPECT_EQ(algorithm_name(CollectiveAlgorithm::kNvls), "NVLS");
}

// ---------------------------------------------------------------------------------------------
// Recognition on hand-built placements: tensor T (node 0, 4 bytes per element) written by
// applications on devices, moved by the transfers listed.

class Hand {
 public:
  explicit Hand(bool partial = false) : partial_{partial ? std::uint8_t{1} : std::uint8_t{0}, 0} {}

  /// An application on `device` writes `box` of T.
  Hand& writes(std::uint32_t device, std::string_view box) {
    const auto app = static_cast<std::uint32_t>(p_.applications.size());
    PlacedApplication a;
    a.device = device;
    p_.applications.push_back(a);
    written_.push_back(WrittenBox{0, app, zr(box)});
    return *this;
  }
  /// A transfer of `box` of T from the application on `from` that writes it to `to`.
  Hand& sends(std::uint32_t from, std::uint32_t to, std::string_view box) {
    Transfer t;
    t.tensor = ir::TensorId(ir::NodeId(0));
    t.box = zr(box);
    t.bytes = t.box.size() * 4;
    t.from = from;
    t.to = to;
    for (const WrittenBox& w : written_) {
      if (p_.applications[w.application].device == from && w.box.contains(t.box)) {
        t.producer = w.application;
      }
    }
    EXPECT_NE(t.producer, kHost) << "no writer of " << box << " on device " << from;
    p_.transfers.push_back(t);
    return *this;
  }
  /// The placement with its collectives recognised.
  const Placement& recognised() {
    CollectiveRecogniser r;
    r.recognise(p_, WriterIndex::of(written_, 2), partial_, element_bytes_);
    return p_;
  }

 private:
  Placement p_;
  std::vector<WrittenBox> written_;
  std::vector<std::uint8_t> partial_;
  std::vector<std::int64_t> element_bytes_{4, 0};
};

// Rows of T[64, 32] cut in 4 on gpu:0…3, every device receiving the other three quarters.
Hand all_gather_of_rows() {
  Hand h;
  for (std::uint32_t d = 0; d < 4; ++d) {
    h.writes(d, fmt::format("[{}:{}, 0:32]", 16 * d, 16 * d + 16));
  }
  for (std::uint32_t r = 0; r < 4; ++r) {
    for (std::uint32_t w = 0; w < 4; ++w) {
      if (w != r) h.sends(w, r, fmt::format("[{}:{}, 0:32]", 16 * w, 16 * w + 16));
    }
  }
  return h;
}

TEST(Recognise, AllGather) {
  Hand h = all_gather_of_rows();
  const Placement& p = h.recognised();
  ASSERT_EQ(p.collectives.size(), 1u);
  const Collective& c = p.collectives[0];
  EXPECT_EQ(c.kind, CollectiveKind::kAllGather);
  EXPECT_EQ(c.devices, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(c.transfers.size(), 12u);
  EXPECT_EQ(c.bytes, 64 * 32 * 4);
  EXPECT_EQ(c.chunk_bytes, 16 * 32 * 4);
  for (const Transfer& t : p.transfers) EXPECT_EQ(t.collective, 0u);
}

TEST(Recognise, AllGatherWithAReceiverThatWritesNothing) {
  // gpu:0 and gpu:1 write halves; gpu:2 only receives: it must receive both.
  Hand h;
  h.writes(0, "[0:8, 0:4]").writes(1, "[8:16, 0:4]");
  h.sends(0, 1, "[0:8, 0:4]").sends(1, 0, "[8:16, 0:4]");
  h.sends(0, 2, "[0:8, 0:4]").sends(1, 2, "[8:16, 0:4]");
  const Placement& p = h.recognised();
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.collectives[0].kind, CollectiveKind::kAllGather);
  EXPECT_EQ(p.collectives[0].devices.size(), 3u);
  EXPECT_EQ(p.collectives[0].chunk_bytes, 8 * 4 * 4);  // the largest contribution
}

TEST(Recognise, AllGatherOfPartOfTheTensor) {
  // Only rows 0–31 are gathered among gpu:0 and gpu:1 (U = [0:32, 0:32]); gpu:2 keeps its rows.
  Hand h;
  h.writes(0, "[0:16, 0:32]").writes(1, "[16:32, 0:32]").writes(2, "[32:64, 0:32]");
  h.sends(0, 1, "[0:16, 0:32]").sends(1, 0, "[16:32, 0:32]");
  const Placement& p = h.recognised();
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.collectives[0].kind, CollectiveKind::kAllGather);
  EXPECT_EQ(p.collectives[0].bytes, 32 * 32 * 4);
}

TEST(Recognise, NearMissesOfAnAllGatherAreAllToAll) {
  {  // gpu:3 gets only half of gpu:0's rows: it does not end with the whole tensor.
    Hand h;
    for (std::uint32_t d = 0; d < 4; ++d)
      h.writes(d, fmt::format("[{}:{}, 0:32]", 16 * d, 16 * d + 16));
    for (std::uint32_t r = 0; r < 4; ++r) {
      for (std::uint32_t w = 0; w < 4; ++w) {
        if (w == r) continue;
        h.sends(
            w, r,
            r == 3 && w == 0 ? "[0:8, 0:32]" : fmt::format("[{}:{}, 0:32]", 16 * w, 16 * w + 16));
      }
    }
    const Placement& p = h.recognised();
    ASSERT_EQ(p.collectives.size(), 1u);
    EXPECT_EQ(p.collectives[0].kind, CollectiveKind::kAllToAll);
  }
  {  // Rows to columns: every device sends a different box to every other.
    Hand h;
    for (std::uint32_t d = 0; d < 4; ++d)
      h.writes(d, fmt::format("[{}:{}, 0:64]", 16 * d, 16 * d + 16));
    for (std::uint32_t r = 0; r < 4; ++r) {
      for (std::uint32_t w = 0; w < 4; ++w) {
        if (w != r)
          h.sends(w, r, fmt::format("[{}:{}, {}:{}]", 16 * w, 16 * w + 16, 16 * r, 16 * r + 16));
      }
    }
    const Placement& p = h.recognised();
    ASSERT_EQ(p.collectives.size(), 1u);
    const Collective& c = p.collectives[0];
    EXPECT_EQ(c.kind, CollectiveKind::kAllToAll);
    EXPECT_EQ(c.port_bytes, 3 * 16 * 16 * 4);  // each sends and receives three 16 × 16 blocks
    EXPECT_EQ(c.bytes, c.port_bytes);
  }
}

TEST(Recognise, Broadcast) {
  Hand h;
  h.writes(0, "[0:8, 0:8]");
  for (std::uint32_t r = 1; r < 4; ++r) h.sends(0, r, "[0:8, 0:8]");
  const Placement& p = h.recognised();
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.collectives[0].kind, CollectiveKind::kBroadcast);
  EXPECT_EQ(p.collectives[0].bytes, 8 * 8 * 4);
  EXPECT_EQ(p.collectives[0].devices, (std::vector<std::uint32_t>{0, 1, 2, 3}));
}

TEST(Recognise, NearMissesThatStayPointToPoint) {
  {  // A scatter: one sender, each receiver a different box.
    Hand h;
    h.writes(0, "[0:8, 0:8]");
    h.sends(0, 1, "[0:4, 0:8]").sends(0, 2, "[4:8, 0:8]");
    EXPECT_TRUE(h.recognised().collectives.empty());
  }
  {  // A gather of a tensor that is not partial onto one device.
    Hand h;
    for (std::uint32_t d = 0; d < 4; ++d)
      h.writes(d, fmt::format("[{}:{}, 0:8]", 2 * d, 2 * d + 2));
    for (std::uint32_t w = 1; w < 4; ++w)
      h.sends(w, 0, fmt::format("[{}:{}, 0:8]", 2 * w, 2 * w + 2));
    EXPECT_TRUE(h.recognised().collectives.empty());
  }
  {  // One transfer.
    Hand h;
    h.writes(0, "[0:8, 0:8]").sends(0, 1, "[0:8, 0:8]");
    const Placement& p = h.recognised();
    EXPECT_TRUE(p.collectives.empty());
    EXPECT_EQ(p.transfers[0].collective, kNoCollective);
  }
  {  // A partial tensor's blocks gathered onto one device, one of them only in part.
    Hand h(true);
    for (std::uint32_t d = 0; d < 4; ++d) h.writes(d, fmt::format("[{}:{}, 0:8]", d, d + 1));
    h.sends(1, 0, "[1:2, 0:8]").sends(2, 0, "[2:3, 0:8]").sends(3, 0, "[3:4, 0:4]");
    EXPECT_TRUE(h.recognised().collectives.empty());
  }
  {  // Host loads and gathers are never collectives.
    Hand h;
    h.writes(0, "[0:8, 0:8]").sends(0, 1, "[0:8, 0:8]").sends(0, 2, "[0:8, 0:8]");
    Placement p = h.recognised();
    ASSERT_EQ(p.collectives.size(), 1u);  // the broadcast
    for (Transfer& t : p.transfers) t.to = kHost;
    CollectiveRecogniser r;
    r.recognise(p, WriterIndex::of({WrittenBox{0, 0, zr("[0:8, 0:8]")}}, 2),
                std::vector<std::uint8_t>{0, 0}, std::vector<std::int64_t>{4, 0});
    EXPECT_TRUE(p.collectives.empty());
  }
}

// T[4, 8, 4] holds 4 partial blocks (dim 0): block d on gpu:d; receiver r combines rows
// [2r, 2r + 2) of every block.
Hand reduce_scatter_of_blocks(bool partial = true) {
  Hand h(partial);
  for (std::uint32_t d = 0; d < 4; ++d) h.writes(d, fmt::format("[{}:{}, 0:8, 0:4]", d, d + 1));
  for (std::uint32_t r = 0; r < 4; ++r) {
    for (std::uint32_t w = 0; w < 4; ++w) {
      if (w != r) h.sends(w, r, fmt::format("[{}:{}, {}:{}, 0:4]", w, w + 1, 2 * r, 2 * r + 2));
    }
  }
  return h;
}

TEST(Recognise, ReduceScatter) {
  Hand h = reduce_scatter_of_blocks();
  const Placement& p = h.recognised();
  ASSERT_EQ(p.collectives.size(), 1u);
  const Collective& c = p.collectives[0];
  EXPECT_EQ(c.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(c.bytes, 8 * 4 * 4);        // one block
  EXPECT_EQ(c.chunk_bytes, 2 * 4 * 4);  // one slice of one block
  EXPECT_EQ(c.transfers.size(), 12u);
}

TEST(Recognise, ReduceScatterWithBlocksWrittenInPieces) {
  // Each block written as two boxes of rows (two applications per device); receiver r's slice
  // of block w arrives as one transfer (from the piece holding it).
  Hand h(true);
  for (std::uint32_t d = 0; d < 4; ++d) {
    h.writes(d, fmt::format("[{}:{}, 0:4, 0:4]", d, d + 1));
    h.writes(d, fmt::format("[{}:{}, 4:8, 0:4]", d, d + 1));
  }
  for (std::uint32_t r = 0; r < 4; ++r) {
    for (std::uint32_t w = 0; w < 4; ++w) {
      if (w != r) h.sends(w, r, fmt::format("[{}:{}, {}:{}, 0:4]", w, w + 1, 2 * r, 2 * r + 2));
    }
  }
  const Placement& p = h.recognised();
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.collectives[0].kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(p.collectives[0].bytes, 8 * 4 * 4);
}

TEST(Recognise, NearMissesOfAReduceScatter) {
  // Not partial: the same structure is an all-to-all (nobody ends with the whole tensor).
  {
    Hand h = reduce_scatter_of_blocks(false);
    const Placement& p = h.recognised();
    ASSERT_EQ(p.collectives.size(), 1u);
    EXPECT_EQ(p.collectives[0].kind, CollectiveKind::kAllToAll);
  }
  // Two receivers combine the same rows: the slices do not partition the block.
  {
    Hand h(true);
    for (std::uint32_t d = 0; d < 4; ++d) h.writes(d, fmt::format("[{}:{}, 0:8, 0:4]", d, d + 1));
    for (std::uint32_t r = 0; r < 4; ++r) {
      const std::uint32_t rows = r == 3 ? 2 : r;  // gpu:3 takes gpu:2's rows
      for (std::uint32_t w = 0; w < 4; ++w) {
        if (w != r)
          h.sends(w, r, fmt::format("[{}:{}, {}:{}, 0:4]", w, w + 1, 2 * rows, 2 * rows + 2));
      }
    }
    const Placement& p = h.recognised();
    ASSERT_EQ(p.collectives.size(), 1u);
    EXPECT_EQ(p.collectives[0].kind, CollectiveKind::kAllToAll);
  }
  // A receiver gets a different slice from one writer.
  {
    Hand h(true);
    for (std::uint32_t d = 0; d < 4; ++d) h.writes(d, fmt::format("[{}:{}, 0:8, 0:4]", d, d + 1));
    for (std::uint32_t r = 0; r < 4; ++r) {
      for (std::uint32_t w = 0; w < 4; ++w) {
        if (w == r) continue;
        const std::string cols = r == 1 && w == 2 ? "0:2" : "0:4";
        h.sends(w, r, fmt::format("[{}:{}, {}:{}, {}]", w, w + 1, 2 * r, 2 * r + 2, cols));
      }
    }
    EXPECT_EQ(h.recognised().collectives[0].kind, CollectiveKind::kAllToAll);
  }
}

TEST(Recognise, Reduce) {
  // Partial blocks of T[4, 8, 4]; gpu:0 combines all of them.
  Hand h(true);
  for (std::uint32_t d = 0; d < 4; ++d) h.writes(d, fmt::format("[{}:{}, 0:8, 0:4]", d, d + 1));
  for (std::uint32_t w = 1; w < 4; ++w) h.sends(w, 0, fmt::format("[{}:{}, 0:8, 0:4]", w, w + 1));
  const Placement& p = h.recognised();
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.collectives[0].kind, CollectiveKind::kReduce);
  EXPECT_EQ(p.collectives[0].bytes, 8 * 4 * 4);
  EXPECT_EQ(p.collectives[0].devices, (std::vector<std::uint32_t>{0, 1, 2, 3}));
}

TEST(Recognise, OneCollectivePerGroupOfDevices) {
  // Two all-gathers of one tensor among gpu:0–1 and gpu:2–3 (two data-parallel groups).
  Hand h;
  for (std::uint32_t d = 0; d < 4; ++d) h.writes(d, fmt::format("[{}:{}, 0:4]", 4 * d, 4 * d + 4));
  h.sends(0, 1, "[0:4, 0:4]").sends(1, 0, "[4:8, 0:4]");
  h.sends(2, 3, "[8:12, 0:4]").sends(3, 2, "[12:16, 0:4]");
  const Placement& p = h.recognised();
  ASSERT_EQ(p.collectives.size(), 2u);
  EXPECT_EQ(p.collectives[0].devices, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(p.collectives[1].devices, (std::vector<std::uint32_t>{2, 3}));
  EXPECT_EQ(p.collectives[1].bytes, 8 * 4 * 4);
  EXPECT_EQ(p.transfers[2].collective, 1u);
}

// ---------------------------------------------------------------------------------------------
// Through place(): programs whose plans imply each collective.

// Megatron's row-parallel linear with its partials explicit: P's 8 blocks on gpu:0…7, Y = reduce(P)
// cut by rows on the same 8 GPUs (a reduce-scatter), O = linear(Y) cut on `out` reads all of Y
// everywhere (an all-gather of the combine's output): an all-reduce.
constexpr std::string_view kPartials =
    "H: bf16[8, 8192, 2048]\nW: bf16[8, 2048, 4096]\nW3: bf16[4096, 4096]\nb3: bf16[4096]\n"
    "P = matmul(H, W)\nY = reduce(P)\nO = linear(Y, W3, b3)\noutput O\n";
constexpr std::string_view kAllReducePlan =
    R"({"ops": {"P": {"split": {"batch": 8}}, "Y": {"split": {"d0": 8}}, "O": {"split": {"out": 8}}}})";

TEST(RecogniseInPlacement, ReduceScatterThenAllGatherOfTheCombine) {
  const Target t = *preset_target("h100x8");
  const Placement p = place_tap(kPartials, kAllReducePlan, t);
  ASSERT_EQ(p.collectives.size(), 2u);
  const Collective& rs = p.collectives[0];
  EXPECT_EQ(rs.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(rs.bytes, 8192 * 4096 * 2);  // one partial, 64 MiB
  EXPECT_EQ(rs.chunk_bytes, 8 * kMiB);
  EXPECT_EQ(rs.devices, first_devices(8));
  const Collective& ag = p.collectives[1];
  EXPECT_EQ(ag.kind, CollectiveKind::kAllGather);
  EXPECT_EQ(ag.bytes, 64 * kMiB);
  EXPECT_EQ(ag.chunk_bytes, 8 * kMiB);
  for (const Transfer& tr : p.transfers) EXPECT_NE(tr.collective, kNoCollective);
  // The simulation runs each as priced: the all-gather 7 · (α + 8 MiB/B) after the combine.
  Schedule s;
  (void)simulate(p, t, &s);
  EXPECT_DOUBLE_EQ(s.collectives[0].end - s.collectives[0].start, 7 * (kAlpha + 8.0 * kMiB / kB));
  EXPECT_DOUBLE_EQ(s.collectives[1].end - s.collectives[1].start, 7 * (kAlpha + 8.0 * kMiB / kB));
  for (std::uint32_t tr : ag.transfers) {
    EXPECT_EQ(s.transfers[tr].start, s.collectives[1].start);
    EXPECT_EQ(s.transfers[tr].end, s.collectives[1].end);
  }
}

TEST(RecogniseInPlacement, AFusedCombineStillMakesItsInputPartial) {
  // The reduce fused with a bias add: its input is still partial.
  constexpr std::string_view tap =
      "H: f32[4, 64, 32]\nW: f32[4, 32, 16]\nb: f32[16]\nP = matmul(H, W)\nR = reduce(P)\n"
      "Y = bias_add(R, b)\noutput Y\n";
  const Target t = toy_target(1, 4);
  rewrite::LowerResult lowered;
  const Placement p = place_tap(tap, R"({"ops": {"P": {"split": {"batch": 4}},
      "R": {"split": {"d0": 4}}, "Y": {"split": {"batch": 4}}}, "fuse": "auto"})",
                                t, &lowered);
  ASSERT_EQ(p.operations.size(), 2u);
  EXPECT_EQ(p.operations[1].kernel, "fused");
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.collectives[0].kind, CollectiveKind::kReduceScatter);
}

TEST(RecogniseInPlacement, PartialTensorsAreThoseEveryConsumerReduces) {
  const rewrite::LowerResult r = testing::lower_tap(kPartials, kAllReducePlan);
  const std::vector<std::uint8_t> partial = partial_tensors(r.graph);
  for (ir::TensorId t : r.graph.tensors()) {
    const std::string& label = r.graph.tensor(t).label();
    EXPECT_EQ(partial[t.index()] != 0, label == "P") << label;
  }
}

constexpr std::string_view kTransformerMlp =
    "X: bf16[8192, 4096]\nW1: bf16[16384, 4096]\nb1: bf16[16384]\nW2: bf16[4096, 16384]\n"
    "b2: bf16[4096]\nH = gelu(linear(X, W1, b1))\nY = linear(H, W2, b2)\noutput Y\n";

// Megatron's plan, the combine planned by default: nothing reads Y, so the combine is cut by rows
// over the 8 GPUs holding the partials — a ring reduce-scatter of the 128 MiB partial (a bf16
// graph's partial sums are float32: rewrite/mixed_precision.h).
TEST(RecogniseInPlacement, TheMegatronCombineIsAReduceScatterByDefault) {
  const Target t = *preset_target("h100x8");
  const Placement p =
      place_tap(kTransformerMlp,
                R"({"ops": {"H/linear": {"split": {"out": 8}}, "H": {"split": {"d1": 8}},
          "Y": {"split": {"in": 8}}}, "fuse": "auto"})",
                t);
  ASSERT_EQ(p.collectives.size(), 1u);
  const Collective& c = p.collectives[0];
  EXPECT_EQ(c.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(c.bytes, 128 * kMiB);
  EXPECT_EQ(c.devices.size(), 8u);
  const CollectivePrice price = price_collective(c, t);
  EXPECT_EQ(price.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_DOUBLE_EQ(price.seconds, 7 * (kAlpha + 16.0 * kMiB / kB));
}

TEST(RecogniseInPlacement, TheMegatronReduceOntoOneDevice) {
  // The split-reduction's combine named unsplit (on gpu:0): the other 7 partials are a reduce
  // (chain).
  const Target t = *preset_target("h100x8");
  const Placement p =
      place_tap(kTransformerMlp,
                R"({"ops": {"H/linear": {"split": {"out": 8}}, "H": {"split": {"d1": 8}},
          "Y": {"split": {"in": 8}}, "Y/matmul/reduce": {}}, "fuse": "auto"})",
                t);
  ASSERT_EQ(p.collectives.size(), 1u);
  const Collective& c = p.collectives[0];
  EXPECT_EQ(c.kind, CollectiveKind::kReduce);
  EXPECT_EQ(c.bytes, 128 * kMiB);  // float32 partials
  const CollectivePrice price = price_collective(c, t);
  EXPECT_EQ(price.algorithm, CollectiveAlgorithm::kChain);
  EXPECT_DOUBLE_EQ(price.seconds, 128.0 * kMiB / kB + 7 * kAlpha);
}

// ---------------------------------------------------------------------------------------------
// Properties of the prices.

// A collective of a random kind over 2–12 devices of one random node (random figures), or across
// nodes of a random two-level target.
struct Case {
  Target target;
  Collective collective;
};

Target random_target(bool multi) {
  Target t = toy_target(multi ? 4 : 1, 8, *rc::gen::inRange(0, 20) * 1e-6);
  t.intra_node.collective = CollectiveRates{*rc::gen::inRange(1, 1000) * 1e9,
                                            *rc::gen::inRange(0, 20) * 1e-6, std::nullopt};
  if (*rc::gen::arbitrary<bool>()) {
    t.intra_node.collective->nvls_bandwidth_Bps = *rc::gen::inRange(1, 1000) * 1e9;
  }
  if (multi) {
    t.inter_node->collective = CollectiveRates{*rc::gen::inRange(1, 100) * 1e9,
                                               *rc::gen::inRange(0, 40) * 1e-6, std::nullopt};
  }
  return t;
}

Collective random_collective(std::size_t devices_available) {
  const auto kind = *rc::gen::element(CollectiveKind::kAllGather, CollectiveKind::kBroadcast,
                                      CollectiveKind::kReduceScatter, CollectiveKind::kReduce,
                                      CollectiveKind::kAllToAll);
  const auto n =
      *rc::gen::inRange<std::uint32_t>(2, static_cast<std::uint32_t>(devices_available) + 1);
  const std::int64_t chunk = *rc::gen::inRange<std::int64_t>(1, std::int64_t{1} << 30);
  return collective(kind, first_devices(n), chunk * n, chunk, chunk * (n - 1));
}

RC_GTEST_PROP(CollectiveProperties, MoreBytesAreNeverCheaper, ()) {
  const bool multi = *rc::gen::arbitrary<bool>();
  const Target t = random_target(multi);
  Collective c = random_collective(t.devices.size());
  const double before = price_collective(c, t).seconds;
  const std::int64_t more = *rc::gen::inRange<std::int64_t>(1, std::int64_t{1} << 30);
  c.bytes += more * static_cast<std::int64_t>(c.devices.size());
  c.chunk_bytes += more;
  c.port_bytes += more * static_cast<std::int64_t>(c.devices.size() - 1);
  RC_ASSERT(price_collective(c, t).seconds >= before);
}

// The bandwidth term (the price with every step latency 0) per byte of N, over one link class:
// (n−1)/n/B for a ring, 1/B for a chain, port bytes/B for pairwise (N = port bytes) — never
// smaller over more devices. Across nodes the hierarchical ring does not have this property, and
// should not: a node's devices each bring their own NIC, so more devices per node share the
// inter-node traffic among more rails (docs/cost.md).
RC_GTEST_PROP(CollectiveProperties, MoreDevicesNeverASmallerBandwidthTermPerByte, ()) {
  Target t = random_target(false);
  t.intra_node.collective->step_latency_s = 0;
  const auto kind = *rc::gen::element(CollectiveKind::kAllGather, CollectiveKind::kBroadcast,
                                      CollectiveKind::kReduceScatter, CollectiveKind::kReduce,
                                      CollectiveKind::kAllToAll);
  const auto n = *rc::gen::inRange<std::uint32_t>(2, 8);
  const std::int64_t bytes = *rc::gen::inRange<std::int64_t>(1, 1 << 20) * 5040;  // n | bytes
  const auto per_byte = [&](std::uint32_t devices) {
    const std::int64_t chunk = bytes / devices;
    Collective c = collective(kind, first_devices(devices), bytes, chunk, bytes);
    return price_collective(c, t).seconds / static_cast<double>(bytes);
  };
  RC_ASSERT(per_byte(n + 1) >= per_byte(n) * (1 - 1e-12));
}

RC_GTEST_PROP(CollectiveProperties, RecognitionIsStableUnderRepetition, ()) {
  // A recogniser reused across placements (as an Evaluator reuses it) answers as a fresh one.
  CollectiveRecogniser reused;
  for (int round = 0; round < 3; ++round) {
    const std::optional<rewrite::LowerResult> r = testing::random_lowered(5);
    const Target t = toy_target(2, *rc::gen::inRange<std::size_t>(1, 4), 1e-6);
    Placement p = place(r->graph, r->plan, t);
    const std::vector<Collective> fresh = p.collectives;
    for (const Collective& c : fresh) RC_TAG(std::string(kind_name(c.kind)));
    std::vector<WrittenBox> written;
    for (ir::ApplicationId app : r->graph.applications()) {
      for (const auto& e : r->graph.application(app).outputs().entries()) {
        std::uint32_t position = 0;
        while (p.applications[position].id != app) ++position;
        written.push_back(WrittenBox{e.value.tensor.index(), position, e.value.range});
      }
    }
    std::vector<std::int64_t> element_bytes(r->graph.size(), 0);
    for (ir::TensorId tensor : r->graph.tensors()) {
      if (auto d = r->graph.tensor(tensor).dtype().known()) {
        element_bytes[tensor.index()] = static_cast<std::int64_t>(ir::dtype_size_bytes(*d));
      }
    }
    reused.recognise(p, WriterIndex::of(written, r->graph.size()), partial_tensors(r->graph),
                     element_bytes);
    RC_ASSERT(p.collectives == fresh);
    for (const Transfer& tr : p.transfers) {
      RC_ASSERT(tr.collective == kNoCollective || tr.collective < p.collectives.size());
    }
  }
}

// An independent oracle of what recognition claims, point by point on random programs and plans:
// after an all-gather every participant holds every point of U exactly once (what it wrote or
// received); after a reduce-scatter or reduce every receiver has, for each point it combines,
// that point of every writer's block exactly once; a broadcast's receivers get the same points.
RC_GTEST_PROP(CollectiveProperties, WhatRecognitionClaimsHoldsPointByPoint, ()) {
  const std::optional<rewrite::LowerResult> r = testing::random_lowered(5);
  const Target t = toy_target(2, *rc::gen::inRange<std::size_t>(1, 4), 1e-6);
  const Placement p = place(r->graph, r->plan, t);
  // What each application writes, by tensor.
  std::map<std::uint32_t, std::vector<std::pair<std::uint32_t, zspace::Range>>> written;
  for (std::uint32_t a = 0; a < p.applications.size(); ++a) {
    for (const auto& e : r->graph.application(p.applications[a].id).outputs().entries()) {
      written[e.value.tensor.index()].emplace_back(p.applications[a].device, e.value.range);
    }
  }
  using Points = std::map<std::vector<std::int64_t>, int>;
  const auto add = [](Points& points, const zspace::Range& box) {
    for (const zspace::Point& q : box.points()) {
      std::vector<std::int64_t> v(q.rank());
      for (std::size_t d = 0; d < q.rank(); ++d) v[d] = q[d];
      ++points[v];
    }
  };
  for (const Collective& c : p.collectives) {
    RC_TAG(std::string(kind_name(c.kind)));
    const auto& writes = written[c.tensor.index()];
    std::map<std::uint32_t, Points> held;  // per participant: points written or received
    std::map<std::uint32_t, std::vector<zspace::Range>> received;
    for (std::uint32_t tr : c.transfers) {
      RC_ASSERT(p.transfers[tr].tensor == c.tensor);
      RC_ASSERT(p.transfers[tr].collective != kNoCollective);
      add(held[p.transfers[tr].to], p.transfers[tr].box);
      received[p.transfers[tr].to].push_back(p.transfers[tr].box);
    }
    switch (c.kind) {
      case CollectiveKind::kAllGather: {
        std::vector<zspace::Range> moved;
        for (std::uint32_t tr : c.transfers) moved.push_back(p.transfers[tr].box);
        const zspace::Range u = zspace::Range::bounding(moved);
        for (std::uint32_t d : c.devices) {
          for (const auto& [device, box] : writes) {
            if (device != d) continue;
            if (auto part = box.intersect(u)) add(held[d], *part);
          }
          Points& points = held[d];
          RC_ASSERT(static_cast<std::int64_t>(points.size()) == u.size());
          for (const auto& [point, count] : points) RC_ASSERT(count == 1);
        }
        RC_ASSERT(c.bytes == u.size() * p.transfers[c.transfers[0]].bytes /
                                 p.transfers[c.transfers[0]].box.size());
        break;
      }
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kReduce: {
        // Every receiver gets, for each point of its slice, that point of every other writer's
        // block: as many copies of each slice point as there are other writers.
        for (const auto& [d, boxes] : received) {
          Points slice;  // points of dims 1..
          std::set<std::uint32_t> from;
          for (std::uint32_t tr : c.transfers) {
            if (p.transfers[tr].to != d) continue;
            from.insert(p.transfers[tr].from);
            add(slice, p.transfers[tr].box.slice(1, p.transfers[tr].box.rank()));
          }
          for (const auto& [point, count] : slice) {
            RC_ASSERT(count == static_cast<int>(from.size()));
          }
        }
        if (c.kind == CollectiveKind::kReduce) RC_ASSERT(received.size() == 1u);
        break;
      }
      case CollectiveKind::kBroadcast: {
        const Points& first = held.begin()->second;
        for (const auto& [d, points] : held) RC_ASSERT(points == first);
        break;
      }
      case CollectiveKind::kAllToAll:
        break;
    }
  }
}

}  // namespace
}  // namespace tapestry::cost
