// Property: the block executor with the fast kernels — what `tapestry run` uses — computes what
// the graph means, at the sizes where the fast kernels' library paths run.
//
// Random graphs at the large scale of random_graphs.h (extents 32–300 beside small ones, every
// built-in kernel family, ≤ 2 M multiply-adds per operation) × random plans (random_plans.h:
// even and uneven splits of every dim, reduction dims included, fusion, decompose-linear; at
// most 8 pieces per dim and 64 per operation) are lowered and run on the BlockExecutor with
// fast_kernels() on 2 or 3 threads, buffers poisoned. Every declared output must pass
// runtime::verify_outputs in bound mode: each cell within its own error bar of the float64
// oracle, integers exact, and the naive float run itself within the same bars (else the error
// model is wrong for the graph, which is a failure too). Each graph gets one input seed, one
// naive run and one oracle, and kPlansPerGraph plans.
//
// A failure prints the input seed, the thread count, the .tap program, the plan JSON and the
// verdict (shrunk by rapidcheck); a crash prints the unshrunk case first. To replay one:
//   tapestry run graph.tap --plan plan.json --seed S --threads T --verify
//
// The counters of fast_kernels.h show that the fast paths ran: fast calls and oneDNN GEMMs
// must both occur over the run, and the totals are printed. ctest runs 100 graphs (~300 runs,
// about 1 s) in the default suite, and `verify_block_properties_long` (label `slow`) 10,000.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <fmt/core.h>
#include <fmt/format.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "rewrite/random_graphs.h"
#include "rewrite/random_plans.h"
#include "rewrite/rewrite_testing.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/runtime/oracle.h"
#include "tapestry/runtime/verify.h"
#include "tapestry/support/error.h"

namespace tapestry {
namespace {

using rewrite::testing::Scale;

/// Statements per graph (sugar such as conv2d's padding adds operations).
constexpr int kMaxOperations = 4;
constexpr int kPlansPerGraph = 3;

/// What the fast kernels did over the whole property run, and which kernels the lowered graphs
/// held (runs per kernel name).
struct Totals {
  std::int64_t graphs = 0, runs = 0, refusals = 0;
  runtime::FastKernelCounts counts;
  std::map<std::string, std::int64_t> kernels;

  void add(const runtime::FastKernelCounts& c) {
    counts.fast_calls += c.fast_calls;
    counts.fallback_calls += c.fallback_calls;
    counts.fused_epilogues += c.fused_epilogues;
    counts.onednn_gemms += c.onednn_gemms;
  }
  [[nodiscard]] std::string summary() const {
    std::vector<std::string> per_kernel;
    for (const auto& [name, n] : kernels) per_kernel.push_back(fmt::format("{} {}", name, n));
    return fmt::format(
        "{} graphs, {} runs ({} documented refusals); fast calls {}, fallbacks {}, oneDNN GEMMs "
        "{}, fused epilogues {}\nruns per kernel: {}\n",
        graphs, runs, refusals, counts.fast_calls, counts.fallback_calls, counts.onednn_gemms,
        counts.fused_epilogues, fmt::join(per_kernel, ", "));
  }
};

std::string reproducer(std::uint64_t seed, int threads, const std::string& tap,
                       const std::string& plan) {
  return fmt::format(
      "reproducer (tapestry run graph.tap --plan plan.json --seed {} --threads {} --verify):\n"
      "--- graph.tap\n{}--- plan.json\n{}\n",
      seed, threads, tap, plan);
}

/// `lowered` run on the block executor with the fast kernels on `threads` threads; the outputs
/// keyed by `graph`'s tensors. Adds what the fast kernels did to `totals`.
runtime::BufferMap run_block(const ir::Graph& graph, const ir::Graph& lowered,
                             const runtime::BufferMap& inputs, int threads, Totals& totals) {
  runtime::BufferMap in;
  for (const auto& [t, b] : inputs)
    in.emplace(runtime::find_tensor(lowered, runtime::tensor_name(graph, t)), b);
  const runtime::BlockExecutor executor(
      lowered, {.threads = threads, .kernels = &runtime::fast_kernels(), .poison = true});
  runtime::reset_fast_kernel_counts();
  runtime::BufferMap out = executor.run(std::move(in));
  totals.add(runtime::fast_kernel_counts());
  runtime::BufferMap results;
  for (ir::TensorId t : runtime::graph_outputs(graph)) {
    results.emplace(
        t, std::move(out.at(runtime::find_tensor(lowered, runtime::tensor_name(graph, t)))));
  }
  return results;
}

/// One graph, its inputs, naive run and oracle, and kPlansPerGraph plans run and judged.
void check_one_graph(Totals& totals) {
  const std::string tap = *rewrite::testing::gen_tap_program(kMaxOperations, Scale::kLarge);
  std::string messages;
  std::optional<ir::Graph> built = rewrite::testing::try_build(tap, &messages);
  if (!built) RC_FAIL("the generator made a program that does not build:\n" + tap + messages);
  // The plan generator outlives this call (rapidcheck re-runs it to shrink): it owns the graph.
  const auto g = std::make_shared<const ir::Graph>(std::move(*built));
  const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1000);
  const runtime::BufferMap inputs = runtime::generate_inputs(*g, {.seed = seed});
  const runtime::BufferMap naive = runtime::NaiveExecutor(*g).run(inputs);
  const runtime::Oracle oracle = runtime::evaluate_oracle(*g, inputs);
  ++totals.graphs;
  for (int i = 0; i < kPlansPerGraph; ++i) {
    const std::string plan_text =
        *rc::gen::exec([g] { return rewrite::testing::random_plan(*g, Scale::kLarge); });
    const int threads = *rc::gen::inRange(2, 4);
    const std::string repro = reproducer(seed, threads, tap, plan_text);
    const rewrite::testing::PrintOnCrash on_crash(repro);
    const rewrite::Plan plan = rewrite::parse_plan(plan_text);
    std::optional<rewrite::LowerResult> lowered;
    try {
      lowered = rewrite::lower(*g, plan);
    } catch (const Error& e) {
      if (rewrite::testing::documented_refusal(e.what())) {
        ++totals.refusals;
        continue;
      }
      RC_FAIL(repro + "lowering failed\n" + e.what());
    }
    std::set<std::string> kernels;
    for (ir::OperationId op : lowered->graph.operations())
      kernels.emplace(lowered->graph.operation(op).kernel());
    for (const std::string& k : kernels) ++totals.kernels[k];
    ++totals.runs;
    try {
      const runtime::BufferMap results = run_block(*g, lowered->graph, inputs, threads, totals);
      const runtime::VerifyReport report =
          runtime::verify_outputs(*g, results, runtime::VerifyMode::kBound, &naive, &oracle);
      if (!report.pass()) RC_FAIL(repro + "--- verdict\n" + report.text());
    } catch (const Error& e) {
      RC_FAIL(repro + "execution failed\n" + e.what());
    }
  }
}

TEST(BlockExecutorProperties, FastKernelsStayWithinTheirBars) {
  Totals totals;
  EXPECT_TRUE(rc::check("block executor + fast kernels within the oracle's bars",
                        [&totals] { check_one_graph(totals); }));
  fmt::print("{}", totals.summary());
  // The fast paths ran, the library GEMMs among them (not only the reference fallbacks).
  EXPECT_GT(totals.counts.fast_calls, 0U) << totals.summary();
  EXPECT_GT(totals.counts.onednn_gemms, 0U) << totals.summary();
}

}  // namespace
}  // namespace tapestry
