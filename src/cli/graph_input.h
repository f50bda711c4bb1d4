// Reading the GRAPH argument of `shard` and `run`: a .tap program or a loom JSON graph.
#pragma once

#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::cli {

/// The kernel signatures: the built-ins plus those of every `--kernels DIR`.
metakernel::SignatureRegistry load_signatures(const std::vector<std::string>& dirs);

/// Loads and validates GRAPH (`.tap` → built; anything else → loom JSON), operation-kernel-
/// agreement included unless `trust_ipfs` (kernel_agreement.h). Throws Error with the located
/// diagnostics or the validation issues, naming the file.
ir::Graph load_graph(const std::string& path, const metakernel::SignatureRegistry& signatures,
                     bool trust_ipfs = false);

/// The flag `--trust-ipfs` of the commands that load a graph, with its (unsafe) meaning.
inline constexpr const char* kTrustIpfsHelp =
    "UNSAFE: skip checking the graph's IPFs, index and output types against its kernels; a graph "
    "that contradicts its kernels then runs, and --verify cannot notice (its oracle reads the "
    "same IPFs)";

/// The plan of `--plan FILE` (optional) plus every `--split OP.DIM=N`.
rewrite::Plan load_plan(const std::string& plan_file, const std::vector<std::string>& splits);

}  // namespace tapestry::cli
