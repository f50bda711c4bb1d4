// operation-kernel-agreement: every operation is what its kernel derives.
//
// An operation records its IPFs, index space (IPFIndex and index names), reductions and output
// tensors, and everything downstream trusts them: sharding, the executors, and the naive oracle
// `run --verify` compares against. This constraint re-derives them from the kernel — the
// signature its metakernel gives for the operation's params and the types of its input
// tensors — and reports every difference, naming the operation and the port:
//
//   error[operation-kernel-agreement]: Operation IPF differs from its kernel's
//     inputs.bias: the graph's IPF is ipf([[0, 0, 0]] + (0), shape (1)); linear derives
//     ipf([[0, 1, 0]] + (0), shape (1))
//
// Operations Tapestry's own rewrites make are derived by the code that makes them (the forms
// are listed in src/rewrite/derive_operation.h): split-reduction's block-split and partial
// operations, fuse-elementwise's `fused` operations (each stage against its kernel), the
// `reduce`, combine and decompose-linear operations (plain kernels whose output may sit where the
// tensor they write sits). Applications are covered through their operation: the application
// constraints already demand application selections = IPF(sub-box).
//
// An unknown kernel is an error — a warning when its name has a namespace ("op:add"): a loom
// graph of another system, whose kernels Tapestry can neither check nor run. The check runs once
// per operation, never per application.
//
// ir cannot see kernels, so the constraint lives here and is added to a dialect:
//
//   const ir::Dialect dialect = with_kernel_agreement(ir::Dialect::application(), signatures);
//   ir::ValidationReport report = ir::validate(graph, dialect);
#pragma once

#include <memory>
#include <string_view>

#include "tapestry/ir/constraint.h"
#include "tapestry/ir/dialect.h"
#include "tapestry/metakernel/signature_registry.h"

namespace tapestry::rewrite {

inline constexpr std::string_view kOperationKernelAgreement = "operation-kernel-agreement";

/// The constraint, deriving from `signatures` (which must outlive it).
std::shared_ptr<const ir::Constraint> operation_kernel_agreement(
    const metakernel::SignatureRegistry& signatures);

/// `dialect` (same name, node and tag kinds, dtypes) with operation-kernel-agreement appended.
ir::Dialect with_kernel_agreement(const ir::Dialect& dialect,
                                  const metakernel::SignatureRegistry& signatures);

}  // namespace tapestry::rewrite
