// Rewrite patterns over operation graphs, and the driver that runs them to a fixed point.
//
// A pattern first *matches* (pure: it reads the state and returns why not on failure), then
// *applies* (it rewrites the state). Nothing mutates before a match succeeds (MLIR's
// notifyMatchFailure contract). Every pattern has a stable dash-case name (`split-reduction`,
// `decompose-linear`, `fuse-elementwise`) that plans, logs and `--explain` use.
//
// The state is the operation graph *and* the plan: a rewrite that replaces operation `Y` by
// `Y/matmul` and `Y` carries `Y`'s splits over to both, so the plan keeps naming what the
// graph holds. New operations get names no operation or tensor of the graph has
// (fresh_names.h), and the state remembers which operation of the plan each comes from, so a
// refusal or an error names the operation the plan named.
//
//   RewriteState state{graph, plan};
//   std::vector<RewriteEvent> log = run_patterns(state, default_patterns(), {});
//   for (const RewriteEvent& e : log) fmt::print("{}\n", e.to_string());
//   // applied  decompose-linear on Y: Y -> Y/matmul + Y (bias_add)
//   // skipped  fuse-elementwise on H/linear: H/linear's output is also read by Z
#pragma once

#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::rewrite {

struct RewriteState {
  ir::Graph graph;
  Plan plan;
  /// Kernels that rewrites instantiate (reduce, matmul, bias_add, transpose): the built-ins
  /// unless the caller loaded more.
  const metakernel::SignatureRegistry* signatures = &metakernel::builtin_signatures();
  /// For each operation a rewrite added: the operation of the original graph it comes from, by
  /// the name the plan uses for it. Original operations are not listed.
  std::map<std::string, std::string, std::less<>> origins;

  /// The original operation `name` comes from (`name` itself for an original operation).
  [[nodiscard]] std::string origin(std::string_view name) const;
  /// Records that operation `name`, added by a rewrite, comes from operation `from`.
  void derive(const std::string& name, std::string_view from);
};

/// The outcome of a match: success, or the reason it does not apply. `requested` marks failures
/// of something the plan asked for (shown by --explain); other failures ("not a linear") are
/// not worth showing.
struct MatchResult {
  bool matched = false;
  bool requested = false;
  std::string reason;

  static MatchResult success() { return {true, true, {}}; }
  /// The plan asked for this rewrite, but it cannot apply here.
  static MatchResult refuse(std::string reason) { return {false, true, std::move(reason)}; }
  /// The rewrite is not relevant here.
  static MatchResult skip(std::string reason) { return {false, false, std::move(reason)}; }
  explicit operator bool() const { return matched; }
};

/// A pattern is *local*, which lets the driver re-match only around a rewrite:
/// * match(state, op) reads only `op`, the tensors it reads and writes, the operations that
///   read its outputs, and the plan entries and fusion groups named after these operations;
/// * apply(state, op) changes plan entries and fusion groups only under the names of the
///   operations it removes or adds, and never edits a node it does not remove (tensors and
///   operations are immutable once added; a rewrite replaces them).
class OperationPattern {
 public:
  virtual ~OperationPattern() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  /// Pure: does this pattern rewrite `op` in `state`?
  [[nodiscard]] virtual MatchResult match(const RewriteState& state, ir::OperationId op) const = 0;
  /// Rewrites `state` at `op` and returns a one-line summary. Precondition: match() succeeded.
  /// The graph is edited in place: operations and tensors that go are ir::Graph::remove'd.
  virtual std::string apply(RewriteState& state, ir::OperationId op) const = 0;
};

struct RewriteEvent {
  std::string pattern;
  std::string target;  // the operation's name when the pattern was tried
  std::string origin;  // the name the plan used for it (RewriteState::origin)
  bool applied = false;
  std::string detail;  // the summary when applied, the reason when refused

  [[nodiscard]] std::string to_string() const;
};

struct DriverOptions {
  /// Upper bound on applied rewrites: a guard against patterns that undo each other.
  int max_rewrites = 100000;
  /// Pattern names not to run.
  std::set<std::string, std::less<>> disabled;
  /// Remember that a pattern did not match an operation until a rewrite touches the operation's
  /// surroundings (see run_patterns). Off: every pass re-matches every operation — the plain
  /// definition, slower by a factor of the graph's size, kept to test the two against each other.
  bool reuse_matches = true;
};

/// Runs `patterns` in order: the first pattern that matches any operation (in graph order) is
/// applied, then matching restarts from the first pattern, until nothing matches. Returns the
/// applied rewrites and the refusals (MatchResult::requested). Error when the cap is reached.
///
/// In time linear in the graph plus the rewrites' own work: a (pattern, operation) that did not
/// match is not asked again until a rewrite removes or adds an operation next to one of its
/// tensors or with its name (patterns are local, above); and the rewrites edit the graph in
/// place, which is copied once at the end without the removed nodes — in the order a copy after
/// every rewrite would give: tensors, then operations, then the last rewrite's nodes as it added
/// them.
std::vector<RewriteEvent> run_patterns(RewriteState& state,
                                       std::span<const OperationPattern* const> patterns,
                                       const DriverOptions& options);

}  // namespace tapestry::rewrite
