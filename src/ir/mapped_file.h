// MappedFile: a read-only memory map of a file, released behind the reader as it goes
// (private to module ir).
//
// Reading a 750 MB graph through a std::string costs a zero-fill, a copy, and 750 MB of peak
// memory on top of the graph being built. A private read-only mapping costs neither; and since
// the graph reader never looks back past the node it is reading, `release_before(offset)` drops
// the pages already parsed (they are file-backed, so touching them again — e.g. to count lines
// for an error message — simply faults them back in).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string_view>

namespace tapestry::ir {

class MappedFile {
 public:
  /// Maps a regular file; nullopt when it cannot be opened or mapped (callers fall back to
  /// ordinary reads, e.g. for pipes).
  static std::optional<MappedFile> open(const std::filesystem::path& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  ~MappedFile();

  [[nodiscard]] std::string_view text() const { return {data_, size_}; }
  /// Drops the whole pages before `offset` from memory (a hint; the mapping stays valid), and
  /// maps the next `window` bytes after it in one go (cheaper than a page fault per 64 KB).
  void release_before(std::size_t offset, std::size_t window = 0);

 private:
  MappedFile(const char* data, std::size_t size) : data_(data), size_(size) {}
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t released_ = 0;
};

}  // namespace tapestry::ir
