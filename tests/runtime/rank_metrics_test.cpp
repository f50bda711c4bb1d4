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
