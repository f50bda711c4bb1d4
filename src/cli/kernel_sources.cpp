#include "kernel_sources.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "tapestry/runtime/body_kernels.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/plugins.h"

namespace tapestry::cli {

namespace {

// $TAPESTRY_PLUGINS, then every --plugin; a library named twice (the same file) counts once.
std::vector<const runtime::Plugin*> load_plugins(const KernelSources& sources) {
  std::vector<std::string> paths = paths_from_environment("TAPESTRY_PLUGINS");
  paths.insert(paths.end(), sources.plugins.begin(), sources.plugins.end());
  std::vector<const runtime::Plugin*> plugins;
  for (const std::string& path : paths) {
    const runtime::Plugin* plugin = &runtime::Plugin::load(path);
    if (std::find(plugins.begin(), plugins.end(), plugin) == plugins.end()) {
      plugins.push_back(plugin);
    }
  }
  return plugins;
}

}  // namespace

metakernel::SignatureRegistry load_signatures(const KernelSources& sources) {
  metakernel::SignatureRegistry signatures = metakernel::SignatureRegistry::with_builtins();
  for (const std::string& dir : paths_from_environment("TAPESTRY_KERNELS")) {
    signatures.load_directory(dir);
  }
  for (const std::string& dir : sources.dirs) signatures.load_directory(dir);
  for (const runtime::Plugin* plugin : load_plugins(sources)) plugin->add_signatures(signatures);
  return signatures;
}

runtime::ExecutableKernels load_executable_kernels(const KernelSources& sources,
                                                   const metakernel::SignatureRegistry& signatures,
                                                   runtime::KernelSet set) {
  runtime::ExecutableKernels kernels = set == runtime::KernelSet::kFast
                                           ? runtime::fast_kernels()
                                           : runtime::ExecutableKernels::reference();
  for (const runtime::Plugin* plugin : load_plugins(sources)) plugin->add_kernels(kernels, set);
  return runtime::with_body_kernels(kernels, signatures, set);
}

std::vector<std::string> paths_from_environment(const char* name) {
  std::vector<std::string> paths;
  const char* env = std::getenv(name);
  if (env == nullptr) return paths;
  std::istringstream in(env);
  for (std::string path; std::getline(in, path, ':');) {
    if (!path.empty()) paths.push_back(path);
  }
  return paths;
}

}  // namespace tapestry::cli
