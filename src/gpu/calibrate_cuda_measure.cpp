// The measurements of a GPU calibration (calibrate_cuda.h): CUDA runtime API, cuBLASLt and the
// kernels of calibrate_cuda_kernels.cu. Built only with the CUDA backend.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "calibrate_cuda_kernels.h"
#include "tapestry/gpu/calibrate_cuda.h"
#include "tapestry/support/error.h"

namespace tapestry::gpu {

namespace {

namespace kernels = calibration_kernels;
using Clock = std::chrono::steady_clock;

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) {
    throw Error(fmt::format("calibrate --device cuda: {}: {}", call, cudaGetErrorString(e)));
  }
}
void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw Error(fmt::format("calibrate --device cuda: {}: {}", call, cublasLtGetStatusString(s)));
  }
}
#define TAPESTRY_CAL_CHECK(call) check((call), #call)

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct DeviceBuffer {
  void* data = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { TAPESTRY_CAL_CHECK(cudaMalloc(&data, bytes)); }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct PinnedBuffer {
  void* data = nullptr;
  explicit PinnedBuffer(std::size_t bytes) { TAPESTRY_CAL_CHECK(cudaMallocHost(&data, bytes)); }
  ~PinnedBuffer() { cudaFreeHost(data); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
};

// A stream and two events: GPU time of what `enqueue` puts on the stream.
class Timer {
 public:
  Timer() {
    TAPESTRY_CAL_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TAPESTRY_CAL_CHECK(cudaEventCreate(&start_));
    TAPESTRY_CAL_CHECK(cudaEventCreate(&stop_));
  }
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  [[nodiscard]] cudaStream_t stream() const { return stream_; }

  template <class Enqueue>
  double once(const Enqueue& enqueue) const {
    TAPESTRY_CAL_CHECK(cudaEventRecord(start_, stream_));
    enqueue();
    TAPESTRY_CAL_CHECK(cudaGetLastError());
    TAPESTRY_CAL_CHECK(cudaEventRecord(stop_, stream_));
    TAPESTRY_CAL_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    TAPESTRY_CAL_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

  struct Runs {
    double median_s = 0;
    int runs = 0;
  };
  /// `warmup` untimed runs, then timed runs until `budget_s` of wall time is spent (at least
  /// `min_runs`, at most `max_runs`): the median.
  template <class Enqueue>
  Runs median(const Enqueue& enqueue, double budget_s, int warmup = 2, int min_runs = 3,
              int max_runs = 200) const {
    for (int i = 0; i < warmup; ++i) once(enqueue);
    std::vector<double> times;
    const Clock::time_point start = Clock::now();
    while (static_cast<int>(times.size()) < min_runs ||
           (static_cast<int>(times.size()) < max_runs && seconds_since(start) < budget_s)) {
      times.push_back(once(enqueue));
    }
    return {tapestry::gpu::median(times), static_cast<int>(times.size())};
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

struct GemmType {
  const char* name;
  cudaDataType_t data;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  kernels::FillType fill;
  std::size_t bytes;
};
constexpr GemmType kGemmTypes[] = {
    {"float32", CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, kernels::FillType::kFloat32, 4},
    {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, kernels::FillType::kFloat32, 4},
    {"bfloat16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, kernels::FillType::kBFloat16, 2},
    {"float16", CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, kernels::FillType::kFloat16, 2},
    {"float64", CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F, kernels::FillType::kFloat64, 8},
};
struct Shape {
  std::int64_t m, n, k;
};
// Squares, then the transformer MLP's up-projection (8192 tokens, 4096 → 16384).
constexpr Shape kGemmShapes[] = {{256, 256, 256},    {512, 512, 512},    {1024, 1024, 1024},
                                 {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                                 {8192, 16384, 4096}};
constexpr std::size_t kGemmWorkspaceBytes = 32 << 20;

// One cuBLASLt GEMM D = A·B (column-major, D in place of C, beta 0) with its heuristic's algorithm.
class LtGemm {
 public:
  LtGemm(cublasLtHandle_t handle, const GemmType& type, Shape s, void* a, void* b, void* d,
         void* workspace)
      : handle_(handle), type_(type), a_(a), b_(b), d_(d), workspace_(workspace) {
    TAPESTRY_CAL_CHECK(cublasLtMatmulDescCreate(&op_, type.compute, type.scale));
    TAPESTRY_CAL_CHECK(cublasLtMatrixLayoutCreate(&la_, type.data, s.m, s.k, s.m));
    TAPESTRY_CAL_CHECK(cublasLtMatrixLayoutCreate(&lb_, type.data, s.k, s.n, s.k));
    TAPESTRY_CAL_CHECK(cublasLtMatrixLayoutCreate(&ld_, type.data, s.m, s.n, s.m));
    cublasLtMatmulPreference_t pref = nullptr;
    TAPESTRY_CAL_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const std::size_t workspace_bytes = kGemmWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                         &workspace_bytes, sizeof(workspace_bytes));
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle_, op_, la_, lb_, ld_, ld_,
                                                                 pref, 1, &heuristic_, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    check(status, "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
      throw Error(
          fmt::format("calibrate --device cuda: cuBLASLt has no algorithm for a {} GEMM "
                      "{}×{}×{}",
                      type.name, s.m, s.n, s.k));
    }
  }
  ~LtGemm() {
    cublasLtMatrixLayoutDestroy(la_);
    cublasLtMatrixLayoutDestroy(lb_);
    cublasLtMatrixLayoutDestroy(ld_);
    cublasLtMatmulDescDestroy(op_);
  }
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  void enqueue(cudaStream_t stream) const {
    const float alpha32 = 1, beta32 = 0;
    const double alpha64 = 1, beta64 = 0;
    const bool f64 = type_.scale == CUDA_R_64F;
    const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
    const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
    TAPESTRY_CAL_CHECK(cublasLtMatmul(handle_, op_, alpha, a_, la_, b_, lb_, beta, d_, ld_, d_, ld_,
                                      &heuristic_.algo, workspace_, kGemmWorkspaceBytes, stream));
  }

 private:
  cublasLtHandle_t handle_;
  const GemmType& type_;
  void* a_;
  void* b_;
  void* d_;
  void* workspace_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, ld_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

// A 16-bit float's value: bfloat16 is float32's upper half; float16 is decoded field by field.
double widen(std::uint16_t bits, bool bfloat16) {
  if (bfloat16) {
    const std::uint32_t wide = std::uint32_t(bits) << 16;
    float f = 0;
    std::memcpy(&f, &wide, sizeof f);
    return f;
  }
  const int sign = (bits >> 15) != 0 ? -1 : 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa == 0 ? sign * HUGE_VAL : NAN;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// Element i of a host copy of `type`'s data, as a double.
double element(const std::vector<unsigned char>& bytes, std::size_t i, const GemmType& type) {
  const unsigned char* at = bytes.data() + i * type.bytes;
  if (type.bytes == 8) {
    double d = 0;
    std::memcpy(&d, at, 8);
    return d;
  }
  if (type.bytes == 4) {
    float f = 0;
    std::memcpy(&f, at, 4);
    return f;
  }
  std::uint16_t h = 0;
  std::memcpy(&h, at, 2);
  return widen(h, type.data == CUDA_R_16BF);
}

// Checks three cells of D = A·B (column-major) against a float64 dot product on the host, so
// that a rate is never of a GEMM that computes the wrong thing. The bar: float32 accumulation
// (and TF32's 10-bit inputs, a 16-bit result's rounding) of Σ|a·b|.
void check_gemm(const GemmType& type, Shape s, const void* a, const void* b, const void* d) {
  const std::int64_t cells[3][2] = {{0, 0}, {s.m / 2, s.n / 3}, {s.m - 1, s.n - 1}};
  const double bar = type.bytes == 8
                         ? 1e-12
                         : (type.compute == CUBLAS_COMPUTE_32F && type.bytes == 4 ? 1e-4 : 1e-2);
  std::vector<unsigned char> row(std::size_t(s.k) * type.bytes), column(row.size()),
      cell(type.bytes);
  for (const auto& [i, j] : cells) {
    // Row i of A: k elements m apart; column j of B: k contiguous elements.
    TAPESTRY_CAL_CHECK(cudaMemcpy2D(
        row.data(), type.bytes, static_cast<const char*>(a) + std::size_t(i) * type.bytes,
        std::size_t(s.m) * type.bytes, type.bytes, std::size_t(s.k), cudaMemcpyDeviceToHost));
    TAPESTRY_CAL_CHECK(cudaMemcpy(column.data(),
                                  static_cast<const char*>(b) + std::size_t(j * s.k) * type.bytes,
                                  column.size(), cudaMemcpyDeviceToHost));
    TAPESTRY_CAL_CHECK(
        cudaMemcpy(cell.data(), static_cast<const char*>(d) + std::size_t(i + j * s.m) * type.bytes,
                   type.bytes, cudaMemcpyDeviceToHost));
    double exact = 0, magnitude = 0;
    for (std::size_t p = 0; p < std::size_t(s.k); ++p) {
      const double product = element(row, p, type) * element(column, p, type);
      exact += product;
      magnitude += std::abs(product);
    }
    const double got = element(cell, 0, type);
    if (!(std::abs(got - exact) <= bar * magnitude)) {
      throw Error(
          fmt::format("calibrate --device cuda: the {} GEMM {}×{}×{} computed D[{}, {}] = "
                      "{:.9g}, expected {:.9g} (bar {:.3g}): its rate would be wrong",
                      type.name, s.m, s.n, s.k, i, j, got, exact, bar * magnitude));
    }
  }
}

std::string gib_text(double bytes) {
  return bytes >= double(1 << 30) ? fmt::format("{:g} GiB", bytes / double(1 << 30))
                                  : fmt::format("{:g} MiB", bytes / double(1 << 20));
}

void measure_gemms(CudaCalibration& c, const Timer& timer, double budget_s,
                   const std::function<void(std::string_view)>& progress) {
  cublasLtHandle_t handle = nullptr;
  TAPESTRY_CAL_CHECK(cublasLtCreate(&handle));
  const std::unique_ptr<cublasLtContext, decltype(&cublasLtDestroy)> owner(handle,
                                                                           &cublasLtDestroy);
  std::size_t most = 0;  // the largest operand, in bytes (8 per element: float64)
  for (const Shape& s : kGemmShapes) {
    most = std::max({most, std::size_t(s.m * s.k), std::size_t(s.k * s.n), std::size_t(s.m * s.n)});
  }
  most *= 8;
  const DeviceBuffer a(most), b(most), d(most), workspace(kGemmWorkspaceBytes);
  std::size_t configs = 0;
  for (const GemmType& type : kGemmTypes) {
    for (const Shape& s : kGemmShapes) configs += (type.bytes == 8 && s.n != s.k) ? 0 : 1;
  }
  // Warm the GPU up (clocks, cuBLASLt's kernels): ~1 s of bf16 GEMMs before the first timing.
  {
    const GemmType& bf16 = kGemmTypes[2];
    const Shape s{8192, 8192, 8192};
    kernels::fill_uniform(a.data, s.m * s.k, bf16.fill, 1, timer.stream());
    kernels::fill_uniform(b.data, s.k * s.n, bf16.fill, 2, timer.stream());
    const LtGemm gemm(handle, bf16, s, a.data, b.data, d.data, workspace.data);
    const Clock::time_point start = Clock::now();
    while (seconds_since(start) < std::min(1.0, 0.1 * budget_s)) {
      timer.once([&] { gemm.enqueue(timer.stream()); });
    }
  }
  const double share = budget_s / double(configs);
  for (const GemmType& type : kGemmTypes) {
    progress(fmt::format("gemm {}", type.name));
    for (const Shape& s : kGemmShapes) {
      if (type.bytes == 8 && s.n != s.k) continue;  // float64: the squares only
      kernels::fill_uniform(a.data, s.m * s.k, type.fill, 1, timer.stream());
      kernels::fill_uniform(b.data, s.k * s.n, type.fill, 2, timer.stream());
      const LtGemm gemm(handle, type, s, a.data, b.data, d.data, workspace.data);
      // Small GEMMs are timed in batches of back-to-back calls (~200 µs), so the events' own
      // resolution does not count; the size of a batch from a call after a first one (which
      // may load the algorithm's kernels).
      timer.once([&] { gemm.enqueue(timer.stream()); });
      const double one = timer.once([&] { gemm.enqueue(timer.stream()); });
      const int batch =
          std::clamp(static_cast<int>(std::ceil(200e-6 / std::max(one, 1e-7))), 1, 256);
      const Timer::Runs runs = timer.median(
          [&] {
            for (int i = 0; i < batch; ++i) gemm.enqueue(timer.stream());
          },
          share, 1, 3, 100);
      check_gemm(type, s, a.data, b.data, d.data);
      c.gemms.push_back({type.name, s.m, s.n, s.k, runs.median_s / batch, runs.runs});
    }
  }
}

void measure_memory(CudaCalibration& c, const Timer& timer, double budget_s,
                    const std::function<void(std::string_view)>& progress) {
  const double share = budget_s / 6;
  {
    progress("device copy");
    const std::size_t bytes = std::size_t(1) << 30;
    const DeviceBuffer src(bytes), dst(bytes);
    TAPESTRY_CAL_CHECK(cudaMemsetAsync(src.data, 1, bytes, timer.stream()));
    const Timer::Runs r = timer.median(
        [&] {
          kernels::copy(src.data, dst.data, std::int64_t(bytes / 16), c.sm_count * 16,
                        timer.stream());
        },
        share, 2, 5, 100);
    c.rates.push_back({"device copy", fmt::format("{} read + written", gib_text(double(bytes))),
                       "B/s", 2.0 * double(bytes) / r.median_s, r.median_s, r.runs});
  }
  if (c.l2_bytes > 0) {
    progress("cache copy");
    const int blocks = c.sm_count;
    // Both buffers together fill half of L2.
    const std::int64_t per_block = std::max<std::int64_t>(1, c.l2_bytes / 4 / 16 / blocks);
    const std::size_t bytes = std::size_t(per_block) * 16 * std::size_t(blocks);
    const int passes = 200;
    const DeviceBuffer x(bytes), y(bytes);
    TAPESTRY_CAL_CHECK(cudaMemsetAsync(x.data, 1, bytes, timer.stream()));
    const Timer::Runs r = timer.median(
        [&] { kernels::ping_pong(x.data, y.data, per_block, passes, blocks, timer.stream()); },
        share, 2, 5, 100);
    const double moved = 2.0 * double(bytes) * passes;
    c.rates.push_back({"cache copy",
                       fmt::format("2 × {} in L2, {} passes", gib_text(double(bytes)), passes),
                       "B/s", moved / r.median_s, r.median_s, r.runs});
  }
  {
    const std::size_t bytes = std::size_t(256) << 20;
    const PinnedBuffer host(bytes);
    const DeviceBuffer device(bytes);
    std::fill_n(static_cast<char*>(host.data), bytes, char(1));
    progress("host→device");
    Timer::Runs r = timer.median(
        [&] {
          TAPESTRY_CAL_CHECK(cudaMemcpyAsync(device.data, host.data, bytes, cudaMemcpyHostToDevice,
                                             timer.stream()));
        },
        share, 1, 3, 50);
    c.rates.push_back({"host→device", fmt::format("{} from pinned memory", gib_text(double(bytes))),
                       "B/s", double(bytes) / r.median_s, r.median_s, r.runs});
    progress("device→host");
    r = timer.median(
        [&] {
          TAPESTRY_CAL_CHECK(cudaMemcpyAsync(host.data, device.data, bytes, cudaMemcpyDeviceToHost,
                                             timer.stream()));
        },
        share, 1, 3, 50);
    c.rates.push_back({"device→host", fmt::format("{} to pinned memory", gib_text(double(bytes))),
                       "B/s", double(bytes) / r.median_s, r.median_s, r.runs});
    progress("host latency");
    int direction = 0;
    r = timer.median(
        [&] {
          const cudaMemcpyKind kind =
              (direction++ % 2 == 0) ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
          void* to = kind == cudaMemcpyHostToDevice ? device.data : host.data;
          const void* from = kind == cudaMemcpyHostToDevice ? host.data : device.data;
          TAPESTRY_CAL_CHECK(cudaMemcpyAsync(to, from, 4, kind, timer.stream()));
        },
        share, 4, 20, 400);
    c.rates.push_back(
        {"host latency", "4 B pinned, each way in turn", "s", r.median_s, r.median_s, r.runs});
  }
}

void measure_launches(CudaCalibration& c, const Timer& timer, double budget_s,
                      const std::function<void(std::string_view)>& progress) {
  const double share = budget_s / 3;
  {
    progress("launch");
    const int kernels_per_run = 10000;
    const Timer::Runs r = timer.median(
        [&] {
          for (int i = 0; i < kernels_per_run; ++i) kernels::empty(timer.stream());
        },
        share, 1, 3, 20);
    c.rates.push_back({"launch", "10,000 empty kernels on one stream", "s",
                       r.median_s / kernels_per_run, r.median_s, r.runs});
  }
  const auto capture = [&](int nodes) {
    cudaGraph_t graph = nullptr;
    TAPESTRY_CAL_CHECK(cudaStreamBeginCapture(timer.stream(), cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < nodes; ++i) kernels::empty(timer.stream());
    TAPESTRY_CAL_CHECK(cudaStreamEndCapture(timer.stream(), &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check(e, "cudaGraphInstantiate");
    return std::unique_ptr<CUgraphExec_st, decltype(&cudaGraphExecDestroy)>(exec,
                                                                            &cudaGraphExecDestroy);
  };
  {
    progress("graph node");
    const int nodes = 1000;
    const auto exec = capture(nodes);
    const Timer::Runs r = timer.median(
        [&] { TAPESTRY_CAL_CHECK(cudaGraphLaunch(exec.get(), timer.stream())); }, share, 3, 5, 200);
    c.rates.push_back({"graph node", "a graph of 1,000 empty kernels, replayed", "s",
                       r.median_s / nodes, r.median_s, r.runs});
  }
  {
    progress("run overhead");
    const auto exec = capture(1);
    std::vector<double> times;
    for (int i = 0; i < 10; ++i) {  // warm-up
      TAPESTRY_CAL_CHECK(cudaGraphLaunch(exec.get(), timer.stream()));
      TAPESTRY_CAL_CHECK(cudaStreamSynchronize(timer.stream()));
    }
    const Clock::time_point start = Clock::now();
    while (times.size() < 20 || (times.size() < 5000 && seconds_since(start) < share)) {
      const Clock::time_point t0 = Clock::now();
      TAPESTRY_CAL_CHECK(cudaGraphLaunch(exec.get(), timer.stream()));
      TAPESTRY_CAL_CHECK(cudaStreamSynchronize(timer.stream()));
      times.push_back(seconds_since(t0));
    }
    const double m = median(times);
    c.rates.push_back({"run overhead", "a 1-node graph launched and synchronised (host wall)", "s",
                       m, m, static_cast<int>(times.size())});
  }
}

}  // namespace

CudaCalibration calibrate_cuda(int device, double seconds,
                               const std::function<void(std::string_view)>& progress) {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    throw Error(fmt::format("--device cuda: no CUDA device: cudaGetDeviceCount: {}",
                            e != cudaSuccess ? cudaGetErrorString(e) : "0 devices"));
  }
  if (device < 0 || device >= count) {
    throw Error(fmt::format("--device cuda: no device {}: this machine has {}", device, count));
  }
  const Clock::time_point start = Clock::now();
  TAPESTRY_CAL_CHECK(cudaSetDevice(device));
  CudaCalibration c;
  c.device = device;
  c.seconds = seconds;
  cudaDeviceProp prop{};
  TAPESTRY_CAL_CHECK(cudaGetDeviceProperties(&prop, device));
  c.gpu_name = prop.name;
  int value = 0;
  TAPESTRY_CAL_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device));
  c.sm_count = value;
  int major = 0, minor = 0;
  TAPESTRY_CAL_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TAPESTRY_CAL_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  c.compute_capability = major * 10 + minor;
  TAPESTRY_CAL_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrL2CacheSize, device));
  c.l2_bytes = value;
  std::size_t free_bytes = 0, total_bytes = 0;
  TAPESTRY_CAL_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  c.memory_bytes = static_cast<std::int64_t>(total_bytes);

  const Timer timer;
  measure_gemms(c, timer, 0.75 * seconds, progress);
  measure_memory(c, timer, 0.15 * seconds, progress);
  measure_launches(c, timer, 0.10 * seconds, progress);
  TAPESTRY_CAL_CHECK(cudaDeviceSynchronize());
  c.elapsed_s = seconds_since(start);
  return c;
}

}  // namespace tapestry::gpu
