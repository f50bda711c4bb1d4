// Code generation: a placed plan as per-rank PyTorch programs that run without Tapestry
// (docs/codegen.md).
//
// generate_torch turns a lowered graph and the rank schedule of its placement (workflow/mpi.h:
// device i is rank i, the placement's transfers are the messages) into Python source files:
//
//   main.py     the launcher: parses --inputs IN --outputs OUT, initialises torch.distributed
//               from torchrun's environment (gloo on CPU, NCCL on CUDA), makes the collectives'
//               process groups, and calls its rank's function
//   helpers.py  reading a box of an input .npy, point-to-point messages and the collectives (a
//               composition where the backend lacks one: gloo has no reduce-scatter), writing
//               the outputs (rank 0, all files or none)
//   rank<i>.py  rank i's program: the boxes of every tensor it reads, writes or receives (one
//               buffer per tensor, their bounding box), then its applications in the plan's
//               order, each as torch ops on slices of those buffers, with the messages and
//               collectives the MPI executor derives from the same schedule
//               (runtime/rank_program.h) at the place of their producers
//
// The messages, gathers and collectives are the MPI executor's (compile_rank_program with
// CollectiveUse::kAll), so the generated program moves exactly what `tapestry run --executor
// mpi --collectives all` moves. Every rank posts a message's receive and its sender its send
// at the same point of one global order (the block program's topological order), so the
// point-to-point operations between two ranks come in the same order on both (NCCL matches them
// by order; gloo by tag) and no rank waits on one that comes later.
//
//   const TorchProgram p = generate_torch(graph, lowered, schedule, {.strategy = "data parallel
//   ×2"}); p.files[0].first == "main.py"
//
// Error (naming the application and its operation) when an operation's kernel has no torch
// mapping (a plugin's function, a body with a reduction); nothing is returned half-made.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/rank_schedule.h"

namespace tapestry::codegen {

struct TorchOptions {
  /// The command that generated the program, quoted in every file's header.
  std::string command;
  /// The plan's strategy in one line (cost::Strategy::summary, what `tapestry explain` prints).
  std::string strategy;
  /// The target's name, for the header.
  std::string target;
  /// The kernel signatures the graph was built with (kernel files included); null: the built-in
  /// ones only. A kernel file's kernel with a `body:` is written from its body (torch ops in the
  /// output's dtype) where every port is elementwise with the output.
  const metakernel::SignatureRegistry* kernels = nullptr;
};

struct TorchProgram {
  std::vector<std::pair<std::string, std::string>> files;  // (file name, contents), main.py first
};

/// The program of `lowered` (`graph` lowered under a plan) on the ranks of `schedule`; see the
/// file comment.
TorchProgram generate_torch(const ir::Graph& graph, const rewrite::LowerResult& lowered,
                            const runtime::RankSchedule& schedule, const TorchOptions& options);

/// The kernels generate_torch maps to torch ops, sorted (docs/codegen.md's table).
std::vector<std::string> torch_kernels();

}  // namespace tapestry::codegen
