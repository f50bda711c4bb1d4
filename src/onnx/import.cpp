// The ONNX import driver (import.h):
//
//   1. parse the ModelProto and check its opset (converting one below kMinOpset: opset.h);
//   2. bind the initializers (host tensors) and the model's inputs (graph inputs, static shapes);
//   3. order the nodes topologically (a cycle or an undefined input is an error);
//   4. find the exact-GELU chains (gelu_pattern.h);
//   5. convert every node with its converter (op_table.h), naming the operations it creates
//      after the node, and refuse attributes it did not read;
//   6. mark the model's outputs and take the graph.
#include "tapestry/onnx/import.h"

#include <fmt/format.h>
#include <cctype>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <onnx/shape_inference/implementation.h>

#include "context.h"
#include "gelu_pattern.h"
#include "op_table.h"
#include "opset.h"

namespace tapestry::onnx {

namespace {

// The static shape of graph input `info`, from the model or from options.shapes.
std::vector<std::int64_t> input_shape(const ::onnx::ValueInfoProto& info,
                                      const ImportOptions& options, const std::string& source) {
  if (auto it = options.shapes.find(info.name()); it != options.shapes.end()) return it->second;
  const auto& type = info.type().tensor_type();
  if (!type.has_shape()) {
    throw Error(fmt::format("{}: input '{}' has no shape: give it with --shape {}=D0,D1,…", source,
                            info.name(), info.name()));
  }
  std::vector<std::int64_t> shape;
  for (int k = 0; k < type.shape().dim_size(); ++k) {
    const auto& d = type.shape().dim(k);
    if (!d.has_dim_value() || d.dim_value() < 0) {
      const std::string name = dynamic_dim_name(info.name(), k, d.dim_param());
      if (auto it = options.dims.find(name); it != options.dims.end()) {
        shape.push_back(it->second);
        continue;
      }
      throw Error(fmt::format(
          "{}: input '{}' has a dynamic dim {}{}: give its shape with --shape {}=D0,D1,… or its "
          "size with --dim {}=N",
          source, info.name(), k, d.has_dim_param() ? fmt::format(" ('{}')", d.dim_param()) : "",
          info.name(), name));
    }
    shape.push_back(d.dim_value());
  }
  return shape;
}

// The graph dtype of a model input: the float types the runtime holds (float16 and bfloat16
// are stored 16-bit and computed in float32: runtime.md) and int32, int64 (token ids, indices:
// data fed at run time; docs/onnx.md, "Integer inputs").
ir::DType input_dtype(const ::onnx::ValueInfoProto& info, const std::string& source) {
  const std::int32_t t = info.type().tensor_type().elem_type();
  if (t == ::onnx::TensorProto::FLOAT) return ir::DType::kFloat32;
  if (t == ::onnx::TensorProto::DOUBLE) return ir::DType::kFloat64;
  if (t == ::onnx::TensorProto::FLOAT16) return ir::DType::kFloat16;
  if (t == ::onnx::TensorProto::BFLOAT16) return ir::DType::kBFloat16;
  if (t == ::onnx::TensorProto::INT64) return ir::DType::kInt64;
  if (t == ::onnx::TensorProto::INT32) return ir::DType::kInt32;
  // A boolean input is a mask: 0/1 in the import's float dtype (kernels/masks.yaml).
  if (t == ::onnx::TensorProto::BOOL) return ir::DType::kFloat32;
  throw Error(fmt::format(
      "{}: input '{}' has element type {}; only float, double, float16, bfloat16, int32, int64 "
      "and bool inputs are supported",
      source, info.name(),
      ::onnx::TensorProto::DataType_Name(static_cast<::onnx::TensorProto::DataType>(t))));
}

// Kahn's algorithm over tensor dependencies; `known` are the names defined before any node.
std::vector<std::size_t> topological_order(const ::onnx::GraphProto& graph,
                                           const std::set<std::string>& known,
                                           const std::string& source) {
  std::map<std::string, std::size_t> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& o : graph.node(i).output()) {
      if (o.empty()) continue;
      if (producer.contains(o) || known.contains(o)) {
        throw node_error(source, graph.node(i), static_cast<std::size_t>(i),
                         fmt::format("tensor '{}' is defined twice", o));
      }
      producer[o] = static_cast<std::size_t>(i);
    }
  }
  const auto n = static_cast<std::size_t>(graph.node_size());
  std::vector<std::size_t> pending(n, 0);
  std::vector<std::vector<std::size_t>> readers(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& node = graph.node(static_cast<int>(i));
    for (const std::string& in : node.input()) {
      if (in.empty() || known.contains(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        throw node_error(source, node, i,
                         fmt::format("input '{}' is not defined (no node, input or initializer "
                                     "produces it)",
                                     in));
      }
      ++pending[i];
      readers[it->second].push_back(i);
    }
  }
  std::vector<std::size_t> order, ready;
  for (std::size_t i = n; i-- > 0;) {
    if (pending[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const std::size_t i = ready.back();
    ready.pop_back();
    order.push_back(i);
    for (std::size_t r : readers[i]) {
      if (--pending[r] == 0) ready.push_back(r);
    }
  }
  if (order.size() != n) {
    std::vector<std::string> stuck;
    for (std::size_t i = 0; i < n && stuck.size() < 4; ++i) {
      if (pending[i] != 0)
        stuck.push_back(fmt::format("'{}' ({})", node_display_name(graph.node(static_cast<int>(i))),
                                    graph.node(static_cast<int>(i)).op_type()));
    }
    throw Error(
        fmt::format("{}: the graph has a cycle: {} nodes depend on each other's outputs, "
                    "among them {}",
                    source, n - order.size(), fmt::join(stuck, ", ")));
  }
  return order;
}

// --check: the static float shapes ONNX's shape inference finds for the model's values, so a
// value that a blocker leaves undefined can be stood in for and the nodes after it checked too.
using InferredShapes = std::map<std::string, std::pair<ir::DType, std::vector<std::int64_t>>>;

InferredShapes infer_shapes(const ::onnx::ModelProto& model) {
  ::onnx::ModelProto inferred = model;
  try {
    ::onnx::shape_inference::InferShapes(inferred);
  } catch (const std::exception&) {
    return {};  // what inference could not do only makes --check stop earlier along a path
  }
  InferredShapes shapes;
  auto record = [&](const ::onnx::ValueInfoProto& info) {
    const auto& type = info.type().tensor_type();
    const std::int32_t t = type.elem_type();
    if (!type.has_shape()) return;
    ir::DType dtype;
    switch (t) {
      case ::onnx::TensorProto::FLOAT:
        dtype = ir::DType::kFloat32;
        break;
      case ::onnx::TensorProto::DOUBLE:
        dtype = ir::DType::kFloat64;
        break;
      case ::onnx::TensorProto::FLOAT16:
        dtype = ir::DType::kFloat16;
        break;
      case ::onnx::TensorProto::BFLOAT16:
        dtype = ir::DType::kBFloat16;
        break;
      default:
        return;
    }
    std::vector<std::int64_t> dims;
    for (const auto& d : type.shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0) return;
      dims.push_back(d.dim_value());
    }
    shapes[info.name()] = {dtype, dims};
  };
  for (const auto& info : inferred.graph().value_info()) record(info);
  for (const auto& info : inferred.graph().output()) record(info);
  return shapes;
}

// --check: after a blocker at `node`, its outputs that inference gave a float shape become
// stand-in graph inputs (the graph is never written); the others are undefined (`blocked`).
void stand_in(ImportContext& ctx, const ::onnx::NodeProto& node, const InferredShapes& shapes,
              std::set<std::string>& blocked) {
  for (const std::string& out : node.output()) {
    if (out.empty() || ctx.is_bound(out)) continue;
    if (auto it = shapes.find(out); it != shapes.end()) {
      ctx.bind(out, ctx.graph().input(ctx.fresh_name("stand_in_" + out, "input"),
                                      ctx.graph_dtype(it->second.first), it->second.second));
    } else {
      blocked.insert(out);
    }
  }
}

// --check: `e`'s diagnostics (a node's error), or its text about the model file.
void add_blocker(std::vector<support::Diagnostic>& blockers, const Error& e,
                 const std::string& source) {
  if (const auto* located = dynamic_cast<const support::DiagnosticError*>(&e)) {
    blockers.insert(blockers.end(), located->diagnostics().begin(), located->diagnostics().end());
  } else {
    std::string message = e.what();
    if (message.starts_with(source + ": ")) message.erase(0, source.size() + 2);
    blockers.push_back(support::Diagnostic::in_file(source, std::move(message)));
  }
}

// What input k of an `op_type` node is, for naming a weight after the node that reads it.
std::string input_role(const std::string& op_type, int k) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> kRoles = {
      {"Conv", {"x", "weight", "bias"}},
      {"ConvTranspose", {"x", "weight", "bias"}},
      {"Gemm", {"a", "weight", "bias"}},
      {"MatMul", {"a", "weight"}},
      {"BatchNormalization", {"x", "scale", "bias", "mean", "var"}},
      {"LayerNormalization", {"x", "scale", "bias"}},
      {"PRelu", {"x", "slope"}},
      {"Add", {"a", "b"}},
      {"Mul", {"a", "b"}},
  };
  if (auto it = kRoles.find(op_type); it != kRoles.end() && k < std::ssize(it->second))
    return it->second[static_cast<std::size_t>(k)];
  return fmt::format("in{}", k);
}

// Names for the initializers PyTorch names `onnx::<Op>_<n>` (weights it made while exporting:
// a Conv with its BatchNorm folded in, a transposed MatMul weight …): read by one node only,
// each is named after that node and its role there (`layer1/layer1.0/conv1/Conv.weight`), so
// plans and `explain` speak the model's vocabulary.
std::map<std::string, std::string> weight_names(const ::onnx::GraphProto& graph) {
  std::map<std::string, std::vector<std::pair<int, int>>> readers;  // name → (node, input)
  for (const auto& init : graph.initializer()) {
    if (init.name().starts_with("onnx::")) readers[init.name()];
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    for (int k = 0; k < graph.node(i).input_size(); ++k) {
      if (auto it = readers.find(graph.node(i).input(k)); it != readers.end())
        it->second.emplace_back(i, k);
    }
  }
  std::map<std::string, std::string> names;
  for (const auto& [name, uses] : readers) {
    if (uses.size() != 1) continue;
    const ::onnx::NodeProto& node = graph.node(uses.front().first);
    if (node.name().empty()) continue;
    names[name] = node.name() + "." + input_role(node.op_type(), uses.front().second);
  }
  return names;
}

std::string unsupported_operator(const std::string& op_type) {
  return fmt::format(
      "operator {} is not supported (`tapestry import --list-ops` lists those that are)", op_type);
}

// Names the graph tensors node `node` created (step 5).
void name_new_tensors(ImportContext& ctx, const ::onnx::NodeProto& node, const NodeContext& nc,
                      const std::set<std::string>& graph_outputs) {
  for (const auto& [k, t] : nc.new_tensors()) {
    const std::string& out = node.output(k);
    std::string base;
    if (graph_outputs.contains(out) || node.name().empty()) {
      base = out;
    } else {
      base = k == 0 ? node.name() : fmt::format("{}.{}", node.name(), k);
    }
    ctx.graph().assign(ctx.fresh_name(base, "node"), t);
  }
}

// "node 'NAME' (OP, node K)" for the node that writes `value`, as NodeContext::error names
// nodes; "an initializer" when no node writes it.
std::string describe_producer(const ::onnx::GraphProto& graph, const std::string& value) {
  for (int k = 0; k < graph.node_size(); ++k) {
    const ::onnx::NodeProto& node = graph.node(k);
    for (const std::string& out : node.output()) {
      if (out == value)
        return fmt::format("node '{}' ({}, node {})", node.name(), node.op_type(), k);
    }
  }
  return "an initializer";
}

void convert_node(ImportContext& ctx, const ::onnx::NodeProto& node, std::size_t position,
                  const std::set<std::string>& graph_outputs, const GeluMatch* gelu) {
  NodeContext nc(ctx, node, position);
  try {
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      throw nc.error(
          fmt::format("domain '{}' is not supported (only the default ai.onnx)", node.domain()));
    }
    if (gelu != nullptr) {
      nc.set_output(0, ctx.graph().call("gelu", {ctx.as_tensor(gelu->x)}));
    } else {
      const Converter convert = find_converter(node.op_type());
      if (convert == nullptr) throw nc.error(unsupported_operator(node.op_type()));
      convert(nc);
      if (const std::vector<std::string> unread = nc.unread_attributes(); !unread.empty()) {
        throw nc.error(fmt::format("attribute '{}' is not supported", unread.front()));
      }
    }
    name_new_tensors(ctx, node, nc, graph_outputs);
  } catch (const NodeError&) {
    throw;
  } catch (const Error& e) {
    throw nc.error(e.what());
  }
}

ImportResult import_model(const ::onnx::ModelProto& original, const std::string& source,
                          const ImportOptions& options) {
  const OpsetUpgrade upgrade = upgrade_opset(original, source);
  const ::onnx::GraphProto& graph = upgrade.model->graph();
  ImportContext ctx(source, upgrade.opset);
  ctx.set_declared_opset(upgrade.declared);
  if (options.dtype) {
    if (*options.dtype != ir::DType::kBFloat16 && *options.dtype != ir::DType::kFloat16)
      throw Error(fmt::format("{}: --dtype must be bf16 or f16, not {}", source,
                              ir::dtype_short_name(*options.dtype)));
    ctx.set_float32_as(*options.dtype);
  }
  ImportResult result;
  result.opset = upgrade.opset;
  if (upgrade.converted()) result.converted_from = upgrade.declared;
  result.nodes = static_cast<std::size_t>(graph.node_size());

  // 2. Initializers, then the inputs that are not initializers.
  std::set<std::string> known;
  for (const auto& init : graph.initializer()) {
    if (init.name().empty() || known.contains(init.name()))
      throw Error(
          fmt::format("{}: initializer '{}' is unnamed or defined twice", source, init.name()));
    ctx.bind(init.name(),
             decode_tensor(init, fmt::format("{}: initializer '{}'", source, init.name())));
    known.insert(init.name());
  }
  std::set<std::string, std::less<>> shaped;
  std::set<std::string> blocked;  // --check: values that a blocker left undefined
  for (const auto& in : graph.input()) {
    if (known.contains(in.name())) continue;
    known.insert(in.name());
    shaped.insert(in.name());
    try {
      const ir::DType dtype = ctx.graph_dtype(input_dtype(in, source));
      const std::vector<std::int64_t> shape = input_shape(in, options, source);
      const std::string name = ctx.fresh_name(in.name(), "input");
      ctx.bind(in.name(), ctx.graph().input(name, dtype, shape));
      if (in.type().tensor_type().elem_type() == ::onnx::TensorProto::BOOL)
        ctx.mark_mask(in.name());
      result.inputs.push_back(name);
    } catch (const Error& e) {
      if (!options.check) throw;
      add_blocker(result.blockers, e, source);
      blocked.insert(in.name());
    }
  }
  for (const auto& [name, shape] : options.shapes) {
    if (!shaped.contains(name))
      throw Error(fmt::format("{}: --shape {}: the model has no input of that name", source, name));
  }

  // 3, 4.
  const std::vector<std::size_t> order = topological_order(graph, known, source);
  std::set<std::string, std::less<>> used;
  std::set<std::string> graph_outputs;
  for (const auto& node : graph.node()) used.insert(node.input().begin(), node.input().end());
  for (const auto& o : graph.output()) {
    used.insert(o.name());
    graph_outputs.insert(o.name());
  }
  ctx.set_used_names(std::move(used));
  ctx.set_weight_names(weight_names(graph));
  std::map<std::size_t, GeluMatch> gelu_at;
  std::set<std::size_t> absorbed;
  for (GeluMatch& m : find_gelu_patterns(graph)) {
    absorbed.insert(m.absorbed.begin(), m.absorbed.end());
    gelu_at.emplace(m.last, std::move(m));
  }

  // 5.
  const InferredShapes shapes = options.check ? infer_shapes(*upgrade.model) : InferredShapes{};
  for (std::size_t i : order) {
    if (absorbed.contains(i)) continue;
    auto g = gelu_at.find(i);
    const ::onnx::NodeProto& node = graph.node(static_cast<int>(i));
    if (!options.check) {
      convert_node(ctx, node, i, graph_outputs, g == gelu_at.end() ? nullptr : &g->second);
      continue;
    }
    try {
      const bool reads_blocked = g != gelu_at.end()
                                     ? blocked.contains(g->second.x)
                                     : std::ranges::any_of(node.input(), [&](const auto& in) {
                                         return blocked.contains(in);
                                       });
      if (reads_blocked) {
        // Its inputs are undefined: only whether its operator maps can be told.
        if (g == gelu_at.end() && find_converter(node.op_type()) == nullptr)
          throw node_error(source, node, i, unsupported_operator(node.op_type()));
        stand_in(ctx, node, shapes, blocked);
        continue;
      }
      convert_node(ctx, node, i, graph_outputs, g == gelu_at.end() ? nullptr : &g->second);
    } catch (const Error& e) {
      add_blocker(result.blockers, e, source);
      stand_in(ctx, node, shapes, blocked);
    }
  }

  // 6.
  if (graph.output_size() == 0) throw Error(fmt::format("{}: the model has no outputs", source));
  if (!result.blockers.empty()) return result;  // --check: what stops the import, all of it
  for (const auto& o : graph.output()) {
    if (!ctx.is_bound(o.name()))
      throw Error(fmt::format("{}: output '{}' is not produced by any node", source, o.name()));
    Tensor t;
    try {
      t = ctx.as_tensor(o.name());
    } catch (const Error& e) {  // an integer value computed at import (Shape, …)
      throw Error(fmt::format("{}: output '{}' (from {}): {}", source, o.name(),
                              describe_producer(graph, o.name()), e.what()));
    }
    ctx.graph().output(t);
    if (t.name() != o.name()) result.renames.push_back({"output", o.name(), t.name()});
    result.outputs.push_back(t.name());
  }
  result.graph = ctx.graph().take();
  result.weights = std::move(ctx.weights());
  std::vector<Rename> renames = std::move(ctx.renames());
  renames.insert(renames.end(), result.renames.begin(), result.renames.end());
  result.renames = std::move(renames);
  return result;
}

}  // namespace

std::string dynamic_dim_name(std::string_view input, int axis, std::string_view dim_param) {
  std::string name = dim_param.empty() ? fmt::format("{}_{}", input, axis) : std::string(dim_param);
  for (char& c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_') c = '_';
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) != 0) name.insert(0, "d");
  return name;
}

ImportResult import_onnx_bytes(std::string_view bytes, std::string_view source_name,
                               const ImportOptions& options) {
  const std::string source(source_name);
  ::onnx::ModelProto model;
  if (bytes.empty() || bytes.size() > static_cast<std::size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw Error(
        fmt::format("{}: not a readable ONNX model (the protobuf does not parse: a "
                    "truncated or corrupt file, or not ONNX)",
                    source));
  }
  if (!model.has_graph()) throw Error(fmt::format("{}: the model has no graph", source));
  return import_model(model, source, options);
}

ImportResult import_onnx_file(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("{}: is a directory, not an ONNX model", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open the file", path));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return import_onnx_bytes(bytes.view(), path, options);
}

}  // namespace tapestry::onnx
