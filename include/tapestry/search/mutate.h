// Plan mutations and seed plans: how the search moves through the plan space (plan_space.h).
//
// A mutation changes one decision of a genome (a plan naming representatives only, see
// plan_space.h) at random:
//
//   resplit     cut a non-reduction dim of an operation into another count — a power of two up
//               to the device count, the device count, a mesh axis size, or (one time in eight)
//               any count, uneven included (10 into 4: 3, 3, 2, 2) — or uncut it (count 1)
//   reduction   split a reduction dim (split-reduction: partial results and a reduce) or unsplit it
//   mesh        map a split dim onto a mesh axis (often cutting it into the axis' size), or clear
//               the mapping
//   place       move an operation's shards: onto a run of devices (which may be fewer than its
//               shards: they cycle), by swapping two devices of its list, or back to the default;
//               or move its whole branch — the chain of operations between where the graph forks
//               and where it joins (attention's K projection, reshape, permute, transpose) — onto
//               a run of devices of its own, one per shard, so it runs beside the other branches
//   fusion      toggle `"fuse": "auto"`, or add or drop one producer → consumer fusion
//   substitute  toggle decompose-linear on a linear
//   align       copy an operation's cut (and placement) to its consumer through the tensor between
//               them — or to its producer — and, half the time, on down the chain: the move that
//               makes neighbours agree, so no bytes move between them (and how a row cut of the
//               first linear becomes data parallelism, or an `out` cut becomes Megatron's `in`)
//
// On a training step (PlanSpace::training(); on any other graph these never draw, so a search of
// a forward graph makes the same moves as before they existed):
//
//   recompute   recompute one more forward operation (a representative: with tied layers, its
//               kind in every layer), or keep one, or take the full or the selective set
//               (cost/standard_plans.h), or keep everything
//   zero        shard the parameters, their gradients and optimizer state (ZeRO stage 1–3, a
//               shard count dividing every parameter's dim 0, half the time along a mesh axis of
//               that size), change the stage, the count or the axis, or drop it
//   pipeline    split the layers into 2 … min(layers, devices) stages of consecutive layers with
//               a microbatch count and a schedule (1F1B, GPipe), change one of those, or drop it;
//               adding one drops the genome's placements, mesh axes and batch cuts, which a
//               pipeline refuses (rewrite/pipeline.h)
//
// Every mutation keeps the genome well-formed (mesh entries only on split dims, no operation both
// placed and meshed, no shard grid above 8 × the device count); whether the rewrites can carry it
// out is for the evaluator to say (a refused plan is simply not kept).
//
// Seeds are the plans a person would try first, so the front is never worse than the obvious:
//   unsharded        {}
//   data-parallel    every batch dim cut into the device count, fused
//   weights-out      every weight dim cut into the device count, consumers aligned, fused
//   megatron         weight dims cut, except where an operation's input arrives cut along its
//                    reduction dim: that dim is split instead (Megatron-LM's column then row
//                    parallel pair: one reduction per block), consumers aligned, fused
//
//   Rng rng(seed);
//   Plan g = seed_plans(space)[1].plan;   // data-parallel
//   mutate(space, g, rng);                // one to four random mutations
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/rewrite/plan.h"
#include "tapestry/search/plan_space.h"

namespace tapestry::search {

/// A small, fast, portable random stream (SplitMix64): the same numbers on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  /// The stream of slot `slot` of generation `generation` of a search seeded with `seed`.
  static Rng for_slot(std::uint64_t seed, std::uint64_t generation, std::uint64_t slot);
  std::uint64_t next();
  /// Uniform in [0, n), n > 0.
  std::uint64_t below(std::uint64_t n);
  /// True with probability p.
  bool chance(double p);

 private:
  std::uint64_t state_;
};

enum class Mutation : std::uint8_t {
  kResplit,
  kReduction,
  kMesh,
  kPlace,
  kFusion,
  kSubstitute,
  kAlign,
  kRecompute,
  kZero,
  kPipeline
};
inline constexpr int kMutationCount = 10;
/// The kinds that change cuts, placement, fusion and substitution (the first seven): every graph's.
inline constexpr int kCutMutationCount = 7;

/// "resplit", "reduction", "mesh", "place", "fusion", "substitute", "align", "recompute",
/// "zero", "pipeline".
std::string_view mutation_name(Mutation mutation);

/// Applies one mutation of kind `kind`; false (genome unchanged) when it has nothing to change.
bool mutate_once(const PlanSpace& space, Mutation kind, rewrite::Plan& genome, Rng& rng);
/// The mutation kinds a search may use, as a bit set (bit i: Mutation i).
using MutationSet = std::uint32_t;
inline constexpr MutationSet kAllMutations = (1u << kMutationCount) - 1;
inline constexpr MutationSet mutation_bit(Mutation m) {
  return 1u << static_cast<int>(m);
}

/// Applies one to four random mutations of the kinds in `allowed` (each with its weight; see
/// mutate.cpp).
void mutate(const PlanSpace& space, rewrite::Plan& genome, Rng& rng,
            MutationSet allowed = kAllMutations);

/// Removes what cannot stand: empty entries, mesh entries of unsplit dims, place and mesh on one
/// operation (mesh wins), fusion groups naming a missing operation or repeating one.
void normalize(rewrite::Plan& genome);

struct SeedPlan {
  std::string name;  // "unsharded", "data-parallel", "weights-out", "megatron"
  rewrite::Plan genome;
};
/// The seeds (file comment), in that order, duplicates dropped.
std::vector<SeedPlan> seed_plans(const PlanSpace& space);

/// A stable 64-bit fingerprint of a plan (FNV-1a of its JSON text): the search's "seen" set.
std::uint64_t fingerprint(const rewrite::Plan& plan);

}  // namespace tapestry::search
