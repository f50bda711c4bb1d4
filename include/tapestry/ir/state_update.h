// State updates: which output of a training step becomes which input of the next step.
//
// A training step is an ordinary graph whose inputs are of two kinds: STATE (parameters,
// optimizer moments), which the step itself updates, and DATA (a batch), which the loop feeds.
// The graph says which is which by its list of StateUpdate pairs (graph.h): `state` is a graph
// input, `next` a tensor of the same dtype and shape, and after a step `next`'s value becomes
// `state`'s value for the following step (docs/training.md, "The training loop").
//
//   X: f32[8, 4]   T: f32[8, 1]   W: f32[1, 4]
//   L = mse(linear_nobias(X, W), T)
//   dW = grad(L, W)
//   Wn = sgd(W, dW, lr=0.1)
//   update W <- Wn          // graph.updates() == {{W, Wn}}; X and T are data
//
// update_problem() is the one check, shared by the .tap front end, the builder, the JSON reader
// and the training loop's `--update` option, so every form reports the same words.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "tapestry/ir/graph.h"

namespace tapestry::ir {

/// Why `state <- next` cannot be added to `graph` next to `existing` updates, or nullopt when it
/// can: `state` must be a graph input (no operation computes it) not updated already, `next` a
/// tensor of the same dtype and shape.
///
///   "update W <- Wn: W is computed by operation H (only a graph input can be state)"
///   "update W <- b: W is float32[1, 4] but b is float32[1]"
///   "update W <- Wn2: W is already updated by Wn"
[[nodiscard]] std::optional<std::string> update_problem(const Graph& graph, TensorId state,
                                                        TensorId next,
                                                        std::span<const StateUpdate> existing);

/// True when `tensor` is the state of one of `graph`'s updates.
[[nodiscard]] bool is_state(const Graph& graph, TensorId tensor);

}  // namespace tapestry::ir
