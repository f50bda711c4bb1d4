// KernelPath names, resolution and the thread-local noted set (kernel_path.h).
#include "tapestry/runtime/kernel_path.h"

#include <utility>

namespace tapestry::runtime {

namespace {

thread_local KernelPathSet t_paths;

}  // namespace

std::string_view kernel_path_name(KernelPath path) {
  switch (path) {
    case KernelPath::kOneDnn:
      return "onednn";
    case KernelPath::kOpenBlas:
      return "openblas";
    case KernelPath::kVectorised:
      return "vectorised";
    case KernelPath::kBody:
      return "body";
    case KernelPath::kPlugin:
      return "plugin";
    case KernelPath::kMpi:
      return "mpi";
    case KernelPath::kReference:
      return "reference";
  }
  return "reference";
}

KernelPath KernelPathSet::resolve() const {
  // A fallback first (it is what a slow operation needs explained), then the libraries.
  for (KernelPath p :
       {KernelPath::kReference, KernelPath::kOneDnn, KernelPath::kOpenBlas, KernelPath::kBody,
        KernelPath::kPlugin, KernelPath::kMpi, KernelPath::kVectorised}) {
    if (has(p)) return p;
  }
  return KernelPath::kReference;
}

void note_kernel_path(KernelPath path) {
  t_paths = t_paths.with(path);
}

KernelPathSet exchange_thread_kernel_paths(KernelPathSet value) {
  return std::exchange(t_paths, value);
}

}  // namespace tapestry::runtime
