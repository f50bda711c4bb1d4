// recompute: activation recomputation as a rewrite of the operation graph (lower.h, step 1b).
//
// A plan may name forward operations whose results are recomputed for the backward pass instead
// of kept (`"recompute": ["H/linear", "H"]`, plan.h; `*` in a name stands for any characters).
// For each such operation O writing T, the pass adds a copy O' — same kernel, params, index and
// IPFs, reading the same inputs (or their copies, when their producers are recomputed too) and
// writing a new tensor T' — and rewires T's *later uses* to read T' instead. A later use is a
// reader of T that depends on another reader of T: in a training step, the backward operations
// that read an activation after the forward pass has used it (`relu_grad(H/linear, dH)` after
// `H = relu(H/linear)`); or a reader whose results, on every path, only such operations read
// (the backward pass's `transpose(P)` feeding `matmul(transpose(P), dC)` after `C = matmul(P,
// V)`: it depends on P alone, but nothing needs it before the backward pass). T's other readers
// keep reading T, which is therefore free once the forward pass is done with it; T' lives from
// the copy to the last backward use.
//
// The copy must not run as soon as its inputs exist (X and W1 exist from the start): each copy
// that reads no other copy starts after the other tensors its first backward need reads (its
// first later use that depends on another reader, or the operation that makes one late) — an
// ordering edge (ir/ordering.h) that the block executor, the MPI executor and the cost model
// honour. So in examples/mlp_grad.tap with `"recompute": ["H/linear", "H"]`:
//
//   H/linear/recompute = linear(X, W1, b1)         after dW1/add (dW2's other input)
//   H/recompute        = relu(H/linear/recompute)
//   dW2                = linear_grad_w(H/recompute, dW1/add)
//   dW1/relu_grad      = relu_grad(H/linear/recompute, dW1/linear_nobias)
//
// The copy takes its original's plan entry (splits, substitutions, placement) unless the plan has
// an entry of its own for it (`"H/recompute": {…}`, a derived entry); a fusion group of
// recomputed operations gets a group of their copies. The same kernel on the same inputs over the
// same shards computes the same bits: the recomputed step's results equal the kept step's.
//
// Refused, with the reason in the log (`tapestry shard --explain`), and the operation then kept:
//   * an operation without IPF tags, with more than one result, or whose result is a graph
//     output (it lives to the end anyway);
//   * one with no later use and no recomputed reader ("not on the forward side");
//   * one reading a tensor that nothing but the copy would keep alive: not a graph input, not
//     recomputed itself, not read by a later use ("its input Y is freed after the forward pass:
//     recompute its producer too");
//   * a copy that nothing can order late: its first later use reads no other computed tensor.
// Tapestry's kernels are pure functions of their inputs (none is random or stateful), so every
// operation that passes these checks recomputes exactly.
//
// Fusion (step 4) does not fuse away a tensor a copy starts after (RewriteState::ordering_tensors).
#pragma once

#include <string_view>
#include <vector>

#include "tapestry/rewrite/pattern.h"

namespace tapestry::rewrite {

inline constexpr std::string_view kRecompute = "recompute";

/// Adds the copies `state.plan.recompute` asks for and rewires the later uses (see above); every
/// copy made and every refusal goes to `log`. Sets state.after and state.ordering_tensors for the
/// copies' ordering edges. Precondition: the plan's names are resolved (resolve_plan_names) and
/// the graph is the one the plan names (no rewrite has run). Error when the ordering edges
/// would form a cycle.
void recompute_operations(RewriteState& state, std::vector<RewriteEvent>& log);

/// After the rewrites: every operation of state.graph that state.after names gets its ordering
/// edges as the `after` field (ir/ordering.h), the tensors by key.
void write_ordering_edges(RewriteState& state);

}  // namespace tapestry::rewrite
