// Helpers for ir tests: short literals for ranges and IPFs, small graphs built in code, and
// issue matchers.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/ir/dialect.h"
#include "tapestry/ir/graph.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/zspace/range.h"
#include "tapestry/zspace/text.h"

namespace tapestry::ir::testing {

/// zr("zr[0:2, 0:3]") — a Range from its text form.
inline zspace::Range zr(std::string_view text) {
  return zspace::parse_range(text);
}

/// An IPF from rows, an offset and a shape: ipf({{1, 0}, {0, 1}}, {0, 0}, {1, 1}).
inline zspace::IndexProjection ipf(const std::vector<std::vector<std::int64_t>>& rows,
                                   zspace::Point offset, zspace::Point shape,
                                   std::size_t in_rank_if_no_rows = 0) {
  return zspace::IndexProjection(
      zspace::AffineMap::from_rows(rows, std::move(offset), in_rank_if_no_rows), std::move(shape));
}

/// The text of a file under tests/data.
inline std::string read_data(const std::string& relative) {
  std::ifstream in(std::string(TAPESTRY_TEST_DATA) + "/" + relative, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// Issue types, in order.
inline std::vector<std::string> types_of(const std::vector<Issue>& issues) {
  std::vector<std::string> out;
  for (const Issue& i : issues) out.push_back(i.type);
  return out;
}

/// Validates and returns the issues of one type.
inline std::vector<Issue> issues_of(const Graph& g, const Dialect& d, std::string_view type) {
  std::vector<Issue> out;
  for (Issue& i : validate(g, d).issues) {
    if (i.type == type) out.push_back(std::move(i));
  }
  return out;
}

/// Z = add(X, Y) over index [10, 5] with identity IPFs: valid in the operation dialect.
struct AddGraph {
  Graph g;
  TensorId x, y, z;
  OperationId op;
};

inline AddGraph add_graph() {
  AddGraph a;
  zspace::Range box = zr("zr[0:10, 0:5]");
  a.x = a.g.add_tensor({.dtype = DType::kInt32, .range = box}, {.label = "X"});
  a.y = a.g.add_tensor({.dtype = DType::kInt32, .range = zr("zr[200:210, 50:55]")}, {.label = "Y"});
  a.z = a.g.add_tensor({.dtype = DType::kInt32, .range = box}, {.label = "Z"});
  OperationBody body{.kernel = "add"};
  body.inputs.append("tensors", {a.x, box});
  body.inputs.append("tensors", {a.y, zr("zr[200:210, 50:55]")});
  body.outputs.append("result", {a.z, box});
  a.op = a.g.add_operation(std::move(body), {.label = "add"});
  IpfSignature sig;
  sig.inputs.append("tensors", zspace::IndexProjection::identity(2));
  sig.inputs.append("tensors", ipf({{1, 0}, {0, 1}}, {200, 50}, {1, 1}));
  sig.outputs.append("result", zspace::IndexProjection::identity(2));
  a.g.set_ipf_index(a.op, box);
  a.g.set_ipf_signature(a.op, std::move(sig));
  return a;
}

/// Adds applications of `op` for each box, with selections IPF(box) (valid shards).
inline std::vector<ApplicationId> shard(Graph& g, OperationId op,
                                        const std::vector<zspace::Range>& boxes) {
  std::vector<ApplicationId> apps;
  OperationView v = g.operation(op);
  const IpfSignature sig = *v.ipf_signature();
  SelectionMap inputs = v.inputs();
  SelectionMap outputs = v.outputs();
  for (const zspace::Range& box : boxes) {
    ApplicationBody body{.operation = op};
    for (const auto& e : inputs.entries()) {
      body.inputs.append(e.name, {e.value.tensor, sig.inputs.list(e.name)[e.position].apply(box)});
    }
    for (const auto& e : outputs.entries()) {
      body.outputs.append(e.name,
                          {e.value.tensor, sig.outputs.list(e.name)[e.position].apply(box)});
    }
    ApplicationId app = g.add_application(std::move(body));
    g.set_ipf_index(app, box);
    apps.push_back(app);
  }
  return apps;
}

/// Z = linear(X, W, b); Y = relu(Z), batch 8, in 4, out 6; index [batch, out, in] with `in` a
/// sum reduction. Ports, index names and IPFs are those the built-in kernels derive. With `shards`
/// > 0 each operation is split into `shards` applications along batch (Tapestry's linear.relu.4x
/// picture has 4).
struct LinearRelu {
  Graph g;
  TensorId x, w, b, z, y;
  OperationId linear, relu;
};

inline LinearRelu linear_relu(int shards) {
  LinearRelu m;
  Graph& g = m.g;
  m.x = g.add_tensor({.dtype = DType::kFloat32, .range = zr("zr[0:8, 0:4]")}, {.label = "X"});
  m.w = g.add_tensor({.dtype = DType::kFloat32, .range = zr("zr[0:6, 0:4]")}, {.label = "W"});
  m.b = g.add_tensor({.dtype = DType::kFloat32, .range = zr("zr[0:6]")}, {.label = "b"});
  m.z = g.add_tensor({.dtype = DType::kFloat32, .range = zr("zr[0:8, 0:6]")}, {.label = "Z"});
  m.y = g.add_tensor({.dtype = DType::kFloat32, .range = zr("zr[0:8, 0:6]")}, {.label = "Y"});

  OperationBody lin{.kernel = "linear",
                    .index_names = {"batch", "out", "in"},
                    .reductions = {{"in", Monoid::kSum}}};
  lin.inputs.append("x", {m.x, zr("zr[0:8, 0:4]")});
  lin.inputs.append("w", {m.w, zr("zr[0:6, 0:4]")});
  lin.inputs.append("bias", {m.b, zr("zr[0:6]")});
  lin.outputs.append("result", {m.z, zr("zr[0:8, 0:6]")});
  m.linear = g.add_operation(std::move(lin), {.label = "linear"});
  IpfSignature ls;
  ls.inputs.append("x", ipf({{1, 0, 0}, {0, 0, 1}}, {0, 0}, {1, 1}));
  ls.inputs.append("w", ipf({{0, 1, 0}, {0, 0, 1}}, {0, 0}, {1, 1}));
  ls.inputs.append("bias", ipf({{0, 1, 0}}, {0}, {1}));
  ls.outputs.append("result", ipf({{1, 0, 0}, {0, 1, 0}}, {0, 0}, {1, 1}));
  g.set_ipf_index(m.linear, zr("zr[0:8, 0:6, 0:4]"));
  g.set_ipf_signature(m.linear, std::move(ls));

  OperationBody relu{.kernel = "relu", .index_names = {"d0", "d1"}};
  relu.inputs.append("x", {m.z, zr("zr[0:8, 0:6]")});
  relu.outputs.append("result", {m.y, zr("zr[0:8, 0:6]")});
  m.relu = g.add_operation(std::move(relu), {.label = "relu"});
  IpfSignature rs;
  rs.inputs.append("x", zspace::IndexProjection::identity(2));
  rs.outputs.append("result", zspace::IndexProjection::identity(2));
  g.set_ipf_index(m.relu, zr("zr[0:8, 0:6]"));
  g.set_ipf_signature(m.relu, std::move(rs));

  if (shards > 0) {
    shard(g, m.linear, zr("zr[0:8, 0:6, 0:4]").split_even(0, shards));
    shard(g, m.relu, zr("zr[0:8, 0:6]").split_even(0, shards));
  }
  return m;
}

}  // namespace tapestry::ir::testing

namespace tapestry::ir::testing {

/// The graph as a JSON document, for tests that damage it in ways the builder API forbids.
inline nlohmann::json to_document(const Graph& g) {
  return nlohmann::json::parse(write_graph_json(g));
}

/// Reads a (damaged) document back; the reading issues must be empty.
inline Graph from_document(const nlohmann::json& doc) {
  ReadResult r = read_graph_json(doc.dump());
  EXPECT_TRUE(r.issues.empty()) << format_issues_text(r.issues);
  return std::move(*r.graph);
}

/// The node with this label in a document.
inline nlohmann::json& node_labelled(nlohmann::json& doc, std::string_view label) {
  for (auto& node : doc["nodes"]) {
    if (node.value("label", "") == label) return node;
  }
  ADD_FAILURE() << "no node labelled " << label;
  return doc["nodes"][0];
}

/// The JSON of the i-th application of the operation labelled `op_label`.
inline nlohmann::json& application_of(nlohmann::json& doc, std::string_view op_label, int i) {
  std::string op_id = node_labelled(doc, op_label)["id"];
  for (auto& node : doc["nodes"]) {
    if (node["body"].value("operationId", "") == op_id && i-- == 0) return node;
  }
  ADD_FAILURE() << "no application " << i << " of " << op_label;
  return doc["nodes"][0];
}

/// Keys used in documents: the full tag URLs.
inline std::string ipf_index_tag() {
  return std::string(kIpfIndexTagUrl);
}
inline std::string ipf_signature_tag() {
  return std::string(kIpfSignatureTagUrl);
}

}  // namespace tapestry::ir::testing
