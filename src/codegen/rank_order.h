// What the torch and C++ generators (codegen/torch.h, codegen/cpp.h) share about a rank's
// program: where its messages and collectives go in the one global order, and how boxes and
// applications are named in the generated comments.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_set>
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

/// Identifiers for a rank's function, each handed out once: a display name made an identifier
/// ("Y/matmul/partial" → "Y_matmul_partial"; "t_" before one that would start with a digit, an
/// underscore or a reserved prefix), never a reserved word, numbered when taken ("H_2").
///
///   Names names({"for", "ctx"}, {"rank"});
///   names.make("Y/matmul") == "Y_matmul";  names.make("Y.matmul") == "Y_matmul_2";
///   names.make("rank0") == "t_rank0";      names.make("ctx") == "ctx_2"
class Names {
 public:
  Names(std::initializer_list<const char*> reserved,
        std::initializer_list<const char*> reserved_prefixes = {});
  std::string make(std::string_view wanted);

 private:
  std::unordered_set<std::string> used_;
  std::vector<std::string> reserved_prefixes_;
};

/// The kernel of `call`, a fused one as its chain of stages: "fused: linear ⇒ relu" (with
/// `prefix` "fused: "), or "linear ⇒ relu" (prefix "").
std::string kernel_text(const runtime::KernelCall& call, std::string_view prefix);

}  // namespace tapestry::codegen::detail
