// Public entry points for reading loom JSON (the reader itself is graph_reader.cpp).
#include "tapestry/ir/json_io.h"

#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "graph_reader.h"
#include "mapped_file.h"
#include "tapestry/support/error.h"

namespace tapestry::ir {

std::string node_json_path(std::string_view key) {
  return fmt::format("$.nodes[?(@.id=='{}')]", key);
}

ReadResult read_graph_json(std::string_view text, std::string_view source_name) {
  return GraphReader(text, source_name).read();
}

namespace {

// The whole file in one string; nullopt when it cannot be opened or read.
std::optional<std::string> slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    auto size = std::filesystem::file_size(path, ec);
    if (ec) return std::nullopt;
    std::string text(size, '\0');
    in.read(text.data(), static_cast<std::streamsize>(size));
    if (in.gcount() != static_cast<std::streamsize>(size)) return std::nullopt;
    return text;
  }
  std::ostringstream buffer;  // pipes and other streams
  buffer << in.rdbuf();
  return std::move(buffer).str();
}

}  // namespace

ReadResult read_graph_file(const std::filesystem::path& path) {
  if (std::optional<MappedFile> mapped = MappedFile::open(path)) {
    GraphReader reader(mapped->text(), path.string());
    constexpr std::size_t kWindow = std::size_t{80} << 20;  // > the reader's release step
    mapped->release_before(0, kWindow);
    reader.set_release_hook(
        [&mapped](std::size_t offset) { mapped->release_before(offset, kWindow); });
    return reader.read();
  }
  std::optional<std::string> text = slurp(path);
  if (!text) {
    ReadResult result;
    result.issues.push_back(
        Issue{.type = "io-error", .summary = "The file cannot be read", .message = path.string()});
    return result;
  }
  return read_graph_json(*text, path.string());
}

Graph read_graph_json_or_throw(std::string_view text) {
  ReadResult result = read_graph_json(text);
  for (const Issue& issue : result.issues) {
    if (issue.is_error()) {
      throw Error(fmt::format("{}: {}{}{}", issue.type, issue.summary,
                              issue.message.empty() ? "" : ": ", issue.message));
    }
  }
  return std::move(*result.graph);
}

}  // namespace tapestry::ir
