// `tapestry calibrate`: measure this machine with the block executor and the fast kernels, and
// write it as a target (one device per hardware thread); with `--device cuda`, measure one GPU
// (cuBLASLt GEMMs, copies, launches) and write a one-GPU target.
//
//   tapestry calibrate                       # writes ./cpu-local.json, ~10 s of measuring
//   tapestry calibrate -o targets/cpu-local.json --seconds 20
//   tapestry calibrate --device cuda -o targets/h100-measured.json --seconds 20
//
// What is measured and how each target member follows from it: workflow/calibration.h and
// docs/cost.md (CPU), src/gpu/calibrate_cuda.h and docs/gpu.md (GPU). Without a usable GPU,
// `--device cuda` is an error and exit 1, and writes nothing.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "command.h"
#include "common_options.h"
#include "tapestry/gpu/calibrate_cuda.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"
#include "tapestry/workflow/calibration.h"
#include "tensor_files.h"

namespace tapestry::cli {

namespace {

struct CalibrateOptions {
  std::string output;  // default: cpu-local.json, or gpu-measured.json with --device cuda
  double seconds = 10;
  std::string device = "cpu";
  int gpu = 0;
  std::string preset = "h100x8";
};

int run_calibrate_cuda(const CalibrateOptions& options) {
  const std::string output = options.output.empty() ? "gpu-measured.json" : options.output;
  check_writable_file("-o", output);
  const cost::Target preset = cost::resolve_target(options.preset);
  if (preset.device_types.empty()) {
    throw Error(fmt::format("--preset {}: the target has no device type", options.preset));
  }
  gpu::CudaCalibration calibration;
  try {
    calibration = gpu::calibrate_cuda(options.gpu, options.seconds, [](std::string_view name) {
      fmt::print(stderr, "measuring {}\n", name);
    });
  } catch (const Error& e) {
    // No usable GPU (or a CUDA call failed): the arguments are fine, the answer is no.
    fmt::print(stderr, "{}\n", error_line("calibrate", e.what()));
    return kExitFailed;
  }
  const cost::Target target = gpu::cuda_calibrated_target(calibration, preset);
  fmt::print("{}", gpu::cuda_calibration_table(calibration, preset));
  write_file_atomically(output, cost::target_json_text(target));
  const cost::DeviceType& d = target.device_types.front();
  const auto peak = [&d](ir::DType t) {
    const auto found = d.peak_flops.find(t);
    return found == d.peak_flops.end() ? 0.0 : found->second / 1e12;
  };
  fmt::print(
      "wrote {}: {} ({}): bfloat16 {:.1f} TFLOP/s, float32 {:.1f} TFLOP/s, memory {:.0f} GB/s, "
      "launch {:.2f} µs\n",
      output, target.name, calibration.gpu_name, peak(ir::DType::kBFloat16),
      peak(ir::DType::kFloat32), d.memory_bandwidth_Bps / 1e9, d.launch_s * 1e6);
  return kExitOk;
}

int run_calibrate(const CalibrateOptions& options) {
  if (!workflow::valid_calibration_budget(options.seconds)) {
    throw Error(fmt::format("--seconds {}: expected a time in (0, 3600]", options.seconds));
  }
  if (options.device == "cuda") return run_calibrate_cuda(options);
  const std::string output = options.output.empty() ? "cpu-local.json" : options.output;
  check_writable_file("-o", output);
  const workflow::Calibration calibration = workflow::calibrate(
      options.seconds, [](std::string_view name) { fmt::print(stderr, "measuring {}\n", name); });
  const cost::Target target = workflow::calibrated_target(calibration);
  fmt::print("{}", workflow::calibration_table(calibration));
  write_file_atomically(output, cost::target_json_text(target));
  const cost::DeviceType& core = target.device_types.front();
  fmt::print(
      "wrote {}: {} devices {} … {}; per device float32 {:.1f} GFLOP/s, float64 {:.1f} "
      "GFLOP/s, memory {:.2f} GB/s, launch {:.2f} µs\n",
      output, target.devices.size(), target.devices.front().name, target.devices.back().name,
      core.peak_flops.at(ir::DType::kFloat32) / 1e9, core.peak_flops.at(ir::DType::kFloat64) / 1e9,
      core.memory_bandwidth_Bps / 1e9, core.launch_s * 1e6);
  return kExitOk;
}

}  // namespace

void register_calibrate(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Measure this machine (GEMM, elementwise, copy, dispatch) or one GPU and write a target");
  cmd->add_option("-o,--output", options->output,
                  "the target file to write (default: cpu-local.json in the current directory; "
                  "gpu-measured.json with --device cuda)");
  cmd->add_option("--device", options->device,
                  "cpu (default: this machine's hardware threads, the block executor) or cuda "
                  "(one NVIDIA GPU: cuBLASLt GEMMs, copies, launches; exit 1 without one)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--gpu", options->gpu,
                  "with --device cuda: the CUDA device to measure (default 0)")
      ->check(CLI::Range(0, 1023));
  cmd->add_option("--preset", options->preset,
                  "with --device cuda: the target whose first device type gives what is not "
                  "measured (links, power; default h100x8)");
  cmd->add_option("--seconds", options->seconds,
                  "time budget of the measurements, shared among them (default 10; set-up adds "
                  "a few seconds)");
  cmd->footer(exit_codes_footer("--device cuda finds no usable GPU (nothing is written)"));
  cmd->callback([&dispatch, options] {
    dispatch.name = "calibrate";
    dispatch.run = [options] { return run_calibrate(*options); };
  });
}

}  // namespace tapestry::cli
