// What the torch and C++ generators (codegen/torch.h, codegen/cpp.h) share about a rank's
// program: where its messages and collectives go in the one global order, and how boxes and
// applications are named in the generated comments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/block_program.h"
#include "runtime/rank_program.h"

namespace tapestry::codegen::detail {

/// Per task of the whole program (indexed by task), what follows it in the global order
/// (`whole.order`): the messages it produces that no collective replaces, and the collectives
/// whose last contribution (latest in the order) it writes — so every rank meets them at the
/// same point.
struct GlobalPlaces {
  std::vector<std::vector<std::uint32_t>> messages_after;
  std::vector<std::vector<std::uint32_t>> collectives_after;
};
GlobalPlaces global_places(const runtime::detail::BlockProgram& whole,
                           const runtime::detail::RankProgram& rp);

/// "[0:4096, 0:1024]".
std::string range_text(const zspace::Range& box);

/// An application's index box by dim name: "batch 0:4096, out 0:2048" ("one point" for none).
std::string index_text(const runtime::KernelCall& call);

/// The kernel of `call`, a fused one as its chain of stages: "fused: linear ⇒ relu" (with
/// `prefix` "fused: "), or "linear ⇒ relu" (prefix "").
std::string kernel_text(const runtime::KernelCall& call, std::string_view prefix);

}  // namespace tapestry::codegen::detail
