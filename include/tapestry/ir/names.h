// Interned names: a process-wide table of short strings (port names such as "x", "tensors",
// "result") shared by every SelectionMap, so that an entry stores a 32-bit id instead of a
// std::string. Ids and the strings they name live as long as the process; the table only grows,
// by the number of distinct names ever read (a handful per kernel).
//
//   std::uint32_t id = intern_name("tensors");
//   interned_name(id) == "tensors";   intern_name("tensors") == id
//
// Thread-safe: lookups of recently used names hit a per-thread cache without locking.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tapestry::ir {

/// The id of `name`, adding it on first use.
std::uint32_t intern_name(std::string_view name);
/// The name of an id returned by intern_name (the reference stays valid forever).
const std::string& interned_name(std::uint32_t id);

}  // namespace tapestry::ir
