// Verifying results: what `tapestry run --verify` and `tapestry verify` decide and print.
//
// A result — one buffer per declared graph output, computed by any plan, kernel set, executor,
// process or machine — is judged against the unsharded graph evaluated on the same inputs:
//
//   bound    (default) every float cell lies within its own bar of the float64 oracle:
//            |result − value| ≤ min(λ·sigma, D) (oracle.h derives both per cell from that
//            cell's own computation). Integer cells must be exact. A cell whose float64 value is
//            ±inf or NaN must be the same (NaN, or the infinity of the same sign); one where only
//            the naive float run overflowed must match the naive run. The naive float run itself
//            must lie within the same bars and classes: if it does not, the error model is wrong
//            for this graph and the check FAILs rather than pass blindly. Here the naive run is
//            the unsharded graph with the oracle's kernels (the fast set by default): any float
//            run of it must lie within the bars, and this one costs about the plan's own run.
//   bitwise  every cell bitwise equal to the naive run (reference kernels, no reduction split:
//            the same operations in the same order).
//   exact    every cell equal to the oracle's value (inputs small integers, only sums and
//            products below 2^24: every order gives the same value; see oracle.h). −0 == +0.
//
// Each output's verdict is PASS, FAIL (a cell outside its bar or of the wrong class, or the
// self-check broke) or UNCHECKED: no cell fails, but some cell's bar is not finite (the oracle
// could not bound its error, oracle.h), so a wrong value there would go unseen. UNCHECKED is not
// a pass; UncheckedCells::kAllow (`--allow-unchecked`) turns it into a PASS with a warning —
// unsafe, for graphs whose unbounded cells are known and accepted.
//
//   VerifyReport r = verify_outputs(graph, inputs, results, {.mode = VerifyMode::kBound});
//   fmt::print("{}", r.text());      // PASS   Y: max |Δ| 6.1e-04 vs float64 …
//   r.pass();
//   r.verdict();                     // Verdict::kPass, kFail or kUnchecked
//
// `results` and `inputs` are keyed by the tensors of `graph` (the unsharded graph); a missing
// output is reported as a FAIL naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/oracle.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime {

enum class VerifyMode { kBound, kBitwise, kExact };

/// What cells whose bar is not finite (unchecked cells) make of an output's verdict.
enum class UncheckedCells {
  kFail,   ///< the verdict is UNCHECKED, which is not a pass (the default)
  kAllow,  ///< PASS with a warning in the line (unsafe: a wrong value there passes)
};

enum class Verdict { kPass, kFail, kUnchecked };

/// "PASS", "FAIL", "UNCHECKED".
std::string_view verdict_name(Verdict verdict);

struct VerifyOptions {
  VerifyMode mode = VerifyMode::kBound;
  OracleOptions oracle;
  /// The kernels of the naive run; a set with kernel bodies (body_kernels.h) for graphs that
  /// use them. Null: ExecutableKernels::reference() in bitwise mode (bits are compared), else the
  /// oracle's kernels (fast by default): there the naive run is a float run of the unsharded
  /// graph that must lie within the bars, and the reference kernels' plain loops would cost
  /// more than the run verified (docs/runtime.md, "What verifying costs").
  const ExecutableKernels* naive_kernels = nullptr;
  UncheckedCells unchecked = UncheckedCells::kFail;
};

/// The verdict on one output.
struct OutputVerdict {
  ir::TensorId tensor;
  std::string name;
  Verdict verdict = Verdict::kFail;
  VerifyMode mode = VerifyMode::kBound;
  /// Set when the output could not be compared at all (missing, wrong dtype or shape), or when
  /// the naive run broke its own bar; then `pass` is false.
  std::string problem;
  std::int64_t cells = 0;
  /// Cells outside their bar (bound), differing (bitwise, exact).
  std::int64_t failing_cells = 0;
  /// Cells whose bar is not finite (a denominator that may be 0, an input of unknown error),
  /// and the first of them.
  std::int64_t unchecked_cells = 0;
  std::optional<Point> first_unchecked;
  /// Largest |result − float64 value| over finite cells, and the smallest and largest bar.
  double max_abs_diff = 0;
  double min_bar = 0;
  double max_bar = 0;
  /// The cell with the largest |Δ| / bar, its difference and its bar.
  std::optional<Point> worst_point;
  double worst_diff = 0;
  double worst_bar = 0;
  /// The comparison with the naive float run (absent when it was not run).
  std::optional<BufferComparison> vs_naive;
  /// The kernel whose missing error model made this output's bar a worst case, if any.
  std::string unmodelled;

  [[nodiscard]] bool pass() const { return verdict == Verdict::kPass; }
  /// `PASS   Y: …` / `FAIL   Y: …` / `UNCHECKED Y: 12 of 4096 cells unchecked …`, one line.
  [[nodiscard]] std::string line() const;
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Where a verification spent its wall time: the naive run, the oracle (its operations' value
/// and error rules: `operations`, in the order they ran) and judging the outputs cell by cell
/// (`judge_s`, part of `oracle_s` when the oracle streams its outputs into the judgement).
struct VerifyTiming {
  double naive_s = 0;
  double oracle_s = 0;
  double judge_s = 0;
  std::vector<OperationSeconds> operations;

  /// {"naive_s": …, "oracle_s": …, "judge_s": …, "operations": [{"operation", "kernel",
  /// "seconds"}, …]} with the operations slowest first.
  [[nodiscard]] nlohmann::json to_json() const;
};

struct VerifyReport {
  std::vector<OutputVerdict> outputs;
  double lambda = 8;
  UncheckedCells unchecked = UncheckedCells::kFail;
  /// Filled by the functions below and workflow::verify_run.
  VerifyTiming timing;

  /// Every output PASSes.
  [[nodiscard]] bool pass() const;
  /// FAIL when an output FAILs, else UNCHECKED when one is, else PASS.
  [[nodiscard]] Verdict verdict() const;
  /// Unchecked cells over every output.
  [[nodiscard]] std::int64_t unchecked_cells() const;
  /// One line per output.
  [[nodiscard]] std::string text() const;
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Judges `results` (buffers of `graph`'s outputs, graph_outputs(graph)) against the naive
/// evaluation of `graph` on `inputs` under `options.mode`. Runs the naive executor (its outputs
/// only: NaiveExecutor::run_outputs; kernels: VerifyOptions::naive_kernels) and, for the bound
/// and exact modes, the streaming oracle. Error when `graph` cannot be run.
VerifyReport verify_outputs(const ir::Graph& graph, const BufferMap& inputs,
                            const BufferMap& results, const VerifyOptions& options = {});

/// Bound mode with the oracle streaming its outputs into the judgement (OracleOptions::
/// output_sink): each output's figures are gathered a block at a time as the oracle makes them,
/// so no output's value, σ and D need be whole at once — the same report as evaluating the
/// oracle and judging (verify_outputs below); `naive` holds the naive run's outputs, and
/// `oracle`'s own output_sink, if any, sees every block as well. verify_outputs(graph, inputs,
/// results, options) in bound mode is this, after the naive run.
VerifyReport verify_bound_streaming(const ir::Graph& graph, const BufferMap& inputs,
                                    const BufferMap& results, const BufferMap& naive,
                                    const OracleOptions& oracle, UncheckedCells unchecked);

/// The same, with the naive run and the oracle given (tests, or a caller that computed them
/// already); `naive` may be null (no naive comparison), `oracle` may be null in bitwise mode.
VerifyReport verify_outputs(const ir::Graph& graph, const BufferMap& results, VerifyMode mode,
                            const BufferMap* naive, const Oracle* oracle,
                            UncheckedCells unchecked = UncheckedCells::kFail);

}  // namespace tapestry::runtime
