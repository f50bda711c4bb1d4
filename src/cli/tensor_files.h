// Tensors as files for `run` and `verify`: DIR/<tensor>.npy in, and a set of result files
// written all together or not at all.
//
//   runtime::BufferMap in = read_tensor_files(graph, "in/", runtime::graph_inputs(graph));
//   check_output_files(graph, "out/", runtime::graph_outputs(graph));   // before any work
//   StagedFiles files;
//   files.add("out/Y.npy", runtime::format_npy(y));   // complete, under a temporary name
//   files.commit();                                   // every file renamed into place
//
// A StagedFiles destroyed without commit() removes what it staged, so a run that fails half-way
// leaves nothing behind.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::cli {

/// The file of tensor `name` in a directory: `<name>.npy` with every '/' replaced by '_'.
std::string tensor_file_name(const std::string& name);

/// Reads DIR/<name>.npy for each of `tensors` of `graph`, checking dtype and shape; `what`
/// ("input", "output") names the role in errors. Error naming the file when one is missing,
/// is not a regular file, or does not match.
runtime::BufferMap read_tensor_files(const ir::Graph& graph, const std::string& dir,
                                     const std::vector<ir::TensorId>& tensors,
                                     std::string_view what);

/// Reads only `box` (in the tensor's coordinates) of DIR/<name>.npy of tensor `t`, with the
/// same checks (runtime/npy.h's read_npy_box: one read per contiguous run); the buffer's range
/// is `box`. An MPI rank reads its inputs this way.
runtime::Buffer read_tensor_box(const ir::Graph& graph, const std::string& dir, ir::TensorId t,
                                const zspace::Range& box, std::string_view what);

/// Checks, before any work, that the files of `tensors` can be written to `dir`: no two tensors
/// share a file name (`A/b` and `A_b`), nothing that is not a regular file stands in the way,
/// the directory is (or can be made) writable. Creates `dir` and its missing parents and names
/// each on stdout ("created directories out, out/run1").
void check_output_files(const ir::Graph& graph, const std::string& dir,
                        const std::vector<ir::TensorId>& tensors);

/// Fails now, before any work, when `file` (an option's value, e.g. --metrics) could not be
/// written later: its directory is missing or unwritable, or a directory stands at its path.
void check_writable_file(std::string_view option, const std::string& file);

/// Files written under temporary names and renamed into place together (see the file comment).
class StagedFiles {
 public:
  StagedFiles() = default;
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;
  ~StagedFiles();

  /// Writes `contents` completely to a temporary file beside `path`; Error naming `path`.
  void add(const std::filesystem::path& path, std::string_view contents);
  /// Renames every staged file onto its path, in the order added; returns the paths.
  std::vector<std::filesystem::path> commit();

 private:
  struct Staged {
    std::filesystem::path temporary;
    std::filesystem::path path;
  };
  std::vector<Staged> staged_;
};

}  // namespace tapestry::cli
