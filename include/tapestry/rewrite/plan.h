// Plan: how to run an operation graph — separate data from the graph (Halide's schedule).
//
// The graph is the algorithm; a plan says, per operation (named by its label, as the .tap naming
// rule gives it), how many shards to cut along each named index dimension, which substitutions
// to apply, and which operations to fuse. `lower(graph, plan)` (lower.h) turns both into an
// application graph. The search mutates plans, never graphs.
//
// JSON form (docs/rewrites.md has the full reference):
//
//   {
//     "ops": {
//       "H/linear": {"split": {"out": 2}},
//       "Y":        {"split": {"in": 2}},             // a reduction dim: split-reduction
//       "Z":        {"split": {"batch": 4}, "substitute": ["decompose-linear"],
//                    "place": ["cpu:0", "cpu:1"]}  // shards → devices, cycled in grid order
//       "W":        {"split": {"batch": 2, "out": 4}, "mesh": {"batch": "dp", "out": "tp"}}
//     },
//     "fuse": [["H/linear", "H"]],                    // producer first; or "fuse": "auto"
//     "outputs": {"Y": {"replicate": "all"}},         // graph output Y whole on every device
//                                                     // that writes part of it (or "tp": on
//                                                     // each group along mesh axis tp)
//     "recompute": ["H/linear", "H", "L2/*"],         // recomputed for the backward pass
//                                                     // (recompute.h); `*`: any characters
//     "zero": {"stage": 3, "params": ["W1", "L*/W"],  // parameters sharded with their
//              "shards": 2, "axis": "dp"}             // gradients and optimizer state (zero.h)
//     "pipeline": {"stages": [["L0/*", "L1/*"],        // pipeline stages: the forward operations
//                             ["L2/*", "L3/*"]],       // of each, on device s (pipeline.h)
//                  "microbatches": 4, "schedule": "1f1b"}
//   }
//
// Uneven splits are allowed (10 into 4 gives 3, 3, 2, 2); a split larger than the dimension's
// extent, an unknown operation or dimension, or a non-positive count is an error naming the
// plan file and JSON path ("plan.json: /ops/Y/split/out: operation 'Y' has no index dimension
// 'out' (it has: batch, out2, in)").
//
// A key an object repeats anywhere in the plan is an error at its line and column (JSON parsers
// keep the last one silently).
//
// Operations the rewrites derive are named like any other: decompose-linear of `Y` makes
// `Y/matmul`, split-reduction of `Y/matmul` makes its combine `Y/matmul/reduce` (fresh_names.h).
// An entry naming an operation the graph lacks is a *derived entry*: check_plan accepts it when
// the rewrites of this plan create an operation of that name for this graph, and that operation
// then takes the entry instead of the plan the rewrite would give it (the combine's default
// follows its consumers, split_reduction.h); otherwise it is an error listing the names the
// rewrites do create ("plan.json: /ops/Y~1matmul~1reduce.2: no operation 'Y/matmul/reduce.2': the
// rewrites of this plan derive Y/matmul, Y/matmul/reduce").
//
// The CLI shorthand `--split OP.DIM=N` (e.g. `--split H/linear.out=2`) adds one split; the
// operation name may itself contain dots ("H/linear.2.out=2" names op "H/linear.2").
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/graph.h"
#include "tapestry/support/diagnostic.h"

namespace tapestry::rewrite {

/// The plan for one operation.
struct OpPlan {
  /// Shards along each named index dimension (>= 1; absent dims are not split).
  std::map<std::string, std::int64_t> split;
  /// Substitutions requested by their stable names, e.g. "decompose-linear".
  std::vector<std::string> substitute;
  /// Placement: the devices the operation's shards run on, assigned in grid order (row-major
  /// over the split dims) and cycled when there are more shards than devices. Parsed, checked
  /// and carried here; the placement dialect and the distributed executor consume it (the
  /// single-process executors ignore it).
  std::vector<std::string> place;
  /// Mesh placement: split dims onto axes of the target's device mesh ({"batch": "dp"}); shard
  /// coordinate i along a mapped dim goes to axis coordinate i mod the axis size
  /// (cost/placement.h). Exclusive with `place`.
  std::map<std::string, std::string> mesh;
  /// Co-location with another operation's shards. Set by split-reduction for the combine it
  /// plans by default (and for the elementwise operations that follow it), never read from a
  /// plan file nor written by to_json: the rewrites' way of saying "shard j of the combine runs
  /// where partial block j was computed" whatever placed that block — a `place` list, the
  /// default placement, or the search's counts, which the rewrites may only see as symbols
  /// (rewrite/symbolic.h). Exclusive with `place` and `mesh`.
  struct Colocation {
    /// The operation whose shards' devices this one takes (placed before it).
    std::string with;
    /// This operation's index dim → the dim of `with` at the same grid coordinate. Shard c runs
    /// on the device of `with`'s shard c', c'[dims[d]] = c[d] (mod its count there) for every
    /// mapped d, and coordinate 0 along `with`'s other dims.
    std::map<std::string, std::string> dims;

    friend bool operator==(const Colocation&, const Colocation&) = default;
  };
  std::optional<Colocation> colocate;

  friend bool operator==(const OpPlan&, const OpPlan&) = default;
};

/// True when the entry asks for nothing (no split, substitution, placement, mesh or colocation).
[[nodiscard]] bool is_empty(const OpPlan& op);

/// True when the entry says where its shards run (`place`, `mesh` or `colocate`).
[[nodiscard]] bool is_placed(const OpPlan& op);

/// Where a graph output ends up (`"outputs": {"Y": {"replicate": "all"}}`). Placement derives the
/// transfers (cost/placement.h): an all-gather per group of devices.
struct OutputPlan {
  /// "all": every device that writes part of the output gets all of it. A mesh axis name ("tp"):
  /// each such device gets what the devices differing from it only along that axis write —
  /// DTensor's Replicate on that mesh dim. Empty: the output stays where it is written.
  std::string replicate;

  friend bool operator==(const OutputPlan&, const OutputPlan&) = default;
};

/// OutputPlan::replicate's value for every writer of an output.
inline constexpr std::string_view kReplicateAll = "all";

/// Sharded parameters, gradients and optimizer state — ZeRO stages 1–3 / FSDP (rewrite/zero.h):
/// `"zero": {"stage": 3, "params": ["W1", "L*/W"], "shards": 2, "axis": "dp"}`.
struct ZeroPlan {
  /// 1: optimizer state sharded; 2: and the gradient (in Tapestry the same step as 1: zero.h);
  /// 3: and the parameter itself, gathered before its uses.
  int stage = 0;
  /// Graph inputs (names, or patterns where `*` stands for any characters), each updated by an
  /// optimizer kernel. resolve_plan_names expands the patterns into input names, in graph order.
  std::vector<std::string> params;
  /// Shards per parameter (>= 2): each parameter's dim 0 must be a multiple of it.
  std::int64_t shards = 0;
  /// The mesh axis the shards go along (empty: the default placement, shard i on device i).
  std::string axis;

  friend bool operator==(const ZeroPlan&, const ZeroPlan&) = default;
};

/// Pipeline parallelism (rewrite/pipeline.h): `"pipeline": {"stages": [["L0/*"], ["L1/*"]],
/// "microbatches": 4, "schedule": "1f1b", "devices": ["#0", "#1"]}`; a stage on a group of
/// devices, data parallel inside: `"devices": [["#0", "#1"], ["#2", "#3"]]`.
struct PipelinePlan {
  /// Per stage, the forward operations it runs: names, or patterns where `*` stands for any
  /// characters. resolve_plan_names expands the patterns into names, in graph order.
  std::vector<std::vector<std::string>> stages;
  /// Microbatches (>= 1): the batch is cut into this many equal pieces.
  std::int64_t microbatches = 1;
  /// "1f1b" (warm-up forwards, then one backward and one forward in turn) or "gpipe" (every
  /// forward of a stage, then every backward).
  std::string schedule;
  /// Per stage, the devices it runs on: one (a device name, or `#i`: the target's device i),
  /// written as a string, or a group, written as an array, over which the stage runs data
  /// parallel. Never empty per stage. Empty: stage s on `#s`.
  std::vector<std::vector<std::string>> devices;

  friend bool operator==(const PipelinePlan&, const PipelinePlan&) = default;
};

/// The schedules a pipeline plan may name.
inline constexpr std::string_view kPipelineSchedules[] = {"1f1b", "gpipe"};

struct Plan {
  std::map<std::string, OpPlan> ops;
  /// Explicit fusion groups, each a chain of operation names, producer first.
  std::vector<std::vector<std::string>> fuse;
  /// `"fuse": "auto"`: fuse every chain that fuse-elementwise accepts.
  bool fuse_auto = false;
  /// Graph outputs by tensor name (the label `output Y` names), where they end up.
  std::map<std::string, OutputPlan> outputs;
  /// Operations of the graph recomputed before their later (backward) uses instead of kept
  /// (recompute.h): names, or patterns where `*` stands for any run of characters ("L2/*").
  /// resolve_plan_names expands the patterns into the names they match, in graph order.
  std::vector<std::string> recompute;
  /// Sharded parameters and optimizer state (zero.h); nullopt: every parameter whole.
  std::optional<ZeroPlan> zero;
  /// Pipeline stages, microbatches and schedule (pipeline.h); nullopt: no pipeline.
  std::optional<PipelinePlan> pipeline;

  /// The split count of `dim` for `op` (1 when the plan does not split it).
  [[nodiscard]] std::int64_t split_of(std::string_view op, std::string_view dim) const;
  [[nodiscard]] nlohmann::json to_json() const;

  friend bool operator==(const Plan&, const Plan&) = default;
};

/// `plan` with every operation's `place` and `mesh` removed (entries left empty are dropped), and
/// every output replicated along a mesh axis (`"replicate": "all"` names no axis and stays), and
/// the `zero` member's mesh axis (the shards then go by the default rule): its
/// shards then go where the default placement puts them on whichever target prices or runs it —
/// `--ignore-placement`, for a plan written for one target (`"place": ["gpu:2"]` on h100x8) run
/// on another (`launch -n 2`). Splits, substitutions and fusion are kept, so the shards are the
/// same.
Plan without_placement(Plan plan);

/// Parses a plan. Syntax errors name `source:line:column`; shape errors `source: /json/path`.
Plan parse_plan(std::string_view text, std::string_view source_name = "<plan>");
/// Reads and parses a plan file (an Error names the file when it cannot be read).
Plan read_plan_file(const std::filesystem::path& path);
/// Adds one `OP.DIM=N` split to `plan` (Error on a malformed shorthand).
void add_split_shorthand(Plan& plan, std::string_view shorthand);

/// Whether `name` matches a `recompute` entry: equal, or — an entry with `*` — each `*` standing
/// for any run of characters ("L2/*" matches "L2/linear" and "L2/a/b", not "L20").
[[nodiscard]] bool matches_name_pattern(std::string_view pattern, std::string_view name);

/// Finds the operation a plan names: by label (which must be unique), else by loom key.
std::optional<ir::OperationId> find_operation(const ir::Graph& graph, std::string_view name);

/// find_operation for many names of one graph: the operations' labels are indexed once, where
/// find_operation scans every operation per name (resolving a plan of every operation of a
/// 550-operation model was 300,000 label comparisons, on every plan the Evaluator rewrites).
/// Same answers; the graph must outlive it unchanged.
class OperationFinder {
 public:
  explicit OperationFinder(const ir::Graph& graph);
  [[nodiscard]] std::optional<ir::OperationId> find(std::string_view name) const;

 private:
  const ir::Graph* graph_;
  struct Labelled {
    std::size_t count = 0;  // operations with the label
    ir::NodeId node;        // the last of them
  };
  std::unordered_map<std::string_view, Labelled> labels_;
};
/// The name plans use for an operation: its label, else its key.
std::string operation_name(const ir::Graph& graph, ir::OperationId op);
/// The graph output a plan's `outputs` entry names (by label, else key); nullopt when none.
std::optional<ir::TensorId> find_output(const ir::Graph& graph, std::string_view name);
/// The name plans use for a tensor: its label, else its key.
std::string output_name(const ir::Graph& graph, ir::TensorId tensor);

/// Checks a plan against a graph: every operation exists and is named by one entry only (by
/// label, or by key when its label is its own), every dimension exists on it, every count is in
/// [1, extent], every substitution is known and rewrites that operation's kernel, fusion groups
/// name existing operations, every entry of `outputs` names a graph output ("/outputs/Q: no
/// graph output named 'Q' (outputs: Y)"; its mesh axis is checked when the plan is placed,
/// cost/placement.h), every entry of `recompute` names or matches an operation of the graph
/// ("/recompute/0: no operation named 'Q' …"), and `zero` names graph inputs whose dim 0 its
/// shard count divides ("/zero/params/0: no graph input named 'Q' (inputs: …)"). An entry (or a
/// fusion group member) naming an operation the graph lacks is checked against the operations the
/// plan's rewrites derive, as above — the rewrites (lower.h, steps 2–4) then run once. Returns one
/// diagnostic per problem, located by its JSON pointer
/// (`where.pointer`; the caller that knows the plan file names it) — empty: the plan fits the
/// graph. What only the rewrites can tell — a reduction split they cannot do — `lower` reports
/// before it makes any Application.
std::vector<support::Diagnostic> check_plan(const Plan& plan, const ir::Graph& graph);

/// check_plan without the rewrites: entries and fusion group members naming an operation the
/// graph lacks are not looked at (derived entries; the rewrites check them: RewriteState).
std::vector<support::Diagnostic> check_plan_entries(const Plan& plan, const ir::Graph& graph);

/// Every problem of the entry `op_plan` for operation `op` of `graph`, named `name` in the plan
/// at JSON path `path` (a dim it lacks, a count above its extent, a substitution that does not
/// apply to its kernel, a mesh dim it lacks): check_plan's checks of one entry, which the
/// rewrites also run on a derived entry when they create its operation.
std::vector<support::Diagnostic> check_entry(const OpPlan& op_plan, std::string_view name,
                                             const std::string& path, const ir::Graph& graph,
                                             ir::OperationId op);

/// The entry with its dims named by the operation's own names (aliases resolved).
/// Precondition: check_entry found no problem.
OpPlan resolve_entry(const OpPlan& op_plan, const ir::Graph& graph, ir::OperationId op);

/// The plan with every operation named the way rewrites look it up (operation_name: the label,
/// else the key), dims by their own names. Entries and fusion group members naming an operation
/// the graph lacks (derived entries) are kept as they are. Precondition: check_plan_entries(plan,
/// graph) is empty.
Plan resolve_plan_names(const Plan& plan, const ir::Graph& graph);

}  // namespace tapestry::rewrite
