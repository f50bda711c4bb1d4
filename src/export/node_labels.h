// The HTML-like labels of tensors, operations and shards (private to module export).
#pragma once

#include <string>

#include "tapestry/ir/graph.h"

namespace tapestry::exporter {

/// A palette colour pair for operation `i` (fill for shards and the operation, and a paler one
/// for the group's background). Fixed, so pictures are reproducible.
struct OpColors {
  const char* fill;
  const char* pale;
  const char* border;
};
OpColors op_colors(std::size_t i);

/// The Graphviz port of an IPF row in an operation's table: "in_x_0", "out_y_0".
std::string port_id(bool input, std::string_view name, std::uint32_t position);

/// Name shown for a node: its label, else the first 8 characters of its key.
std::string label_or_short_key(const ir::NodeView& node);

/// Tensor: name, dtype and shape, range.
std::string tensor_label(const ir::TensorView& tensor);

/// Operation: name (and kernel when different), index dims with ranges and reductions, and a
/// matrix per IPF: one row per tensor dimension, one column per index dimension, then the
/// offset and the window shape.
std::string operation_label(const ir::OperationView& op, const OpColors& colors, bool show_ipfs);

/// Shard `number` of an operation: "name #number" and its index sub-box, dims named.
std::string shard_label(const ir::ApplicationView& app, const ir::OperationView& op,
                        std::size_t number, const OpColors& colors, std::string_view device = {});

/// Opaque or Note nodes: type and a short text.
std::string other_label(const ir::NodeView& node);

/// "batch 0:8, out 0:6, in 0:4" for a box of an operation's index.
std::string named_box(const ir::OperationView& op, const zspace::Range& box);

}  // namespace tapestry::exporter
