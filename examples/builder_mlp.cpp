// The MLP of examples/mlp.tap built with the C++ builder API instead of .tap.
//
//   build/<dir>/examples/builder_mlp            prints the graph as .tap text
//   build/<dir>/examples/builder_mlp out.json   also writes the validated loom JSON
//
// The graph equals the one `tapestry build examples/mlp.tap` writes, node for node.
#include <fmt/core.h>

#include <cstdio>

#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/builder_ops.h"
#include "tapestry/metakernel/printer.h"
#include "tapestry/metakernel/tap_frontend.h"

int main(int argc, char** argv) {
  using namespace tapestry::metakernel;
  try {
    Graph g;
    Tensor x = g.input("X", DType::kFloat32, {4096, 1024});
    Tensor w1 = g.input("W1", DType::kFloat32, {4096, 1024});
    Tensor b1 = g.input("b1", DType::kFloat32, {4096});
    Tensor w2 = g.input("W2", DType::kFloat32, {1024, 4096});
    Tensor b2 = g.input("b2", DType::kFloat32, {1024});
    Tensor h = g.assign("H", relu(linear(x, w1, b1)));
    Tensor y = g.assign("Y", linear(h, w2, b2));
    g.output(y);

    tapestry::ir::Graph graph = g.take();
    const tapestry::ir::ValidationReport report = validate_built_graph(graph);
    if (!report.is_valid()) {
      fmt::print(stderr, "{}", tapestry::ir::format_issues_text(report.issues));
      return 1;
    }
    fmt::print("{}", print_tap(graph, builtin_signatures()));
    if (argc > 1) tapestry::ir::write_graph_file(graph, argv[1]);
    return 0;
  } catch (const tapestry::Error& e) {
    fmt::print(stderr, "builder_mlp: error: {}\n", e.what());
    return 2;
  }
}
