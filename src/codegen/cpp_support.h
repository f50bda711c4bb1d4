// The files every generated C++ program has besides its ranks' sources (codegen/cpp.h):
// CMakeLists.txt, program.h (what the rank files use), main.cpp (its bodies and main) and
// ranks.cpp (the table of ranks and collectives).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/codegen/cpp.h"
#include "tapestry/runtime/body_kernels.h"

namespace tapestry::codegen::detail {

/// `text` as comment lines of at most 100 columns, broken at spaces, each starting with `lead`
/// ("#", "//"); continuation lines indented: commented("//", "Strategy: …").
std::string commented(std::string_view lead, std::string_view text);

/// `text` as a C++ string literal: "a \"b\"" (quotes, backslashes and newlines escaped).
std::string cpp_string(std::string_view text);

/// CMakeLists.txt of a program of `ranks` ranks (MPI when ranks > 1).
std::string cpp_cmake(std::uint32_t ranks, const CppOptions& options);

/// program.h: Tensor, Operation, Context (with the MPI helpers when ranks > 1), Ranks. The same
/// for every program of one rank, and for every program of several (so a build cache hits).
std::string cpp_program_header(std::uint32_t ranks);

/// main.cpp: the helpers' bodies and main; the same for every program of one rank, and for
/// every program of several.
std::string cpp_main(std::uint32_t ranks);

/// ranks.cpp: the table of the ranks' functions, of each collective's members (`groups`: a
/// communicator each, split by every rank in this order) and of the kernel files' kernels the
/// ranks call (`kernels`, by their bodies).
std::string cpp_ranks(std::uint32_t ranks, const std::vector<std::vector<std::uint32_t>>& groups,
                      const std::vector<runtime::BodySource>& kernels, const CppOptions& options);

}  // namespace tapestry::codegen::detail
