// KernelPath: which implementation computed an application — the "fallbacks visible" half of
// the run metrics.
//
// A kernel notes the path it took on the calling thread as it runs; the block executor swaps the
// thread's noted set out around each kernel call (like the fallback count, fast_kernels.h), so
// each application gets the set its own call noted, also when a task runs nested inside another
// task's kernel on the same thread. The application's path is the set's most telling member:
//
//   noted by                                             path         resolves as
//   run_reference (a fast kernel handed the call over)   kReference   first: any fallback shows
//   a float32 GEMM or convolution oneDNN ran             kOneDnn      then the libraries
//   a GEMM OpenBLAS ran (f64; tiny f32 products)         kOpenBlas
//   a kernel body evaluated by runs (body_kernels.h)     kBody
//   a plugin's kernel function (plugin.h)                kPlugin
//   the reduce an MPI collective computed (mpi_executor) kMpi
//   any other fast path (hand-written loops)             kVectorised  last
//   nothing (the reference set, a kernel without tags)   —            kReference
//
// so a fused GEMM + epilogue that noted {onednn, vectorised} is "onednn", and a fused chain one
// stage of which fell back is "reference".
//
//   note_kernel_path(KernelPath::kOneDnn);                        // inside a kernel
//   const KernelPathSet outer = exchange_thread_kernel_paths({});  // the executor, around a call
//   task.kernel(call);
//   const KernelPath path = exchange_thread_kernel_paths(outer).resolve();
//   kernel_path_name(path)                                        // "onednn"
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace tapestry::runtime {

/// The implementations a kernel call can take (docs/runtime.md, "Metrics").
enum class KernelPath : std::uint8_t {
  kOneDnn,
  kOpenBlas,
  kVectorised,
  kBody,
  kPlugin,
  kMpi,
  kReference
};

inline constexpr std::size_t kKernelPathCount = 7;

/// "onednn", "openblas", "vectorised", "body", "plugin", "mpi", "reference".
[[nodiscard]] std::string_view kernel_path_name(KernelPath path);

/// Applications per path, indexed by KernelPath.
using KernelPathCounts = std::array<std::uint64_t, kKernelPathCount>;

/// The paths one call noted: a small immutable bit set.
class KernelPathSet {
 public:
  constexpr KernelPathSet() = default;

  [[nodiscard]] KernelPathSet with(KernelPath path) const {
    return KernelPathSet(static_cast<std::uint8_t>(bits_ | bit(path)));
  }
  [[nodiscard]] bool has(KernelPath path) const { return (bits_ & bit(path)) != 0; }
  [[nodiscard]] bool is_empty() const { return bits_ == 0; }
  /// The application's path: kReference when it noted a fallback or nothing, else the first
  /// noted of kOneDnn, kOpenBlas, kBody, kPlugin, kMpi, kVectorised.
  [[nodiscard]] KernelPath resolve() const;

  bool operator==(const KernelPathSet&) const = default;

 private:
  explicit constexpr KernelPathSet(std::uint8_t bits) : bits_(bits) {}
  static constexpr std::uint8_t bit(KernelPath path) {
    return static_cast<std::uint8_t>(1U << static_cast<unsigned>(path));
  }
  std::uint8_t bits_ = 0;
};

/// Adds `path` to the calling thread's noted set (a thread-local; cheap).
void note_kernel_path(KernelPath path);

/// The calling thread's noted set, replaced by `value`; returns the previous set.
KernelPathSet exchange_thread_kernel_paths(KernelPathSet value);

}  // namespace tapestry::runtime
