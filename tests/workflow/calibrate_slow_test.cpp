// workflow/calibration.h: a real calibration of this machine in a small budget (~13 s with
// the set-up, so labelled slow): every step measured something, in the order documented.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tapestry/workflow/calibration.h"

namespace tapestry::workflow {
namespace {

// A real calibration on this machine, in a small budget: every step measured something.
TEST(Calibrate, MeasuresEveryStep) {
  std::vector<std::string> heard;
  const Calibration c = calibrate(0.2, [&](std::string_view name) { heard.emplace_back(name); });
  EXPECT_GE(c.threads, 1);
  EXPECT_GE(c.benchmarks.size(), 5U);
  for (const BenchmarkResult& b : c.benchmarks) {
    EXPECT_GT(b.one_thread, 0) << b.name;
    EXPECT_GT(b.all_threads, 0) << b.name;
    EXPECT_GE(b.runs_one, 3) << b.name;
  }
  EXPECT_EQ(c.dispatch_applications, 128 * 128);
  EXPECT_GT(c.dispatch_s, 0);
  EXPECT_EQ(c.kernels.size(), 7U);
  EXPECT_EQ(c.gemms.size(), 6U);
  EXPECT_EQ(heard.front(), "matmul f32");
  EXPECT_EQ(heard.back(), "gemm 1024");
  EXPECT_EQ(heard.size(), c.benchmarks.size() + 2 + (c.threads > 1 ? 1 : 0) + 7 + 6);
  const cost::Target t = calibrated_target(c);
  EXPECT_EQ(t.devices.size(), static_cast<std::size_t>(c.threads));
}

}  // namespace
}  // namespace tapestry::workflow
