// DeviceProgram: a compiled application graph laid out for a GPU — streams, events and one
// memory arena. Plain C++ with no CUDA dependency: the CUDA executor (cuda_executor.cpp) issues
// it, and tests check it without a GPU (tests/gpu/device_program_test.cpp runs it on a fake
// device: host memory for the arena, the streams interleaved at random as the events allow).
//
// Built from the block executor's program (block_program.h: tasks with KernelCall templates,
// slots, the dependency DAG, a topological order):
//
//   placement  every slot (tensor) gets [offset, offset + bytes) in the arena, aligned. Graph
//              inputs and outputs get memory of their own for the whole run; an intermediate
//              lives from its first writer to its last user in the issue order (`order`) and
//              may take memory an earlier intermediate has given up. Reusing memory adds
//              *memory edges*: each writer of the new tensor waits for every task that touched
//              the old one, so no stream interleaving can overwrite a value still to be read.
//   steps      one per task, in issue order (block.order): the stream it runs on, the events it
//              waits for first, the event it records after (if a later step on another stream
//              waits for it). A task continues the stream of a dependency that is the last step
//              issued on its stream (a chain stays on one stream), else takes the stream with
//              the least work issued so far (FLOPs). A wait is left out when the stream already
//              waited for that event or a later one of the same stream (stream order is
//              transitive), so the events form the DAG's cross-stream edges, minus those implied.
//   host steps tasks without a device kernel (or whose kernel's `supports` refused the call)
//              are marked `on_device = false`; the executor stages them through host memory.
//
// Example — Y = relu(linear(X, W, b)) split in 2 on batch, 2 streams:
//
//   DeviceProgram p = plan_device_program(app_graph, fast_kernels(), cuda_kernels(),
//                                         {.streams = 2});
//   p.steps: linear_0 on 0; linear_1 on 1; relu_0 on 0; relu_1 on 1   (each relu continues
//            the chain of the linear it reads; no events: no cross-stream edge)
//   p.placement: X, W, b, Y their own; the linear output Z in between, [0, 2·rows·4) bytes
//
// Errors: what compile_block_program rejects (block_program.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "device_kernels.h"
#include "runtime/block_program.h"

namespace tapestry::gpu {

struct SlotPlacement {
  std::int64_t offset = 0;  // bytes from the arena's base, a multiple of the alignment
  std::int64_t bytes = 0;   // the slot's size (0: an empty tensor)
};

struct DeviceStep {
  std::uint32_t task = 0;      // index into block.tasks
  bool on_device = true;       // a device kernel; else a host step
  bool communication = false;  // a communication step (rank_device_program.h): no kernel
  int stream = 0;
  std::vector<std::uint32_t> waits;  // events to wait for before the step
  std::int32_t record = -1;          // the event recorded after the step, or -1
};

struct DeviceProgram {
  runtime::detail::BlockProgram block;       // slots, tasks, DAG, order
  std::vector<const DeviceKernel*> kernels;  // per task: its device kernel, or null (host step)
  std::vector<SlotPlacement> placement;      // per slot
  std::int64_t arena_bytes = 0;
  int streams = 1;
  std::vector<DeviceStep> steps;  // issue order
  std::uint32_t events = 0;
  /// Per task, the tasks it waits for because its output reuses their memory (ascending).
  std::vector<std::vector<std::uint32_t>> memory_edges;
  std::map<std::string, std::size_t> host_steps_by_kernel;  // kernel → host steps
  std::size_t host_steps = 0;
  /// Tasks [communication_from, tasks) are communication steps (rank_device_program.h): they
  /// have no kernel and run, in issue order, on a stream of their own, the last one
  /// (`streams - 1`); none in a program of one GPU.
  std::uint32_t communication_from = 0;
};

/// A box of a dense buffer as 2-D copies (cudaMemcpy2DAsync's shape): `height` rows of `width`
/// bytes, `pitch` bytes apart in the buffer from `slot_offset`, back to back in a dense copy of
/// the box from `staging_offset` (bytes). The box's innermost dims the buffer holds whole make
/// one row with the first it does not; the dim before that gives the rows; the dims before those
/// are enumerated, one BoxRun each. E.g. box [0:2, 0:4] of a [4, 8] float32 buffer: one run of 2
/// rows of 16 bytes, 32 apart.
struct BoxRun {
  std::int64_t slot_offset = 0;
  std::int64_t staging_offset = 0;
  std::int64_t width = 0;
  std::int64_t height = 0;
  std::int64_t pitch = 0;
};

/// The runs of a box of `shape` (none when empty) whose first cell is `first` bytes into a
/// buffer with element `strides`, the dense side from `staging_offset` on.
std::vector<BoxRun> box_runs(const runtime::Point& strides, const runtime::Point& shape,
                             std::int64_t element, std::int64_t first,
                             std::int64_t staging_offset = 0);

struct DeviceProgramOptions {
  int streams = 4;               // ≥ 1
  std::int64_t alignment = 256;  // bytes; a power of two
  bool reuse_memory = true;      // false: every slot its own memory (debugging)
};

/// Plans the program (see the file comment). `host` resolves every kernel (an unknown one is an
/// Error naming the operation); `device` decides which tasks run on the GPU.
DeviceProgram plan_device_program(const ir::Graph& graph, const runtime::ExecutableKernels& host,
                                  const DeviceKernels& device, DeviceProgramOptions options = {});

/// The same for a program already compiled (a rank's, with its communication steps appended
/// from task `communication_from` on; the DAG and `order` include them). With communication
/// steps the program has `options.streams + 1` streams, the last one theirs.
DeviceProgram plan_device_program(runtime::detail::BlockProgram block, const DeviceKernels& device,
                                  DeviceProgramOptions options, std::uint32_t communication_from);

/// The program's invariants, for tests and debug builds: every DAG and memory edge of a step is
/// ordered before it (same stream earlier, or through a chain of recorded/waited events); each
/// event is recorded once, before any wait for it; slots whose lifetimes overlap do not overlap
/// in the arena; inputs and outputs never share memory; communication steps run on the last
/// stream and nothing else does. Returns "" or what is wrong.
std::string check_device_program(const DeviceProgram& program);

}  // namespace tapestry::gpu
