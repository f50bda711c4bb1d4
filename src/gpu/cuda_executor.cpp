// The CUDA executor (cuda.h): a DeviceProgram (device_program.h) issued on CUDA streams, once
// directly or recorded into a CUDA graph and replayed.
//
// Construction: plan the program; allocate the arena (one cudaMalloc), a workspace per stream,
// the library handles, and pinned host mirrors of the tensors host steps touch; build every
// step's KernelCall with its final origins (device: arena + slot offset + box offset; host
// step: the mirror's). A run: inputs host → arena (stream 0), the steps between a fork and a
// join event (or the graph replay), outputs arena → host, one synchronisation at the end.
// Host steps: each input box device → mirror, the CPU kernel in a cudaLaunchHostFunc
// callback, each output box mirror → device; all of it stream-ordered and capturable.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>

#include "cuda_program.h"
#include "device_kernels.h"
#include "device_program.h"
#include "tapestry/gpu/cuda.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"

namespace tapestry::gpu {

namespace {

using runtime::Buffer;
using runtime::BufferMap;
using runtime::KernelCall;
using runtime::detail::BlockTask;
using runtime::detail::BufferSlot;
using runtime::detail::PortAddress;

void check(cudaError_t status, std::string_view what) {
  if (status != cudaSuccess) {
    throw Error(fmt::format("CUDA: {}: {} ({})", what, cudaGetErrorString(status),
                            cudaGetErrorName(status)));
  }
}

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

template <typename Port, typename Byte>
void set_origins(ir::NamedLists<Port>& ports, const std::vector<PortAddress>& addresses,
                 const std::vector<std::byte*>& base) {
  std::size_t i = 0;
  ports.for_each_entry([&](const std::string&, std::uint32_t, Port& port) {
    const PortAddress& a = addresses[i++];
    Byte* origin = base[a.slot] == nullptr ? nullptr : base[a.slot] + a.byte_offset;
    port.view =
        runtime::BasicView<Byte>(port.view.dtype(), origin, port.view.box(), port.view.strides());
  });
}

}  // namespace

bool compiled() {
  return true;
}

std::string unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    return fmt::format("no CUDA device: cudaGetDeviceCount: {}", cudaGetErrorString(status));
  }
  if (count == 0) return "no CUDA device: cudaGetDeviceCount found none";
  return "";
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky error of a machine without a driver
    return 0;
  }
  return count;
}

std::string device_description(int device) {
  const int count = device_count();
  if (device < 0 || device >= count) {
    throw Error(fmt::format("CUDA device {}: {}", device,
                            count == 0
                                ? unavailable_reason()
                                : fmt::format("there are {} devices (0 … {})", count, count - 1)));
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  return fmt::format("{} (sm_{}{}, {} SMs, {:.1f} GiB)", prop.name, prop.major, prop.minor,
                     prop.multiProcessorCount,
                     static_cast<double>(prop.totalGlobalMem) / double(1 << 30));
}

struct CudaProgram::State {
  const ir::Graph& graph;
  CudaExecutorOptions options;
  DeviceProgram program;
  CudaProgram::Communicate communicate;        // communication steps (cuda_program.h)
  std::vector<runtime::KernelFn> host_kernel;  // per task (host steps)
  std::vector<KernelCall> calls;               // per task: final origins (device or mirror)

  std::byte* arena = nullptr;
  std::vector<std::byte*> device_base;  // per slot
  std::vector<std::byte*> mirror;       // per slot: pinned host copy (host steps), or null
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> events;
  cudaEvent_t fork = nullptr, start = nullptr, stop = nullptr, copied_in = nullptr,
              copied_out = nullptr;
  std::vector<cudaEvent_t> joins;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> step_events;  // profile: per task
  std::vector<void*> workspaces;
  std::vector<cudnnHandle_t> cudnn;
  cublasLtHandle_t cublaslt = nullptr;
  std::vector<DeviceContext> contexts;  // per stream
  cudaGraphExec_t graph_exec = nullptr;

  struct HostStep {
    State* state;
    std::uint32_t task;
  };
  std::vector<HostStep> host_steps;  // per task (only host steps are used)
  std::uint64_t runs = 0;            // runs started (the first is never captured)
  std::mutex run_mutex;
  std::mutex error_mutex;
  std::optional<Error> host_error;

  State(const ir::Graph& g, CudaExecutorOptions o, CudaProgram::Communicate c)
      : graph(g), options(o), communicate(std::move(c)) {}
  ~State() { release(); }

  void release() noexcept {
    if (graph_exec != nullptr) cudaGraphExecDestroy(graph_exec);
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    for (auto [a, b] : step_events) {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
    for (cudaEvent_t e : joins) cudaEventDestroy(e);
    for (cudaEvent_t e : {fork, start, stop, copied_in, copied_out}) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    for (cudnnHandle_t h : cudnn) cudnnDestroy(h);
    if (cublaslt != nullptr) cublasLtDestroy(cublaslt);
    for (void* w : workspaces) cudaFree(w);
    for (cudaStream_t s : streams) cudaStreamDestroy(s);
    for (std::byte* m : mirror) {
      if (m != nullptr) cudaFreeHost(m);
    }
    if (arena != nullptr) cudaFree(arena);
  }

  void copy_box(const runtime::ConstView& view, const PortAddress& address, bool to_device,
                cudaStream_t stream) const {
    std::byte* dev = device_base[address.slot];
    std::byte* host = mirror[address.slot];
    const auto element = static_cast<std::int64_t>(ir::dtype_size_bytes(view.dtype()));
    for (const BoxRun& run :
         box_runs(view.strides(), view.box().shape(), element, address.byte_offset)) {
      const auto pitch = static_cast<std::size_t>(run.pitch);
      const auto width = static_cast<std::size_t>(run.width);
      const auto height = static_cast<std::size_t>(run.height);
      if (to_device) {
        check(cudaMemcpy2DAsync(dev + run.slot_offset, pitch, host + run.slot_offset, pitch, width,
                                height, cudaMemcpyHostToDevice, stream),
              "copy a host step's output to the device");
      } else {
        check(cudaMemcpy2DAsync(host + run.slot_offset, pitch, dev + run.slot_offset, pitch, width,
                                height, cudaMemcpyDeviceToHost, stream),
              "copy a host step's input to the host");
      }
    }
  }

  static void CUDART_CB run_host_step(void* data) {
    auto* step = static_cast<HostStep*>(data);
    State& s = *step->state;
    {
      std::lock_guard lock(s.error_mutex);
      if (s.host_error) return;  // a step failed: the run's results are discarded anyway
    }
    try {
      // One thread, as on the block executor's pool: the bits do not depend on the core count.
      runtime::limit_library_threads_to_one();
      s.host_kernel[step->task](s.calls[step->task]);
    } catch (const Error& e) {
      std::lock_guard lock(s.error_mutex);
      if (!s.host_error) {
        s.host_error = e.with_context(
            fmt::format("application '{}' (a host step)", s.program.block.tasks[step->task].name));
      }
    }
  }

  // Enqueues every step between the fork and the join events (captured or run directly).
  void issue_steps() {
    cudaStream_t main = streams[0];
    check(cudaEventRecord(fork, main), "record the fork event");
    for (std::size_t s = 1; s < streams.size(); ++s) {
      check(cudaStreamWaitEvent(streams[s], fork, 0), "fork a stream");
    }
    for (const DeviceStep& step : program.steps) {
      cudaStream_t stream = streams[static_cast<std::size_t>(step.stream)];
      for (std::uint32_t e : step.waits) {
        check(cudaStreamWaitEvent(stream, events[e], 0), "wait for an event");
      }
      const BlockTask& task = program.block.tasks[step.task];
      if (!step_events.empty()) {
        check(cudaEventRecord(step_events[step.task].first, stream), "record a step's start");
      }
      if (step.communication) {
        try {
          communicate(step.task, stream);
        } catch (const Error& e) {
          throw e.with_context(fmt::format("'{}'", task.name));
        }
      } else if (step.on_device) {
        try {
          program.kernels[step.task]->launch(calls[step.task],
                                             contexts[static_cast<std::size_t>(step.stream)]);
        } catch (const Error& e) {
          throw e.with_context(fmt::format("application '{}'", task.name));
        }
      } else {
        std::size_t i = 0;
        calls[step.task].inputs.for_each_entry(
            [&](const std::string&, std::uint32_t, const runtime::InputPort& port) {
              copy_box(port.view, task.inputs[i++], false, stream);
            });
        check(cudaLaunchHostFunc(stream, &State::run_host_step, &host_steps[step.task]),
              "launch a host step");
        i = 0;
        calls[step.task].outputs.for_each_entry(
            [&](const std::string&, std::uint32_t, const runtime::OutputPort& port) {
              copy_box(port.view, task.outputs[i++], true, stream);
            });
      }
      if (!step_events.empty()) {
        check(cudaEventRecord(step_events[step.task].second, stream), "record a step's end");
      }
      if (step.record >= 0) {
        check(cudaEventRecord(events[static_cast<std::size_t>(step.record)], stream),
              "record an event");
      }
    }
    for (std::size_t s = 1; s < streams.size(); ++s) {
      check(cudaEventRecord(joins[s], streams[s]), "record a join event");
      check(cudaStreamWaitEvent(main, joins[s], 0), "join a stream");
    }
  }
};

void check_cuda_options(const CudaExecutorOptions& options) {
  if (options.streams < 1) throw Error(fmt::format("--streams {}: expected ≥ 1", options.streams));
  const int count = device_count();
  if (count == 0) throw Error(fmt::format("--device cuda: {}", unavailable_reason()));
  if (options.device < 0 || options.device >= count) {
    throw Error(fmt::format("CUDA device {}: there are {} devices", options.device, count));
  }
}

CudaProgram::CudaProgram(const ir::Graph& graph, DeviceProgram program, CudaExecutorOptions options,
                         Communicate communicate)
    : state_(std::make_unique<State>(graph, options, std::move(communicate))) {
  check_cuda_options(options);
  State& s = *state_;
  check(cudaSetDevice(options.device), "cudaSetDevice");
  s.program = std::move(program);
  const DeviceProgram& p = s.program;

  // Memory: the arena and a workspace per stream, checked against the limit and what is free.
  const std::int64_t workspaces = static_cast<std::int64_t>(kWorkspaceBytes) * p.streams;
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const std::int64_t needed = p.arena_bytes + workspaces;
  if (options.memory_limit_bytes > 0 && needed > options.memory_limit_bytes) {
    throw Error(
        fmt::format("the GPU program needs {} bytes (arena {} + workspaces {}), above "
                    "the memory limit of {} bytes",
                    needed, p.arena_bytes, workspaces, options.memory_limit_bytes));
  }
  if (needed > static_cast<std::int64_t>(free_bytes)) {
    throw Error(
        fmt::format("the GPU program needs {} bytes (arena {} + workspaces {}), but "
                    "device {} has {} bytes free",
                    needed, p.arena_bytes, workspaces, options.device, free_bytes));
  }
  if (p.arena_bytes > 0) {
    void* arena = nullptr;
    check(cudaMalloc(&arena, static_cast<std::size_t>(p.arena_bytes)), "allocate the arena");
    s.arena = static_cast<std::byte*>(arena);
  }
  s.device_base.assign(p.block.slots.size(), nullptr);
  for (std::size_t i = 0; i < p.block.slots.size(); ++i) {
    if (p.placement[i].bytes > 0) s.device_base[i] = s.arena + p.placement[i].offset;
  }

  // Streams, events, handles, workspaces.
  s.streams.resize(static_cast<std::size_t>(p.streams));
  for (cudaStream_t& stream : s.streams) {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "create a stream");
  }
  s.events.resize(p.events);
  for (cudaEvent_t& e : s.events) {
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "create an event");
  }
  s.joins.resize(s.streams.size());
  for (cudaEvent_t& e : s.joins) {
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "create an event");
  }
  check(cudaEventCreateWithFlags(&s.fork, cudaEventDisableTiming), "create an event");
  if (options.profile) {
    s.options.graph = false;
    s.step_events.resize(p.block.tasks.size());
    for (auto& [a, b] : s.step_events) {
      check(cudaEventCreate(&a), "create a timing event");
      check(cudaEventCreate(&b), "create a timing event");
    }
  }
  for (cudaEvent_t* e : {&s.start, &s.stop, &s.copied_in, &s.copied_out}) {
    check(cudaEventCreate(e), "create a timing event");
  }
  if (cublasLtCreate(&s.cublaslt) != CUBLAS_STATUS_SUCCESS)
    throw Error("CUDA: cublasLtCreate failed");
  s.cudnn.resize(s.streams.size());
  s.workspaces.resize(s.streams.size());
  s.contexts.resize(s.streams.size());
  for (std::size_t i = 0; i < s.streams.size(); ++i) {
    if (cudnnCreate(&s.cudnn[i]) != CUDNN_STATUS_SUCCESS) throw Error("CUDA: cudnnCreate failed");
    cudnnSetStream(s.cudnn[i], s.streams[i]);
    check(cudaMalloc(&s.workspaces[i], kWorkspaceBytes), "allocate a workspace");
    s.contexts[i] = DeviceContext{.device = options.device,
                                  .stream = s.streams[i],
                                  .cublaslt = s.cublaslt,
                                  .cudnn = s.cudnn[i],
                                  .workspace = s.workspaces[i],
                                  .workspace_bytes = kWorkspaceBytes,
                                  .allow_tf32 = options.allow_tf32};
  }

  // Host steps: pinned mirrors of the tensors they touch; every call with its final origins.
  s.mirror.assign(p.block.slots.size(), nullptr);
  s.host_kernel.resize(p.block.tasks.size());
  s.host_steps.resize(p.block.tasks.size());
  for (const DeviceStep& step : p.steps) {
    if (step.on_device) continue;
    const BlockTask& task = p.block.tasks[step.task];
    s.host_kernel[step.task] = task.kernel;
    s.host_steps[step.task] = {&s, step.task};
    for (const auto* ports : {&task.inputs, &task.outputs}) {
      for (const PortAddress& a : *ports) {
        if (s.mirror[a.slot] != nullptr || p.block.slots[a.slot].bytes == 0) continue;
        void* m = nullptr;
        check(cudaMallocHost(&m, static_cast<std::size_t>(p.block.slots[a.slot].bytes)),
              "allocate pinned host memory for a host step");
        s.mirror[a.slot] = static_cast<std::byte*>(m);
      }
    }
  }
  s.calls.resize(p.block.tasks.size());
  for (std::uint32_t t = 0; t < p.block.tasks.size(); ++t) {
    const BlockTask& task = p.block.tasks[t];
    const std::vector<std::byte*>& base = p.kernels[t] != nullptr ? s.device_base : s.mirror;
    s.calls[t] = task.call;
    set_origins<runtime::InputPort, const std::byte>(s.calls[t].inputs, task.inputs, base);
    set_origins<runtime::OutputPort, std::byte>(s.calls[t].outputs, task.outputs, base);
  }
}

CudaProgram::~CudaProgram() = default;

const DeviceProgram& CudaProgram::program() const {
  return state_->program;
}

std::byte* CudaProgram::device_base(std::uint32_t slot) const {
  return state_->device_base[slot];
}

struct CudaExecutor::State {
  const ir::Graph& graph;
  std::unique_ptr<CudaProgram> gpu;
};

CudaExecutor::CudaExecutor(const ir::Graph& graph, CudaExecutorOptions options)
    : state_(std::make_unique<State>(State{graph, nullptr})) {
  check_cuda_options(options);
  const runtime::ExecutableKernels& host =
      options.host_kernels != nullptr ? *options.host_kernels : runtime::fast_kernels();
  const DeviceKernels& device =
      options.device_kernels != nullptr ? *options.device_kernels : cuda_kernels();
  state_->gpu = std::make_unique<CudaProgram>(
      graph, plan_device_program(graph, host, device, {.streams = options.streams}), options);
}

CudaExecutor::~CudaExecutor() = default;

const DeviceProgram& CudaExecutor::program() const {
  return state_->gpu->program();
}
std::vector<CudaExecutor::StepName> CudaExecutor::step_names() const {
  std::vector<StepName> names;
  for (const BlockTask& t : program().block.tasks) {
    names.push_back({t.name, std::string(t.call.operation), std::string(t.call.kernel)});
  }
  return names;
}
std::size_t CudaExecutor::application_count() const {
  return program().block.tasks.size();
}
std::int64_t CudaExecutor::flops() const {
  return program().block.flops;
}

BufferMap CudaExecutor::run(BufferMap inputs) const {
  return run_measured(std::move(inputs)).buffers;
}

CudaProgram::Run CudaProgram::run(BufferMap result) const {
  State& s = *state_;
  const DeviceProgram& p = s.program;
  std::lock_guard lock(s.run_mutex);
  check(cudaSetDevice(s.options.device), "cudaSetDevice");
  {
    std::lock_guard error_lock(s.error_mutex);
    s.host_error.reset();
  }
  cudaStream_t main = s.streams[0];
  if (s.options.poison && s.arena != nullptr) {
    check(cudaMemsetAsync(s.arena, 0xFF, static_cast<std::size_t>(p.arena_bytes), main),
          "poison the arena");
  }
  ++s.runs;
  check(cudaEventRecord(s.copied_in, main), "record an event");
  for (std::uint32_t i = 0; i < p.block.slots.size(); ++i) {
    const BufferSlot& slot = p.block.slots[i];
    if (!slot.input || slot.bytes == 0) continue;
    check(cudaMemcpyAsync(s.device_base[i], result.at(slot.tensor).bytes(),
                          static_cast<std::size_t>(slot.bytes), cudaMemcpyHostToDevice, main),
          "copy an input to the device");
  }
  check(cudaEventRecord(s.start, main), "record an event");
  const bool replay = s.options.graph && s.graph_exec != nullptr;
  // With a graph, the first run issues its steps directly — kernels may tune themselves then
  // (cuBLASLt's algorithm candidates are timed once, outside any capture) — the second records
  // them into the graph, and later runs replay it.
  if (s.options.graph && s.runs > 1) {
    if (s.graph_exec == nullptr) {
      check(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal), "begin a capture");
      cudaGraph_t captured = nullptr;
      try {
        s.issue_steps();
      } catch (...) {
        (void)cudaStreamEndCapture(main, &captured);
        if (captured != nullptr) cudaGraphDestroy(captured);
        throw;
      }
      check(cudaStreamEndCapture(main, &captured), "end the capture");
      const cudaError_t made = cudaGraphInstantiate(&s.graph_exec, captured, 0);
      cudaGraphDestroy(captured);
      check(made, "instantiate the CUDA graph");
    }
    check(cudaGraphLaunch(s.graph_exec, main), "launch the CUDA graph");
  } else {
    s.issue_steps();
  }
  check(cudaEventRecord(s.stop, main), "record an event");
  for (std::uint32_t i = 0; i < p.block.slots.size(); ++i) {
    const BufferSlot& slot = p.block.slots[i];
    if (!slot.output || slot.input) continue;
    Buffer out(slot.dtype, slot.range, Buffer::Uninitialized{});
    if (slot.bytes > 0) {
      check(cudaMemcpyAsync(out.bytes(), s.device_base[i], static_cast<std::size_t>(slot.bytes),
                            cudaMemcpyDeviceToHost, main),
            "copy an output to the host");
    }
    result.emplace(slot.tensor, std::move(out));
  }
  check(cudaEventRecord(s.copied_out, main), "record an event");
  check(cudaStreamSynchronize(main), "run the program");
  {
    std::lock_guard error_lock(s.error_mutex);
    if (s.host_error) throw *s.host_error;
  }
  float in_ms = 0, compute_ms = 0, out_ms = 0;
  check(cudaEventElapsedTime(&in_ms, s.copied_in, s.start), "time the run");
  check(cudaEventElapsedTime(&compute_ms, s.start, s.stop), "time the run");
  check(cudaEventElapsedTime(&out_ms, s.stop, s.copied_out), "time the run");

  Run m;
  m.stats = {.compute_s = compute_ms * 1e-3,
             .copy_in_s = in_ms * 1e-3,
             .copy_out_s = out_ms * 1e-3,
             .replayed = replay,
             .arena_bytes = p.arena_bytes,
             .device_steps = p.steps.size() - p.host_steps,
             .host_steps = p.host_steps,
             .host_steps_by_kernel = p.host_steps_by_kernel};
  for (const auto& [a, b] : s.step_events) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "time a step");
    m.stats.step_s.push_back(ms * 1e-3);
  }
  m.buffers = std::move(result);
  return m;
}

CudaExecutor::Measured CudaExecutor::run_measured(BufferMap inputs) const {
  const DeviceProgram& p = program();
  // Bind the inputs: exactly the graph inputs, each with its tensor's dtype and shape.
  BufferMap result;
  for (std::uint32_t i = 0; i < p.block.slots.size(); ++i) {
    const BufferSlot& slot = p.block.slots[i];
    auto given = inputs.find(slot.tensor);
    if (!slot.input) {
      if (given != inputs.end()) {
        throw Error(fmt::format("tensor '{}' is computed by the graph; it cannot be an input",
                                runtime::tensor_name(state_->graph, slot.tensor)));
      }
      continue;
    }
    if (given == inputs.end()) {
      throw Error(fmt::format("input tensor '{}' has no buffer",
                              runtime::tensor_name(state_->graph, slot.tensor)));
    }
    result.emplace(slot.tensor,
                   runtime::bind_buffer(state_->graph, slot.tensor, std::move(given->second)));
  }
  CudaProgram::Run run = state_->gpu->run(std::move(result));
  Measured m;
  m.stats = std::move(run.stats);
  m.metrics.wall_s = m.stats.compute_s;
  m.metrics.flops = p.block.flops;
  m.metrics.gflops =
      m.metrics.wall_s > 0 ? static_cast<double>(p.block.flops) / m.metrics.wall_s / 1e9 : 0;
  m.metrics.peak_memory_bytes = p.arena_bytes;
  m.metrics.estimated_peak_memory_bytes = p.arena_bytes;
  m.metrics.threads = p.streams;
  m.buffers = std::move(run.buffers);
  return m;
}

}  // namespace tapestry::gpu
