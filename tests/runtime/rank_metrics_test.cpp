// Per-rank metrics of an MPI run and their merge (rank_metrics.h).
#include "tapestry/runtime/rank_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tapestry::runtime {
namespace {

using ::testing::HasSubstr;

RankMetrics rank(std::uint32_t r, double wall, std::int64_t flops, std::int64_t sent) {
  RankMetrics m{.rank = r, .name = "rank:" + std::to_string(r)};
  m.run.wall_s = wall;
  m.run.flops = flops;
  m.run.threads = 1;
  m.run.busy_s = wall / 2;
  m.run.applications.push_back({.name = "a" + std::to_string(r),
                                .operation = "Y",
                                .kernel = "relu",
                                .duration_s = wall / 2});
  m.bytes_sent = sent;
  m.wait_s = 0.25;
  m.messages.push_back({.at_s = 0.1, .sent = true, .peer = 1 - r, .bytes = sent, .what = "Z[0:2]"});
  return m;
}

TEST(RankMetrics, MergeTakesTheSlowestWallAndSumsTheRest) {
  const nlohmann::json merged = merge_rank_metrics(
      {rank_metrics_json(rank(0, 2.0, 10, 0)), rank_metrics_json(rank(1, 3.0, 20, 64))});
  EXPECT_EQ(merged["wall_s"], 3.0);
  EXPECT_EQ(merged["flops"], 30);
  EXPECT_EQ(merged["bytes_moved"], 64);
  EXPECT_EQ(merged["wait_s"], 0.5);
  ASSERT_EQ(merged["ranks"].size(), 2u);
  EXPECT_FALSE(merged["ranks"][0].contains("trace"));
  const std::string table = rank_summary_table(merged);
  EXPECT_THAT(table, HasSubstr("2 ranks"));
  EXPECT_THAT(table, HasSubstr("1 rank:1"));
}

// Kernel paths and fallbacks add up over the ranks, and the summary says them as a single
// process's does.
TEST(RankMetrics, MergeSumsKernelPathsAndFallbacks) {
  RankMetrics a = rank(0, 2.0, 10, 0);
  a.run.operations.push_back({.operation = "Y", .kernel = "linear", .applications = 3});
  a.run.operations.back().paths[static_cast<std::size_t>(KernelPath::kOneDnn)] = 3;
  a.run.operations.push_back({.operation = "Z", .kernel = "relu", .applications = 2});
  a.run.operations.back().paths[static_cast<std::size_t>(KernelPath::kVectorised)] = 2;
  RankMetrics b = rank(1, 3.0, 20, 64);
  b.run.operations.push_back({.operation = "Y", .kernel = "linear", .applications = 1});
  b.run.operations.back().paths[static_cast<std::size_t>(KernelPath::kOneDnn)] = 1;
  nlohmann::json merged = merge_rank_metrics({rank_metrics_json(a), rank_metrics_json(b)});
  EXPECT_EQ(merged["paths"], nlohmann::json::parse(R"({"onednn": 4, "vectorised": 2})"));
  EXPECT_EQ(merged["fallbacks"], 0);
  EXPECT_THAT(rank_summary_table(merged),
              HasSubstr("kernel paths: onednn 4, vectorised 2 applications; 0 fallbacks\n"));

  b.run.operations.push_back({.operation = "Z", .kernel = "relu", .applications = 2});
  b.run.operations.back().paths[static_cast<std::size_t>(KernelPath::kReference)] = 2;
  b.run.operations.back().fallbacks = 2;
  a.run.operations[1].fallbacks = 1;
  merged = merge_rank_metrics({rank_metrics_json(a), rank_metrics_json(b)});
  EXPECT_EQ(merged["fallbacks"], 3);
  EXPECT_EQ(merged["fallbacks_by_operation"], nlohmann::json::parse(R"({"Z": 3})"));
  EXPECT_THAT(rank_summary_table(merged),
              HasSubstr("kernel paths: onednn 4, vectorised 2, reference 2 applications; "
                        "fallbacks in Z (3 calls)\n"));
}

TEST(RankMetrics, TraceHasAProcessPerRankAndTheMessages) {
  const nlohmann::json trace = merge_rank_traces(
      {rank_metrics_json(rank(0, 2.0, 10, 0)), rank_metrics_json(rank(1, 3.0, 20, 64))});
  int names = 0;
  int messages = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["name"] == "process_name") {
      ++names;
      EXPECT_EQ(e["args"]["name"], "rank " + std::to_string(e["pid"].get<int>()) +
                                       " (rank:" + std::to_string(e["pid"].get<int>()) + ")");
    }
    if (e.value("cat", "") == "mpi") ++messages;
    if (e["name"] == "a1") EXPECT_EQ(e["pid"], 1);
  }
  EXPECT_EQ(names, 2);
  EXPECT_EQ(messages, 2);
}

}  // namespace
}  // namespace tapestry::runtime
