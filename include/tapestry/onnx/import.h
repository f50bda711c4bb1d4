// ONNX in, a Tapestry graph out: `tapestry import MODEL.onnx -o GRAPH.{tap,json} --weights DIR`.
//
// An ONNX model (a protobuf ModelProto, read with Debian's libonnx) becomes an operation graph of
// the built-in kernels, built with the metakernel builder (builder.h) so every operation is
// checked by its kernel as it is added:
//
//   ImportResult r = import_onnx_file("cnn.onnx", {});
//   ir::Graph& g = r.graph;                       // validated; print_tap or write_graph_file
//   for (const Weight& w : r.weights) …           // DIR/<w.name>.npy for `tapestry run --inputs`
//
//   * Every initializer (and every float Constant) a computation reads becomes a graph input
//     whose value is returned in `weights`; the model's own inputs stay graph inputs.
//   * Integer tensors (shapes, indices, axes) never reach the graph: Shape, Gather, Concat,
//     Unsqueeze, Slice … on them are evaluated at import time, so the shape arithmetic PyTorch
//     exports folds away. Shapes are static: a dynamic input dim needs `shapes[NAME]`.
//   * Operations are named after their ONNX nodes (or, for a graph output, after the output),
//     sanitised to .tap names: `/fc1/Gemm` → `fc1/Gemm`. A node that becomes several operations
//     (LayerNormalization, Conv with a bias, Gemm with alpha ≠ 1 …) is a composite named after
//     the node: `norm1/LayerNormalization/mean`, …, `norm1/LayerNormalization`. Every renamed
//     input, output and node is listed in `renames`.
//   * The PyTorch export of exact GELU, x·½·(1 + erf(x/√2)) over five nodes, becomes one gelu.
//
// Errors are tapestry::Error naming the model file and, for a node, its name, op type and
// position and what is missing: `cnn.onnx: node 'conv1/Conv' (Conv, node 2): attribute
// group=2 is not supported (only group=1)`. Unsupported ops, attributes, dtypes and opsets, a
// cycle, an undefined tensor, a dynamic dim without a shape, and a file that is not a model
// (truncated, not protobuf) each give one such error. supported_onnx_ops() lists what maps.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/runtime/buffer.h"
#include "tapestry/support/diagnostic.h"

namespace tapestry::onnx {

/// The default-domain opsets the importer reads (what PyTorch 1.13 exports: 11 … 17). A model
/// declaring an older opset (1 … 10) is first converted to opset 13 by ONNX's version converter.
inline constexpr std::int64_t kMinOpset = 11;
inline constexpr std::int64_t kMaxOpset = 17;
/// The opset a model below kMinOpset is converted to before it is imported.
inline constexpr std::int64_t kUpgradeTarget = 13;

struct ImportOptions {
  /// Static shapes for inputs with dynamic dims: input name → its full shape.
  std::map<std::string, std::vector<std::int64_t>, std::less<>> shapes;
  /// Values for dynamic dims by name (dynamic_dim_name): every input dim of that name takes it.
  /// An input in `shapes` is not affected.
  std::map<std::string, std::int64_t, std::less<>> dims;
  /// `tapestry import --check`: collect every blocker instead of stopping at the first. A node
  /// that cannot be converted, or an input that cannot be declared, is recorded in
  /// ImportResult::blockers; each float value it defines whose static shape ONNX's shape
  /// inference knows is stood in for by a placeholder, so the nodes after it are checked too.
  /// A value without a known shape is left undefined: a node reading one is not converted, but
  /// an operator it uses that does not map is recorded. When blockers were found the result
  /// holds no graph.
  bool check = false;
  /// `tapestry import --dtype bf16|f16`: the model's float32 data in this 16-bit dtype instead —
  /// its float32 inputs, every weight and constant (rounded to nearest even), and a Cast to
  /// float — so every tensor of the graph is 16-bit. No float32 islands: every kernel computes
  /// in float32 and rounds once when it stores (runtime/executable_kernels.h), layer norm and
  /// softmax included. Unset: the model's own dtypes.
  std::optional<ir::DType> dtype;
};

/// One graph input's value (an initializer or a constant): written as DIR/<name>.npy.
struct Weight {
  std::string name;  // the graph input's name
  runtime::Buffer value;
};

/// An ONNX name that is not a legal Tapestry name, and what it became.
struct Rename {
  std::string what;  // "input", "output", "weight", "node"
  std::string from;
  std::string to;
};

struct ImportResult {
  ir::Graph graph;
  std::vector<Weight> weights;
  std::vector<Rename> renames;
  std::vector<std::string> inputs;   // the model's own inputs (their graph names)
  std::vector<std::string> outputs;  // the model's outputs (their graph names)
  std::int64_t opset = 0;            // the opset imported (after any conversion)
  std::int64_t converted_from = 0;   // the model's own opset when it was converted, else 0
  std::size_t nodes = 0;             // ONNX nodes read
  /// With ImportOptions::check: every error that stops the import, located as the errors are
  /// (`model.onnx: node 'NAME' (OP, node K): …`), in node order; empty when the model imports.
  std::vector<support::Diagnostic> blockers;
};

/// Imports the model in `path`; Error (naming the file) on anything it cannot map.
ImportResult import_onnx_file(const std::string& path, const ImportOptions& options);

/// Imports a serialized ModelProto; `source_name` names it in errors.
ImportResult import_onnx_bytes(std::string_view bytes, std::string_view source_name,
                               const ImportOptions& options);

/// The .tap name of a dynamic input dim: its `dim_param` ("batch") when it has one, else
/// "<input>_<k>"; either made an identifier (other characters → '_').
std::string dynamic_dim_name(std::string_view input, int axis, std::string_view dim_param);

/// One supported ONNX operator: the kernels it becomes and its limits.
struct OpSupport {
  std::string op_type;
  std::string kernels;
  std::string notes;
};

/// The supported operators, in a stable order (`tapestry import --list-ops`).
const std::vector<OpSupport>& supported_onnx_ops();

}  // namespace tapestry::onnx
