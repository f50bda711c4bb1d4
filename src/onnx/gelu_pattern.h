// Private to the ONNX importer: PyTorch's export of the exact GELU, found before conversion.
//
// torch.onnx.export writes F.gelu(x) (approximate='none') for opsets below 20 as five nodes:
//
//   d = Div(x, √2)   e = Erf(d)   a = Add(e, 1)   m = Mul(x, a)   y = Mul(m, 0.5)
//
// (or Mul(x, 1/√2) for the Div, and y = Mul(Mul(x, 0.5), a)). Tapestry has a gelu kernel and
// no erf, so the importer replaces each such chain by one gelu named after its last node. Every
// intermediate must feed only the next node of the chain and not be a graph output.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace tapestry::onnx {

struct GeluMatch {
  std::size_t last = 0;               // the node whose output is gelu(x)
  std::string x;                      // the input tensor
  std::vector<std::size_t> absorbed;  // the chain's other nodes (not converted)
};

/// Every exact-GELU chain of `graph` (node indices into graph.node()).
std::vector<GeluMatch> find_gelu_patterns(const ::onnx::GraphProto& graph);

}  // namespace tapestry::onnx
