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

#include "tapestry/ir/dialect.h"
#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/support/diagnostic.h"

namespace tapestry::rewrite {

/// An operation a rewrite added under a name of its own (not one replacing an operation under
/// the replaced one's name): what `tapestry plan --plan` lists and a plan may name.
struct DerivedOperation {
  std::string name;
  std::string kernel;
  std::string origin;   // the operation of the plan it comes from
  std::string pattern;  // the rewrite that added it
  std::vector<std::string> dims;
  std::vector<std::int64_t> extents;
  std::vector<std::optional<ir::Monoid>> reductions;
  std::map<std::string, std::string> aliases;  // dim_aliases.h, when it was added
  OpPlan plan;         // the plan it got: the plan's entry for it, else the rewrite's default
  bool named = false;  // the plan has an entry for it
};

/// What the pipeline pass (pipeline.h) hands on to the schedule it writes after shard-grid.
struct PipelineState {
  std::size_t stages = 0;
  std::int64_t microbatches = 1;
  std::string schedule;  // "1f1b" or "gpipe"
  /// By operation name (as the pass left the graph): its stage, and whether it is microbatched
  /// and of the backward pass (it depends on the gradient seed).
  struct Op {
    std::size_t stage = 0;
    bool microbatched = false;
    bool backward = false;
  };
  std::map<std::string, Op, std::less<>> ops;
  /// By tensor key: the batch dim of a tensor the microbatches cut, and its extent.
  std::map<std::string, std::pair<std::size_t, std::int64_t>, std::less<>> batched;
};

struct RewriteState {
  ir::Graph graph;
  /// The plan, naming the graph's operations (entries of operations the rewrites replace follow
  /// them; see each rewrite).
  Plan plan;
  /// Kernels that rewrites instantiate (reduce, linear_nobias, bias_add, add): the built-ins
  /// unless the caller loaded more.
  const metakernel::SignatureRegistry* signatures = &metakernel::builtin_signatures();
  /// For each operation a rewrite added: the operation of the original graph it comes from, by
  /// the name the plan uses for it. Original operations are not listed.
  std::map<std::string, std::string, std::less<>> origins;
  /// The plan's entries for operations the graph does not have yet, by name (plan.h, derived
  /// entries): the rewrite that adds an operation of that name takes its entry (plan_of_new).
  std::map<std::string, OpPlan, std::less<>> derived_entries;
  /// Every operation added under a name of its own, in order.
  std::vector<DerivedOperation> derived;
  /// Problems of the plan only the rewrites can find: a derived entry that does not fit the
  /// operation of its name, or (rewrite_operations adds these) that names an operation no
  /// rewrite added. lower() reports them as check_plan's; the rewrites carry on meanwhile.
  std::vector<support::Diagnostic> problems;
  /// Ordering edges (ir/ordering.h) by operation name: the keys of the tensors it starts after.
  /// The recompute pass sets them on the copies it makes (recompute.h); derive() hands them on
  /// to what a rewrite makes of such an operation, and rewrite_operations writes them into the
  /// final graph.
  std::map<std::string, std::vector<std::string>, std::less<>> after;
  /// The keys of every tensor some operation starts after: fuse-elementwise keeps each of them
  /// (a fusion that drops one would leave the edge pointing at nothing).
  std::set<std::string, std::less<>> ordering_tensors;
  /// Set by the pipeline pass (pipeline.h): the stages and roles its schedule needs.
  std::optional<PipelineState> pipeline;
  /// Every name the rewrites took from FreshNames (fresh_names.h), in order, and whether it was
  /// not the base asked for (`Y/matmul.2` for `Y/matmul`): the incremental rewrites
  /// (incremental.h) reuse a component's rewrites only when no name depended on another's.
  struct TakenName {
    std::string name;
    bool renamed = false;
  };
  std::vector<TakenName> taken_names;

  /// The original operation `name` comes from (`name` itself for an original operation).
  [[nodiscard]] std::string origin(std::string_view name) const;
  /// Records that operation `name`, added by a rewrite, comes from operation `from` (and hands
  /// `from`'s ordering edges on to it).
  void derive(const std::string& name, std::string_view from);
  /// The plan of operation `op`, just added by `pattern` under a name of its own (a FreshNames
  /// name): the plan's derived entry of that name when there is one (checked against `op`, its
  /// dims resolved; a problem is recorded in `problems` and `fallback` used), else `fallback`,
  /// the rewrite's default. Records `op` in `derived` (and its origin, as derive() does, from
  /// `from`).
  OpPlan plan_of_new(ir::OperationId op, std::string_view from, std::string_view pattern,
                     OpPlan fallback);
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
///   operations it removes or adds and of the operations reading a tensor an added operation
///   writes (split-reduction gives its combine's plan to the bias_add that reads it), and never
///   edits a node it does not remove (tensors and operations are immutable once added; a
///   rewrite replaces them).
///
/// A pattern is also *blind to counts and devices*, which lets the cost model rewrite once for
/// every plan of a class (cost::Evaluator, by symbolic.h): match and apply may read
/// * of a count of a dim that is not a reduction: only whether it is 1 and whether it equals
///   another count of the plan (`cs != 1 && cs != ps`) — never its size, its order against
///   another count or the extent, nor arithmetic on it. They may copy it into the plan entry of
///   an operation they add. Under cost::Evaluator such a count is a symbol (2^40 + k) that
///   stands for every value of its class;
/// * of a reduction dim's count, and of any count of a derived entry (plan.h) or equal to one
///   of these: anything (they are exact under cost::Evaluator, and in its memo key);
/// * of a place list: only whether it is empty; they may copy it (it is one marker naming its
///   entry under cost::Evaluator), never read its devices;
/// * names, substitutions, fusion groups, meshes, colocations and the graph: anything.
/// A pattern that reads more is priced wrong without a word — the search prices plans by the
/// first plan of their class. tests/rewrite/symbolic_test.cpp checks every pattern of
/// default_patterns() (rewriting symbolically then substituting the counts and place lists back
/// must give what rewriting the concrete plan gives): a new pattern goes in that test.
class OperationPattern {
 public:
  virtual ~OperationPattern() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  /// Pure: does this pattern rewrite `op` in `state`?
  [[nodiscard]] virtual MatchResult match(const RewriteState& state, ir::OperationId op) const = 0;
  /// Rewrites `state` at `op` and returns a one-line summary. Precondition: match() succeeded.
  /// The graph is edited in place: operations and tensors that go are ir::Graph::remove'd.
  virtual std::string apply(RewriteState& state, ir::OperationId op) const = 0;
  /// Whether this pattern may *act across* the edge `producer` → `consumer` of an input graph
  /// (`consumer` reads `t`, which `producer` writes): whether a match or apply of it, at an
  /// operation that descends from one of the two (or from what the other rewrites make of them),
  /// may read or change the other's plan entry, name or nodes. Every pattern states it, on the
  /// graph as it is *before* any rewrite, so that what the patterns do at one operation is
  /// confined to its *rewrite component* (rewrite_components, incremental.h): the operations
  /// joined by the edges some pattern may act across. Answer true when unsure: a coarser
  /// partition is only slower. decompose-linear acts at one operation (false everywhere);
  /// split-reduction plans its combine from the readers of the split operation's outputs (true
  /// when `producer` has a reduction dim); fuse-elementwise joins a producer to a consumer with
  /// no reduction, or to a linear reading `t` as its bias (decompose-linear leaves a bias_add
  /// there). tests/rewrite/incremental_test.cpp checks every applied rewrite of random graphs and
  /// plans against the partition.
  [[nodiscard]] virtual bool may_act_across(const ir::Graph& graph, ir::OperationId producer,
                                            ir::TensorId t, ir::OperationId consumer) const = 0;
};

struct RewriteEvent {
  std::string pattern;
  std::string target;  // the operation's name when the pattern was tried
  std::string origin;  // the name the plan used for it (RewriteState::origin)
  bool applied = false;
  std::string detail;  // the summary when applied, the reason when refused

  [[nodiscard]] std::string to_string() const;
};

/// Time one pass of lowering took (lower.h's pipeline): a pattern's matches and rewrites
/// together, or one of lower's own steps. `tapestry shard --time-passes` prints them.
struct PassTime {
  std::string pass;       // "check-plan", a pattern's name, "shard-grid", "validate"
  double seconds = 0;     // wall time, summed over the pass's work
  std::int64_t work = 0;  // rewrites applied (a pattern), operations cut (shard-grid)
};

/// Whether lower verifies the graph after every rewrite (DriverOptions::verify_each): in debug
/// builds (no NDEBUG), as the sanitizer suite builds; off in release, where the result is
/// validated once at the end.
#if defined(NDEBUG)
inline constexpr bool kVerifyEachRewrite = false;
#else
inline constexpr bool kVerifyEachRewrite = true;
#endif

struct DriverResume;
struct DriverTrace;

struct DriverOptions {
  /// Upper bound on applied rewrites: a guard against patterns that undo each other.
  int max_rewrites = 100000;
  /// Pattern names not to run.
  std::set<std::string, std::less<>> disabled;
  /// Remember that a pattern did not match an operation until a rewrite touches the operation's
  /// surroundings (see run_patterns). Off: every pass re-matches every operation — the plain
  /// definition, slower by a factor of the graph's size, kept to test the two against each other.
  bool reuse_matches = true;
  /// When set, every pattern's time (matches and rewrites) and rewrite count are added to it,
  /// one entry per pattern, in pattern order.
  std::vector<PassTime>* times = nullptr;
  /// When set, the graph is validated in this dialect after every rewrite, and a rewrite that
  /// leaves it invalid is an internal error (std::logic_error) naming the rewrite and the
  /// operation — where the bug is, not at the end of the pipeline. lower() sets it in debug
  /// builds (kVerifyEachRewrite).
  const ir::Dialect* verify_each = nullptr;
  /// When set, the driver resumes a run instead of starting one (incremental.h).
  const DriverResume* resume = nullptr;
  /// When set, the driver records where every node and rewrite came from (DriverTrace).
  DriverTrace* trace = nullptr;
};

/// Where the nodes of the graph a driver run leaves come from, for the incremental rewrites
/// (incremental.h): by node index of the result, `input` — the node of the input graph it is
/// (an original node the rewrites kept), -1 for a node a rewrite added — and `root`, the
/// operation of the input graph it descends from (canonical_order's groups; an original node's
/// own index). By event of the returned log, the input operation the rewrite or refusal was at
/// (its root); by name of RewriteState::taken_names the driver saw taken, likewise.
struct DriverTrace {
  std::vector<std::int64_t> input;
  std::vector<std::uint32_t> root;
  std::vector<std::uint32_t> event_root;
  std::vector<std::uint32_t> name_root;
};

/// A run of the driver resumed on a graph assembled from parts (incremental.h): per node of the
/// state's graph, its input id (-1: added by a rewrite) and root, as DriverTrace says them; the
/// operations no pattern matches any more (`settled`, by node index: skipped until a rewrite
/// touches their surroundings); and the refusals already logged, by (pattern, operation name).
struct DriverResume {
  std::vector<std::int64_t> input;
  std::vector<std::uint32_t> root;
  std::vector<char> settled;
  std::set<std::pair<std::string, std::string>> refused;
};

/// Runs `patterns` in order: the first pattern that matches any operation (in graph order) is
/// applied, then matching restarts from the first pattern, until nothing matches. Returns the
/// applied rewrites and the refusals (MatchResult::requested). Error when the cap is reached.
///
/// In time linear in the graph plus the rewrites' own work: a (pattern, operation) that did not
/// match is not asked again until a rewrite removes or adds an operation next to one of its
/// tensors or with its name (patterns are local, above); and the rewrites edit the graph in
/// place, which is copied once at the end without the removed nodes, in a canonical order that
/// does not depend on the order the rewrites ran in: the tensors (and other non-operation nodes)
/// the graph had, in id order, then the added ones, then the operations it had, in id order, then
/// the added ones; the added nodes grouped by the operation of the input they descend from (a
/// rewrite's nodes descend from the operation it rewrote, a fusion's from the producer), the
/// groups in the input's order, each in the order its nodes were added. So the order (which
/// numbers the Applications and breaks the simulation's ties) is made of per-operation parts —
/// whether the operation is kept, what the rewrites added at it — laid out in the input's order.
std::vector<RewriteEvent> run_patterns(RewriteState& state,
                                       std::span<const OperationPattern* const> patterns,
                                       const DriverOptions& options);

}  // namespace tapestry::rewrite
