// read_file with one message for every failure; write_file_atomically: temp file + rename (see
// tapestry/support/file.h).
#include "tapestry/support/file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include "tapestry/support/error.h"

namespace tapestry {

namespace {

// Why `path` cannot be opened for reading (after an open failed with `error`, an errno value).
std::string why_unreadable(const std::filesystem::path& path, int error) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) return "no such file";
  if (status.type() == std::filesystem::file_type::directory) return "it is a directory";
  return error != 0 ? std::strerror(error) : "it cannot be opened";
}

}  // namespace

void check_readable_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error("cannot read " + path.string() + ": it is a directory");
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path.string() + ": " + why_unreadable(path, errno));
}

std::string read_file(const std::filesystem::path& path) {
  check_readable_file(path);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error("cannot read " + path.string() + ": " + std::strerror(errno));
  return text.str();
}

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  // Unique per process and call: two threads writing the same path never share a temporary.
  static std::atomic<std::uint64_t> calls{0};
  std::filesystem::path temp = path;
  temp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(calls.fetch_add(1));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      throw Error("cannot write " + path.string());
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(temp, ec);
    throw Error("cannot write " + path.string() + ": " + why);
  }
}

}  // namespace tapestry
