#include "tapestry/metakernel/builder_ops.h"

namespace tapestry::metakernel {

namespace {

Tensor call(const char* kernel, std::vector<Tensor> inputs,
            nlohmann::json params = nlohmann::json::object()) {
  Graph& g = inputs.front().graph();
  return g.call(kernel, inputs, params);
}

}  // namespace

Tensor linear(Tensor x, Tensor w, Tensor bias) {
  return call("linear", {x, w, bias});
}
Tensor matmul(Tensor a, Tensor b) {
  return call("matmul", {a, b});
}
Tensor bias_add(Tensor x, Tensor bias) {
  return call("bias_add", {x, bias});
}

Tensor relu(Tensor x) {
  return call("relu", {x});
}
Tensor gelu(Tensor x) {
  return call("gelu", {x});
}
Tensor exp(Tensor x) {
  return call("exp", {x});
}
Tensor neg(Tensor x) {
  return call("neg", {x});
}
Tensor tanh(Tensor x) {
  return call("tanh", {x});
}
Tensor sigmoid(Tensor x) {
  return call("sigmoid", {x});
}

Tensor add(Tensor a, Tensor b) {
  return call("add", {a, b});
}
Tensor sub(Tensor a, Tensor b) {
  return call("sub", {a, b});
}
Tensor mul(Tensor a, Tensor b) {
  return call("mul", {a, b});
}
Tensor div(Tensor a, Tensor b) {
  return call("div", {a, b});
}
Tensor max(Tensor a, Tensor b) {
  return call("maximum", {a, b});
}

Tensor sum(Tensor x, std::int64_t dim) {
  return call("sum", {x}, {{"dim", dim}});
}
Tensor max(Tensor x, std::int64_t dim) {
  return call("max", {x}, {{"dim", dim}});
}
Tensor reduce(Tensor x, Monoid op) {
  return call("reduce", {x}, {{"op", std::string(monoid_name(op))}});
}
Tensor softmax(Tensor x) {
  return call("softmax", {x});
}

Tensor transpose(Tensor x) {
  return call("transpose", {x});
}
Tensor permute(Tensor x, const std::vector<std::int64_t>& perm) {
  return call("permute", {x}, {{"perm", perm}});
}
Tensor reshape(Tensor x, const std::vector<std::int64_t>& shape) {
  return call("reshape", {x}, {{"shape", shape}});
}

Tensor pad(Tensor x, std::int64_t padding, double value) {
  return call("pad", {x}, {{"padding", padding}, {"value", value}});
}

Tensor conv2d(Tensor x, Tensor w, Conv2dOptions options) {
  return call("conv2d", {x, w}, {{"stride", options.stride}, {"padding", options.padding}});
}

}  // namespace tapestry::metakernel
