// RankMetrics: what one rank of an MPI run measured, and the job-wide report merged from every
// rank's (mpi_executor.h). Ranks send their metrics to rank 0 as JSON (rank_metrics_json), which
// merges them into one `--metrics` report, one Chrome trace with a process (track group) per
// rank, and the run summary.
//
//   RankMetrics mine = executor.run(inputs).metrics;            // on every rank
//   std::vector<std::string> all = session.gather(rank_metrics_json(mine).dump());   // rank 0
//   nlohmann::json report = merge_rank_metrics(parsed(all));     // --metrics
//   nlohmann::json trace = merge_rank_traces(parsed(all));       // --trace
//   fmt::print("{}", rank_summary_table(report));
//
// Times are seconds from the start of the run on each rank; the ranks start together (a barrier
// just before), so their tracks line up to within the barrier's skew (microseconds on one host).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/runtime/run_metrics.h"

namespace tapestry::runtime {

/// One message, as the rank that sent or received it saw it.
struct MessageEvent {
  double at_s = 0;  // when the send was posted / the receive completed
  bool sent = false;
  std::uint32_t peer = 0;
  std::int64_t bytes = 0;
  std::string what;  // "H/linear[0:4096, 2048:4096]"; a collective's: "reduce Y/matmul/reduce"
  bool collective = false;  // a collective completed (at_s), not a message
};

/// One MPI collective the run used in place of point-to-point messages (the same list on every
/// rank): "reduce" / "allreduce" / "allgather", of the reduce application or the tensor `what`.
struct CollectiveRecord {
  std::string kind;
  std::string what;
  std::vector<std::uint32_t> ranks;
  std::int64_t bytes = 0;  // one member's contribution
  bool bitwise = true;     // same bits as the block executor's order
};

struct RankMetrics {
  std::uint32_t rank = 0;
  std::string name;  // the device the rank stands for ("gpu:1", "rank:1")
  RunMetrics run;    // its applications, as the block executor reports them
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
  std::uint32_t messages_sent = 0;
  std::uint32_t messages_received = 0;
  /// Time with no application running and some still to run: waiting for a message.
  double wait_s = 0;
  /// Time the rank's communication thread spent unpacking received boxes into tensors.
  double unpack_s = 0;
  std::vector<MessageEvent> messages;
  std::vector<CollectiveRecord> collectives;
};

/// metrics_json(run) plus rank, name, bytes_sent, bytes_received, messages_sent,
/// messages_received, wait_s, unpack_s, collectives and "trace" (chrome_trace(run) with message
/// events on a "messages" track).
[[nodiscard]] nlohmann::json rank_metrics_json(const RankMetrics& metrics);

/// The job's report from every rank's rank_metrics_json (in rank order): wall_s (the slowest
/// rank), flops (Σ), gflops, bytes_moved (Σ sent), busy_s (Σ), wait_s (Σ), peak_memory_bytes
/// (the largest rank's), fallbacks (Σ), fallbacks_by_operation ({"Y": 2}: operations with any),
/// paths (applications per kernel path, Σ: {"onednn": 6, "vectorised": 4}), collectives (rank
/// 0's list: the job's), ranks (each rank's JSON without its trace).
[[nodiscard]] nlohmann::json merge_rank_metrics(const std::vector<nlohmann::json>& ranks);

/// One Chrome trace of every rank's: rank r is process r, named "rank r (NAME)".
[[nodiscard]] nlohmann::json merge_rank_traces(const std::vector<nlohmann::json>& ranks);

/// The run summary: the job's headline figures, the collectives used ("collectives: 1 reduce
/// (Y/matmul/reduce), 1 allgather (H)" or "collectives: none"), then one line per rank
/// (applications, busy, waiting, bytes sent and received, peak memory).
[[nodiscard]] std::string rank_summary_table(const nlohmann::json& merged);

}  // namespace tapestry::runtime
