// Simulation: the roofline per application, transfers with port contention, list scheduling,
// memory, energy — each checked against numbers worked out by hand on tiny graphs — and
// invariants on random graphs and plans.
#include "tapestry/cost/simulate.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <numeric>

#include "cost/cost_testing.h"
#include "rewrite/random_plans.h"
#include "tapestry/cost/work.h"

namespace tapestry::cost {
namespace {

using testing::place_tap;
using testing::toy_target;

// relu over 1000 × 250 f32: 250,000 FLOPs (2.5 µs at 100 GFLOP/s), 2 MB moved (2 ms at 1 GB/s).
constexpr std::string_view kRelu = "X: f32[1000, 250]\nY = relu(X)\noutput Y\n";
// Two chained relus: the second reads what the first wrote.
constexpr std::string_view kTwoRelus = "X: f32[1000, 250]\nA = relu(X)\nY = relu(A)\noutput Y\n";

TEST(Roofline, MemoryBoundComputeBoundAndTheLaunchFloor) {
  DeviceType d = toy_target().device_types[0];
  d.launch_s = 1e-6;
  Work memory_bound{.flops = 250'000, .bytes_read = 1'000'000, .bytes_written = 1'000'000};
  EXPECT_DOUBLE_EQ(application_seconds(memory_bound, d), 1e-6 + 2e-3);
  Work compute_bound{.flops = 1e12, .bytes_read = 8, .bytes_written = 4};
  EXPECT_DOUBLE_EQ(application_seconds(compute_bound, d), 1e-6 + 10.0);
  d.efficiency = 0.5;
  d.bandwidth_efficiency = 0.25;
  EXPECT_DOUBLE_EQ(application_seconds(compute_bound, d), 1e-6 + 20.0);
  EXPECT_DOUBLE_EQ(application_seconds(memory_bound, d), 1e-6 + 8e-3);
  Work f64{.flops = 1, .bytes_read = 0, .bytes_written = 0, .dtype = ir::DType::kFloat64};
  try {
    application_seconds(f64, d);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "device type 'toy-gpu' has no peak_flops for float64");
  }
  // An integer dtype the device type lacks runs at its float32 peak (100 GFLOP/s); one it lists
  // at its own.
  Work i64{.flops = 1e12, .bytes_read = 8, .bytes_written = 8, .dtype = ir::DType::kInt64};
  EXPECT_DOUBLE_EQ(application_seconds(i64, d), 1e-6 + 20.0);
  d.peak_flops[ir::DType::kInt64] = 25e9;
  EXPECT_DOUBLE_EQ(application_seconds(i64, d), 1e-6 + 80.0);
  EXPECT_DOUBLE_EQ(transfer_seconds(1'000'000, Link{1e9, 5e-6, false}), 5e-6 + 1e-3);
  EXPECT_DOUBLE_EQ(transfer_seconds(1'000'000, Link{1e9, 5e-6, true}), 0.0);
}

// An application whose bytes fit in the device's cache streams at the cache's bandwidth (times
// the same bandwidth efficiency); one byte more and it streams from memory.
TEST(Roofline, ACacheServesWhatFitsInIt) {
  DeviceType d = toy_target().device_types[0];  // 1 GB/s memory
  const Work work{.flops = 250'000, .bytes_read = 1'000'000, .bytes_written = 1'000'000};
  d.cache_bandwidth_Bps = 4e9;
  d.cache_bytes = 2'000'000;
  EXPECT_DOUBLE_EQ(application_seconds(work, d), 0.5e-3);
  d.bandwidth_efficiency = 0.5;
  EXPECT_DOUBLE_EQ(application_seconds(work, d), 1e-3);
  d.cache_bytes = 1'999'999;
  EXPECT_DOUBLE_EQ(application_seconds(work, d), 4e-3);
  d.cache_bytes = 0;  // no cache
  d.cache_bandwidth_Bps = 0;
  EXPECT_DOUBLE_EQ(application_seconds(work, d), 4e-3);
}

// A device type's "kernels" entry replaces its efficiencies for that kernel only.
TEST(Roofline, KernelRatesApplyToTheirKernelOnly) {
  Target t = toy_target(1, 1);
  const Placement p = place_tap(kRelu, "{}", t);
  EXPECT_DOUBLE_EQ(simulate(p, t).makespan_s, 2e-3);  // 2 MB at 1 GB/s
  t.device_types[0].kernels["relu"].bandwidth_efficiency = 0.5;
  EXPECT_DOUBLE_EQ(simulate(p, t).makespan_s, 4e-3);
  t.device_types[0].kernels.clear();
  t.device_types[0].kernels["gelu"].bandwidth_efficiency = 0.5;  // not relu: no effect
  EXPECT_DOUBLE_EQ(simulate(p, t).makespan_s, 2e-3);
}

// A fused operation's compute efficiency weighs its stages' by their FLOPs, harmonically:
// linear (2·100³ FLOPs) ⇒ gelu (8·100² FLOPs), gelu at 0.001 of peak.
TEST(Roofline, AFusedOperationWeighsItsStagesRates) {
  Target t = toy_target(1, 1);
  t.device_types[0].kernels["gelu"].efficiency = 0.001;
  const Placement p = place_tap(
      "X: f32[100, 100]\nW: f32[100, 100]\nb: f32[100]\nY = gelu(linear(X, W, b))\noutput Y\n",
      R"({"fuse": "auto"})", t);
  ASSERT_EQ(p.operations.size(), 1u);
  const PlacedOperation& op = p.operations[0];
  ASSERT_EQ(op.kernel, "fused");
  ASSERT_EQ(op.kernels.size(), 2u);
  const double linear = 2e6, gelu = 8e4;
  EXPECT_EQ(op.kernels[0].kernel, "linear");
  EXPECT_DOUBLE_EQ(op.kernels[0].share, linear / (linear + gelu));
  EXPECT_EQ(op.kernels[1].kernel, "gelu");
  const double efficiency = 1.0 / (linear / (linear + gelu) / 1.0 + gelu / (linear + gelu) / 0.001);
  EXPECT_NEAR(operation_rates(op, t.device_types[0]).efficiency, efficiency, 1e-15);
  // Compute-bound now: 2.08 MFLOP at 100 GFLOP/s × 0.0254, not the 120 µs of its 120,400 bytes.
  EXPECT_NEAR(simulate(p, t).makespan_s, (linear + gelu) / (100e9 * efficiency), 1e-12);
  EXPECT_GT(simulate(p, t).makespan_s, 8e-4);
}

// With a GEMM efficiency table, a GEMM's FLOPs run at the table's efficiency for the FLOPs of
// one call; a fused operation's other stages at their own; devices without a table as before.
TEST(Roofline, AGemmTableSlowsSmallGemms) {
  Target t = toy_target(1, 2);
  DeviceType& d = t.device_types[0];
  d.gemm_efficiency = {{1e6, 0.1}, {1e8, 0.9}};
  d.memory_bandwidth_Bps = 1e15;  // compute-bound throughout
  // linear 100 × 100 × 100: 2e6 FLOPs a call, efficiency 0.1 + 0.8 · log(2)/log(100).
  constexpr std::string_view tap =
      "X: f32[100, 100]\nW: f32[100, 100]\nb: f32[100]\nY = linear(X, W, b)\noutput Y\n";
  const double e = 0.1 + 0.8 * std::log(2.0) / std::log(100.0);
  const Placement whole = place_tap(tap, "{}", t);
  EXPECT_NEAR(simulate(whole, t).makespan_s, 2e6 / (100e9 * e), 1e-15);
  // Two shards of 1e6 FLOPs each, in parallel: each at 0.1, slower per FLOP than the whole.
  const Placement halves = place_tap(tap, R"({"ops": {"Y": {"split": {"batch": 2}}}})", t);
  EXPECT_NEAR(simulate(halves, t).makespan_s, 1e6 / (100e9 * 0.1), 1e-15);
  EXPECT_GT(simulate(halves, t).makespan_s, simulate(whole, t).makespan_s);
  // Fused with gelu at 0.001 of peak: the linear's FLOPs at the table's figure, gelu's at its own.
  d.kernels["gelu"].efficiency = 0.001;
  const Placement fused = place_tap(
      "X: f32[100, 100]\nW: f32[100, 100]\nb: f32[100]\nY = gelu(linear(X, W, b))\noutput Y\n",
      R"({"fuse": "auto"})", t);
  ASSERT_EQ(fused.operations.size(), 1u);
  EXPECT_NEAR(simulate(fused, t).makespan_s, 2e6 / (100e9 * e) + 8e4 / (100e9 * 0.001), 1e-12);
  // An operation with no GEMM stage ignores the table.
  const Placement relu = place_tap(kRelu, "{}", t);
  EXPECT_DOUBLE_EQ(simulate(relu, t).makespan_s, 250'000 / 100e9);
  // The work of an application counts its GEMM FLOPs.
  const Work work = whole.applications[0].work;
  EXPECT_DOUBLE_EQ(work.gemm_flops, 2e6);
  EXPECT_DOUBLE_EQ(relu.applications[0].work.gemm_flops, 0);
}

// A dtype's own GEMM table prices that dtype's GEMMs; other dtypes keep the device type's.
TEST(Roofline, ADtypesGemmTableReplacesTheDevicesForItsGemms) {
  Target t = toy_target(1, 1);
  DeviceType& d = t.device_types[0];
  d.gemm_efficiency = {{1e5, 0.1}, {1e8, 0.9}};
  d.memory_bandwidth_Bps = 1e15;  // compute-bound throughout
  d.peak_flops[ir::DType::kBFloat16] = 400e9;
  constexpr std::string_view f32 =
      "X: f32[100, 100]\nW: f32[100, 100]\nY = matmul(X, W)\noutput Y\n";
  constexpr std::string_view bf16 =
      "X: bf16[100, 100]\nW: bf16[100, 100]\nY = matmul(X, W)\noutput Y\n";
  const double e = 0.1 + 0.8 * std::log(2e6 / 1e5) / std::log(1e8 / 1e5);  // 2e6 FLOPs
  EXPECT_NEAR(simulate(place_tap(f32, "{}", t), t).makespan_s, 2e6 / (100e9 * e), 1e-15);
  d.dtype_gemm_efficiency[ir::DType::kFloat32] = {{1e5, 0.5}, {1e7, 1.0}};
  const double e32 = 0.5 + 0.5 * std::log(2e6 / 1e5) / std::log(1e7 / 1e5);
  EXPECT_DOUBLE_EQ(d.gemm_efficiency_at(2e6, ir::DType::kFloat32), e32);
  EXPECT_DOUBLE_EQ(d.gemm_efficiency_at(2e6, ir::DType::kBFloat16), e);
  EXPECT_NEAR(simulate(place_tap(f32, "{}", t), t).makespan_s, 2e6 / (100e9 * e32), 1e-15);
  EXPECT_NEAR(simulate(place_tap(bf16, "{}", t), t).makespan_s, 2e6 / (400e9 * e), 1e-15);
}

// A device with streams runs the applications of one operation placed on it together: a GEMM
// among them runs at the table's efficiency for min(k, streams) times its FLOPs; their times
// still add. streams 1 (the default) is the device of before.
TEST(Roofline, StreamsRunAnOperationsGemmsTogether) {
  Target t = toy_target(1, 1);
  DeviceType& d = t.device_types[0];
  d.gemm_efficiency = {{1e5, 0.1}, {1e8, 0.9}};
  d.memory_bandwidth_Bps = 1e15;
  const auto e = [](double flops) { return 0.1 + 0.8 * std::log(flops / 1e5) / std::log(1e3); };
  constexpr std::string_view tap =
      "X: f32[800, 100]\nW: f32[100, 100]\nY = matmul(X, W)\noutput Y\n";
  constexpr std::string_view eight = R"({"ops": {"Y": {"split": {"m": 8}}}})";
  const Placement whole = place_tap(tap, "{}", t);
  const Placement shards = place_tap(tap, eight, t);
  ASSERT_EQ(shards.applications.size(), 8u);
  const double call = 2e6;  // each shard's: 100 × 100 × 100 × 2
  EXPECT_NEAR(simulate(shards, t).makespan_s, 8 * call / (100e9 * e(call)), 1e-15);
  d.streams = 4;
  EXPECT_NEAR(simulate(shards, t).makespan_s, 8 * call / (100e9 * e(4 * call)), 1e-15);
  d.streams = 16;  // no more together than the operation has applications here
  EXPECT_NEAR(simulate(shards, t).makespan_s, 8 * call / (100e9 * e(8 * call)), 1e-15);
  EXPECT_NEAR(simulate(shards, t).makespan_s, simulate(whole, t).makespan_s, 1e-15);
  // On two devices, four shards each: four together on each.
  Target two = toy_target(1, 2);
  two.device_types[0].gemm_efficiency = d.gemm_efficiency;
  two.device_types[0].memory_bandwidth_Bps = 1e15;
  two.device_types[0].streams = 16;
  const Placement spread = place_tap(tap, eight, two);
  EXPECT_NEAR(simulate(spread, two).makespan_s, 4 * call / (100e9 * e(4 * call)), 1e-15);
}

// A device with fused_passes runs a fused operation's stages one kernel each: every stage after
// the first adds a launch and a pass writing and reading back its elements — but relu right
// after a GEMM (its epilogue). Unfused graphs and devices without the flag: as before.
TEST(Roofline, FusedPassesPayALaunchAndTheIntermediatesTraffic) {
  Target t = toy_target(1, 1);
  DeviceType& d = t.device_types[0];
  d.launch_s = 1e-6;
  d.memory_bandwidth_Bps = 1e9;
  constexpr std::string_view gelu =
      "X: f32[100, 100]\nW: f32[100, 100]\nb: f32[100]\nY = gelu(linear(X, W, b))\noutput Y\n";
  constexpr std::string_view relu =
      "X: f32[100, 100]\nW: f32[100, 100]\nb: f32[100]\nY = relu(linear(X, W, b))\noutput Y\n";
  const Placement fused = place_tap(gelu, R"({"fuse": "auto"})", t);
  ASSERT_EQ(fused.operations.size(), 1u);
  const double before = simulate(fused, t).makespan_s;
  d.fused_passes = true;
  // gelu's 8e4 FLOPs at 8 a point: 1e4 elements, written and read back as float32.
  const double elements = 8e4 / flops_per_point("gelu");
  EXPECT_DOUBLE_EQ(elements, 1e4);
  EXPECT_NEAR(simulate(fused, t).makespan_s, before + 1e-6 + 2 * elements * 4 / 1e9, 1e-15);
  // relu after the GEMM: the epilogue, nothing more.
  const Placement epilogue = place_tap(relu, R"({"fuse": "auto"})", t);
  ASSERT_EQ(epilogue.operations.size(), 1u);
  const double with = simulate(epilogue, t).makespan_s;
  d.fused_passes = false;
  EXPECT_DOUBLE_EQ(simulate(epilogue, t).makespan_s, with);
  // Unfused: two applications, unchanged by the flag.
  const Placement apart = place_tap(gelu, "{}", t);
  const double unfused = simulate(apart, t).makespan_s;
  d.fused_passes = true;
  EXPECT_DOUBLE_EQ(simulate(apart, t).makespan_s, unfused);
}

// A bf16 plan is priced from the bf16 rates: its GEMM FLOPs at peak_flops.bfloat16 (not the f32
// peak), the rest of its FLOPs and its bytes scaled by the device type's "dtypes" factors for
// bfloat16; an f32 plan on the same target keeps the f32 rates.
TEST(Roofline, ABfloat16PlanIsPricedAtTheBfloat16Rates) {
  Target t = toy_target(1, 1);
  DeviceType& d = t.device_types[0];
  d.memory_bandwidth_Bps = 1e15;  // compute-bound
  constexpr std::string_view f32 =
      "X: f32[100, 100]\nW: f32[100, 100]\nb: f32[100]\nY = gelu(linear(X, W, b))\noutput Y\n";
  const std::string bf16 =
      "X: bf16[100, 100]\nW: bf16[100, 100]\nb: bf16[100]\n"
      "Y = gelu(linear(X, W, b))\noutput Y\n";
  const double linear = 2e6, gelu = 8e4;  // AFusedOperationWeighsItsStagesRates
  // Unfused: the linear is GEMM work, the gelu not.
  const Placement p = place_tap(bf16, "{}", t);
  try {
    (void)simulate(p, t);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "device type 'toy-gpu' has no peak_flops for bfloat16");
  }
  d.peak_flops[ir::DType::kBFloat16] = 400e9;
  EXPECT_NEAR(simulate(p, t).makespan_s, (linear + gelu) / 400e9, 1e-15);
  d.dtypes[ir::DType::kBFloat16].efficiency = 0.125;  // bf16 elementwise at 50 GFLOP/s
  EXPECT_NEAR(simulate(p, t).makespan_s, linear / 400e9 + gelu / (400e9 * 0.125), 1e-15);
  // The same fused: one operation, its GEMM stage at the peak, its gelu stage at the factor.
  const Placement fused = place_tap(bf16, R"({"fuse": "auto"})", t);
  ASSERT_EQ(fused.operations.size(), 1u);
  EXPECT_NEAR(simulate(fused, t).makespan_s, linear / 400e9 + gelu / (400e9 * 0.125), 1e-15);
  // f32 keeps its own peak and no factor.
  EXPECT_NEAR(simulate(place_tap(f32, "{}", t), t).makespan_s, (linear + gelu) / 100e9, 1e-15);
  // Memory-bound: the bytes of a bf16 relu at the dtype's bandwidth factor; f32's unscaled.
  d.memory_bandwidth_Bps = 1e9;
  d.dtypes[ir::DType::kBFloat16].bandwidth_efficiency = 0.5;
  const Placement relu16 = place_tap("X: bf16[1000, 250]\nY = relu(X)\noutput Y\n", "{}", t);
  EXPECT_DOUBLE_EQ(simulate(relu16, t).makespan_s, 1e6 / (1e9 * 0.5));  // 2 bytes a cell
  EXPECT_DOUBLE_EQ(simulate(place_tap(kRelu, "{}", t), t).makespan_s, 2e-3);
}

// A target's run_overhead_s is added once to the makespan (and idle power is drawn during it).
TEST(Simulate, RunOverheadAddsToTheMakespanOnce) {
  Target t = toy_target(1, 2);
  const Placement p = place_tap(kRelu, R"({"ops": {"Y": {"split": {"d0": 2}}}})", t);
  const CostVector before = simulate(p, t);
  t.run_overhead_s = 5e-6;
  const CostVector after = simulate(p, t);
  EXPECT_DOUBLE_EQ(after.makespan_s, before.makespan_s + 5e-6);
  EXPECT_NEAR(after.energy_j, before.energy_j + 2 * 10 * 5e-6, 1e-15);
  EXPECT_EQ(parse_target(to_json(t).dump(), "again").run_overhead_s, 5e-6);
}

TEST(Simulate, OneApplication) {
  const Target t = toy_target();
  const CostVector c = simulate(place_tap(kRelu, "{}", t), t);
  EXPECT_DOUBLE_EQ(c.makespan_s, 2e-3);
  EXPECT_EQ(c.devices_used, 1);
  EXPECT_EQ(c.bytes_moved, 0);
  // Resident X (1 MB) plus Y (1 MB) written.
  EXPECT_EQ(c.peak_memory_bytes, 2'000'000);
  // gpu:0 idle and busy; gpu:1, on the node the plan holds, idle for the whole run.
  EXPECT_DOUBLE_EQ(c.energy_j, 10 * 2e-3 + 100 * 2e-3 + 10 * 2e-3);
  EXPECT_EQ(c.devices_held, 2);
  EXPECT_DOUBLE_EQ(c.idle_energy_j, 2 * 10 * 2e-3);
  ASSERT_EQ(c.per_device.size(), 1u);
  EXPECT_DOUBLE_EQ(c.per_device[0].energy_j, 10 * 2e-3 + 100 * 2e-3);
  EXPECT_EQ(c.per_device[0].device, "gpu:0");
  EXPECT_DOUBLE_EQ(c.per_device[0].idle_s, 0);
  EXPECT_TRUE(c.fits);
}

TEST(Simulate, TwoShardsOnTwoDevicesRunInParallel) {
  const Target t = toy_target();
  const CostVector c = simulate(place_tap(kRelu, R"({"ops": {"Y": {"split": {"d0": 2}}}})", t), t);
  EXPECT_DOUBLE_EQ(c.makespan_s, 1e-3);
  EXPECT_EQ(c.devices_used, 2);
  EXPECT_DOUBLE_EQ(c.energy_j, 2 * (10 * 1e-3 + 100 * 1e-3));
  // Each holds its half of X and of Y.
  EXPECT_EQ(c.peak_memory_bytes, 1'000'000);
}

TEST(Simulate, ACrossDeviceChainWaitsForItsTransfer) {
  // A on gpu:0 whole (2 ms); Y split in two: gpu:0 reads its half locally, gpu:1 waits for
  // 500 KB over 1 GB/s (0.5 ms + 10 µs latency), then runs 1 ms.
  const Target t = toy_target(1, 2, 10e-6);
  Schedule s;
  const Placement p = place_tap(kTwoRelus, R"({"ops": {"Y": {"split": {"d0": 2}}}})", t);
  const CostVector c = simulate(p, t, &s);
  ASSERT_EQ(p.transfers.size(), 1u);
  EXPECT_EQ(c.bytes_moved, 500'000);
  EXPECT_DOUBLE_EQ(s.transfers[0].start, 2e-3);
  EXPECT_DOUBLE_EQ(s.transfers[0].end, 2e-3 + 10e-6 + 0.5e-3);
  EXPECT_DOUBLE_EQ(c.makespan_s, 2e-3 + 10e-6 + 0.5e-3 + 1e-3);
  // gpu:0: X resident (1 MB) + A (1 MB) + its half of Y (0.5 MB); A stays until the transfer
  // has been sent.
  EXPECT_EQ(c.per_device[0].peak_memory_bytes, 2'500'000);
  // gpu:1: the received half of A and its half of Y.
  EXPECT_EQ(c.per_device[1].peak_memory_bytes, 1'000'000);
  EXPECT_EQ(c.per_device[0].bytes_sent, 500'000);
  EXPECT_EQ(c.per_device[1].bytes_received, 500'000);
}

TEST(Simulate, TransfersIntoOneDeviceShareItsIngressPort) {
  // A split in 4 on gpu:0…3, Y whole on gpu:0: three 250 KB transfers into gpu:0 one after
  // another (0.25 ms each), then Y (2 ms).
  const Target t = toy_target(1, 4);
  Schedule s;
  const Placement p = place_tap(kTwoRelus, R"({"ops": {"A": {"split": {"d0": 4}}}})", t);
  const CostVector c = simulate(p, t, &s);
  ASSERT_EQ(p.transfers.size(), 3u);
  std::vector<double> ends;
  for (const auto& iv : s.transfers) ends.push_back(iv.end);
  std::sort(ends.begin(), ends.end());
  EXPECT_DOUBLE_EQ(ends[0], 0.5e-3 + 0.25e-3);
  EXPECT_DOUBLE_EQ(ends[1], 0.5e-3 + 0.5e-3);
  EXPECT_DOUBLE_EQ(ends[2], 0.5e-3 + 0.75e-3);
  EXPECT_DOUBLE_EQ(c.makespan_s, 0.5e-3 + 0.75e-3 + 2e-3);
}

TEST(Simulate, OtherNodesAreReachedOverTheSlowerLink) {
  // Same chain as above, but Y's second shard on gpu:2, on the other node (0.1 GB/s).
  const Target t = toy_target(2, 2);
  const CostVector c =
      simulate(place_tap(kTwoRelus,
                         R"({"ops": {"Y": {"split": {"d0": 2}, "place": ["gpu:0", "gpu:2"]}}})", t),
               t);
  EXPECT_DOUBLE_EQ(c.makespan_s, 2e-3 + 5e-3 + 1e-3);
}

TEST(Simulate, ADeviceRunsOneApplicationAtATimeInReleaseOrder) {
  // Four shards all placed on gpu:0: 4 × 0.5 ms back to back.
  const Target t = toy_target();
  const CostVector c = simulate(
      place_tap(kRelu, R"({"ops": {"Y": {"split": {"d0": 4}, "place": ["gpu:0"]}}})", t), t);
  EXPECT_DOUBLE_EQ(c.makespan_s, 2e-3);
  EXPECT_EQ(c.devices_used, 1);
}

// Y = relu(A) is released when A is done, C = relu(X) at the start. A target's only device runs
// the released applications in graph order — A, Y, C, as the block executor runs them on one
// thread — and frees A after Y: X, A and Y at once at most (3 MB; Y and C are outputs). With a
// second CPU that shares no memory (an MPI rank; everything still on the first) it runs its
// applications in the program's order, as an MPI rank does: the same A, Y, C and 3 MB. A GPU
// beside another starts the one released first — A, C, Y — and holds X, A, C and Y at once
// (4 MB). The makespan is the same.
TEST(Simulate, TheOnlyDeviceRunsTheReleasedApplicationsInGraphOrder) {
  constexpr std::string_view kFork =
      "X: f32[1000, 250]\nA = relu(X)\nY = relu(A)\nC = relu(X)\noutput Y, C\n";
  const auto order = [&](const Target& t, CostVector& c) {
    Schedule s;
    const Placement p = place_tap(kFork, "{}", t);
    c = simulate(p, t, &s);
    std::vector<std::pair<double, std::string>> starts;
    for (std::size_t a = 0; a < p.applications.size(); ++a) {
      EXPECT_EQ(s.devices[a], 0u);
      starts.emplace_back(s.applications[a].start, p.operations[p.applications[a].operation].name);
    }
    std::sort(starts.begin(), starts.end());
    std::string names;
    for (const auto& [start, name] : starts) names += name;
    return names;
  };
  Target ranks = toy_target(1, 2);
  ranks.device_types[0].kind = "cpu";
  for (Device& d : ranks.devices) d.name = "cpu:" + std::to_string(d.index);
  CostVector one, two, gpus;
  EXPECT_EQ(order(toy_target(1, 1), one), "AYC");
  EXPECT_EQ(one.peak_memory_bytes, 3'000'000);
  EXPECT_EQ(order(ranks, two), "AYC");
  EXPECT_EQ(two.peak_memory_bytes, 3'000'000);
  EXPECT_EQ(order(toy_target(1, 2), gpus), "ACY");
  EXPECT_EQ(gpus.peak_memory_bytes, 4'000'000);
  EXPECT_DOUBLE_EQ(one.makespan_s, two.makespan_s);
  EXPECT_DOUBLE_EQ(one.makespan_s, gpus.makespan_s);
}

TEST(Simulate, OnSharedMemoryUnpinnedShardsRunOnWhicheverCoreIsFree) {
  // Two independent unsharded operations (4 ms each), both placed on device 0 by default: on
  // shared memory the idle core takes the second instead of waiting, as the thread pool does.
  Target t = toy_target(1, 2);
  t.intra_node.shared_memory = true;
  constexpr std::string_view tap =
      "X: f32[4, 250000]\nA = relu(X)\nB = neg(X)\noutput A\noutput B\n";
  const Placement p = place_tap(tap, "{}", t);
  Schedule s;
  const CostVector c = simulate(p, t, &s);
  // Unsharded A and B are both placed on device 0; on shared memory they run side by side.
  EXPECT_EQ(p.applications[0].device, 0u);
  EXPECT_EQ(p.applications[1].device, 0u);
  EXPECT_NE(s.devices[0], s.devices[1]);
  EXPECT_DOUBLE_EQ(c.makespan_s, 8e-3);
  EXPECT_EQ(c.devices_used, 2);
  // Pinned by the plan, they queue on device 0.
  const Placement q =
      place_tap(tap, R"({"ops": {"A": {"place": ["gpu:0"]}, "B": {"place": ["gpu:0"]}}})", t);
  EXPECT_DOUBLE_EQ(simulate(q, t).makespan_s, 16e-3);
  // Without shared memory, the placement holds.
  t.intra_node.shared_memory = false;
  EXPECT_DOUBLE_EQ(simulate(place_tap(tap, "{}", t), t).makespan_s, 16e-3);
}

// worker_start_s: on shared memory the second core takes work only from that instant on, so a
// second operation waits for the first core to free up when the worker joins too late.
TEST(Simulate, OnSharedMemoryWorkersJoinAtWorkerStart) {
  Target t = toy_target(1, 2);
  t.intra_node.shared_memory = true;
  constexpr std::string_view tap =
      "X: f32[4, 250000]\nA = relu(X)\nB = neg(X)\noutput A\noutput B\n";  // 8 ms each
  const Placement p = place_tap(tap, "{}", t);
  EXPECT_DOUBLE_EQ(simulate(p, t).makespan_s, 8e-3);
  t.worker_start_s = 3e-3;  // B starts on the second core at 3 ms
  Schedule s;
  EXPECT_DOUBLE_EQ(simulate(p, t, &s).makespan_s, 11e-3);
  EXPECT_NE(s.devices[0], s.devices[1]);
  EXPECT_DOUBLE_EQ(s.applications[1].start, 3e-3);
  t.worker_start_s = 10e-3;  // later than the first core frees up: both run there
  EXPECT_DOUBLE_EQ(simulate(p, t, &s).makespan_s, 16e-3);
  EXPECT_EQ(s.devices[0], s.devices[1]);
  // Only shared-memory nodes have pool threads: distinct devices start at once.
  t.intra_node.shared_memory = false;
  const Placement split = place_tap(kRelu, R"({"ops": {"Y": {"split": {"d0": 2}}}})", t);
  EXPECT_DOUBLE_EQ(simulate(split, t).makespan_s, 1e-3);
  // Written and read back; a negative value is refused with its path.
  EXPECT_EQ(parse_target(to_json(t).dump(), "again").worker_start_s, 10e-3);
  nlohmann::json j = to_json(t);
  j["worker_start_s"] = -1;
  try {
    parse_target(j.dump(), "bad.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/worker_start_s"), std::string::npos) << e.what();
  }
}

TEST(Simulate, MemoryBeyondCapacityDoesNotFit) {
  Target t = toy_target();
  t.device_types[0].memory_bytes = 1'500'000;
  const CostVector c = simulate(place_tap(kRelu, "{}", t), t);
  EXPECT_FALSE(c.fits);
  EXPECT_EQ(to_json(c).at("fits"), false);
}

TEST(Simulate, JsonHasTheDocumentedKeys) {
  const Target t = toy_target();
  const nlohmann::json j = to_json(simulate(place_tap(kRelu, "{}", t), t));
  for (const char* key : {"makespan_s", "peak_memory_bytes", "devices_used", "energy_j",
                          "bytes_moved", "per_device"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.at("per_device").at(0).at("device"), "gpu:0");
}

// ---------------------------------------------------------------------------------------------
// Collectives in the schedule (collective.h; simulate.h's rules).

// A collective starts when its LAST producer finishes: A's 5 row blocks on gpu:0 (two of them,
// 0.4 ms each), gpu:1, gpu:2, gpu:3; every C shard reads all of A — an all-gather whose largest
// part is gpu:0's 400 KB: 3 · (1 µs + 0.4 ms) from 0.8 ms, and every transfer arrives at its end.
TEST(SimulateCollectives, StartAfterTheLastProducerAndArriveTogether) {
  const Target t = toy_target(1, 4, 1e-6);
  constexpr std::string_view tap =
      "X: f32[1000, 250]\nW: f32[4, 250]\nb: f32[4]\nA = relu(X)\nC = linear(A, W, b)\noutput C\n";
  const Placement p = place_tap(
      tap,
      R"({"ops": {"A": {"split": {"d0": 5}, "place": ["gpu:0", "gpu:1", "gpu:2", "gpu:3", "gpu:0"]},
                "C": {"split": {"out": 4}}}})",
      t);
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.collectives[0].kind, CollectiveKind::kAllGather);
  EXPECT_EQ(p.collectives[0].chunk_bytes, 400'000);
  Schedule s;
  const CostVector c = simulate(p, t, &s);
  EXPECT_DOUBLE_EQ(s.collectives[0].start, 0.8e-3);
  EXPECT_DOUBLE_EQ(s.collectives[0].end, 0.8e-3 + 3 * (1e-6 + 400'000 / 1e9));
  for (std::uint32_t tr : p.collectives[0].transfers) {
    EXPECT_EQ(s.transfers[tr].start, s.collectives[0].start);
    EXPECT_EQ(s.transfers[tr].end, s.collectives[0].end);
  }
  for (std::uint32_t a = 0; a < p.applications.size(); ++a) {
    if (!p.applications[a].incoming.empty())
      EXPECT_GE(s.applications[a].start, s.collectives[0].end);
  }
  // Each participant's ports were busy for the collective once, not once per transfer.
  for (const DeviceCost& d : c.per_device) {
    EXPECT_DOUBLE_EQ(d.comm_s, s.collectives[0].end - s.collectives[0].start) << d.device;
  }
}

// A collective holds both directions of every participant's port: gpu:1's broadcast to gpu:2
// and gpu:3 (1 MB, a chain: 1 ms) waits for the 1 ms transfer gpu:0 → gpu:1, which holds
// gpu:1's ingress, though the broadcast only sends from gpu:1.
TEST(SimulateCollectives, HoldEveryParticipantsPortsInBothDirections) {
  const Target t = toy_target(1, 4);
  Placement p;
  p.operations.push_back(
      PlacedOperation{ir::OperationId(ir::NodeId(0)), "op", "relu", {}, {}, {}, {}});
  const auto app = [&](std::uint32_t device, std::int64_t bytes) {
    PlacedApplication a;
    a.device = device;
    a.work = Work{.flops = 0, .bytes_read = bytes / 2, .bytes_written = bytes / 2};
    p.applications.push_back(a);
    return static_cast<std::uint32_t>(p.applications.size() - 1);
  };
  const std::uint32_t a0 = app(0, 1'000'000), a1 = app(1, 1'000'000);  // 1 ms each
  const std::uint32_t r1 = app(1, 2), r2 = app(2, 2), r3 = app(3, 2);
  const auto transfer = [&](std::uint32_t producer, std::uint32_t consumer) {
    Transfer tr;
    tr.tensor = ir::TensorId(ir::NodeId(producer + 1));
    tr.box = zspace::Range::of_shape(zspace::Point({250'000}));
    tr.bytes = 1'000'000;
    tr.from = p.applications[producer].device;
    tr.to = p.applications[consumer].device;
    tr.producer = producer;
    tr.consumers = {consumer};
    p.transfers.push_back(tr);
    const auto k = static_cast<std::uint32_t>(p.transfers.size() - 1);
    p.applications[consumer].incoming.push_back(k);
    return k;
  };
  transfer(a0, r1);
  const std::uint32_t b2 = transfer(a1, r2), b3 = transfer(a1, r3);
  Collective broadcast;
  broadcast.kind = CollectiveKind::kBroadcast;
  broadcast.tensor = p.transfers[b2].tensor;
  broadcast.devices = {1, 2, 3};
  broadcast.transfers = {b2, b3};
  broadcast.bytes = broadcast.chunk_bytes = 1'000'000;
  p.collectives.push_back(broadcast);
  p.transfers[b2].collective = p.transfers[b3].collective = 0;
  p.resident_input_bytes.assign(4, 0);
  Schedule s;
  const CostVector c = simulate(p, t, &s);
  EXPECT_DOUBLE_EQ(s.transfers[0].start, 1e-3);  // gpu:0 → gpu:1 holds gpu:1's ingress to 2 ms
  EXPECT_DOUBLE_EQ(s.collectives[0].start, 2e-3);
  EXPECT_DOUBLE_EQ(s.collectives[0].end, 3e-3);  // N/B, no latency
  EXPECT_DOUBLE_EQ(s.applications[r2].start, 3e-3);
  EXPECT_DOUBLE_EQ(c.makespan_s, 3e-3 + s.applications[r2].end - s.applications[r2].start);
}

// A reduce-scatter's receiver holds one slice of staging, not the n − 1 slices it receives:
// P's 4 partial blocks (64 × 16 f32, 4 KB) on gpu:0…3, the combine cut in 4 row blocks.
TEST(SimulateCollectives, AReduceScatterReceiverHoldsOneChunk) {
  const Target t = toy_target(1, 4);
  constexpr std::string_view tap =
      "H: f32[4, 64, 32]\nW: f32[4, 32, 16]\nP = matmul(H, W)\nY = reduce(P)\noutput Y\n";
  const Placement p =
      place_tap(tap, R"({"ops": {"P": {"split": {"batch": 4}}, "Y": {"split": {"d0": 4}}}})", t);
  ASSERT_EQ(p.collectives.size(), 1u);
  ASSERT_EQ(p.collectives[0].kind, CollectiveKind::kReduceScatter);
  const CostVector c = simulate(p, t);
  // Resident H and W blocks (8 KB + 2 KB), its block of P (4 KB) until the combine has read its
  // own slice, one slice of staging (16 × 16 × 4 = 1 KB) and its rows of Y (1 KB).
  const std::int64_t expected = 8192 + 2048 + 4096 + 1024 + 1024;
  for (const DeviceCost& d : c.per_device) EXPECT_EQ(d.peak_memory_bytes, expected) << d.device;
  // Received as transfers, the three slices would be held at once: 2 KB more.
  Placement unrecognised = p;
  unrecognised.collectives.clear();
  for (Transfer& tr : unrecognised.transfers) tr.collective = kNoCollective;
  EXPECT_EQ(simulate(unrecognised, t).peak_memory_bytes, expected + 2048);
}

// Energy: a plan holds every device of every node it uses. One device busy on h100x8: the other
// seven draw 70 W for the whole run too.
TEST(SimulateEnergy, HeldDevicesDrawIdlePower) {
  const Target h8 = *preset_target("h100x8");
  const CostVector one = simulate(place_tap(kRelu, "{}", h8), h8);
  EXPECT_EQ(one.devices_used, 1);
  EXPECT_EQ(one.devices_held, 8);
  const double compute = one.per_device[0].compute_s;
  EXPECT_DOUBLE_EQ(one.energy_j, 8 * 70 * one.makespan_s + (700 - 70) * compute);
  EXPECT_DOUBLE_EQ(one.idle_energy_j, 8 * 70 * one.makespan_s);
  // Two nodes of two: a plan on node 0 holds node 0 only; one shard on each node holds both.
  const Target t = toy_target(2, 2);
  const CostVector node0 = simulate(
      place_tap(kRelu, R"({"ops": {"Y": {"split": {"d0": 2}, "place": ["gpu:0", "gpu:1"]}}})", t),
      t);
  EXPECT_EQ(node0.devices_held, 2);
  const CostVector both = simulate(
      place_tap(kRelu, R"({"ops": {"Y": {"split": {"d0": 2}, "place": ["gpu:0", "gpu:2"]}}})", t),
      t);
  EXPECT_EQ(both.devices_held, 4);
  EXPECT_DOUBLE_EQ(both.idle_energy_j, 4 * 10 * both.makespan_s);
}

// A link class's power_w is drawn by each port over the time it sends or receives: the 0.5 ms
// transfer gpu:0 → gpu:1 of ACrossDeviceChainWaitsForItsTransfer charges both ends.
TEST(SimulateEnergy, PortsDrawLinkPowerWhileBusy) {
  Target t = toy_target(1, 2, 10e-6);
  const Placement p = place_tap(kTwoRelus, R"({"ops": {"Y": {"split": {"d0": 2}}}})", t);
  const CostVector without = simulate(p, t);
  t.intra_node.power_w = 20;
  const CostVector with = simulate(p, t);
  const double busy = 10e-6 + 0.5e-3;
  EXPECT_NEAR(with.energy_j - without.energy_j, 2 * 20 * busy, 1e-15);
  EXPECT_NEAR(with.per_device[1].energy_j - without.per_device[1].energy_j, 20 * busy, 1e-15);
}

RC_GTEST_PROP(SimulateEnergyProperties, AddingADeviceNeverLowersIdleEnergy, ()) {
  // A random plan on 2 nodes of 1–3 devices, then one more application (independent of the
  // others) on any device: the devices held, and the idle power they draw, can only grow.
  const std::optional<rewrite::LowerResult> r = testing::random_lowered(5);
  Target t = toy_target(2, *rc::gen::inRange<std::size_t>(1, 4), 1e-6);
  for (ir::DType d : ir::all_dtypes()) t.device_types[0].peak_flops[d] = 100e9;
  Placement p = place(r->graph, r->plan, t);
  const CostVector before = simulate(p, t);
  PlacedApplication extra;
  extra.operation = 0;
  extra.device = *rc::gen::inRange<std::uint32_t>(0, static_cast<std::uint32_t>(t.devices.size()));
  extra.work = Work{.flops = 1e3, .bytes_read = 0, .bytes_written = 0};
  if (p.operations.empty()) p.operations.push_back(PlacedOperation{});
  p.applications.push_back(extra);
  const CostVector after = simulate(p, t);
  RC_ASSERT(after.devices_held >= before.devices_held);
  // Idle power (idle energy per second of the run; the makespan may move either way when the
  // extra application reorders a device's queue) never drops.
  RC_ASSERT(after.idle_energy_j / after.makespan_s >=
            before.idle_energy_j / before.makespan_s * (1 - 1e-12));
  // Idle energy is exactly every held device's idle power over the makespan.
  RC_ASSERT(std::abs(after.idle_energy_j - 10.0 * static_cast<double>(after.devices_held) *
                                               after.makespan_s) <= 1e-12 * after.idle_energy_j);
}

RC_GTEST_PROP(SimulateProperties, DeterministicAndBoundedByItsParts, ()) {
  const std::optional<rewrite::LowerResult> r = testing::random_lowered(5);
  Target t = toy_target(2, *rc::gen::inRange<std::size_t>(1, 4), 1e-6);
  for (ir::DType d : ir::all_dtypes()) t.device_types[0].peak_flops[d] = 100e9;
  const Placement p = place(r->graph, r->plan, t);
  Schedule s;
  const CostVector c = simulate(p, t, &s);
  RC_ASSERT(to_json(c) == to_json(simulate(p, t)));  // deterministic

  // Every application after its producers and transfers; transfers after their producers;
  // devices never run two applications at once.
  for (std::uint32_t a = 0; a < p.applications.size(); ++a) {
    const double dur = application_seconds(p.applications[a].work, t.type_of(0));
    RC_ASSERT(std::abs((s.applications[a].end - s.applications[a].start) - dur) <= 1e-15);
    for (std::uint32_t q : p.applications[a].local_producers) {
      RC_ASSERT(s.applications[a].start >= s.applications[q].end);
    }
    for (std::uint32_t q : p.applications[a].ordering_predecessors) {
      RC_ASSERT(s.applications[a].start >= s.applications[q].end);
    }
    for (std::uint32_t tr : p.applications[a].incoming) {
      RC_ASSERT(s.applications[a].start >= s.transfers[tr].end);
    }
  }
  for (std::uint32_t tr = 0; tr < p.transfers.size(); ++tr) {
    if (p.transfers[tr].producer != kHost) {
      RC_ASSERT(s.transfers[tr].start >= s.applications[p.transfers[tr].producer].end);
    }
  }
  std::vector<std::vector<Schedule::Interval>> by_device(t.devices.size());
  for (std::uint32_t a = 0; a < p.applications.size(); ++a) {
    RC_ASSERT(s.devices[a] == p.applications[a].device);  // no shared memory: as placed
    by_device[s.devices[a]].push_back(s.applications[a]);
  }
  double busy = 0;
  for (auto& runs : by_device) {
    std::sort(runs.begin(), runs.end(),
              [](const auto& x, const auto& y) { return x.start < y.start; });
    for (std::size_t i = 1; i < runs.size(); ++i) RC_ASSERT(runs[i].start >= runs[i - 1].end);
    for (const auto& iv : runs) busy += iv.end - iv.start;
  }
  RC_ASSERT(c.makespan_s * static_cast<double>(c.devices_used) >= busy * (1 - 1e-12));
  std::int64_t moved = 0;
  for (const Transfer& tr : p.transfers) moved += tr.bytes;
  RC_ASSERT(c.bytes_moved == moved);
  RC_ASSERT(c.peak_memory_bytes >= 0);
}

}  // namespace
}  // namespace tapestry::cost
