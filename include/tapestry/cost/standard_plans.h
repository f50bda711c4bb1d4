// Standard plans: the parallelisations an engineer tries first, generated for any operation graph
// and target by name — the yardstick a searched plan is judged against, the search's seeds, and
// explain's "against data parallel". Each is read off the graph's structure (graph_roles.h), never
// off operation names; one that does not fit a graph says why (a reason, not an error).
//
//   name           what it cuts                                                  communication
//   data-parallel  every operation along its batch-like dim (the first batch-    none between
//                  like index dim that is not a reduction; else, in a training   operations;
//                  step, the batch-like reduction of a weight gradient or loss)  weights are
//                  into p shards, p the largest divisor of every such dim's      resident; a
//                  extent not above the device count; the operations past the    training step's
//                  batch that read it (a step's weight updates) p ways along     weight gradients:
//                  their first dim, their graph outputs replicated (ZeRO's       one all-reduce
//                  sharded update); the rest whole on device 0                   each (reduce-
//                                                                                scatter, update,
//                                                                                all-gather)
//   megatron       tensor parallelism (Megatron-LM, Shoeybi et al. 2019): the    one all-reduce
//                  column → row pairs below cut p ways; the operations between   per pair
//                  layers along their last (hidden) dim; graph outputs
//                  replicated on every device
//   megatron-rs    the same, with the operations between layers cut along their  one reduce-
//                  leading dim (rows: tokens) and graph outputs left cut —       scatter + all-
//                  sequence parallelism (Korthikanti et al. 2022)                gather per pair
//   2d             data × tensor on the target's mesh: batch-like dims on the    all-reduces
//                  data axis, the megatron cuts on the tensor axis (`mesh`        within each
//                  entries: "dp"/"tp" when the mesh names them, else its first   data group
//                  axis is data and its second tensor)
//
//
// Three more for a training step (forward + `tapestry grad` backward + optimizer updates: a graph
// with a gradient seed, `ones_like` of a scalar loss, and parameters an optimizer kernel updates;
// on any other graph they do not apply):
//
//   zero3                  ZeRO-3 / FSDP data parallel: data-parallel's batch cuts, every
//                          parameter, its gradient and its optimizer state sharded p ways
//                          (`"zero": {"stage": 3, …}`, rewrite/zero.h: all-gathered before their
//                          uses, reduce-scattered gradients, sliced updates)
//   megatron-3d-full       Megatron-LM's tensor × pipeline × data parallelism with full
//                          activation recomputation: the 2d plan (tensor parallel on the mesh's
//                          tensor axis, data parallel on its data axis; megatron when the mesh
//                          has no two axes) made a training step's as Megatron-LM runs it —
//                          nothing whole on one device:
//                            * the batch sums the data axis does not cut yet (the weight
//                              gradients' `batch`, the bias gradients', the loss) cut on it:
//                              partial sums per data group, combined across it;
//                            * what weights alone make (the backward pass's transpose(W)) cut as
//                              its reader's tensor-parallel cut reads it, and along another dim
//                              on the data axis;
//                            * every optimizer update cut on the tensor axis as its weight's
//                              other readers read it (a column layer's W by rows, a row layer's
//                              by columns) and along another dim on the data axis when one
//                              divides (Megatron-LM's distributed optimizer): the new weight
//                              all-gathered over the data axis, the moments left sharded, nothing
//                              gathered over the tensor axis (a 1-D bias: tensor axis only);
//                          with every forward operation recomputed except the checkpoints (the
//                          residual stream: training_roles below). The pipeline degree is 1:
//                          tensor parallelism inside a pipeline stage is not built (a stage on
//                          a group of devices runs data parallel only: rewrite/pipeline.h)
//   megatron-3d-selective  the same with selective recomputation (Korthikanti et al. 2022):
//                          only attention's score-sized tensors (the softmax and the operations
//                          before it whose result has the softmax's shape: QKᵀ, its scale)
//
// Every plan asks `"fuse": "auto"` (a fair baseline fuses what it can).
//
// Column → row pairs. Every `linear` whose weight `w` is a weight (graph_roles.h) and whose `x`
// arrives uncut is a *column* start: its `out` is cut p ways. The cut travels with the tensors:
// a consumer reading a cut tensor dim through a non-reduction index dim is cut along that dim
// (gelu; attention's reshape, permute, batched matmuls and softmax, along the heads), and a
// linear (or matmul) reading it through its sum-reduction dim is the pair's *row* end: its `in`
// is cut p ways (split-reduction: partial sums and their combine). A region of cuts that reaches
// no row end (a classifier head), or that would cut a reduction a split cannot carry, or that
// reaches one operation along two different dims, is dropped: its operations stay whole. p is
// the largest divisor of every cut dim's extent not above the device count (the tensor axis'
// size for 2d): attention with 8 heads of 64 on 16 GPUs gets p = 8.
//
// Between layers. The operations downstream of a row end that are not in a pair (the residual
// add, the bias of a decomposed linear) are cut p ways too: along the index dim their first
// output's last dim follows (megatron: the hidden dim — the combine is then a reduce-scatter,
// these operations run on 1/p of it, and the next column start's read is an all-gather: the
// bytes of Megatron-LM's all-reduce, with the elementwise work Megatron-LM repeats on every
// device split instead, since a plan cannot replicate work) or the one their first output's
// dim 0 follows (megatron-rs: the rows). Operations upstream of every pair stay whole.
//
// A plan that applies is valid by construction for the graphs this was built on (the examples,
// tests/data/search): checked_standard_plan() lowers and places it on the target and turns a
// refusal into a reason, for graphs nobody has tried.
//
//   StandardPlan dp = standard_plan(graph, *preset_target("h100x8"), "data-parallel");
//   dp.plan->to_json()   // {"ops": {"H/linear": {"split": {"batch": 8}}, …}, "fuse": "auto"}
//   dp.summary           // "data parallel ×8"
//   StandardPlan tp2 = standard_plan(graph, *preset_target("h100x8"), "2d");
//   tp2.reason           // "the target's mesh has one axis (d=8); 2d needs two, e.g. …"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/cost/target.h"
#include "tapestry/ir/graph.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::cost {

struct StandardPlan {
  std::string name;                   // "data-parallel", "megatron", "megatron-rs", "2d"
  std::optional<rewrite::Plan> plan;  // nullopt: it does not apply to this graph and target
  std::string summary;                // what it does: "tensor parallel ×8 (Megatron): 2 pairs"
  std::string reason;                 // why it does not apply (empty when it does)
};

/// What a training step's plans read off it (empty `parameters`: not a training step).
///
///   loss        the scalar the gradient seed (`ones_like`) reads
///   forward     the operations the loss depends on, in topological order
///   parameters  the graph inputs an optimizer kernel (rewrite/zero.h) reads as its `param`, in
///               the order of their updates; `parameter_rows` their dim 0 extents
///   checkpoints the forward results every later forward operation reaches the graph's data
///               through (a cut of the forward pass, found in topological order: each tensor
///               written before it has its last forward reader at or before its writer) — a
///               transformer's residual stream, each sublayer's input
///   full        the forward operations to recompute for full recomputation: every one that
///               reads an activation and writes no checkpoint, the loss's producer excepted
///   selective   each forward softmax and the chain of operations before it that write its
///               input's shape (attention's QKᵀ and its scale)
struct TrainingRoles {
  std::string loss;
  std::vector<std::string> forward;
  std::vector<std::string> parameters;
  std::vector<std::int64_t> parameter_rows;
  std::vector<std::string> checkpoints;
  std::vector<std::string> full;
  std::vector<std::string> selective;
};
TrainingRoles training_roles(const ir::Graph& graph);

/// The names, in the order above.
const std::vector<std::string>& standard_plan_names();

/// The standard plan `name` of `graph` (an operation graph) on `target`. Error naming the known
/// names when `name` is not one.
StandardPlan standard_plan(const ir::Graph& graph, const Target& target, std::string_view name);

/// Every standard plan, in the order of standard_plan_names().
std::vector<StandardPlan> standard_plans(const ir::Graph& graph, const Target& target);

/// standard_plan, then lowered (with `options`) and placed on `target`: a plan the rewrites or
/// the placement refuse becomes a reason ("the rewrites refuse it: …").
StandardPlan checked_standard_plan(const ir::Graph& graph, const Target& target,
                                   std::string_view name,
                                   const rewrite::LowerOptions& options = {});

}  // namespace tapestry::cost
