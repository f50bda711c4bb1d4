// Reading files with one message for every reader, and writing them so that nothing
// half-written is ever left behind.
//
//   std::string text = read_file("graph.tap");   // Error "cannot read graph.tap: no such file"
//
// The text goes to `<path>.tmp.<pid>.<n>` first and is renamed over `path` only once fully
// written and closed, so a reader sees either the old file or the complete new one, and a failed
// write or rename leaves no temporary behind and reports its cause. Every file Tapestry writes
// (graphs, pictures, .npy, metrics, traces) goes through here:
//
//   write_file_atomically("out/graph.json", text);   // Error "cannot write out/graph.json: …"
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace tapestry {

/// The whole contents of `path`. Error "cannot read PATH: REASON" when it cannot be read, REASON
/// one of "no such file", "it is a directory", or the system's message (permission denied, …).
std::string read_file(const std::filesystem::path& path);

/// Error as read_file's when `path` is not a regular file that can be opened for reading (for
/// readers that map or stream the file themselves).
void check_readable_file(const std::filesystem::path& path);

/// Writes `contents` to `path` atomically (see the file comment); throws tapestry::Error naming
/// the path on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace tapestry
