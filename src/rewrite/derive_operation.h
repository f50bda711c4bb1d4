// Re-deriving an operation from its kernel, for operation-kernel-agreement (kernel_agreement.h).
//
// An operation of a graph Tapestry writes has one of these forms; each is derived from the
// kernel's signature (metakernel::evaluate_signature over the operation's params and the types
// of its input tensors) by the code that makes the form:
//
//   kernel            the signature itself: index [0, sizes), IPFs, output types
//   block split       split-reduction's even form: a leading `block` index dim per even split,
//                     the split reduction dim cut to K/p — the signature put through
//                     split_exact (spec_transforms.h); the outputs are partials [p] × …
//   partial           split-reduction's uneven form: a reduction dim restricted to a sub-range
//                     of the signature's; IPFs unchanged, the outputs hold partial results
//   fused             kernel "fused": every stage derived in turn (an intermediate takes the
//                     type its producing stage derives) and the chain put through fuse
//                     (spec_transforms.h), link by link as fuse-elementwise made it
//
// Outputs may sit anywhere: when an output tensor starts elsewhere than the signature says, its
// IPF moves with it (rewrites make operations write existing tensors: `reduce` and the combine
// tree write the split operation's output, decompose-linear's bias_add the linear's). An
// intermediate of a fused operation sits where its producing stage's recorded IPF puts it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "op_spec.h"
#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tensor_type.h"

namespace tapestry::rewrite::detail {

struct DerivedOperation {
  /// The operation as its kernel derives it, in the form the graph's operation has (when one
  /// fits); tensors as in the graph.
  OpSpec spec;
  /// The type of each output, parallel to spec.outputs.
  std::vector<metakernel::TensorType> output_types;
  /// "kernel", "block split of in", "partial over kh", "fused: matmul (partial over k), add".
  std::string form;
  /// When the operation (or a fused operation's first stage) restricts a reduction dim to a
  /// sub-range, its outputs are partial results: the monoid that must combine them.
  std::optional<ir::Monoid> partial;
  /// Then: the index before the restriction.
  std::optional<zspace::Range> whole_index;
};

/// Derives `op` (see the file comment). Error with the reason when no derivation exists: the
/// kernel is unknown, the operation's ports are not the kernel's, the kernel rejects the input
/// types or params, the fused params are malformed.
DerivedOperation derive_operation(const ir::Graph& graph, ir::OperationId op,
                                  const metakernel::SignatureRegistry& signatures);

}  // namespace tapestry::rewrite::detail
