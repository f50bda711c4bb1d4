// The files every generated torch program has besides its ranks' modules (codegen/torch.h):
// main.py, the launcher, and helpers.py, the messages and collectives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tapestry/codegen/torch.h"

namespace tapestry::codegen::detail {

/// main.py for `ranks` ranks; `groups` lists each collective's member ranks (a process group
/// each, made by every rank in this order).
std::string torch_main(std::uint32_t ranks, const std::vector<std::vector<std::uint32_t>>& groups,
                       const TorchOptions& options);

/// helpers.py (the same for every program).
std::string torch_helpers();

}  // namespace tapestry::codegen::detail
