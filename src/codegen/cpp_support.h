// The files every generated C++ program has besides its ranks' sources (codegen/cpp.h):
// CMakeLists.txt, program.h (what the rank files use) and main.cpp (its bodies and main).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tapestry/codegen/cpp.h"

namespace tapestry::codegen::detail {

/// CMakeLists.txt of a program of `ranks` ranks (MPI when ranks > 1).
std::string cpp_cmake(std::uint32_t ranks, const CppOptions& options);

/// program.h: Tensor, Operation, Context (with the MPI helpers when ranks > 1).
std::string cpp_program_header(std::uint32_t ranks);

/// main.cpp for `ranks` ranks; `groups` lists each collective's member ranks (a communicator
/// each, split by every rank in this order).
std::string cpp_main(std::uint32_t ranks, const std::vector<std::vector<std::uint32_t>>& groups,
                     const CppOptions& options);

}  // namespace tapestry::codegen::detail
