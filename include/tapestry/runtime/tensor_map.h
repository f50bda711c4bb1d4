// Tensor values of a run: buffers keyed by TensorId, and how to find a graph's inputs/outputs.
//
// Executors take the buffers of a graph's *inputs* (tensors no operation produces) and return a
// buffer for every tensor. Callers that know tensors by name (a CLI, a test) bind by label:
//
//   BufferMap in = bind_by_name(g, {{"X", x}, {"W", w}, {"b", b}});
//   BufferMap out = NaiveExecutor(g).run(std::move(in));
//   const Buffer& y = out.at(find_tensor(g, "Y"));
//
// A buffer matches a tensor when their dtype and shape agree; its start is then taken from the
// tensor (`relocated`), so a `.npy` file, which has no coordinates, can feed a tensor that starts
// at [-40, 20]. Mismatches are Errors naming the tensor.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/runtime/buffer.h"

namespace tapestry::runtime {

/// Buffers by tensor; ordered by TensorId (graph order), so iteration is deterministic.
using BufferMap = std::map<ir::TensorId, Buffer>;

/// Tensors no operation produces, in graph order: what a run needs as input.
std::vector<ir::TensorId> graph_inputs(const ir::Graph& graph);
/// The results (metakernel/apply.h defines which tensors they are).
using metakernel::graph_outputs;

/// The tensor's label, or its key when it has none (for messages and file names).
std::string tensor_name(const ir::Graph& graph, ir::TensorId tensor);
/// The tensor labelled `name`, else the tensor whose key is `name`. Error when there is none
/// or when several tensors carry that label.
ir::TensorId find_tensor(const ir::Graph& graph, std::string_view name);

/// The executable dtype of a tensor (Error naming the tensor otherwise).
DType tensor_dtype(const ir::Graph& graph, ir::TensorId tensor);
/// Checks that `buffer` can hold `tensor` (same dtype and shape) and returns it relocated to
/// the tensor's range. Error naming the tensor otherwise.
Buffer bind_buffer(const ir::Graph& graph, ir::TensorId tensor, Buffer buffer);
/// Binds buffers given by tensor name (label or key; see find_tensor).
BufferMap bind_by_name(const ir::Graph& graph, std::map<std::string, Buffer> by_name);

}  // namespace tapestry::runtime
