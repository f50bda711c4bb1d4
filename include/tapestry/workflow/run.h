// Running a graph under a plan, and verifying the run: the steps `tapestry run` (in one process
// and under MPI) and Python's Graph.run share, one function each, in the order they are taken:
//
//   1. lower_for_run  the graph lowered under the plan; the LowerResult maps the graph's tensors
//                     to the lowered graph's and says whether a reduction was split
//   2. verify_mode    which comparison a verification makes: bitwise with the naive run for the
//                     reference kernels without a reduction split, else within the float64
//                     oracle's bars, or exact (the rule is written here only)
//   3. check_memory   the run and its verification fit (--memory-limit, physical memory), checked
//                     before any input is read or generated
//   4. exact_oracle   VerifyCheck::kExact: the oracle, made before the run, or an Error saying
//                     why the graph or its inputs cannot be verified exactly
//   5. lowered_inputs the inputs re-keyed onto the lowered graph; the caller's executor runs it
//   6. graph_results  the run's outputs keyed by the graph's tensors
//   7. verify_run     the naive run of the unsharded graph, the oracle, and the report
//
// The caller keeps what differs between them: where inputs come from (files, generated, NumPy
// arrays, boxes per MPI rank), which executor runs, what is printed or raised.
//
//   const rewrite::LowerResult lowered = lower_for_run(graph, plan, {});
//   const RunChoices choices{.verify = VerifyCheck::kBound, .reference_kernels = true};
//   check_memory(graph, lowered, choices, {.limit_bytes = 0, .block_executor = true});
//   const runtime::BufferMap inputs = runtime::generate_inputs(graph, {.seed = 0});
//   runtime::BufferMap out = runtime::BlockExecutor(lowered.graph, {.kernels =
//       &runtime::ExecutableKernels::reference()}).run(lowered_inputs(lowered, inputs));
//   const runtime::BufferMap results = graph_results(graph, lowered, std::move(out));
//   const runtime::VerifyReport report = verify_run(graph, inputs, results,
//       {.mode = verify_mode(choices, lowered), .unchecked = runtime::UncheckedCells::kFail});
//   report.text()   // "PASS   Y: bitwise equal to the naive run …" (kBitwise: no reduction split)
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/oracle.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/runtime/verify.h"

namespace tapestry::workflow {

/// What the caller asked a run to verify: nothing, `--verify` (bitwise or within the bars: see
/// verify_mode) or `--verify=exact`.
enum class VerifyCheck { kNone, kBound, kExact };

/// The caller's choices the steps follow from.
struct RunChoices {
  VerifyCheck verify = VerifyCheck::kNone;
  bool reference_kernels = false;  // the run uses the reference kernels (else the fast ones)
};

struct LowerForRun {
  const metakernel::SignatureRegistry* signatures = &metakernel::builtin_signatures();
  /// Check operation-kernel-agreement on the result (off for `--trust-ipfs`).
  bool check_kernels = true;
};

/// Step 1: `graph` lowered under `plan`, validated. Error when the plan does not fit (lower.h).
rewrite::LowerResult lower_for_run(const ir::Graph& graph, const rewrite::Plan& plan,
                                   const LowerForRun& options);

/// Step 2: the comparison a verification makes. Bitwise with the naive run when the run used
/// the reference kernels and no reduction was split (the same operations in the same order), else
/// each cell within its bar of the float64 oracle; kExact stays exact.
/// Precondition: choices.verify is not kNone.
runtime::VerifyMode verify_mode(const RunChoices& choices, const rewrite::LowerResult& lowered);

/// The verification builds the float64 oracle (every mode but bitwise; none without verifying).
bool verify_needs_oracle(const RunChoices& choices, const rewrite::LowerResult& lowered);

struct MemoryLimits {
  std::int64_t limit_bytes = 0;  // bounds the plan's peak (block executor); 0: no limit
  bool block_executor = true;    // false: the application executor
};

/// Step 3: the run of `lowered` and the verification `choices` ask for fit (runtime::
/// check_run_memory). Error naming the part that does not.
void check_memory(const ir::Graph& graph, const rewrite::LowerResult& lowered,
                  const RunChoices& choices, const MemoryLimits& limits);

/// Step 4: the float64 oracle of `graph` on `inputs` for an exact verification, made before the
/// run so that a graph or inputs that cannot be exact are refused before any work: Error
/// "<option> does not apply: <reason>" (`option` as the caller spells it, e.g. --verify=exact).
/// `kernels`: the oracle's (null: the fast set).
runtime::Oracle exact_oracle(const ir::Graph& graph, const runtime::BufferMap& inputs,
                             const runtime::ExecutableKernels* kernels, std::string_view option);

/// Step 5: `buffers` of the graph's tensors keyed by the same tensors of the lowered graph, moved
/// (a borrowing buffer keeps borrowing; pass a copy to keep the inputs for verify_run). Asserts
/// that lowering kept every one.
runtime::BufferMap lowered_inputs(const rewrite::LowerResult& lowered, runtime::BufferMap buffers);

/// Step 5 without a copy: views borrowing `inputs` (runtime::Buffer::borrow; executors never
/// write their inputs), keyed by the lowered graph's tensors, for a run whose inputs are kept
/// for verify_run — a model's weights are not copied (ViT-B/16: 344 MB). `inputs` must outlive
/// the run and the buffers it returns (an output that is an input is one of these views).
runtime::BufferMap lowered_input_views(const rewrite::LowerResult& lowered,
                                       const runtime::BufferMap& inputs);

/// Step 6: the buffers of `graph`'s outputs (runtime::graph_outputs) taken from a run of the
/// lowered graph, keyed by `graph`'s tensors; an output the run did not produce is left out
/// (the verification reports it missing).
runtime::BufferMap graph_results(const ir::Graph& graph, const rewrite::LowerResult& lowered,
                                 runtime::BufferMap&& run_buffers);

struct VerifyRun {
  runtime::VerifyMode mode = runtime::VerifyMode::kBound;
  runtime::UncheckedCells unchecked = runtime::UncheckedCells::kFail;
  /// The kernels of the naive run where bits are compared (null: the built-in reference set).
  const runtime::ExecutableKernels* reference = nullptr;
  /// The oracle's kernels, and the naive run's where bits are not compared (null: the built-in
  /// fast set). Sets with kernel bodies (body_kernels.h) for graphs that use user kernels.
  const runtime::ExecutableKernels* fast = nullptr;
  /// The threads of the naive run and the oracle: the process's arena of that many threads, the
  /// run's own (runtime::run_on_threads; 0: one per hardware thread, as the run's default). The
  /// numbers do not depend on it (operation_blocks.h).
  int threads = 0;
  /// The run's float32 contractions used TF32 (`--device cuda --tf32`): the oracle's bars count
  /// the operands' rounding (runtime::OracleOptions::tf32_products).
  bool tf32 = false;
};

/// Step 7: `results` (keyed by `graph`'s outputs) judged against the naive run of `graph` on
/// `inputs` (verify.h). The bound and exact modes use `oracle` when given (exact_oracle), else
/// make it after the naive run, once the float blocks the runs freed are given back. Error when
/// an exact verification does not apply.
runtime::VerifyReport verify_run(const ir::Graph& graph, const runtime::BufferMap& inputs,
                                 const runtime::BufferMap& results, const VerifyRun& options,
                                 std::optional<runtime::Oracle> oracle = std::nullopt);

}  // namespace tapestry::workflow
