// The GPU calibration (tapestry/gpu/calibrate_cuda.h): the target built from measurements
// (host-side, every build) against figures worked out by hand, and a real calibration where a
// GPU is usable (skipped elsewhere; here the call must fail with the reason).
#include "tapestry/gpu/calibrate_cuda.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tapestry/cost/target.h"
#include "tapestry/gpu/cuda.h"
#include "tapestry/support/error.h"

#ifdef TAPESTRY_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tapestry::gpu {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

int usable_gpus() {
#ifdef TAPESTRY_HAVE_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
#else
  return 0;
#endif
}

cost::Target h100x8() {
  return *cost::preset_target("h100x8");
}

CudaGemmResult gemm(const char* dtype, std::int64_t m, std::int64_t n, std::int64_t k,
                    double flops_per_s) {
  return {dtype, m, n, k, 2.0 * double(m) * double(n) * double(k) / flops_per_s, 10};
}

// An H100-like calibration with round figures.
CudaCalibration sample() {
  CudaCalibration c;
  c.gpu_name = "NVIDIA H100 80GB HBM3";
  c.sm_count = 132;
  c.compute_capability = 90;
  c.memory_bytes = 85'000'000'000;
  c.l2_bytes = 50 << 20;
  c.seconds = 20;
  c.elapsed_s = 24;
  c.gemms = {
      gemm("float32", 1024, 1024, 1024, 30e12),   gemm("float32", 8192, 8192, 8192, 50e12),
      gemm("tf32", 8192, 8192, 8192, 400e12),     gemm("bfloat16", 256, 256, 256, 20e12),
      gemm("bfloat16", 1024, 1024, 1024, 300e12), gemm("bfloat16", 2048, 2048, 2048, 250e12),
      gemm("bfloat16", 8192, 8192, 8192, 600e12), gemm("bfloat16", 8192, 16384, 4096, 700e12),
      gemm("float16", 8192, 8192, 8192, 650e12)};
  c.rates = {{"device copy", "1 GiB", "B/s", 3.0e12, 7e-4, 50},
             {"cache copy", "L2", "B/s", 9.0e12, 1e-3, 50},
             {"host→device", "256 MiB", "B/s", 50e9, 5e-3, 10},
             {"device→host", "256 MiB", "B/s", 45e9, 6e-3, 10},
             {"host latency", "4 B", "s", 2e-6, 2e-6, 100},
             {"launch", "10,000", "s", 2.5e-6, 2.5e-2, 5},
             {"graph node", "1,000", "s", 0.8e-6, 8e-4, 20},
             {"run overhead", "1 node", "s", 9e-6, 9e-6, 1000}};
  return c;
}

TEST(CudaCalibratedTarget, PeaksAreTheBestMeasuredRatePerDtypeAndTf32IsNotFloat32) {
  const cost::Target t = cuda_calibrated_target(sample(), h100x8());
  ASSERT_EQ(t.device_types.size(), 1u);
  const cost::DeviceType& d = t.device_types.front();
  EXPECT_DOUBLE_EQ(d.peak_flops.at(ir::DType::kFloat32), 50e12);    // not tf32's 400e12
  EXPECT_DOUBLE_EQ(d.peak_flops.at(ir::DType::kBFloat16), 700e12);  // the transformer shape
  EXPECT_DOUBLE_EQ(d.peak_flops.at(ir::DType::kFloat16), 650e12);
  // float64 was not measured: the preset's.
  EXPECT_DOUBLE_EQ(d.peak_flops.at(ir::DType::kFloat64), 67e12);
  EXPECT_DOUBLE_EQ(d.efficiency, 1.0);
}

TEST(CudaCalibratedTarget, GemmEfficiencyComesFromTheBf16SquaresAndNeverFalls) {
  const cost::DeviceType d = cuda_calibrated_target(sample(), h100x8()).device_types.front();
  // Squares 256, 1024, 2048 (slower than 1024: held at 1024's), 8192; the peak is 700e12.
  ASSERT_EQ(d.gemm_efficiency.size(), 4u);
  EXPECT_DOUBLE_EQ(d.gemm_efficiency[0].flops, 2.0 * 256 * 256 * 256);
  EXPECT_NEAR(d.gemm_efficiency[0].efficiency, 20.0 / 700, 1e-12);
  EXPECT_NEAR(d.gemm_efficiency[1].efficiency, 300.0 / 700, 1e-12);
  EXPECT_NEAR(d.gemm_efficiency[2].efficiency, 300.0 / 700, 1e-12);
  EXPECT_DOUBLE_EQ(d.gemm_efficiency[3].flops, 2.0 * 8192 * 8192 * 8192);
  EXPECT_NEAR(d.gemm_efficiency[3].efficiency, 600.0 / 700, 1e-12);
}

// Every other measured dtype gets its own table from its squares (float32: 1024³ at 30 of its
// 50 TFLOP/s), float16 none (no squares below its peak's size but the one), float64 none (not
// measured); streams are the CUDA executor's.
TEST(CudaCalibratedTarget, EachMeasuredDtypeHasItsOwnGemmTableAndStreamsAreTheExecutors) {
  const cost::DeviceType d = cuda_calibrated_target(sample(), h100x8()).device_types.front();
  ASSERT_EQ(d.dtype_gemm_efficiency.count(ir::DType::kFloat32), 1u);
  const std::vector<cost::GemmEfficiency>& f32 = d.dtype_gemm_efficiency.at(ir::DType::kFloat32);
  ASSERT_EQ(f32.size(), 2u);
  EXPECT_DOUBLE_EQ(f32[0].flops, 2.0 * 1024 * 1024 * 1024);
  EXPECT_NEAR(f32[0].efficiency, 30.0 / 50, 1e-12);
  EXPECT_NEAR(f32[1].efficiency, 1.0, 1e-12);
  ASSERT_EQ(d.dtype_gemm_efficiency.count(ir::DType::kFloat16), 1u);
  EXPECT_EQ(d.dtype_gemm_efficiency.at(ir::DType::kFloat16).size(), 1u);
  EXPECT_EQ(d.dtype_gemm_efficiency.count(ir::DType::kBFloat16), 0u);  // the device's table
  EXPECT_EQ(d.dtype_gemm_efficiency.count(ir::DType::kFloat64), 0u);
  // A 1024³ float32 GEMM at its own table's 0.6, not bf16's 300/700.
  EXPECT_NEAR(d.gemm_efficiency_at(2.0 * 1024 * 1024 * 1024, ir::DType::kFloat32), 0.6, 1e-12);
  EXPECT_NEAR(d.gemm_efficiency_at(2.0 * 1024 * 1024 * 1024, ir::DType::kBFloat16), 300.0 / 700,
              1e-12);
  EXPECT_EQ(d.streams, CudaExecutorOptions{}.streams);
  EXPECT_TRUE(d.fused_passes);
  const std::string table = cuda_calibration_table(sample(), h100x8());
  EXPECT_THAT(table,
              MatchesRegex("(.|\n)*gemm_efficiency float32 +\\[2.1e\\+09, 0.60\\] "
                           "\\[1.1e\\+12, 1.00\\] +- +measured: gemm float32 squares\n(.|\n)*"));
  EXPECT_THAT(table, MatchesRegex("(.|\n)*streams +4 +1 +the CUDA executor's default(.|\n)*"));
}

TEST(CudaCalibratedTarget, TheOtherMembersAreTheMeasuredOnesOrThePresets) {
  const cost::Target preset = h100x8();
  const cost::Target t = cuda_calibrated_target(sample(), preset);
  EXPECT_EQ(t.name, "h100-measured");
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices.front().name, "gpu:0");
  const cost::DeviceType& d = t.device_types.front();
  EXPECT_EQ(d.name, "h100");
  EXPECT_EQ(d.kind, "gpu");
  EXPECT_DOUBLE_EQ(d.memory_bandwidth_Bps, 3.0e12);
  EXPECT_DOUBLE_EQ(d.bandwidth_efficiency, 1.0);
  EXPECT_EQ(d.cache_bytes, 25 << 20);  // half of L2
  EXPECT_DOUBLE_EQ(d.cache_bandwidth_Bps, 9.0e12);
  EXPECT_DOUBLE_EQ(d.launch_s, 0.8e-6);  // the graph node, not the stream launch
  EXPECT_DOUBLE_EQ(t.run_overhead_s, 9e-6);
  EXPECT_EQ(d.memory_bytes, 85'000'000'000);
  ASSERT_TRUE(t.host.has_value());
  EXPECT_DOUBLE_EQ(t.host->bandwidth_Bps, 45e9);  // the slower direction
  EXPECT_DOUBLE_EQ(t.host->latency_s, 2e-6);
  // Not measured: the preset's.
  EXPECT_EQ(t.intra_node, preset.intra_node);
  EXPECT_DOUBLE_EQ(d.idle_w, preset.device_types.front().idle_w);
  EXPECT_DOUBLE_EQ(d.busy_w, preset.device_types.front().busy_w);
  EXPECT_EQ(t.inputs, preset.inputs);
  // The calibration record says which members came from the preset.
  EXPECT_EQ(t.calibration["preset"], "h100x8");
  EXPECT_EQ(t.calibration["from_preset"],
            nlohmann::json({"peak_flops float64", "links.intra_node", "idle_w, busy_w"}));
  EXPECT_EQ(t.calibration["gemms"].size(), sample().gemms.size());
  EXPECT_DOUBLE_EQ(t.calibration["rates"]["device copy"]["value"].get<double>(), 3.0e12);
}

TEST(CudaCalibratedTarget, AnL2NoFasterThanMemoryIsNoCacheAndMissingRatesFallBack) {
  CudaCalibration c = sample();
  c.rates = {{"device copy", "1 GiB", "B/s", 3.0e12, 7e-4, 50},
             {"cache copy", "L2", "B/s", 2.9e12, 1e-3, 50}};
  const cost::Target preset = h100x8();
  const cost::Target t = cuda_calibrated_target(c, preset);
  const cost::DeviceType& d = t.device_types.front();
  EXPECT_EQ(d.cache_bytes, 0);
  EXPECT_DOUBLE_EQ(d.launch_s, preset.device_types.front().launch_s);
  EXPECT_EQ(t.host, preset.host);
  EXPECT_DOUBLE_EQ(t.run_overhead_s, preset.run_overhead_s);
  const nlohmann::json& from = t.calibration["from_preset"];
  EXPECT_NE(std::find(from.begin(), from.end(), "launch_s"), from.end());
  EXPECT_NE(std::find(from.begin(), from.end(), "links.host bandwidth"), from.end());
}

TEST(CudaCalibratedTarget, WithoutBf16TheTableComesFromFloat32) {
  CudaCalibration c = sample();
  std::erase_if(c.gemms, [](const CudaGemmResult& g) { return g.dtype == "bfloat16"; });
  const cost::DeviceType d = cuda_calibrated_target(c, h100x8()).device_types.front();
  ASSERT_EQ(d.gemm_efficiency.size(), 2u);
  EXPECT_NEAR(d.gemm_efficiency[0].efficiency, 30.0 / 50, 1e-12);
  EXPECT_NEAR(d.gemm_efficiency[1].efficiency, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(d.peak_flops.at(ir::DType::kBFloat16), 989e12);  // the preset's
}

TEST(CudaCalibratedTarget, WritesATargetThatReadsBack) {
  const cost::Target t = cuda_calibrated_target(sample(), h100x8());
  const cost::Target back = cost::parse_target(cost::target_json_text(t), "h100-measured.json");
  EXPECT_EQ(back, t);
  EXPECT_THAT(cost::describe_target(back), HasSubstr("gpu:0"));
}

TEST(CudaCalibratedTarget, NamesComeFromTheGpu) {
  CudaCalibration c = sample();
  c.gpu_name = "NVIDIA H200";
  EXPECT_EQ(cuda_calibrated_target(c, h100x8()).name, "h200-measured");
  c.gpu_name = "Some GPU";
  EXPECT_EQ(cuda_calibrated_target(c, h100x8()).name, "gpu-measured");
}

TEST(CudaCalibratedTarget, NeedsAFloat32GemmAndTheCopyRate) {
  CudaCalibration c = sample();
  std::erase_if(c.gemms, [](const CudaGemmResult& g) { return g.dtype == "float32"; });
  EXPECT_THROW((void)cuda_calibrated_target(c, h100x8()), Error);
  c = sample();
  std::erase_if(c.rates, [](const CudaRateResult& r) { return r.name == "device copy"; });
  EXPECT_THROW((void)cuda_calibrated_target(c, h100x8()), Error);
}

TEST(CudaCalibrationTable, ListsEveryMeasurementAndWhereEachMemberComesFrom) {
  const std::string table = cuda_calibration_table(sample(), h100x8());
  EXPECT_THAT(table, HasSubstr("NVIDIA H100 80GB HBM3 (132 SMs, sm_90"));
  EXPECT_THAT(table, MatchesRegex("(.|\n)*gemm bfloat16 +8192×16384×4096 .* 700 TFLOP/s(.|\n)*"));
  EXPECT_THAT(table, MatchesRegex("(.|\n)*device copy .* 3 TB/s(.|\n)*"));
  EXPECT_THAT(table, MatchesRegex("(.|\n)*graph node .* 0.80 µs(.|\n)*"));
  EXPECT_THAT(table, MatchesRegex("(.|\n)*memory_bandwidth_Bps +3 TB/s +3.35 TB/s +measured: "
                                  "device copy\n(.|\n)*"));
  EXPECT_THAT(table,
              MatchesRegex("(.|\n)*idle_w, busy_w +70 W, 700 W +70 W, 700 W +h100x8's\n(.|\n)*"));
  EXPECT_THAT(table, MatchesRegex("(.|\n)*peak_flops float64 .* h100x8's\n(.|\n)*"));
}

TEST(CalibrateCuda, FailsWithTheReasonWithoutAGpu) {
  if (usable_gpus() > 0) GTEST_SKIP() << "a GPU is usable here";
  try {
    (void)calibrate_cuda(0, 0.1, [](std::string_view) {});
    FAIL() << "calibrate_cuda ran without a GPU";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), MatchesRegex("--device cuda: (no CUDA device: cudaGetDeviceCount: .+|"
                                       "this build has no CUDA backend.*)"));
  }
}

// A real calibration (~3 s of measuring plus set-up): rates an H100-class GPU reaches, each GEMM
// checked against a host dot product inside calibrate_cuda, and a target that reads back.
TEST(CalibrateCuda, MeasuresPlausibleRatesOnAGpu) {
  if (usable_gpus() == 0) GTEST_SKIP() << "no usable GPU";
  std::vector<std::string> heard;
  const CudaCalibration c =
      calibrate_cuda(0, 3.0, [&](std::string_view name) { heard.emplace_back(name); });
  EXPECT_FALSE(c.gpu_name.empty());
  EXPECT_GT(c.sm_count, 0);
  EXPECT_GT(c.memory_bytes, 1LL << 30);
  EXPECT_EQ(c.gemms.size(), 5u * 7u - 1u);  // float64 skips the transformer shape
  for (const CudaGemmResult& g : c.gemms) {
    EXPECT_GT(g.rate(), 1e9) << g.dtype << " " << g.m;
    EXPECT_LT(g.rate(), 1e16) << g.dtype << " " << g.m;
    EXPECT_GE(g.runs, 3);
  }
  const double f32 = c.best_gemm("float32")->rate();
  if (c.compute_capability >= 80) {  // tensor cores for TF32 and bf16
    EXPECT_GT(c.best_gemm("tf32")->rate(), 1.5 * f32);
    EXPECT_GT(c.best_gemm("bfloat16")->rate(), 3 * f32);
  }
  const auto rate = [&](const char* name) {
    const CudaRateResult* r = c.find_rate(name);
    EXPECT_NE(r, nullptr) << name;
    return r == nullptr ? 0.0 : r->value;
  };
  EXPECT_GT(rate("device copy"), 2e11);
  EXPECT_LT(rate("device copy"), 2e13);
  EXPECT_GT(rate("host→device"), 1e9);
  EXPECT_LT(rate("host→device"), rate("device copy"));
  EXPECT_GT(rate("device→host"), 1e9);
  EXPECT_GT(rate("launch"), 1e-8);
  EXPECT_LT(rate("launch"), 1e-4);
  EXPECT_GT(rate("graph node"), 1e-9);
  EXPECT_LT(rate("graph node"), 1e-4);
  EXPECT_GT(rate("run overhead"), rate("graph node"));
  EXPECT_LT(c.elapsed_s, 60);
  EXPECT_THAT(heard, ::testing::Contains("gemm bfloat16"));
  const cost::Target t = cuda_calibrated_target(c, h100x8());
  EXPECT_EQ(cost::parse_target(cost::target_json_text(t), "measured.json"), t);
}

}  // namespace
}  // namespace tapestry::gpu
