// `tapestry calibrate`: measure this machine with the block executor and the fast kernels, and
// write it as a target (one device per hardware thread).
//
//   tapestry calibrate                       # writes ./cpu-local.json, ~10 s of measuring
//   tapestry calibrate -o targets/cpu-local.json --seconds 20
//
// What is measured and how each target member follows from it: workflow/calibration.h,
// docs/cost.md.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "common_options.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"
#include "tapestry/workflow/calibration.h"
#include "tensor_files.h"

namespace tapestry::cli {

namespace {

struct CalibrateOptions {
  std::string output = "cpu-local.json";
  double seconds = 10;
};

int run_calibrate(const CalibrateOptions& options) {
  if (!workflow::valid_calibration_budget(options.seconds)) {
    throw Error(fmt::format("--seconds {}: expected a time in (0, 3600]", options.seconds));
  }
  check_writable_file("-o", options.output);
  const workflow::Calibration calibration = workflow::calibrate(
      options.seconds, [](std::string_view name) { fmt::print(stderr, "measuring {}\n", name); });
  const cost::Target target = workflow::calibrated_target(calibration);
  fmt::print("{}", workflow::calibration_table(calibration));
  write_file_atomically(options.output, cost::target_json_text(target));
  const cost::DeviceType& core = target.device_types.front();
  fmt::print(
      "wrote {}: {} devices {} … {}; per device float32 {:.1f} GFLOP/s, float64 {:.1f} "
      "GFLOP/s, memory {:.2f} GB/s, launch {:.2f} µs\n",
      options.output, target.devices.size(), target.devices.front().name,
      target.devices.back().name, core.peak_flops.at(ir::DType::kFloat32) / 1e9,
      core.peak_flops.at(ir::DType::kFloat64) / 1e9, core.memory_bandwidth_Bps / 1e9,
      core.launch_s * 1e6);
  return kExitOk;
}

}  // namespace

void register_calibrate(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Measure this machine (GEMM, elementwise, copy, dispatch) and write a target");
  cmd->add_option("-o,--output", options->output,
                  "the target file to write (default: cpu-local.json in the current directory)");
  cmd->add_option("--seconds", options->seconds,
                  "time budget of the measurements, shared among them (default 10; set-up adds "
                  "a few seconds)");
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "calibrate";
    dispatch.run = [options] { return run_calibrate(*options); };
  });
}

}  // namespace tapestry::cli
