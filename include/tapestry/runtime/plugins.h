// Loading kernel plugins: shared libraries written against tapestry/plugin.h.
//
// A plugin adds kernels in two halves, and a session takes both from the same loaded library:
// their signatures go into the session's metakernel::SignatureRegistry (so `.tap` programs can
// call them and lowering can shard them), their functions into the executable kernel sets.
//
//   const Plugin& swish = Plugin::load("build/examples/plugin/libswish.so");
//   swish.add_signatures(signatures);                  // kernel `swish` is now callable
//   ExecutableKernels fast = fast_kernels();
//   swish.add_kernels(fast, KernelSet::kFast);         // and runs
//
// Every failure is an Error naming the library: a missing file, a file dlopen rejects, no entry
// point `tapestry_plugin_kernels`, another ABI version, a signature that does not parse, a
// kernel without a signature of the plugin's, a kernel listed twice, a name already taken (by a
// built-in, a kernel file or another plugin). A library is loaded once per process (by its
// canonical path) and never unloaded: kernel functions stay callable for the process's life.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tapestry/metakernel/metakernel.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/plugin.h"
#include "tapestry/runtime/executable_kernels.h"

namespace tapestry::runtime {

class Plugin {
 public:
  /// The plugin in the shared library `path`, loaded and checked on first use (thread-safe).
  static const Plugin& load(const std::filesystem::path& path);

  /// The path as first given to `load` (for messages).
  [[nodiscard]] const std::string& path() const { return path_; }
  /// The plugin's kernel signatures, parsed (an `extends:` may name a built-in kernel).
  [[nodiscard]] const std::vector<metakernel::Metakernel>& signatures() const {
    return signatures_;
  }

  /// Adds every signature to `registry`; Error naming the library when a name is taken.
  void add_signatures(metakernel::SignatureRegistry& registry) const;
  /// Adds every kernel's function for `set` to `kernels`; Error naming the library when a name
  /// is taken.
  void add_kernels(ExecutableKernels& kernels, KernelSet set) const;

  Plugin(std::string path, const TapestryPlugin& description);

 private:
  std::string path_;
  const TapestryPlugin* description_;
  std::vector<metakernel::Metakernel> signatures_;
};

/// The KernelFn that runs a plugin's C function: hands it the call as tapestry/plugin.h's plain
/// data, and turns a non-zero result into `call.fail(…)` naming `library`.
KernelFn plugin_kernel(TapestryKernelFn fn, std::string library);

}  // namespace tapestry::runtime
