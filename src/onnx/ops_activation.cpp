// ONNX activations, variadic elementwise ops and inference-time normalisation, each an
// import-time rewrite into built-in kernels (op_table.h). Every rewrite computes what ONNX
// defines with the same roundings where the definition has any (min and max are exact, so is
// negation; x·alpha is the one product ONNX's formula has too):
//
//   Abs(x)             maximum(x, −x)
//   Min(a, b, …)       −maximum(−a, −b, …)                  Max, Sum: maximum / add chains
//   Mean(a, b, …)      (a + b + …) / n
//   Clip(x, lo, hi)    min(maximum(x, lo), hi)              an absent bound is no bound
//   LeakyRelu(x)       maximum(x, x·alpha)  (0 ≤ alpha ≤ 1; else relu(x) + min(x, 0)·alpha)
//   PRelu(x, slope)    relu(x) + min(x, 0)·slope           min(x, 0) = −relu(−x); a [C] slope
//                      per channel (dim 1) in models of opsets below 7
//   HardSigmoid(x)     min(maximum(x·alpha + beta, 0), 1)
//   HardSwish(x)       x · HardSigmoid(x) with alpha 1/6, beta 1/2
//   Elu(x)             relu(x) + (exp(min(x, 0)) − 1)·alpha
//   Selu(x)            (relu(x) + (exp(min(x, 0)) − 1)·alpha)·gamma
//   Celu(x)            relu(x) + min((exp(x/alpha) − 1)·alpha, 0)
//   Reciprocal(x)      1 / x
//   Softsign(x)        x / (1 + maximum(x, −x))
//   Dropout(x)         x (inference; the mask output unused)
//   BatchNormalization (inference) (x − mean)/√(var + ε)·scale + B, the per-channel tensors
//                      reshaped to [C, 1, …]. Not folded into x·s + t (nor into a preceding
//                      Conv's weights): the folded constants carry a rounding each that the
//                      model does not have, which `verify` against the model's own output sees
//                      as an error outside the bar of an elementwise chain.
#include <fmt/format.h>

#include "op_table.h"

namespace tapestry::onnx {

namespace {

Tensor neg(metakernel::Graph& g, Tensor x) {
  return g.call("neg", {x});
}
Tensor maximum(metakernel::Graph& g, Tensor a, Tensor b) {
  return g.call("maximum", {a, b});
}
Tensor minimum(metakernel::Graph& g, Tensor a, Tensor b) {
  return neg(g, maximum(g, neg(g, a), neg(g, b)));
}
// min(x, 0) = −relu(−x): exact.
Tensor negative_part(metakernel::Graph& g, Tensor x) {
  return neg(g, g.call("relu", {neg(g, x)}));
}

// relu(x) + (exp(min(x, 0)) − 1)·alpha: Elu, and Selu before its gamma.
Tensor elu(NodeContext& node, Tensor x, double alpha) {
  metakernel::Graph& g = node.graph();
  Tensor e =
      g.call("sub", {g.call("exp", {negative_part(g, x)}), scalar_input(node, x, "one", 1.0)});
  return g.call("add",
                {g.call("relu", {x}), g.call("mul", {e, scalar_input(node, x, "alpha", alpha)})});
}

}  // namespace

void convert_abs(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  Tensor x = node.tensor(0);
  node.set_output(0, maximum(g, x, neg(g, x)));
}

// Max, Min, Sum, Mean over any number of inputs (numpy broadcasting).
void convert_variadic(NodeContext& node) {
  const std::string& op = node.node().op_type();
  metakernel::Graph& g = node.graph();
  if (node.input_count() < 1) throw node.error("needs at least one input");
  Tensor y = node.tensor(0);
  for (int k = 1; k < node.input_count(); ++k) {
    Tensor x = node.tensor(k);
    y = op == "Max" ? maximum(g, y, x) : op == "Min" ? minimum(g, y, x) : g.call("add", {y, x});
  }
  if (op == "Mean" && node.input_count() > 1)
    y = g.call("div", {y, scalar_input(node, y, "count", node.input_count())});
  node.set_output(0, y);
}

// Clip: bounds as inputs 1 and 2 (opset ≥ 11; older models are converted), each optional.
void convert_clip(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  Tensor y = node.tensor(0);
  if (node.has_input(1)) y = maximum(g, y, node.tensor(1));
  if (node.has_input(2)) y = minimum(g, y, node.tensor(2));
  node.set_output(0, y);
}

void convert_leaky_relu(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const double alpha = node.float_attr("alpha", 0.01);
  Tensor x = node.tensor(0);
  Tensor a = scalar_input(node, x, "alpha", alpha);
  if (alpha >= 0 && alpha <= 1) return node.set_output(0, maximum(g, x, g.call("mul", {x, a})));
  node.set_output(0, g.call("add", {g.call("relu", {x}), g.call("mul", {negative_part(g, x), a})}));
}

// PRelu. Before opset 7 the slope is per channel: a 1-D slope of X's channel count C (dim 1)
// is one value per channel, not numpy-broadcast along the last dim (PyTorch's exports of that
// time write nn.PReLU(C)'s weight so); ONNX's version converter keeps the slope as it is, so
// it is reshaped to [C, 1, …] here. From opset 7 on it broadcasts like numpy.
void convert_prelu(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  Tensor x = node.tensor(0);
  Tensor slope = node.tensor(1);
  const std::vector<std::int64_t> shape = node.shape(0);
  const std::vector<std::int64_t> slope_shape = node.shape(1);
  if (node.declared_opset() < 7 && shape.size() > 2 && slope_shape.size() == 1 &&
      slope_shape[0] == shape[1] && shape[1] != 1) {
    std::vector<std::int64_t> per_channel(shape.size() - 1, 1);
    per_channel[0] = shape[1];
    slope = reshape_to(g, slope, per_channel);
  }
  node.set_output(
      0, g.call("add", {g.call("relu", {x}), g.call("mul", {negative_part(g, x), slope})}));
}

void convert_hard_sigmoid(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const bool swish = node.node().op_type() == "HardSwish";
  const double alpha = swish ? 1.0 / 6.0 : node.float_attr("alpha", 0.2);
  const double beta = swish ? 0.5 : node.float_attr("beta", 0.5);
  Tensor x = node.tensor(0);
  Tensor t = g.call("add", {g.call("mul", {x, scalar_input(node, x, "alpha", alpha)}),
                            scalar_input(node, x, "beta", beta)});
  Tensor y = minimum(g, g.call("relu", {t}), scalar_input(node, x, "one", 1.0));
  node.set_output(0, swish ? g.call("mul", {x, y}) : y);
}

void convert_elu(NodeContext& node) {
  const bool selu = node.node().op_type() == "Selu";
  const double alpha = node.float_attr("alpha", selu ? 1.67326319217681884765625 : 1.0);
  Tensor x = node.tensor(0);
  Tensor y = elu(node, x, alpha);
  if (selu) {
    const double gamma = node.float_attr("gamma", 1.05070102214813232421875);
    y = node.graph().call("mul", {y, scalar_input(node, x, "gamma", gamma)});
  }
  node.set_output(0, y);
}

void convert_celu(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  const double alpha = node.float_attr("alpha", 1.0);
  if (alpha == 0) throw node.error("alpha=0 is not defined (Celu divides by alpha)");
  Tensor x = node.tensor(0);
  Tensor a = scalar_input(node, x, "alpha", alpha);
  Tensor e =
      g.call("sub", {g.call("exp", {g.call("div", {x, a})}), scalar_input(node, x, "one", 1.0)});
  node.set_output(0, g.call("add", {g.call("relu", {x}), negative_part(g, g.call("mul", {e, a}))}));
}

void convert_softsign(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  Tensor x = node.tensor(0);
  Tensor a = maximum(g, x, neg(g, x));
  node.set_output(0, g.call("div", {x, g.call("add", {scalar_input(node, x, "one", 1.0), a})}));
}

void convert_reciprocal(NodeContext& node) {
  Tensor x = node.tensor(0);
  node.set_output(0, node.graph().call("div", {scalar_input(node, x, "one", 1.0), x}));
}

// Dropout at inference: the identity. training_mode (input 2), when given, must be false; the
// mask output must be unused.
void convert_dropout(NodeContext& node) {
  if (node.has_input(2) && node.host(2).float_at(0) != 0)
    throw node.error("training_mode=true is not supported (inference only)");
  node.int_attr("seed", 0);
  node.float_attr("ratio", 0.5);  // opset < 12 (converted models keep no such attribute)
  for (int k = 1; k < node.node().output_size(); ++k) {
    if (node.output_used(k))
      throw node.error(fmt::format("output {} (the mask) is read; only output 0 is supported", k));
  }
  node.set_output(0, node.input(0));
}

// BatchNormalization at inference (training_mode 0): per channel (dim 1).
void convert_batch_norm(NodeContext& node) {
  metakernel::Graph& g = node.graph();
  if (node.int_attr("training_mode", 0) != 0)
    throw node.error("training_mode=1 is not supported (inference only)");
  node.float_attr("momentum", 0.9);  // only training updates the running statistics
  const double epsilon = node.float_attr("epsilon", 1e-5);
  for (int k = 1; k < node.node().output_size(); ++k) {
    if (node.output_used(k))
      throw node.error(fmt::format("output {} is read; only output 0 is supported (inference)", k));
  }
  const std::vector<std::int64_t> shape = node.shape(0);
  if (shape.size() < 2) throw node.error("X must have a channel dim (rank ≥ 2)");
  const std::int64_t channels = shape[1];
  for (int k = 1; k <= 4; ++k) {
    if (node.shape(k) != std::vector<std::int64_t>{channels})
      throw node.error(
          fmt::format("input {} must have shape [{}] (one value per channel)", k, channels));
  }
  std::vector<std::int64_t> per_channel(shape.size() - 1, 1);  // [C, 1, …]: broadcasts over N
  per_channel[0] = channels;
  Tensor x = node.tensor(0);
  auto channel = [&](int k) { return reshape_to(g, node.tensor(k), per_channel); };
  Tensor d =
      g.call("sqrt", {g.call("add", {channel(4), scalar_input(node, x, "epsilon", epsilon)})});
  Tensor y = g.call("div", {g.call("sub", {x, channel(3)}), d});
  node.set_output(0, g.call("add", {g.call("mul", {y, channel(1)}), channel(2)}));
}

}  // namespace tapestry::onnx
