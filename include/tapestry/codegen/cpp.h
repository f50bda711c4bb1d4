// Code generation: a placed plan as a standalone C++ program for the CPU target, calling the
// block executor's fast kernels (docs/codegen.md, "--to cpp").
//
// generate_cpp turns a lowered graph and the rank schedule of its placement (device i is rank i)
// into C++ source files that build against the installed kernel library
// (`find_package(Tapestry COMPONENTS runtime)`, target Tapestry::runtime):
//
//   CMakeLists.txt  one executable `program`, linked with Tapestry::runtime (and MPI::MPI_CXX
//                   when there is more than one rank)
//   program.h       what the rank files use: Tensor (a static buffer holding a box of a tensor,
//                   dense row-major), Operation (a kernel of runtime::fast_kernels(), looked up
//                   once, with its params, index dims and IPFs as constants) and Context (inputs
//                   read box by box from IN/<name>.npy, outputs written by rank 0 all or none;
//                   with MPI: messages, reduces, reduce-scatters, all-gathers)
//   main.cpp        argument parsing (--inputs IN --outputs OUT [--repeat N]), MPI set-up, the
//                   helpers' bodies, and the call of its rank's function (program.h and main.cpp
//                   are the same for every program of one rank, and of several: a build cache
//                   compiles them once)
//   ranks.cpp       the table of the ranks' functions and of each collective's members
//   rank<i>.cpp     rank i's program: one static array per tensor it touches (sized at
//                   generation time: the rows it reads, writes or receives, every other dim
//                   whole, as the MPI executor's rank program lays them out), then its
//                   applications in the plan's order, each one kernel call on views of those
//                   arrays, with the messages and collectives at the place of their producers
//
// The rank programs are the MPI executor's (runtime/rank_program.h, CollectiveUse::kExact: only
// the collectives whose sums are bitwise the block executor's), the buffers have its layout
// (strides), and each application calls the same fast kernel on the same views, so the outputs
// equal `tapestry run`'s (the block executor's) bit for bit. Nothing is interpreted at run time:
// the order, the boxes and the messages are in the code.
//
//   const CppProgram p = generate_cpp(graph, lowered, schedule, {.strategy = "data parallel ×2"});
//   p.files[0].first == "CMakeLists.txt"
//
// A kernel file's kernel with a `body:` (docs/metakernels.md, "Kernels that run") travels as its
// body: ranks.cpp lists it (name, body, inputs, params' defaults) and the program compiles it at
// start-up with the library's body_kernel, the function `tapestry run` evaluates — so its bits
// are the same too. Error (naming the operation and its kernel) for any other kernel that is not
// a built-in fast kernel (a plugin's C++ function): the program links only the kernel library.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/rank_schedule.h"

namespace tapestry::codegen {

struct CppOptions {
  /// The command that generated the program, quoted in every file's header.
  std::string command;
  /// The plan's strategy in one line (cost::Strategy::summary, what `tapestry explain` prints).
  std::string strategy;
  /// The kernel signatures the graph was built with (kernel files included); null: the built-in
  /// ones only. Their kernels with a body are carried by the program (see above).
  const metakernel::SignatureRegistry* kernels = nullptr;
};

struct CppProgram {
  /// (file name, contents): CMakeLists.txt, program.h, main.cpp, ranks.cpp, then rank0.cpp …
  std::vector<std::pair<std::string, std::string>> files;
};

/// The program of `lowered` (`graph` lowered under a plan) on the ranks of `schedule`; see the
/// file comment.
CppProgram generate_cpp(const ir::Graph& graph, const rewrite::LowerResult& lowered,
                        const runtime::RankSchedule& schedule, const CppOptions& options);

}  // namespace tapestry::codegen
