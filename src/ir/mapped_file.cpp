// MappedFile: mmap + madvise (mapped_file.h).
#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace tapestry::ir {

std::optional<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return MappedFile(nullptr, 0);
  }
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file alive
  if (data == MAP_FAILED) return std::nullopt;
  ::madvise(data, size, MADV_SEQUENTIAL);
  return MappedFile(static_cast<const char*>(data), size);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), released_(other.released_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

void MappedFile::release_before(std::size_t offset, std::size_t window) {
  if (data_ == nullptr) return;
  auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::size_t end = offset / page * page;
  if (end > released_) {
    ::madvise(const_cast<char*>(data_) + released_, end - released_, MADV_DONTNEED);
    released_ = end;
  }
#ifdef MADV_POPULATE_READ
  std::size_t ahead = std::min(size_ - end, window);
  if (ahead > 0) {  // a hint: older kernels answer EINVAL and pages fault in as usual
    ::madvise(const_cast<char*>(data_) + end, ahead, MADV_POPULATE_READ);
  }
#endif
}

}  // namespace tapestry::ir
