// Private helpers shared by the executors: preparing the buffers of a run, and calling a kernel
// on one box of an operation (the whole index, or an application's sub-box).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/kernel.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::runtime::detail {

/// An application as a message names it: "application 'LABEL'" when it has a label, else by its
/// operation and index box, "the application of 'H/linear' over zr[0:2048, 0:4096, 0:1024]"
/// (applications made by `lower` have no label; their keys are meaningless UUIDs).
std::string describe_application(const ir::Graph& graph, ir::ApplicationId app);

/// Fills `buffer` with a value no kernel computes by accident — NaN for floats, the lowest value
/// for integers — so unwritten cells show up in comparisons.
void poison(Buffer& buffer);

/// Checks before any run that every tensor has an executable dtype (Error naming the tensor).
void check_tensor_dtypes(const ir::Graph& graph);

/// Checks an operation before any run: IPFIndex and IPFSignature tags present.
void check_operation_tags(const ir::Graph& graph, ir::OperationId op);

/// Checks that every operation with a non-empty index has Applications (the application and
/// block executors run applications only) and its tags; Error naming the operation.
void check_operations_have_applications(const ir::Graph& graph);

/// The buffers of a run: `inputs` bound to the graph inputs (every one must be given, nothing
/// else may be), plus a poisoned buffer for every other tensor.
BufferMap prepare_buffers(const ir::Graph& graph, BufferMap inputs);

/// When a run in `order` (every operation once, unsharded) may free each tensor: after operation
/// order[i], the tensors in result[i], which no later operation reads. Graph outputs are never
/// listed (they are kept); a tensor nobody reads is listed after its producer.
///
///   x → A → h → B → y      result = {{}, {h}}   (x, an input: {{x}, {h}})
/// Inputs are listed too: a caller that owns promoted copies of them frees those.
std::vector<std::vector<ir::TensorId>> releases_after(const ir::Graph& graph,
                                                      const std::vector<ir::OperationId>& order);

/// What one kernel call works on: the index box and the selections of `node` (the operation
/// itself or one of its applications).
struct Work {
  ir::OperationId operation;
  ir::NodeId node;
  std::optional<Range> index;
  const ir::SelectionMap* inputs = nullptr;
  const ir::SelectionMap* outputs = nullptr;
};

/// The IPF of selection `entry` (a SelectionMap entry) in `ipfs`, checked: it exists, and the
/// selection equals IPF(index). Error "selection x[0] is …, but its IPF gives … for index …".
const zspace::IndexProjection& checked_ipf(const ir::SelectionMap::Entry& entry,
                                           const ir::IpfMap& ipfs, const Range& index);

/// Checks that `box`, selected by `entry`, lies inside `tensor`'s `range`.
void check_inside(const ir::Graph& graph, const ir::SelectionMap::Entry& entry, const Range& box,
                  ir::TensorId tensor, const Range& range);

/// Builds the KernelCall for `work` (checking every selection equals IPF(index), naming the node
/// otherwise) and runs `kernel` on it; `in_blocks`: as blocks of the index box on the current
/// oneTBB arena (operation_blocks.h: the naive run's whole operations).
void run_kernel(KernelFn kernel, const ir::Graph& graph, const Work& work, BufferMap& buffers,
                bool in_blocks = false);

}  // namespace tapestry::runtime::detail
