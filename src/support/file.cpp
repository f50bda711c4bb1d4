// write_file_atomically: temp file + rename (see tapestry/support/file.h).
#include "tapestry/support/file.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <string>
#include <system_error>

#include "tapestry/support/error.h"

namespace tapestry {

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
