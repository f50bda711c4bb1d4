// Helpers for rewrite tests: build graphs from .tap text, and prove a lowering keeps the meaning
// by running the original on the naive executor and the lowered graph on the application
// executor (reference kernels both), comparing every graph output; and what the property tests
// need beyond that: the verifier's bar for a split reduction, the documented refusals, and
// a reproducer printed when an assertion aborts the process.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/graph_copy.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/application_executor.h"
#include "tapestry/runtime/compare.h"
#include "tapestry/runtime/input_generation.h"
#include "tapestry/runtime/naive_executor.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/runtime/verify.h"
#include "tapestry/support/diagnostic.h"

namespace tapestry::rewrite::testing {

/// Each diagnostic as it prints (check_plan's problems, for matching on their text).
inline std::vector<std::string> formatted(const std::vector<support::Diagnostic>& diagnostics) {
  std::vector<std::string> out;
  for (const support::Diagnostic& d : diagnostics) out.push_back(support::format_diagnostic(d));
  return out;
}

/// Builds a .tap program; nullopt (and the diagnostics in `messages`) when it does not build.
inline std::optional<ir::Graph> try_build(std::string_view tap, std::string* messages = nullptr) {
  auto file = std::make_shared<metakernel::SourceFile>("test.tap", std::string(tap));
  metakernel::BuildResult r = metakernel::build_tap(file, metakernel::builtin_signatures());
  if (messages != nullptr) {
    for (const auto& d : r.diagnostics) *messages += d.message + "\n";
  }
  if (!r.ok()) return std::nullopt;
  return std::move(*r.graph);
}

inline ir::Graph build(std::string_view tap) {
  std::string messages;
  std::optional<ir::Graph> g = try_build(tap, &messages);
  if (!g) ADD_FAILURE() << "cannot build:\n" << messages;
  return g ? std::move(*g) : ir::Graph();
}

/// The application executor's run of `lowered` (reference kernels) on the inputs generated with
/// `seed`, its outputs keyed by the tensors of `graph` (matched by name).
inline runtime::BufferMap run_lowered(const ir::Graph& graph, const ir::Graph& lowered,
                                      std::uint64_t seed = 7) {
  runtime::BufferMap sharded =
      runtime::ApplicationExecutor(lowered).run(runtime::generate_inputs(lowered, {.seed = seed}));
  runtime::BufferMap mapped;
  for (ir::TensorId t : runtime::graph_outputs(graph)) {
    ir::TensorId in_lowered = runtime::find_tensor(lowered, runtime::tensor_name(graph, t));
    mapped.emplace(t, std::move(sharded.at(in_lowered)));
  }
  return mapped;
}

/// Naive run of `graph` vs application run of `lowered`, outputs matched by name.
inline runtime::TensorsComparison run_both(const ir::Graph& graph, const ir::Graph& lowered,
                                           std::uint64_t seed = 7) {
  runtime::BufferMap naive =
      runtime::NaiveExecutor(graph).run(runtime::generate_inputs(graph, {.seed = seed}));
  return runtime::compare_tensors(graph, naive, run_lowered(graph, lowered, seed));
}

/// The bar `tapestry run --verify` holds results to when they cannot be bitwise equal (a split
/// reduction re-associates sums): `results` (outputs of `graph`, computed from the inputs
/// generated with `seed`) judged by runtime::verify_outputs in bound mode — every float cell
/// within its own error bar of the float64 oracle, integers exact, and the naive run within the
/// same bars (docs/runtime.md, "How --verify decides"). `.pass()`; `.text()` says why not.
inline runtime::VerifyReport within_documented_bound(const ir::Graph& graph,
                                                     const runtime::BufferMap& results,
                                                     std::uint64_t seed = 7) {
  return runtime::verify_outputs(graph, runtime::generate_inputs(graph, {.seed = seed}), results,
                                 {.mode = runtime::VerifyMode::kBound});
}

/// Refusals docs/rewrites.md documents as by design: a pattern and a substring of its reason.
/// Only these may make a plan that splits a reduction dim fail to lower.
struct DocumentedRefusal {
  std::string_view pattern;
  std::string_view reason;
};
inline constexpr DocumentedRefusal kDocumentedRefusals[] = {
    // An uneven `min` split: there is no elementwise `minimum` kernel to combine the partials.
    {"split-reduction", "no elementwise kernel combines 'min' partials"},
};

/// shard-grid refusals docs/rewrites.md documents (a substring of the error).
inline constexpr std::string_view kDocumentedShardGridRefusals[] = {
    // A cut of an inner dim of a reshape merge: a shard would write scattered cells, no box.
    "would make a shard write scattered cells",
};

/// When lowering failed with `error`: the error itself when every problem it lists is a
/// documented refusal — shard-grid refusing a cut for a documented reason, or a rewrite refusing
/// a reduction split for one (`lower` names the refusal behind a cut it cannot make) — else
/// nullopt (a bug).
inline std::optional<std::string> documented_refusal(std::string_view error) {
  constexpr std::string_view kHead = "the plan cannot be carried out:\n";
  if (!error.starts_with(kHead)) return std::nullopt;
  std::string_view rest = error.substr(kHead.size());
  while (!rest.empty()) {
    const std::size_t end = std::min(rest.find('\n'), rest.size());
    const std::string_view problem = rest.substr(0, end);
    rest = rest.substr(std::min(end + 1, rest.size()));
    bool documented = false;
    for (std::string_view d : kDocumentedShardGridRefusals) {
      documented |= problem.find(d) != std::string_view::npos;
    }
    for (const DocumentedRefusal& d : kDocumentedRefusals) {
      const std::string refusal = std::string(d.pattern) + " refused: " + std::string(d.reason);
      documented |= problem.find(refusal) != std::string_view::npos;
    }
    if (!documented) return std::nullopt;
  }
  return std::string(error);
}

/// While alive, a crash — a failed TAPESTRY_ASSERT (abort), or a kernel reading out of bounds
/// (SIGSEGV, SIGBUS), which no test framework reports — first prints `text`, the reproducer of
/// the case being run, to stderr.
class PrintOnCrash {
 public:
  explicit PrintOnCrash(std::string text) : text_(std::move(text)) {
    current() = &text_;
    for (std::size_t i = 0; i < std::size(kSignals); ++i)
      previous_[i] = std::signal(kSignals[i], &PrintOnCrash::handle);
  }
  ~PrintOnCrash() {
    for (std::size_t i = 0; i < std::size(kSignals); ++i) std::signal(kSignals[i], previous_[i]);
    current() = nullptr;
  }
  PrintOnCrash(const PrintOnCrash&) = delete;
  PrintOnCrash& operator=(const PrintOnCrash&) = delete;

 private:
  static constexpr int kSignals[] = {SIGABRT, SIGSEGV, SIGBUS};

  static const std::string*& current() {
    static const std::string* text = nullptr;
    return text;
  }
  static void handle(int signal) {  // async-signal-safe: write(2), signal, raise
    if (const std::string* text = current()) {
      constexpr std::string_view kHead = "\n*** crashed; the (unshrunk) case:\n";
      (void)!::write(STDERR_FILENO, kHead.data(), kHead.size());
      (void)!::write(STDERR_FILENO, text->data(), text->size());
    }
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }

  std::string text_;
  void (*previous_[std::size(kSignals)])(int) = {};
};

inline std::size_t count_kernel(const ir::Graph& g, std::string_view kernel) {
  std::size_t n = 0;
  for (ir::OperationId op : g.operations()) n += g.operation(op).kernel() == kernel;
  return n;
}

inline bool has_tensor_labelled(const ir::Graph& g, std::string_view label) {
  for (ir::TensorId t : g.tensors()) {
    if (g.tensor(t).label() == label) return true;
  }
  return false;
}

}  // namespace tapestry::rewrite::testing
