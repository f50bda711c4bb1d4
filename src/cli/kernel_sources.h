// Where a command's kernels come from: the built-ins, kernel files and plugins.
//
//   signatures   the built-in kernel files, then every directory of $TAPESTRY_KERNELS and of
//                `--kernel-dir DIR`, then the signatures of every plugin of $TAPESTRY_PLUGINS and
//                of `--plugin FILE` (runtime/plugins.h), in that order
//   executables  a kernel set (reference or fast), plus the same plugins' functions, plus a
//                kernel for every signature with a `body:` (runtime/body_kernels.h)
//
// Every command that reads kernels takes both flags (common_options.h), so a graph that calls a
// plugin's kernel builds, shards, prices and runs alike — on every executor, MPI included.
#pragma once

#include <string>
#include <vector>

#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/runtime/executable_kernels.h"

namespace tapestry::cli {

/// The flags `--kernel-dir DIR` and `--plugin FILE` (both repeatable), as given.
struct KernelSources {
  std::vector<std::string> dirs;
  std::vector<std::string> plugins;
};

/// The kernel signatures of `sources` (and of the environment), see the file comment.
metakernel::SignatureRegistry load_signatures(const KernelSources& sources);

/// The executable kernels of `set` with those of `sources`' plugins and of `signatures`' bodies.
runtime::ExecutableKernels load_executable_kernels(const KernelSources& sources,
                                                   const metakernel::SignatureRegistry& signatures,
                                                   runtime::KernelSet set);

/// The entries of environment variable `name`, split at ':' (empty entries skipped).
std::vector<std::string> paths_from_environment(const char* name);

}  // namespace tapestry::cli
