// Writing files so that nothing half-written is ever left behind.
//
// The text goes to `<path>.tmp.<pid>` first and is renamed over `path` only once fully written,
// so a reader sees either the old file or the complete new one, and a failed write leaves no
// temporary behind:
//
//   write_file_atomically("out/graph.json", text);   // Error "cannot write out/graph.json: …"
#pragma once

#include <filesystem>
#include <string_view>

namespace tapestry {

/// Writes `contents` to `path` atomically (see the file comment); throws tapestry::Error naming
/// the path on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace tapestry
