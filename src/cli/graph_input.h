// Reading the GRAPH argument of `shard` and `run`: a .tap program or a loom JSON graph.
#pragma once

#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/registry.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::cli {

/// The kernels: the built-ins plus every `--kernels DIR`.
metakernel::KernelRegistry load_kernels(const std::vector<std::string>& dirs);

/// Loads and validates GRAPH (`.tap` → built; anything else → loom JSON). Throws Error with the
/// located diagnostics or the validation issues, naming the file.
ir::Graph load_graph(const std::string& path, const metakernel::KernelRegistry& kernels);

/// The plan of `--plan FILE` (optional) plus every `--split OP.DIM=N`.
rewrite::Plan load_plan(const std::string& plan_file, const std::vector<std::string>& splits);

}  // namespace tapestry::cli
