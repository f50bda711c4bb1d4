// Reading the GRAPH argument of every command that takes one: a .tap program or a loom JSON graph.
#pragma once

#include <string>
#include <vector>

#include "kernel_sources.h"
#include "tapestry/ir/graph.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/rewrite/plan.h"

namespace CLI {
class App;
}

namespace tapestry::cli {

/// Reads GRAPH for the commands that judge or draw a graph rather than run it (`validate`,
/// `render`): a `.tap` program is built (its diagnostics are an Error naming file:line:col), any
/// other file read as loom JSON with its issues returned, not thrown.
ir::ReadResult read_graph_input(const std::string& path,
                                const metakernel::SignatureRegistry& signatures,
                                const std::vector<std::string>& dims = {});

/// Loads and validates GRAPH (`.tap` → built; anything else → loom JSON), operation-kernel-
/// agreement included unless `trust_ipfs` (kernel_agreement.h). Throws Error with the located
/// diagnostics or the validation issues, naming the file.
/// `dims`: the `--dim NAME=N` texts binding the program's dim variables (a .tap program's
/// `dim batch = 8`; docs/language.md); an Error for loom JSON, whose sizes are fixed.
ir::Graph load_graph(const std::string& path, const metakernel::SignatureRegistry& signatures,
                     bool trust_ipfs = false, const std::vector<std::string>& dims = {});

/// Adds `--dim NAME=N` (repeatable) to a command that loads a graph.
void add_dim_option(CLI::App& cmd, std::vector<std::string>& dims);

/// The flag `--trust-ipfs` of the commands that load a graph, with its (unsafe) meaning.
inline constexpr const char* kTrustIpfsHelp =
    "UNSAFE: skip checking the graph's IPFs, index and output types against its kernels; a graph "
    "that contradicts its kernels then runs, and --verify cannot notice (its oracle reads the "
    "same IPFs)";

/// The plan of `--plan FILE` (optional) plus every `--split OP.DIM=N`, checked against `graph`
/// (rewrite::check_plan: an Error "FILE: the plan does not fit the graph:" with every problem and
/// its JSON path); with `ignore_placement` (`--ignore-placement`) without its `place` and `mesh`
/// entries (rewrite::without_placement).
rewrite::Plan load_plan(const ir::Graph& graph, const std::string& plan_file,
                        const std::vector<std::string>& splits, bool ignore_placement = false);

/// `--ignore-placement`'s help text (run, cost, explain).
inline constexpr const char* kIgnorePlacementHelp =
    "drop the plan's `place` and `mesh` entries: the same shards, placed by the default rule "
    "on this target (for a plan written for another target)";

}  // namespace tapestry::cli
