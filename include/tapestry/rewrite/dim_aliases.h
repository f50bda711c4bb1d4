// Index-dimension aliases: an elementwise operation answers to its producer's dim names.
//
// `.tap` gives an elementwise kernel generic dims (`d0`, `d1`, …), so in
// `Y = relu(linear(X, W, b))` the operation `Y/linear` has dims `batch, out, in` while `Y` has
// `d0, d1` over the very same cells. A plan may name `Y`'s dims either way: `Y.batch` is `Y.d0`,
// `Y.out` is `Y.d1`. The rule:
//
//   An operation without reductions whose output IPF is the identity (every elementwise kernel,
//   broadcasting included) takes, for each input produced by another operation P, P's name for
//   every dim k whose output IPF row is the unit vector e_k (cell 1) where the consumer's input
//   IPF row is the unit vector e_i (cell 1): that name aliases the consumer's dim i.
//
// The combine of a split reduction (kernel `reduce`, dims d0, d1, …, block) answers to them too:
// after `Y/matmul` (batch, out, in) is split on `in`, `Y/matmul/reduce`'s d0 is also `batch` and
// d1 `out` (the partial's dims after `block`), so a plan may write {"split": {"batch": 8}}.
//
// An alias that would shadow one of the operation's own names, or that would name two different
// dims (two producers disagreeing), is dropped: aliases never make a name ambiguous. Generic
// names (`d0`, `d1`, … of another elementwise operation) are not taken: they say nothing.
//
//   index_dim_aliases(graph, Y)   // {"batch": "d0", "out": "d1"}
//
// `check_plan` and `resolve_plan_names` (plan.h) accept aliases; `tapestry plan` lists them.
#pragma once

#include <map>
#include <string>

#include "tapestry/ir/graph.h"

namespace tapestry::rewrite {

/// Alias → the operation's own name of that index dim (empty for operations that take none).
std::map<std::string, std::string> index_dim_aliases(const ir::Graph& graph, ir::OperationId op);

}  // namespace tapestry::rewrite
