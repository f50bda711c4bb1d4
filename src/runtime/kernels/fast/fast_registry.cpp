// The fast registry: every reference name, the fast families layered on top, the counters and
// the library thread limits.
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include <cblas.h>

#include "fast_support.h"
#include "gemm.h"
#include "tapestry/runtime/kernel_path.h"

// GCC's OpenMP runtime (oneDNN's threading runtime). Declared here rather than through <omp.h>
// so no translation unit of ours is compiled as OpenMP code.
extern "C" void omp_set_num_threads(int num_threads);

namespace tapestry::runtime {

namespace {

std::atomic<std::uint64_t> fast_calls{0};
std::atomic<std::uint64_t> fallback_calls{0};
std::atomic<std::uint64_t> fused_epilogues{0};
std::atomic<std::uint64_t> onednn_gemms{0};
std::atomic<std::uint64_t> post_op_gemms{0};
std::atomic<std::uint64_t> onednn_convs{0};
std::atomic<std::uint64_t> half_native_calls{0};
std::atomic<ConvBackend> current_conv_backend{ConvBackend::kAuto};
thread_local std::uint64_t t_fallbacks = 0;  // this thread's, for exchange_thread_fallbacks

}  // namespace

namespace fast {

void count_fast() {
  fast_calls.fetch_add(1, std::memory_order_relaxed);
  note_kernel_path(KernelPath::kVectorised);  // resolves below a library the call also noted
}

void count_epilogue() {
  fused_epilogues.fetch_add(1, std::memory_order_relaxed);
}

void count_onednn_gemm() {
  onednn_gemms.fetch_add(1, std::memory_order_relaxed);
  note_kernel_path(KernelPath::kOneDnn);
}

void count_onednn_conv() {
  onednn_convs.fetch_add(1, std::memory_order_relaxed);
  note_kernel_path(KernelPath::kOneDnn);
}

void count_half_native() {
  half_native_calls.fetch_add(1, std::memory_order_relaxed);
}

void count_post_op_gemm() {
  post_op_gemms.fetch_add(1, std::memory_order_relaxed);
}

void run_reference(const KernelCall& call) {
  fallback_calls.fetch_add(1, std::memory_order_relaxed);
  ++t_fallbacks;
  note_kernel_path(KernelPath::kReference);
  ExecutableKernels::reference().lookup(call.kernel, call.operation)(call);
}

bool has_unit_cells(const zspace::IndexProjection& ipf) {
  for (std::int64_t s : ipf.shape()) {
    if (s != 1) return false;
  }
  return true;
}

std::optional<DType> uniform_dtype(const KernelCall& call) {
  std::optional<DType> dtype;
  bool same = true;
  auto check = [&](const auto& ports) {
    for (const auto& e : ports.entries()) {
      if (!dtype) dtype = e.value.view.dtype();
      same = same && e.value.view.dtype() == *dtype;
    }
  };
  check(call.inputs);
  check(call.outputs);
  if (!same) return std::nullopt;
  return dtype;
}

// oneDNN initialises itself on its first sgemm (CPU detection, its OpenMP runtime, the first
// generated kernel: 25–50 ms here). Paying it when the fast kernels are first looked up keeps it
// out of the first run's timing (the kernel of each new GEMM shape is still generated on its
// first call; `tapestry run --warmup` covers that).
void warm_up_gemm() {
  constexpr std::int64_t kSide = 32;  // big enough for kAuto to pick oneDNN
  std::vector<float> a(kSide * kSide, 0.0F), c(kSide * kSide, 0.0F);
  limit_library_threads_to_one();
  gemm(GemmArgs{.m = kSide,
                .n = kSide,
                .k = kSide,
                .trans_b = true,
                .lda = kSide,
                .ldb = kSide,
                .ldc = kSide},
       a.data(), a.data(), 0.0F, c.data());
}

}  // namespace fast

const ExecutableKernels& fast_kernels() {
  static const ExecutableKernels registry = [] {
    ExecutableKernels fast_only;
    fast::register_fast_elementwise(fast_only);
    fast::register_fast_contraction(fast_only);
    fast::register_fast_reduce(fast_only);
    fast::register_fast_conv(fast_only);
    fast::register_fast_softmax(fast_only);
    fast::register_fast_moments(fast_only);
    fast::register_fast_pool(fast_only);
    fast::register_fast_fused(fast_only);
    fast::register_fast_autodiff(fast_only);
    fast::register_fast_training(fast_only);
    fast::register_fast_indexing(fast_only);
    // Every reference name: the fast version where there is one, else the reference kernel
    // as a counted fallback (so a kernel without a fast version shows in the metrics). Both
    // handle bf16/f16 ports already (fast_only's `add` widened them; run_reference looks up the
    // widened reference kernel), so they are added as they are.
    ExecutableKernels r;
    const ExecutableKernels& reference = ExecutableKernels::reference();
    for (const std::string& name : reference.names()) {
      KernelFn fn = fast_only.find(name);
      if (fn != nullptr) {
        r.add_native(name, fn, fast_only.find_prepare(name));
      } else {
        r.add_native(name, &fast::run_reference, reference.find_prepare(name));
      }
    }
    fast::warm_up_gemm();
    return r;
  }();
  return registry;
}

void limit_library_threads_to_one() {
  static std::once_flag openblas_once;
  std::call_once(openblas_once, [] { openblas_set_num_threads(1); });
  thread_local bool omp_limited = false;
  if (!omp_limited) {
    omp_set_num_threads(1);
    omp_limited = true;
  }
}

FastKernelCounts fast_kernel_counts() {
  return {.fast_calls = fast_calls.load(std::memory_order_relaxed),
          .fallback_calls = fallback_calls.load(std::memory_order_relaxed),
          .fused_epilogues = fused_epilogues.load(std::memory_order_relaxed),
          .onednn_gemms = onednn_gemms.load(std::memory_order_relaxed),
          .post_op_gemms = post_op_gemms.load(std::memory_order_relaxed),
          .onednn_convs = onednn_convs.load(std::memory_order_relaxed),
          .half_native_calls = half_native_calls.load(std::memory_order_relaxed)};
}

std::uint64_t exchange_thread_fallbacks(std::uint64_t value) {
  return std::exchange(t_fallbacks, value);
}

void reset_fast_kernel_counts() {
  fast_calls.store(0, std::memory_order_relaxed);
  fallback_calls.store(0, std::memory_order_relaxed);
  fused_epilogues.store(0, std::memory_order_relaxed);
  onednn_gemms.store(0, std::memory_order_relaxed);
  post_op_gemms.store(0, std::memory_order_relaxed);
  onednn_convs.store(0, std::memory_order_relaxed);
  half_native_calls.store(0, std::memory_order_relaxed);
}

void set_conv_backend(ConvBackend backend) {
  current_conv_backend.store(backend, std::memory_order_relaxed);
}

ConvBackend conv_backend() {
  return current_conv_backend.load(std::memory_order_relaxed);
}

}  // namespace tapestry::runtime
