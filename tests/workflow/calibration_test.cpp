// workflow/calibration.h: the target a calibration's measurements make (docs/cost.md), checked
// against figures computed here by hand (a real calibration: calibrate_slow_test.cpp).
#include "tapestry/workflow/calibration.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tapestry::workflow {
namespace {

// Two threads; rates in round numbers so each derived member is easy to compute by hand.
Calibration two_threads() {
  Calibration c;
  c.threads = 2;
  c.cpu_model = "Test CPU";
  c.memory_bytes = std::int64_t{8} << 30;
  c.seconds = 1;
  c.elapsed_s = 1.5;
  c.benchmarks = {
      {"matmul f32", "1024×1024×1024 per thread", "FLOP/s", 50e9, 100e9, 3, 3},
      {"matmul f64", "512×512×512 per thread", "FLOP/s", 25e9, 40e9, 3, 3},
      {"add f32", "4096×8192", "B/s", 10e9, 16e9, 3, 3},
      {"relu f32", "4096×8192", "B/s", 10e9, 20e9, 3, 3},
      {"copy f32", "4096×8192", "B/s", 8e9, 12e9, 3, 3},
      {"add f32 L2", "10×8192 per thread", "B/s", 50e9, 80e9, 3, 3},
  };
  c.cache_bytes = 1 << 20;
  c.dispatch_applications = 16384;
  c.dispatch_s = 2e-6;
  c.dispatch_overhead_s = 1e-6;
  c.run_overhead_s = 20e-6;
  c.worker_start_s = 5e-6;
  c.worker_start_shard_s = 1e-4;
  // Per shard, with peak 50 GFLOP/s and bandwidth 10 GB/s per thread:
  //   gelu: 8e6 FLOP (160 µs), 1e6 B (100 µs), took 2 ms + launch: computing → efficiency 0.08.
  //   exp:  1e6 FLOP (20 µs), 1e6 B (100 µs), took 150 µs + launch: under twice the memory
  //         term, so bandwidth efficiency 2/3.
  //   tanh: 1e6 FLOP, 1e6 B, took 105 µs + launch: within 10% of the roofline.
  c.kernels = {{"gelu", "1024×2048 per thread", 2e-3 + 2e-6, 8e6, 1e6, 3},
               {"exp", "1024×2048 per thread", 150e-6 + 2e-6, 1e6, 1e6, 3},
               {"tanh", "1024×2048 per thread", 105e-6 + 2e-6, 1e6, 1e6, 3}};
  // 2n³ FLOP at 50 GFLOP/s: n = 32 at 25% of the peak, 64 measured slower (10%: the floor
  // keeps 25%), 1024 above the peak (capped at 1).
  const auto gemm = [](std::int64_t n, double efficiency) {
    const double flops = 2.0 * static_cast<double>(n * n * n);
    return GemmResult{n, 1, flops / (50e9 * efficiency), flops, 3};
  };
  c.gemms = {gemm(32, 0.25), gemm(64, 0.10), gemm(1024, 1.2)};
  return c;
}

TEST(CalibratedTarget, DerivesEveryMemberFromTheMeasurements) {
  const cost::Target t = calibrated_target(two_threads());
  EXPECT_EQ(t.name, "cpu-local");
  ASSERT_EQ(t.devices.size(), 2U);
  EXPECT_EQ(t.devices[1].name, "cpu:1");
  ASSERT_EQ(t.device_types.size(), 1U);
  const cost::DeviceType& core = t.device_types.front();
  EXPECT_DOUBLE_EQ(core.peak_flops.at(ir::DType::kFloat32), 50e9);  // all threads / 2
  EXPECT_DOUBLE_EQ(core.peak_flops.at(ir::DType::kFloat64), 20e9);
  EXPECT_DOUBLE_EQ(core.memory_bandwidth_Bps, 10e9);  // max(add, relu) / 2
  EXPECT_DOUBLE_EQ(core.launch_s, 2e-6);
  EXPECT_EQ(core.cache_bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(core.cache_bandwidth_Bps, 50e9);   // one thread's rate
  EXPECT_DOUBLE_EQ(t.intra_node.bandwidth_Bps, 6e9);  // copy, per thread
  EXPECT_DOUBLE_EQ(t.run_overhead_s, 20e-6);
  EXPECT_DOUBLE_EQ(t.worker_start_s, 5e-6);

  ASSERT_TRUE(core.kernels.contains("gelu"));
  ASSERT_TRUE(core.kernels.at("gelu").efficiency.has_value());
  EXPECT_NEAR(*core.kernels.at("gelu").efficiency, 160e-6 / 2e-3, 1e-9);
  ASSERT_TRUE(core.kernels.contains("exp"));
  ASSERT_TRUE(core.kernels.at("exp").bandwidth_efficiency.has_value());
  EXPECT_NEAR(*core.kernels.at("exp").bandwidth_efficiency, 100e-6 / 150e-6, 1e-9);
  EXPECT_FALSE(core.kernels.contains("tanh"));

  ASSERT_EQ(core.gemm_efficiency.size(), 3U);
  EXPECT_NEAR(core.gemm_efficiency[0].efficiency, 0.25, 1e-12);
  EXPECT_NEAR(core.gemm_efficiency[1].efficiency, 0.25, 1e-12);  // never below a smaller size
  EXPECT_NEAR(core.gemm_efficiency[2].efficiency, 1.0, 1e-12);   // at most the peak
  EXPECT_EQ(t.calibration.at("cpu_model"), "Test CPU");
  EXPECT_EQ(t.calibration.at("benchmarks").size(), 6U);
}

// The 16-bit rates: the bf16 matmul is the bf16 peak; bf16 gelu at half the f32 gelu rate with
// a bf16 peak twice the f32 one gives the dtype an efficiency of 0.5 · 0.5; the bf16 add at 6
// of the 10 GB/s per thread a bandwidth efficiency of 0.6. f16: a matmul at the f32 rate (it
// widens), gelu and add within 10% of f32 — no factors. Without the benchmarks, no bf16 peak.
TEST(CalibratedTarget, HalfFloatRatesFromTheirBenchmarks) {
  Calibration c = two_threads();
  c.benchmarks.push_back({"gelu f32", "1024×8192", "FLOP/s", 2e9, 4e9, 3, 3});
  c.benchmarks.push_back(
      {"matmul bf16", "1024×1024×1024 per thread", "FLOP/s", 100e9, 200e9, 3, 3});
  c.benchmarks.push_back({"add bf16", "4096×8192", "B/s", 6e9, 12e9, 3, 3});
  c.benchmarks.push_back({"gelu bf16", "1024×8192", "FLOP/s", 1e9, 2e9, 3, 3});
  c.benchmarks.push_back({"matmul f16", "1024×1024×1024 per thread", "FLOP/s", 50e9, 100e9, 3, 3});
  c.benchmarks.push_back({"add f16", "4096×8192", "B/s", 10e9, 19e9, 3, 3});
  c.benchmarks.push_back({"gelu f16", "1024×8192", "FLOP/s", 2e9, 3.8e9, 3, 3});
  const cost::Target t = calibrated_target(c);
  const cost::DeviceType& core = t.device_types.front();
  EXPECT_DOUBLE_EQ(core.peak_flops.at(ir::DType::kBFloat16), 100e9);
  EXPECT_DOUBLE_EQ(core.peak_flops.at(ir::DType::kFloat16), 50e9);
  EXPECT_NEAR(core.dtype_efficiency(ir::DType::kBFloat16), 0.5 * 0.5, 1e-12);
  EXPECT_NEAR(core.dtype_bandwidth_efficiency(ir::DType::kBFloat16), 0.6, 1e-12);
  EXPECT_FALSE(core.dtypes.contains(ir::DType::kFloat16));
  const cost::Target old = calibrated_target(two_threads());
  EXPECT_FALSE(old.device_types.front().peak_flops.contains(ir::DType::kBFloat16));
  EXPECT_TRUE(old.device_types.front().dtypes.empty());
}

TEST(CalibratedTarget, NoCacheRateWithoutTheCacheBenchmark) {
  Calibration c = two_threads();
  c.benchmarks.pop_back();  // L2 unknown: no "add f32 L2"
  c.cache_bytes = 0;
  const cost::Target t = calibrated_target(c);
  EXPECT_EQ(t.device_types.front().cache_bytes, 0);
}

TEST(CalibrationTable, OneLinePerMeasurement) {
  const std::string table = calibration_table(two_threads());
  for (const char* line : {"matmul f32", "add f32 L2", "dispatch", "run ", "workers join", "gelu",
                           "exp", "tanh", "gemm 32", "gemm 1024"}) {
    EXPECT_NE(table.find(line), std::string::npos) << line << " in\n" << table;
  }
  EXPECT_NE(table.find("efficiency 0.08"), std::string::npos) << table;
  EXPECT_NE(table.find("the roofline holds"), std::string::npos) << table;
}

}  // namespace
}  // namespace tapestry::workflow
