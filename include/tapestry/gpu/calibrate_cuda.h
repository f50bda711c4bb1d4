// Calibration of one NVIDIA GPU: what `tapestry calibrate --device cuda` measures, and the
// one-device target it writes (docs/gpu.md, "Calibrating"; docs/cost.md compares it with h100x8).
// The measurements are src/gpu/calibrate_cuda_measure.cpp (CUDA builds), the target and the
// table src/gpu/calibrate_cuda.cpp.
//
// Every figure is GPU time between two CUDA events on one stream (host wall time for the run
// overhead), after warm-up runs, the median of the timed runs:
//
//   benchmark      what runs                                              rate
//   gemm DTYPE     cuBLASLt D = A·B, column-major, no transposes, no         FLOP/s (2mnk / time)
//   M×N×K          epilogue; float32 (FP32 compute), tf32 (float32 data,
//                  TF32 tensor cores), bfloat16 and float16 (float32
//                  accumulation), float64; squares 256 … 8192 and the
//                  transformer MLP's 8192×16384×4096
//   device copy    a grid-stride float4 copy kernel over 1 GiB              B/s (read + written)
//   cache copy     the same over half of L2 (its size: cudaDevAttrL2CacheSize) B/s (read + written)
//   host→device    cudaMemcpyAsync of 256 MiB from pinned host memory       B/s
//   device→host    the same back                                           B/s
//   host latency   a 4-byte pinned copy each way                           s per copy
//   launch         10,000 empty kernels back to back on one stream          s per kernel
//   graph node     a CUDA graph of 1,000 empty kernels (a chain), replayed  s per node
//   run overhead   a 1-node graph launched and synchronised, host wall      s per run
//
// The target (cuda_calibrated_target) has ONE device, gpu:0, of a device type named after the
// GPU ("h100-measured" for an H100; "gpu-measured" otherwise):
//
//   member                  from
//   peak_flops[d]           the best measured GEMM rate of dtype d (float32: FP32, not TF32)
//   gemm_efficiency         bfloat16 squares: [2n³, rate(n) / peak(bf16)], never falling as n grows
//   efficiency              1 (peak is an achieved rate), as calibrate does for a CPU
//   memory_bandwidth_Bps    device copy; bandwidth_efficiency 1
//   cache                   cache copy, when faster than device copy
//   launch_s                graph node (the executor replays a CUDA graph: a kernel costs a node)
//   run_overhead_s          run overhead
//   memory_bytes            cudaMemGetInfo's total
//   links.host              host↔device: the slower direction's bandwidth, host latency
//   links.intra_node        the preset's (unused: one device)
//   idle_w, busy_w          the preset device type's (not measured)
//   "calibration"           every measurement, the GPU's name, and which members came from the
//                           preset
//
// `preset` is the target whose first device type fills what is not measured: h100x8 by default.
//
//   const CudaCalibration c = calibrate_cuda(0, 20, [](std::string_view s) { … });  // Error: no
//   GPU fmt::print("{}", cuda_calibration_table(c, preset));
//   write(cost::target_json_text(cuda_calibrated_target(c, *cost::preset_target("h100x8"))));
//
// Errors: calibrate_cuda throws tapestry::Error when the build has no CUDA backend, no device is
// usable ("no CUDA device: cudaGetDeviceCount: …") or a CUDA / cuBLASLt call fails (naming it);
// cuda_calibrated_target throws when the calibration lacks a float32 GEMM or a copy rate.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/cost/target.h"

namespace tapestry::gpu {

/// One GEMM shape of one dtype: D[m×n] = A[m×k] · B[k×n].
struct CudaGemmResult {
  std::string dtype;  // "float32", "tf32", "bfloat16", "float16", "float64"
  std::int64_t m = 0, n = 0, k = 0;
  double seconds = 0;  // median of the timed calls
  int runs = 0;

  [[nodiscard]] double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  [[nodiscard]] double rate() const { return seconds > 0 ? flops() / seconds : 0; }
};

/// One rate that is not a GEMM.
struct CudaRateResult {
  std::string name;    // "device copy"
  std::string shape;   // "1 GiB read + 1 GiB written"
  std::string unit;    // "B/s", "s"
  double value = 0;    // the rate (B/s) or the time (s)
  double seconds = 0;  // median time of one timed run
  int runs = 0;
};

struct CudaCalibration {
  int device = 0;
  std::string gpu_name;  // "NVIDIA H100 80GB HBM3"
  int sm_count = 0;
  int compute_capability = 0;  // 90 for sm_90
  std::int64_t memory_bytes = 0;
  std::int64_t l2_bytes = 0;
  double seconds = 0;  // the budget asked for
  double elapsed_s = 0;
  std::vector<CudaGemmResult> gemms;
  std::vector<CudaRateResult> rates;  // by name: see the table above

  /// The rate called `name`, or nullptr.
  [[nodiscard]] const CudaRateResult* find_rate(std::string_view name) const;
  /// The fastest GEMM of `dtype`, or nullptr when none was measured.
  [[nodiscard]] const CudaGemmResult* best_gemm(std::string_view dtype) const;
};

/// Measures device `device` within about `seconds` (plus set-up: allocating ~3 GiB).
CudaCalibration calibrate_cuda(int device, double seconds,
                               const std::function<void(std::string_view)>& progress);

/// The one-device target (above); `preset`'s first device type, intra-node link and host link
/// latency fill what was not measured.
cost::Target cuda_calibrated_target(const CudaCalibration& calibration, const cost::Target& preset);

/// The table `tapestry calibrate --device cuda` prints: every measurement and, per member of
/// the target, its value, the preset's, and whether it was measured or taken from the preset.
std::string cuda_calibration_table(const CudaCalibration& calibration, const cost::Target& preset);

}  // namespace tapestry::gpu
