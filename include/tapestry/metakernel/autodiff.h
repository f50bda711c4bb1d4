// Reverse-mode automatic differentiation of operation graphs (docs/training.md).
//
// Every differentiable kernel declares its vector-Jacobian product (VJP) in its YAML, a `vjp:`
// section with one expression per input port in .tap call syntax (metakernel.h, VjpSpec):
//
//   kernel: linear                 # result[b..., o] = bias[o] + Σ_i x[b..., i] · w[o, i]
//   vjp:
//     x: "linear_nobias(d_result, transpose(w))"      # dX = dY · W
//     w: "linear_grad_w(x, d_result)"                 # dW[o, i] = Σ_b dY[b, o] · X[b, i]
//     bias: "sum_to(d_result, shape=bias.shape)"      # dbias[o] = Σ_b dY[b, o]
//
// An expression names the operation's input ports, its output ports, the cotangent of each output
// (`d_<output>`) and, as keyword values, its params and three derived values: `<port>.shape` (the
// port's shape, ints), `<port>.shape.<axis param>` (its extent along that axis) and
// `<ints param>.inverse` (the inverse permutation). `none` marks a port without a gradient.
//
// `grad` differentiates a scalar `loss` with respect to `wrt` tensors: it walks the operations
// the loss depends on in reverse topological order, applies each one's VJP expressions with the
// builder (so every backward operation is an ordinary kernel call, checked by its metakernel),
// sums the cotangents of a tensor read several times with `add`, and returns one gradient per
// `wrt` tensor — an ordinary operation graph that prints, plans, prices, shards and runs like any
// other. Worked example, L = sum(sum(relu(linear(X, W, b)))) with X [64, 16], W [32, 16]
// (tests/metakernel/autodiff_test.cpp, TheHeadersWorkedExample):
//
//   forward         H/linear = linear(X, W, b)   H = relu(H/linear)   L/sum = sum(H)
//                   L = sum(L/sum)
//   grad(L, W, b)   dW/ones_like   = ones_like(L)                        the seed dL/dL = 1
//                   dW/broadcast   = broadcast(dW/ones_like, dim=0, size=64)   L's VJP
//                   dW/broadcast.2 = broadcast(dW/broadcast, dim=1, size=32)   L/sum's VJP
//                   dW/relu_grad   = relu_grad(H/linear, dW/broadcast.2)       H's VJP
//                   dW             = linear_grad_w(X, dW/relu_grad)            H/linear's, port w
//                   db             = sum_to(dW/relu_grad, shape=[32])          port bias
//
// The backward operations are named by the naming rules of builder.h (Graph::assign): the first
// gradient assigned claims every unassigned operation that feeds it (`dW/<kernel>[.n]`). X gets
// no gradient (it was not asked for), so linear's `x` expression is never applied.
//
// Rules: only float tensors carry cotangents (an integer tensor is a constant); a `wrt` tensor the
// loss does not depend on gets `zeros_like` and a warning (issue grad-unused-input), never nothing;
// a kernel on the path without a VJP is an Error naming the operation and the kernel (`none` for a
// port: no cotangent flows there — a constant, as ones_like's input); the loss must be rank 0
// unless a seed cotangent of its shape is given (then the result is the VJP of that seed:
// grad(Y, W, seed=S) = Sᵀ · ∂Y/∂W).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tapestry/ir/graph.h"
#include "tapestry/ir/issue.h"
#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/signature_registry.h"

namespace tapestry::metakernel {

/// What `grad` on an ir::Graph differentiates; tensors are named by label (display name).
struct GradRequest {
  std::string loss;
  std::vector<std::string> wrt;
  /// A graph input of the loss's shape: the cotangent of the loss (required when it is not rank 0).
  std::optional<std::string> seed;
  /// Labels of the gradients, one per wrt (default: `d<name>`).
  std::vector<std::string> names;
};

struct GradResult {
  /// The forward operations (replayed by kernel and params, names kept) plus the backward ones;
  /// its outputs: the forward graph's outputs, the loss and the gradients, in `wrt` order.
  ir::Graph graph;
  /// Warnings (grad-unused-input), for the caller to print.
  std::vector<ir::Issue> issues;
};

/// Differentiates `graph`, an operation graph (applications are ignored: the forward pass is
/// replayed from its operations; a graph with rewrites applied — fused, reduce-split — is
/// differentiated through whatever kernels it has, each needing a VJP). Error on an unknown
/// name, a cycle, an operation whose kernel `signatures` lacks, or any rule of the file comment.
GradResult grad(const ir::Graph& graph, const GradRequest& request,
                const SignatureRegistry& signatures = builtin_signatures());

/// The kernels with a VJP and those without, by name (for docs and `tapestry kernels`).
struct VjpCoverage {
  std::vector<std::string> with_vjp;
  std::vector<std::string> without_vjp;
};
VjpCoverage vjp_coverage(const SignatureRegistry& signatures);

/// Checks every VJP expression of `kernels` names kernels that `signatures` knows (the loader
/// checks the other names when a file loads; kernels may come from files loaded later, so this
/// runs once a directory is loaded). Throws Error `file:line:col: error: …`.
void check_vjp_kernels(std::span<const Metakernel* const> kernels,
                       const SignatureRegistry& signatures);

}  // namespace tapestry::metakernel
