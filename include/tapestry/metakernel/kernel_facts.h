// KernelFacts: what the rest of Tapestry needs to know about a kernel beyond its signature — how
// much arithmetic one index point is, what kind of kernel it is, and how its rounding error
// grows. One `facts:` section of the kernel's YAML declares them (docs/metakernels.md, "facts");
// the cost model, the run metrics (measured GFLOP/s) and the verifier's error rules all read them
// here, so a new kernel is priced, measured and verified by its YAML alone.
//
//   kernel: conv2d
//   …
//   facts:
//     class: contraction
//     flops: 2            # per index point, times the cells of `per_point`'s window
//     per_point: w        # one index point multiplies the whole kh × kw window of w
//     error_rule: bilinear
//     exact: true         # exact on small integers (sums and products of integers)
//
// FLOPs of an application = flops × (index points) × (cells one index point of port `per_point`
// touches; 1 without a port). conv2d over a 3 × 3 window: 2 · 9 = 18 FLOPs per index point.
//
// `facts:` is inherited through `extends:`; a child's section overrides the keys it gives.
// A kernel without facts (a plugin or user kernel whose YAML declares none) is *unknown*:
// `find_kernel_facts` returns null, the graph's loading warns (issue kernel-facts-missing,
// rewrite/kernel_facts_check.h) and every reader uses `kUnknownKernelFacts` — 1 FLOP per index
// point, the verifier's fallback rule, not exact.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tapestry/metakernel/source.h"

namespace tapestry::metakernel {

/// What kind of kernel it is (informational, and `layout` means it moves data only).
enum class KernelClass { kElementwise, kContraction, kReduction, kWindow, kNormalization, kLayout };

/// How the verifier bounds the kernel's rounding error (runtime/error_rules.cpp, oracle.h):
///   bilinear     Σ of products (linear, matmul, conv2d, mul): |a|·|b| products' error
///   additive     sums and differences (add, sub, bias_add)
///   product      a product of many terms (a reduce over prod)
///   selection    picks one of its inputs (maximum, max_pool2d, a max/min reduce): no error
///   elementwise  one correctly-rounded-ish function per element (relu, exp, gelu, div, …)
///   softmax, average, variance   their own rules (softmax; mean, avg_pool2d; variance)
///   move         copies (transpose, permute, reshape, pad, slice, gather): no error; integer
///                inputs (gather's indices) are exact and say which cells are copied
///   index        the position of an extremum (argmax, argmin): an integer result whose bar is
///                the distance to the farthest cell that may be the extremum (error_rules.cpp)
///   decision     a 0/1 mask (comparisons, logical ops: kernels/masks.yaml): exact where the
///                decision is certain from the operands' bars, else an error of 1
///   choice       where(cond, a, b): the chosen branch's error, or both branches' when cond
///                is not certain
///   gate         d_result or 0 by a comparison of the other inputs (relu_grad: x > 0;
///                maximum_grad_a: a ≥ b; maximum_grad_b: b > a): d_result's error where the
///                comparison is certain, |d_result| more where it may flip
///   monoid       by the operation's reduction monoid: sum → additive, prod → product,
///                max/min → selection (sum, max, reduce)
/// and, not for YAML, `fallback`: the rule of a kernel without facts (error_rules.cpp).
enum class ErrorRule {
  kBilinear,
  kAdditive,
  kProduct,
  kSelection,
  kElementwise,
  kSoftmax,
  kAverage,
  kVariance,
  kMove,
  kIndex,
  kDecision,
  kChoice,
  kGate,
  kMonoid,
  kFallback
};

struct KernelFacts {
  KernelClass kind = KernelClass::kElementwise;
  double flops = 1;       // per index point (times the cells of `per_point`'s window)
  std::string per_point;  // a port one index point touches a window of; empty: none
  ErrorRule error_rule = ErrorRule::kElementwise;
  bool exact = false;  // exact on small integers (with error_rule monoid: unless prod)
  /// Whether the facts were declared (false only for kUnknownKernelFacts).
  bool declared = true;

  friend bool operator==(const KernelFacts&, const KernelFacts&) = default;
};

/// What every reader assumes of a kernel that declares no facts (see the file comment).
inline const KernelFacts kUnknownKernelFacts{.kind = KernelClass::kElementwise,
                                             .flops = 1,
                                             .per_point = {},
                                             .error_rule = ErrorRule::kFallback,
                                             .exact = false,
                                             .declared = false};

std::string_view kernel_class_name(KernelClass kind);
std::optional<KernelClass> parse_kernel_class(std::string_view text);
std::string_view error_rule_name(ErrorRule rule);
std::optional<ErrorRule> parse_error_rule(std::string_view text);

/// The facts of `kernel` ("op:" prefix ignored): a built-in's, else those of any kernel a
/// SignatureRegistry of this process has added (plugins and --kernel-dir files included); null
/// when the kernel is unknown or declares none. Thread-safe; the result lives as long as the
/// process.
const KernelFacts* find_kernel_facts(std::string_view kernel);

/// find_kernel_facts, else kUnknownKernelFacts.
const KernelFacts& kernel_facts(std::string_view kernel);

namespace detail {
/// Records `facts` for `kernel` where find_kernel_facts looks (the first record of a name wins);
/// SignatureRegistry::add calls it for every kernel with facts.
void publish_kernel_facts(std::string_view kernel, const KernelFacts& facts);
}  // namespace detail

}  // namespace tapestry::metakernel
