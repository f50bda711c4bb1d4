// Writing files so that nothing half-written is ever left behind.
//
// The text goes to `<path>.tmp.<pid>.<n>` first and is renamed over `path` only once fully
// written and closed, so a reader sees either the old file or the complete new one, and a failed
// write or rename leaves no temporary behind and reports its cause. Every file Tapestry writes
// (graphs, pictures, .npy, metrics, traces) goes through here:
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
