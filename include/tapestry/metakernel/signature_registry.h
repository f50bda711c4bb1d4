// SignatureRegistry: the kernel signatures (metakernels) a session knows, by name.
//
// A metakernel says what a kernel takes and derives — dtypes, shapes, IPFs — not how it runs;
// the functions that run kernels are runtime::ExecutableKernels (runtime/executable_kernels.h).
// The built-in signatures are YAML files shipped in the repository's `kernels/` folder and
// installed to `<prefix>/share/tapestry/kernels`. `default_kernel_dir()` finds them at runtime,
// first match wins:
//   1. $TAPESTRY_KERNELS (a directory)
//   2. <directory of the running executable>/../share/tapestry/kernels   (a relocated install)
//   3. the install directory compiled in (CMAKE_INSTALL_PREFIX/share/tapestry/kernels)
//   4. the source directory compiled in (<repo>/kernels), for builds that are not installed
// Users add their own with `--kernels DIR` (`load_directory`). Files load in name order; a kernel
// may `extends:` any kernel loaded before it. Defining a name twice is an error.
//
// A call resolves by name and input count, so `max(a, b)` (binary, kernel `maximum` with alias
// `max`) and `max(x, dim=1)` (the reduction, kernel `max`) both work:
//
//   const Metakernel& k = signatures.resolve("max", 2);   // maximum
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/metakernel/metakernel.h"

namespace tapestry::metakernel {

class SignatureRegistry {
 public:
  SignatureRegistry() = default;

  /// A registry with the built-in signatures of `default_kernel_dir()`.
  static SignatureRegistry with_builtins();
  /// A registry with every kernel file of `dir`.
  static SignatureRegistry from_directory(const std::filesystem::path& dir);

  /// Loads every *.yaml / *.yml file of `dir` (not recursive), in name order; then checks that
  /// the kernels their VJPs call are known (autodiff.h, check_vjp_kernels).
  void load_directory(const std::filesystem::path& dir);
  /// Loads one kernel file (and checks its VJPs' kernels likewise).
  void load_file(const std::filesystem::path& path);
  /// Adds one kernel; Error when the name (or an alias) is taken.
  void add(Metakernel kernel);

  /// The kernel named `name` (not an alias), or null.
  [[nodiscard]] const Metakernel* find(std::string_view name) const;
  /// The kernel named `name`; Error listing near names when unknown.
  [[nodiscard]] const Metakernel& get(std::string_view name) const;
  /// The kernel a call `name(...)` with `num_inputs` tensors means: a kernel or alias of that name
  /// with that many inputs; when only one kernel carries the name it is returned regardless (its
  /// evaluation then reports the count mismatch). Error when no kernel has the name.
  [[nodiscard]] const Metakernel& resolve(std::string_view name, std::size_t num_inputs) const;
  /// Every metakernel, sorted by name.
  [[nodiscard]] std::vector<const Metakernel*> metakernels() const;
  [[nodiscard]] std::size_t size() const { return kernels_.size(); }

 private:
  std::vector<const Metakernel*> load_file_unchecked(const std::filesystem::path& path);

  // Stable addresses: `find` results stay valid while kernels are added.
  std::map<std::string, std::unique_ptr<Metakernel>, std::less<>> kernels_;
  std::multimap<std::string, std::string, std::less<>> aliases_;  // alias -> kernel name
};

/// The built-in kernel directory (see the file comment); Error when none exists.
std::filesystem::path default_kernel_dir();

/// The process-wide registry of built-in signatures, loaded on first use (thread-safe).
const SignatureRegistry& builtin_signatures();

}  // namespace tapestry::metakernel
