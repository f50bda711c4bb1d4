// A build without the CUDA backend (cmake/Cuda.cmake): cuda.h's functions report it missing,
// and the device kernel set is empty (every task would be a host step).
#include <fmt/format.h>

#include "device_kernels.h"
#include "device_program.h"
#include "tapestry/gpu/cuda.h"
#include "tapestry/gpu/nccl_executor.h"
#include "tapestry/support/error.h"

namespace tapestry::gpu {

namespace {
constexpr const char* kMissing =
    "this build has no CUDA backend (nvcc was not found when it was configured; docs/gpu.md)";
}

bool compiled() {
  return false;
}
int device_count() {
  return 0;
}
std::string unavailable_reason() {
  return kMissing;
}
std::string device_description(int /*device*/) {
  throw Error(kMissing);
}

const DeviceKernels& cuda_kernels() {
  static const DeviceKernels empty;
  return empty;
}

struct CudaExecutor::State {};

CudaExecutor::CudaExecutor(const ir::Graph& /*graph*/, CudaExecutorOptions /*options*/) {
  throw Error(fmt::format("--device cuda: {}", kMissing));
}
CudaExecutor::~CudaExecutor() = default;
runtime::BufferMap CudaExecutor::run(runtime::BufferMap /*inputs*/) const {
  throw Error(kMissing);
}
CudaExecutor::Measured CudaExecutor::run_measured(runtime::BufferMap /*inputs*/) const {
  throw Error(kMissing);
}
const DeviceProgram& CudaExecutor::program() const {
  throw Error(kMissing);
}
std::vector<CudaExecutor::StepName> CudaExecutor::step_names() const {
  return {};
}
std::size_t CudaExecutor::application_count() const {
  return 0;
}
std::int64_t CudaExecutor::flops() const {
  return 0;
}

struct NcclExecutor::State {};

NcclExecutor::NcclExecutor(std::shared_ptr<const NcclComm> /*comm*/, const ir::Graph& /*graph*/,
                           const runtime::RankSchedule& /*schedule*/,
                           NcclExecutorOptions /*options*/) {
  throw Error(fmt::format("--device cuda: {}", kMissing));
}
NcclExecutor::~NcclExecutor() = default;
std::vector<runtime::NeededInput> NcclExecutor::inputs_needed() const {
  return {};
}
NcclExecutor::Result NcclExecutor::run(runtime::BufferMap /*inputs*/) const {
  throw Error(kMissing);
}
std::size_t NcclExecutor::application_count() const {
  return 0;
}
int NcclExecutor::device() const {
  return 0;
}
std::size_t NcclExecutor::calls() const {
  return 0;
}
std::shared_ptr<const NcclComm> nccl_comm_from_mpi() {
  throw Error(fmt::format("--device cuda: {}", kMissing));
}

}  // namespace tapestry::gpu
