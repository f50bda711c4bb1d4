// Executable kernels from kernel bodies: a kernel file's `body:` (metakernel/kernel_body.h) runs.
//
// For every index point p of the call's box the body is evaluated on the input elements at p
// (every port must have one element per index point) in the dtype of the operation's tensors
// (all alike; float32, float64, int32, int64 — exp, tanh, sigmoid and gelu only for floats).
// Without reduction dims the value is the output element at p; with them, the values of all the
// points that map to one output cell are folded with the dims' monoid, in ascending row-major
// order of the reduced dims, the first value taken as is (the built-in reductions' order and
// rule, kernels/kernel_support.h).
//
// Two evaluations, one definition: the reference kernel evaluates the compiled body once per
// point; the fast kernel evaluates it over runs of up to 256 points along the innermost index
// dim, one instruction at a time over the whole run (loops the compiler vectorises), with the
// same scalar formulas (kernels/scalar_ops.h) in the same order — so both give the same bits.
//
//   metakernel::SignatureRegistry signatures = …;            // with a kernel `square`, body x*x
//   ExecutableKernels fast = with_body_kernels(fast_kernels(), signatures, BodyEvaluation::kFast);
//   fast.find("square")                                      // runs it
//
// A kernel that `base` already has keeps its implementation (the built-ins have no body).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/runtime/executable_kernels.h"

namespace tapestry::runtime {

/// Which kernel set a body kernel joins: how it evaluates the body (see above).
using BodyEvaluation = KernelSet;

/// `base` plus a kernel for every signature with a body that `base` does not have.
ExecutableKernels with_body_kernels(const ExecutableKernels& base,
                                    const metakernel::SignatureRegistry& signatures,
                                    BodyEvaluation evaluation);

/// The kernel that evaluates `kernel`'s body (which it must have).
KernelFn body_kernel(const metakernel::Metakernel& kernel, BodyEvaluation evaluation);

/// What a kernel's body needs of its kernel file: the body's text, the input ports' names, and
/// each param's name with its default as JSON text ("0.01"; "null": required). A program that
/// `tapestry codegen --to cpp` writes carries these instead of the file (docs/codegen.md).
struct BodySource {
  std::string name;
  std::string body;
  std::vector<std::string> inputs;
  std::vector<std::pair<std::string, std::string>> params;
};

/// The body source of `kernel` (which must have a body).
BodySource body_source(const metakernel::Metakernel& kernel);

/// The kernel that evaluates `source`'s body: the same function body_kernel gives for the
/// kernel it came from. Error "kernel 'k': body: column N: …" on a body that does not parse.
KernelFn body_kernel(const BodySource& source, BodyEvaluation evaluation);

}  // namespace tapestry::runtime
