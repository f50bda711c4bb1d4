// The text of every targets/*.json, compiled into the binary: CMake generates preset_texts.cpp
// (cmake/embed_targets.cmake) and regenerates it when a file under targets/ changes.
#pragma once

#include <span>
#include <string_view>

namespace tapestry::cost::detail {

struct PresetText {
  std::string_view name;  // the file name without ".json": "h100x8"
  std::string_view text;  // the file's contents
};

/// Every preset, in file-name order.
std::span<const PresetText> preset_texts();

}  // namespace tapestry::cost::detail
