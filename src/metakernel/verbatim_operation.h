// Adding an operation given verbatim: the .tap `operation {…}` statement (docs/language.md,
// "Operation statements") and metakernel::Graph::add_verbatim.
//
// The node is a loom Operation node without its "id" — {"label"?, "body", "tags"?} ("type" may
// be given; it must then name an Operation) — whose selections name tensors by name:
//
//   {"label": "op:add", "body": {"kernel": "op:add",
//      "inputs": {"tensors": [{"tensorId": "t0", "range": {"start": [0, 0], "end": [10, 5]}}]},
//      "outputs": {"result": [{"tensorId": "z", "range": {"start": [0, 0], "end": [10, 5]}}]}}}
//
// It is read by the loom reader itself (ir/json_io.h: the same schema, the same messages), in a
// small document holding copies of the tensors it names, and then copied into the graph.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tapestry/ir/graph.h"

namespace tapestry::metakernel {

/// The tensor a name refers to; nullopt for an unknown name.
using TensorLookup = std::function<std::optional<ir::TensorId>(std::string_view)>;

/// Adds the operation `node` describes to `graph` (and, when `add_application` and the node has
/// IPFIndex and IPFSignature tags, one Application covering its whole index). Throws Error
/// naming the first problem: an unknown tensor name, a field the schema rejects.
ir::OperationId add_verbatim_operation(ir::Graph& graph, const nlohmann::json& node,
                                       const TensorLookup& lookup, bool add_application);

/// The node of `op` as an operation statement writes it: its loom JSON without "id" and
/// "type", tags with short names, each selection's "tensorId" replaced by `name(tensor)`.
nlohmann::json verbatim_operation_json(const ir::Graph& graph, ir::OperationId op,
                                       const std::function<std::string(ir::TensorId)>& name);

}  // namespace tapestry::metakernel
