// Tensor files in and out of `run` and `verify` (tensor_files.h).
#include "tensor_files.h"

#include <fmt/format.h>
#include <unistd.h>

#include <map>

#include "tapestry/runtime/npy.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"

namespace tapestry::cli {

namespace fs = std::filesystem;

std::string tensor_file_name(const std::string& name) {
  std::string file = name;
  for (char& c : file) {
    if (c == '/') c = '_';
  }
  return file + ".npy";
}

namespace {

// DIR/<name>.npy of tensor `t`, or of `box` of it (in the tensor's coordinates) when given,
// checked (see read_tensor_files).
runtime::Buffer read_tensor_file(const ir::Graph& graph, const std::string& dir, ir::TensorId t,
                                 const zspace::Range* box, std::string_view what) {
  const std::string name = runtime::tensor_name(graph, t);
  const fs::path path = fs::path(dir) / tensor_file_name(name);
  if (!fs::exists(path)) {
    throw Error(fmt::format("{}: missing {} file for tensor {}", path.string(), what, name));
  }
  if (!fs::is_regular_file(path)) {
    throw Error(fmt::format("{}: not a regular file ({} tensor {})", path.string(), what, name));
  }
  const zspace::Range& range = graph.tensor(t).range();
  runtime::Buffer buffer =
      box == nullptr ? runtime::read_npy(path, range.shape())
                     : runtime::read_npy_box(path, range.shape(), box->translate(-range.start()));
  if (buffer.dtype() != runtime::tensor_dtype(graph, t)) {
    throw Error(fmt::format("{}: dtype {} but tensor {} is {}", path.string(),
                            ir::dtype_name(buffer.dtype()), name, graph.tensor(t).dtype()));
  }
  return box == nullptr ? runtime::bind_buffer(graph, t, std::move(buffer))
                        : std::move(buffer).relocated(box->start());
}

}  // namespace

runtime::BufferMap read_tensor_files(const ir::Graph& graph, const std::string& dir,
                                     const std::vector<ir::TensorId>& tensors,
                                     std::string_view what) {
  if (!fs::is_directory(dir)) throw Error(fmt::format("{}: not a directory", dir));
  runtime::BufferMap buffers;
  for (ir::TensorId t : tensors) buffers.emplace(t, read_tensor_file(graph, dir, t, nullptr, what));
  return buffers;
}

runtime::Buffer read_tensor_box(const ir::Graph& graph, const std::string& dir, ir::TensorId t,
                                const zspace::Range& box, std::string_view what) {
  if (!fs::is_directory(dir)) throw Error(fmt::format("{}: not a directory", dir));
  return read_tensor_file(graph, dir, t, &box, what);
}

void check_output_files(const ir::Graph& graph, const std::string& dir,
                        const std::vector<ir::TensorId>& tensors) {
  std::map<std::string, std::string> owner;  // file name → tensor
  for (ir::TensorId t : tensors) {
    const std::string name = runtime::tensor_name(graph, t);
    auto [it, fresh] = owner.emplace(tensor_file_name(name), name);
    if (!fresh) {
      throw Error(fmt::format("--outputs: tensors '{}' and '{}' would both be written to {}",
                              it->second, name, it->first));
    }
  }
  if (!fs::exists(dir)) {
    std::vector<std::string> missing;  // dir and its missing parents, outermost first
    for (fs::path p = fs::path(dir).lexically_normal(); !p.empty() && !fs::exists(p);
         p = p.parent_path()) {
      if (p.filename().empty()) continue;  // "out/" → "out"
      missing.insert(missing.begin(), p.string());
      if (p == p.parent_path()) break;
    }
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      throw Error(fmt::format("--outputs {}: cannot create the directory: {}", dir, ec.message()));
    fmt::print("created director{} {}\n", missing.size() > 1 ? "ies" : "y",
               fmt::join(missing, ", "));
  }
  if (!fs::is_directory(dir)) throw Error(fmt::format("--outputs {}: not a directory", dir));
  if (::access(dir.c_str(), W_OK) != 0)
    throw Error(fmt::format("--outputs {}: the directory is not writable", dir));
  for (const auto& [file, tensor] : owner) {
    const fs::path path = fs::path(dir) / file;
    if (fs::exists(fs::symlink_status(path)) && !fs::is_regular_file(fs::symlink_status(path))) {
      throw Error(fmt::format("--outputs: {} (output {}) exists and is not a regular file",
                              path.string(), tensor));
    }
  }
}

void check_writable_file(std::string_view option, const std::string& file) {
  if (file.empty()) return;
  const fs::path parent = fs::absolute(file).parent_path();
  if (!fs::is_directory(parent)) {
    throw Error(
        fmt::format("{} {}: the directory {} does not exist", option, file, parent.string()));
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    throw Error(fmt::format("{} {}: the directory is not writable", option, file));
  }
  if (fs::exists(fs::symlink_status(file)) && !fs::is_regular_file(fs::symlink_status(file))) {
    throw Error(fmt::format("{} {}: exists and is not a regular file", option, file));
  }
}

StagedFiles::~StagedFiles() {
  std::error_code ec;
  for (const Staged& s : staged_) fs::remove(s.temporary, ec);
}

void StagedFiles::add(const fs::path& path, std::string_view contents) {
  fs::path temporary = path;
  temporary += fmt::format(".staged.{}", ::getpid());
  try {
    write_file_atomically(temporary, contents);
  } catch (const Error&) {
    throw Error(fmt::format("cannot write {}", path.string()));
  }
  staged_.push_back({std::move(temporary), path});
}

std::vector<fs::path> StagedFiles::commit() {
  std::vector<fs::path> written;
  for (const Staged& s : staged_) {
    std::error_code ec;
    fs::rename(s.temporary, s.path, ec);
    if (ec) throw Error(fmt::format("cannot write {}: {}", s.path.string(), ec.message()));
    written.push_back(s.path);
  }
  staged_.clear();
  return written;
}

}  // namespace tapestry::cli
