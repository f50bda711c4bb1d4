#include "tapestry/metakernel/builder_ops.h"

#include <optional>
#include <string>

#include "tapestry/ir/dtype.h"
#include "tapestry/support/error.h"

namespace tapestry::metakernel {

namespace {

Tensor call(const char* kernel, std::vector<Tensor> inputs,
            nlohmann::json params = nlohmann::json::object()) {
  Graph& g = inputs.front().graph();
  return g.call(kernel, inputs, params);
}

// Output `port` of the operation whose first output, `result`, is `first`: the outputs of a
// multi-output operation are labelled `<operation>.<port>`.
Tensor other_output(Tensor first, std::string_view port) {
  std::string label = first.name();
  constexpr std::string_view kFirst = ".result";
  if (label.ends_with(kFirst)) label.resize(label.size() - kFirst.size());
  label += "." + std::string(port);
  std::optional<Tensor> t = first.graph().find(label);
  if (!t) throw Error(label + ": no such output");
  return *t;
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

Tensor cast(Tensor x, DType to) {
  return call("cast", {x}, {{"to", std::string(ir::dtype_short_name(to))}});
}

Tensor pad(Tensor x, std::int64_t padding, double value) {
  return call("pad", {x}, {{"padding", padding}, {"value", value}});
}

Tensor conv2d(Tensor x, Tensor w, Conv2dOptions options) {
  return call("conv2d", {x, w}, {{"stride", options.stride}, {"padding", options.padding}});
}

// ---- training -------------------------------------------------------------------------------

Tensor softmax_grad(Tensor y, Tensor d_result) {
  return call("softmax_grad", {y, d_result});
}
Tensor conv2d_grad_input(Tensor x, Tensor w, Tensor d_result, std::int64_t stride) {
  return call("conv2d_grad_input", {x, w, d_result}, {{"stride", stride}});
}
Tensor conv2d_grad_weight(Tensor x, Tensor d_result, std::int64_t kh, std::int64_t kw,
                          std::int64_t stride) {
  return call("conv2d_grad_weight", {x, d_result}, {{"kh", kh}, {"kw", kw}, {"stride", stride}});
}
Tensor max_grad(Tensor x, Tensor y, Tensor d_result, std::int64_t dim) {
  return call("max_grad", {x, y, d_result}, {{"dim", dim}});
}
Tensor max_pool2d_grad(Tensor x, Tensor d_result, std::int64_t kernel, std::int64_t stride) {
  return call("max_pool2d_grad", {x, d_result}, {{"kernel", kernel}, {"stride", stride}});
}
Tensor avg_pool2d_grad(Tensor x, Tensor d_result, std::int64_t kernel, std::int64_t stride) {
  return call("avg_pool2d_grad", {x, d_result}, {{"kernel", kernel}, {"stride", stride}});
}
Tensor mse(Tensor pred, Tensor target) {
  return call("mse", {pred, target});
}
Tensor mse_grad(Tensor pred, Tensor target, Tensor d_result) {
  return call("mse_grad", {pred, target, d_result});
}
Tensor cross_entropy(Tensor logits, Tensor labels) {
  return call("cross_entropy", {logits, labels});
}
Tensor cross_entropy_grad(Tensor logits, Tensor labels, Tensor d_result) {
  return call("cross_entropy_grad", {logits, labels, d_result});
}
Tensor sgd(Tensor param, Tensor grad, SgdOptions options) {
  return call("sgd", {param, grad}, {{"lr", options.lr}, {"weight_decay", options.weight_decay}});
}
SgdMomentumResult sgd_momentum(Tensor param, Tensor grad, Tensor velocity, SgdOptions options) {
  const Tensor p = call(
      "sgd_momentum", {param, grad, velocity},
      {{"lr", options.lr}, {"momentum", options.momentum}, {"weight_decay", options.weight_decay}});
  return {p, other_output(p, "velocity_next")};
}
AdamResult adam(Tensor param, Tensor grad, Tensor m, Tensor v, Tensor step, AdamOptions options) {
  const Tensor p = call("adam", {param, grad, m, v, step},
                        {{"lr", options.lr},
                         {"beta1", options.beta1},
                         {"beta2", options.beta2},
                         {"eps", options.eps},
                         {"weight_decay", options.weight_decay},
                         {"decoupled", options.decoupled}});
  return {p, other_output(p, "m_next"), other_output(p, "v_next")};
}

}  // namespace tapestry::metakernel
