// RankSchedule: an application graph spread over the ranks of an MPI job — which rank runs each
// application, and every box that must move from the rank that writes it to a rank that reads
// it. Plain data, computed once before execution; the MPI executor (mpi_executor.h) runs it.
//
// The schedule does not decide anything itself: `tapestry run --executor mpi` builds it from the
// cost model's placement (cost/placement.h), device i being rank i, so the messages are exactly
// the transfers the cost model prices — the intersections of each producer's output box with
// each consumer's input box on another device, one per (box, destination rank), shared by every
// consumer there. (runtime sits beside cost in the layer table, so the CLI converts.)
//
// Worked example — `Y = relu(linear(X, W, b))` with Y split in two along batch and Y/linear
// unsplit, on 2 ranks: Y/linear and Y/0 run on rank 0, Y/1 on rank 1; one message carries
// Y/linear's rows 50–99 (the part Y/1 reads) from rank 0 to rank 1:
//
//   RankSchedule s{.rank_names = {"rank:0", "rank:1"}};
//   s.rank_of = {{linear, 0}, {relu0, 0}, {relu1, 1}};
//   s.messages = {{.tensor = z, .box = Range({50, 0}, {100, 32}), .from = 0, .to = 1,
//                  .producer = linear, .consumers = {relu1}}};
//
// Graph inputs are not messages: every rank reads (or generates) the inputs its applications
// read. Graph outputs are gathered to rank 0 by the executor (one message per box a rank other
// than 0 writes), not listed here.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tapestry/ir/ids.h"
#include "tapestry/zspace/range.h"

namespace tapestry::runtime {

/// One box moving between ranks.
struct RankMessage {
  ir::TensorId tensor;
  zspace::Range box;  // in the tensor's coordinates; inside one box `producer` writes
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  ir::ApplicationId producer;                // runs on `from`
  std::vector<ir::ApplicationId> consumers;  // run on `to`; each reads (part of) the box
};

/// Which message patterns the MPI executor runs as MPI collectives (MPI_Reduce, MPI_Allreduce,
/// MPI_Allgatherv) instead of point-to-point: none; those whose result has the block executor's
/// bits (a sum over two ranks, every all-gather); or every one it finds (a sum over three or
/// more ranks is then in MPI's order: within the verify bar, not bitwise). docs/distributed.md.
enum class CollectiveUse : std::uint8_t { kNone, kExact, kAll };

struct RankSchedule {
  /// One name per rank, for messages and the run summary ("gpu:3" for a target's device,
  /// "rank:3" without a target).
  std::vector<std::string> rank_names;
  /// The rank of every application of the graph.
  std::unordered_map<ir::ApplicationId, std::uint32_t> rank_of;
  std::vector<RankMessage> messages;

  [[nodiscard]] std::uint32_t ranks() const {
    return static_cast<std::uint32_t>(rank_names.size());
  }
};

}  // namespace tapestry::runtime
