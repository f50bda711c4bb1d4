// C++ hooks: the places where a kernel needs computation the template language cannot
// express. A kernel file opts in with `hook: <name>`; the template language still declares the
// kernel's inputs, dtypes and parameters (and the evaluator checks them first), and the hook
// computes the output types, the index and the IPFs.
//
//   reshape   the grouping of input dims into output dims is found by a search over the two
//             shapes (products of runs of adjacent dims); each group is a split or a merge and
//             its IPF rows are row-major strides of the finer side. A template has no loops,
//             so it cannot describe "for each run of dims whose products agree".
//   permute   the output shape and the IPF are the input's dims reordered by the `perm`
//             parameter; a template names dims statically, so it cannot reorder a variadic
//             group by a runtime list. (`transpose`, which swaps the last two dims, is a plain
//             template.)
//   sum_to    which dims of the input are reductions depends on the `shape` parameter (the dims
//             numpy broadcasting stretched); a template fixes its reductions statically.
//   arg_extreme  argmax and argmin: the result keeps the searched axis with extent 1 or drops
//             it, by the `keepdims` parameter; a template fixes an output's rank statically.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/metakernel/metakernel.h"
#include "tapestry/metakernel/signature.h"

namespace tapestry::metakernel {

/// What a hook sees: inputs already checked against their patterns and dtypes, params resolved.
struct HookInput {
  const Metakernel& kernel;
  std::span<const Argument> args;
  const nlohmann::json& params;
  const std::map<std::string, DType>& types;
};

/// A hook fills index_dims, inputs and outputs; it throws Error on bad input.
using Hook = Signature (*)(const HookInput&);

/// The hook registered under `name`, or null.
const Hook* find_hook(std::string_view name);
/// Every hook name (for the loader's check and `tapestry kernels`).
std::vector<std::string> hook_names();

/// The reshape grouping, exposed for tests: each group pairs a run of input dims with a run of
/// output dims of equal product. Throws Error when a group is neither a split nor a merge.
struct ReshapeGroup {
  std::size_t in_first = 0, in_count = 0;
  std::size_t out_first = 0, out_count = 0;
};
std::vector<ReshapeGroup> reshape_groups(const zspace::Point& in, const zspace::Point& out);

}  // namespace tapestry::metakernel
