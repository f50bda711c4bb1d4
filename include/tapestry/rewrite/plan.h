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
//     "fuse": [["H/linear", "H"]]                     // producer first; or "fuse": "auto"
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
// The CLI shorthand `--split OP.DIM=N` (e.g. `--split H/linear.out=2`) adds one split; the
// operation name may itself contain dots ("H/linear.2.out=2" names op "H/linear.2").
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/graph.h"

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

  friend bool operator==(const OpPlan&, const OpPlan&) = default;
};

/// True when the entry asks for nothing (no split, substitution, placement or mesh).
[[nodiscard]] bool is_empty(const OpPlan& op);

/// What a rewrite does with placement when it replaces an operation by another whose index dims
/// are `dims`: `place` carries over as is, mesh entries carry over for the dims `dims` still has.
void carry_placement(const OpPlan& from, std::span<const std::string> dims, OpPlan& to);

struct Plan {
  std::map<std::string, OpPlan> ops;
  /// Explicit fusion groups, each a chain of operation names, producer first.
  std::vector<std::vector<std::string>> fuse;
  /// `"fuse": "auto"`: fuse every chain that fuse-elementwise accepts.
  bool fuse_auto = false;

  /// The split count of `dim` for `op` (1 when the plan does not split it).
  [[nodiscard]] std::int64_t split_of(std::string_view op, std::string_view dim) const;
  [[nodiscard]] nlohmann::json to_json() const;

  friend bool operator==(const Plan&, const Plan&) = default;
};

/// `plan` with every operation's `place` and `mesh` removed (entries left empty are dropped): its
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

/// Finds the operation a plan names: by label (which must be unique), else by loom key.
std::optional<ir::OperationId> find_operation(const ir::Graph& graph, std::string_view name);
/// The name plans use for an operation: its label, else its key.
std::string operation_name(const ir::Graph& graph, ir::OperationId op);

/// Checks a plan against a graph before any rewrite: every operation exists and is named by one
/// entry only (by label, or by key when its label is its own), every dimension exists on it,
/// every count is in [1, extent], every substitution is known and rewrites that operation's
/// kernel, fusion groups name existing operations. Returns one message per problem, each with
/// its JSON path (empty: the plan fits the graph). What only the rewrites can tell — a
/// reduction split they cannot do — `lower` reports before it makes any Application.
std::vector<std::string> check_plan(const Plan& plan, const ir::Graph& graph);

/// The plan with every operation named the way rewrites look it up (operation_name: the label,
/// else the key). Precondition: check_plan(plan, graph) is empty.
Plan resolve_plan_names(const Plan& plan, const ir::Graph& graph);

}  // namespace tapestry::rewrite
