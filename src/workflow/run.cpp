#include "tapestry/workflow/run.h"

#include <fmt/core.h>

#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/memory_budget.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/support/stopwatch.h"

namespace tapestry::workflow {

rewrite::LowerResult lower_for_run(const ir::Graph& graph, const rewrite::Plan& plan,
                                   const LowerForRun& options) {
  return rewrite::lower(graph, plan,
                        {.driver = {},
                         .validate = true,
                         .check_kernels = options.check_kernels,
                         .signatures = options.signatures});
}

runtime::VerifyMode verify_mode(const RunChoices& choices, const rewrite::LowerResult& lowered) {
  TAPESTRY_ASSERT(choices.verify != VerifyCheck::kNone, "a verify mode of no verification");
  if (choices.verify == VerifyCheck::kExact) return runtime::VerifyMode::kExact;
  return choices.reference_kernels && !lowered.reduction_split ? runtime::VerifyMode::kBitwise
                                                               : runtime::VerifyMode::kBound;
}

bool verify_needs_oracle(const RunChoices& choices, const rewrite::LowerResult& lowered) {
  return choices.verify != VerifyCheck::kNone &&
         verify_mode(choices, lowered) != runtime::VerifyMode::kBitwise;
}

void check_memory(const ir::Graph& graph, const rewrite::LowerResult& lowered,
                  const RunChoices& choices, const MemoryLimits& limits) {
  runtime::check_run_memory(graph, lowered.graph,
                            {.limit_bytes = limits.limit_bytes,
                             .block_executor = limits.block_executor,
                             .verify = choices.verify != VerifyCheck::kNone,
                             .oracle = verify_needs_oracle(choices, lowered)});
}

runtime::Oracle exact_oracle(const ir::Graph& graph, const runtime::BufferMap& inputs,
                             const runtime::ExecutableKernels* kernels, std::string_view option) {
  runtime::Oracle oracle = runtime::evaluate_oracle(graph, inputs, {.kernels = kernels});
  if (!oracle.exact_reason.empty())
    throw Error(fmt::format("{} does not apply: {}", option, oracle.exact_reason));
  return oracle;
}

runtime::BufferMap lowered_inputs(const rewrite::LowerResult& lowered, runtime::BufferMap buffers) {
  runtime::BufferMap out;
  for (auto& [t, buffer] : buffers) out.emplace(lowered.lowered(t), std::move(buffer));
  return out;
}

runtime::BufferMap lowered_input_views(const rewrite::LowerResult& lowered,
                                       const runtime::BufferMap& inputs) {
  runtime::BufferMap out;
  for (const auto& [t, b] : inputs) {
    out.emplace(lowered.lowered(t),
                runtime::Buffer::borrow(b.dtype(), b.range(),
                                        const_cast<std::byte*>(b.bytes())));  // NOLINT: only read
  }
  return out;
}

runtime::BufferMap graph_results(const ir::Graph& graph, const rewrite::LowerResult& lowered,
                                 runtime::BufferMap&& run_buffers) {
  runtime::BufferMap out;
  for (ir::TensorId t : runtime::graph_outputs(graph)) {
    auto found = run_buffers.find(lowered.lowered(t));
    if (found != run_buffers.end()) out.emplace(t, std::move(found->second));
  }
  return out;
}

namespace {

runtime::VerifyReport verify_on_this_arena(const ir::Graph& graph, const runtime::BufferMap& inputs,
                                           const runtime::BufferMap& results,
                                           const VerifyRun& options,
                                           std::optional<runtime::Oracle> oracle) {
  // The naive run: the reference kernels where bits are compared, else the fast ones (a float
  // run of the unsharded graph, checked against the bars like the result: verify.h).
  const runtime::ExecutableKernels& naive_kernels =
      options.mode == runtime::VerifyMode::kBitwise
          ? (options.reference ? *options.reference : runtime::ExecutableKernels::reference())
          : (options.fast ? *options.fast : runtime::fast_kernels());
  double naive_s = 0;
  const runtime::BufferMap naive = [&] {
    const Stopwatch running(naive_s);
    return runtime::NaiveExecutor(graph, naive_kernels).run_outputs(inputs);
  }();
  // The blocks the runs freed stay in buffer.h's cache: the oracle's buffers take pieces of them.
  double oracle_s = 0;
  if (options.mode == runtime::VerifyMode::kExact && !oracle) {
    const Stopwatch evaluating(oracle_s);
    oracle = exact_oracle(graph, inputs, options.fast, "exact verification");
  }
  // Bound mode: the oracle hands each output to the judgement as it makes it, a block at a time
  // where a chain makes it (verify.h), so no output is held whole in float64.
  runtime::VerifyReport report;
  if (options.mode == runtime::VerifyMode::kBound && !oracle) {
    report = runtime::verify_bound_streaming(
        graph, inputs, results, naive, {.kernels = options.fast, .tf32_products = options.tf32},
        options.unchecked);
  } else {
    double judge_s = 0;
    {
      const Stopwatch judging(judge_s);
      report = runtime::verify_outputs(graph, results, options.mode, &naive,
                                       oracle ? &*oracle : nullptr, options.unchecked);
    }
    report.timing.oracle_s = oracle_s;
    report.timing.judge_s = judge_s;
  }
  report.timing.naive_s = naive_s;
  return report;
}

}  // namespace

runtime::VerifyReport verify_run(const ir::Graph& graph, const runtime::BufferMap& inputs,
                                 const runtime::BufferMap& results, const VerifyRun& options,
                                 std::optional<runtime::Oracle> oracle) {
  // On the run's threads: the naive run's and the oracle's kernels run as blocks of rows there
  // (operation_blocks.h), their cell loops in chunks (error_rules.h's for_cells).
  std::optional<runtime::VerifyReport> report;
  runtime::run_on_threads(options.threads, [&] {
    report = verify_on_this_arena(graph, inputs, results, options, std::move(oracle));
  });
  return std::move(*report);
}

}  // namespace tapestry::workflow
