// The dependency order of an application graph's Applications, derived from box intersections.
//
// An Application reads boxes (its input selections) and writes boxes (its output selections).
// Application a depends on application b when b writes a box of some tensor that intersects a
// box a reads: then every cell a needs from b is written before a starts. Nothing else orders
// applications — tensors are written once, so there are no write-after-read hazards — but an
// ordering edge: an operation with an `after` list (ir/ordering.h) depends on every writer of
// the tensors it lists, which it does not read (a recomputation waiting for the backward pass).
//
// Example: Z = linear(X, W, b) split on batch into A0 (writes Z[0:2, :]) and A1 (Z[2:4, :]);
// Y = relu(Z) split on batch into R0 (reads Z[0:3, :]) and R1 (reads Z[3:4, :]). Then
// R0 depends on A0 and A1, R1 only on A1; one order is A0, A1, R0, R1.
//
//   ApplicationSchedule s = schedule_applications(graph);
//   for (std::uint32_t i : s.order) run(s.applications[i]);
//
// The schedule is computed once per graph and is plain data, so the block executor can use
// `depends_on` as its task DAG.
#pragma once

#include <cstdint>
#include <vector>

#include "tapestry/ir/graph.h"

namespace tapestry::runtime {

struct ApplicationSchedule {
  /// Every Application, in graph order; the numbers below are positions in this list.
  std::vector<ir::ApplicationId> applications;
  /// depends_on[i]: the applications whose output boxes intersect an input box of application
  /// i, and those writing a tensor its operation starts after, ascending, without duplicates.
  std::vector<std::vector<std::uint32_t>> depends_on;
  /// A topological order of the dependency graph; ties broken by graph order.
  std::vector<std::uint32_t> order;
};

/// Computes the schedule. Throws Error when two applications write intersecting boxes of one
/// tensor (naming both and the tensor) or when the dependencies form a cycle.
ApplicationSchedule schedule_applications(const ir::Graph& graph);

}  // namespace tapestry::runtime
