// Ordering edges: an Operation that must start after other tensors are written, without reading
// them — how a recomputed operation (rewrite/recompute.h) waits for the backward pass instead of
// running as soon as its inputs exist.
//
// Tapestry's extension of the Operation body (kept by every reader and writer, like
// `indexNames`):
//
//   "body": {"kernel": "linear", …, "after": ["00000000-0000-4000-8000-000000000031"]}
//
// lists tensors by their loom keys. Every Application of the operation starts once every
// Application writing one of those tensors has finished — in the block executor, in the MPI
// executor among the applications of one rank, and in the cost model among the applications
// placed on one device (cost/placement.h): an edge between devices would be a message carrying
// nothing, and what the edge is for, a device's peak memory, is decided on the device itself.
//
//   after(graph, op)        // {dW1/linear_nobias's tensor}: the tensors it waits for
//   set_after(graph, op, {t})
//
// An Application body may carry the field too, listing *Applications* by key: that application
// starts once those have finished — how a pipeline schedule (rewrite/pipeline.h) orders the
// microbatches of one stage, which are Applications of the same operations:
//
//   "body": {"operationId": "…", …, "after": ["00000000-0000-4000-8000-000000000107"]}
//
//   application_after(graph, app)       // the applications it starts after
//   set_application_after(graph, app, {a, b})
//
// Like an operation's, an application's edges count among the applications of one device (one
// rank): the pipeline only writes them between applications of one stage.
#pragma once

#include <span>
#include <vector>

#include "tapestry/ir/graph.h"

namespace tapestry::ir {

/// The Operation body field that lists the tensors an operation starts after.
inline constexpr const char* kAfterField = "after";

/// The tensors `op` starts after (empty without the field). Error naming the operation when the
/// field is not an array of keys of tensors of `graph`.
[[nodiscard]] std::vector<TensorId> after(const Graph& graph, OperationId op);

/// Sets (empty: removes) the field on `op`, keeping its other extension fields.
void set_after(Graph& graph, OperationId op, std::span<const TensorId> tensors);

/// The applications `app` starts after (empty without the field). Error naming the application
/// when the field is not an array of keys of applications of `graph`.
[[nodiscard]] std::vector<ApplicationId> application_after(const Graph& graph, ApplicationId app);

/// Sets (empty: removes) the field on `app`, keeping its other extension fields.
void set_application_after(Graph& graph, ApplicationId app,
                           std::span<const ApplicationId> applications);

}  // namespace tapestry::ir
