// Metakernel: one kernel declared in the template metakernel language.
//
// A metakernel is the symbolic twin of a kernel (docs/design.md §4). This struct is the parsed form
// of one YAML document (loader.h reads it; docs/metakernels.md is the reference), for example:
//
//   kernel: linear
//   types: {T: float}
//   inputs:
//     x:    {shape: "[$batch..., $in]", dtype: T}
//     w:    {shape: "[$out, $in]", dtype: T}
//     bias: {shape: "[$out]", dtype: T}
//   outputs:
//     result: {shape: "[$batch..., $out]", dtype: T}
//   index: "[$batch..., $out, $in]"
//   reductions: {in: sum}
//   ipfs:
//     x: "[$batch..., $in]"
//     w: "[$out, $in]"
//     bias: "[$out]"
//     result: "[$batch..., $out]"
//
// `evaluate_signature` (signature.h) turns a metakernel plus concrete input types and parameters
// into a Signature: output types, named index dimensions, reductions and IPFs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/ir/nodes.h"
#include "tapestry/metakernel/expr.h"
#include "tapestry/metakernel/kernel_body.h"
#include "tapestry/metakernel/kernel_facts.h"
#include "tapestry/metakernel/pattern.h"
#include "tapestry/metakernel/source.h"
#include "tapestry/metakernel/tap_ast.h"
#include "tapestry/metakernel/tensor_type.h"

namespace tapestry::metakernel {

/// The combining operation of a reduction dimension: the IR's (sum, max, min, prod).
using Monoid = ir::Monoid;
using ir::monoid_name;
using ir::parse_monoid;

/// The type of a kernel parameter.
///   int, ints (list of int), bool, float, str (optionally restricted by `choices`),
///   axis (an int dimension of input `axis_of`, negative counting from the end; normalised to
///   0..rank-1 before the kernel sees it), monoid (one of sum max min prod).
enum class ParamType { kInt, kInts, kBool, kFloat, kStr, kAxis, kMonoid };

std::string_view param_type_name(ParamType type);

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kInt;
  std::optional<nlohmann::json> default_value;  // none: the parameter is required
  /// kInt only: a default computed from the inputs' sizes once they are bound (`"$n * $f"`:
  /// a loss's element count, which every shard of a split loss must divide by). The value is
  /// recorded on the operation, so shards and printed graphs keep the whole tensor's count.
  std::optional<Expr> default_expr;
  std::vector<std::string> choices;  // kStr: allowed values (empty: any)
  std::optional<std::int64_t> min;   // kInt / kInts: smallest allowed value
  std::string axis_of;               // kAxis: the input whose rank bounds it
  bool sugar = false;  // consumed by a `sugar` expansion, never recorded on an operation
  std::string doc;
  SourcePos pos;
};

/// A dtype constraint: a type variable (bound by the first input that uses it), a fixed dtype,
/// or — outputs only — the dtype a str parameter names (`dtype: {param: to}`, the parameter's
/// choices all dtype names: `cast(x, to=bf16)`).
struct DTypeSpec {
  std::string var;             // non-empty: a type variable of `Metakernel::types`
  std::optional<DType> fixed;  // otherwise: exactly this dtype
  std::string param;           // otherwise (non-empty): the dtype named by this parameter
  SourcePos pos;
};

struct InputSpec {
  std::string name;
  List shape;
  DTypeSpec dtype;
  std::string doc;
  SourcePos pos;
};

/// Where an output tensor starts: at the origin, or at input `like`'s start plus `shift`
/// (right-aligned: shift[k] applies to the last shift.size() dimensions).
struct StartSpec {
  std::string like;
  List shift;
};

struct OutputSpec {
  std::string name;
  List shape;
  bool has_shape = false;  // a hook kernel may leave the shape to its hook
  DTypeSpec dtype;
  std::optional<StartSpec> start;
  std::string doc;
  SourcePos pos;
};

/// `let: {oh: "($h - $kh) / stride + 1"}` binds a derived dimension size.
struct LetSpec {
  std::string name;
  Expr value;
};

/// A condition that must hold; `message` may quote sizes and params as {h} or {stride}.
struct CheckSpec {
  Expr condition;
  std::string message;
};

/// A reduction index dimension (or group) and its monoid, fixed or taken from a kMonoid param.
struct ReductionSpec {
  std::string dim;
  std::optional<Monoid> monoid;
  std::string param;
  SourcePos pos;
};

/// A rewrite applied before the kernel itself when `when` holds, e.g. conv2d's padding:
///   when: "padding != 0"
///   call: "conv2d(pad(x, padding=padding), w, stride=stride)"
struct SugarSpec {
  Expr when;
  tap::Call call;
  std::string text;
};

/// One entry of a kernel's `vjp:` section (autodiff.h): the gradient of input `port`, an
/// expression in .tap call syntax over the operation's ports, the cotangents `d_<output>` and,
/// as keyword values, its params — or `none`, a port without a gradient.
///   vjp:
///     x: "linear_nobias(d_result, transpose(w))"
///     bias: "sum_to(d_result, shape=bias.shape)"
struct VjpSpec {
  std::string port;
  std::optional<tap::TensorExpr> expr;  // none: the port has no gradient
  std::string text;                     // as written
  SourcePos pos;                        // of the expression
};

struct Metakernel {
  std::string name;
  std::vector<std::string> aliases;  // other names a call may use (resolved by input count)
  std::string summary;
  std::string doc;
  SourceFilePtr file;
  SourcePos pos;  // of the `kernel:` key

  std::vector<std::pair<std::string, std::vector<DType>>> types;  // type variables
  std::vector<InputSpec> inputs;
  std::vector<ParamSpec> params;
  std::map<std::string, Expr> group_ranks;  // group -> number of dims (from params)
  std::vector<std::string> broadcast;       // groups unified by numpy broadcasting
  std::vector<LetSpec> lets;
  std::vector<CheckSpec> checks;
  std::vector<OutputSpec> outputs;
  List index;
  std::vector<ReductionSpec> reductions;
  std::map<std::string, List> ipfs;  // by input / output name
  std::vector<SugarSpec> sugar;
  std::string hook;  // non-empty: a C++ hook computes outputs, index and IPFs (hooks.h)
  /// The executable body (`body:`, kernel_body.h), checked against the inputs and params; the
  /// runtime runs kernels that have one (runtime/body_kernels.h).
  std::optional<BodyExpr> body;
  std::string body_text;  // as written
  /// What cost, run metrics and the verifier know of the kernel (`facts:`, kernel_facts.h);
  /// none: an unknown kernel, priced and verified by kUnknownKernelFacts.
  std::optional<KernelFacts> facts;
  /// The vector-Jacobian product (`vjp:`), one entry per input in input order; none: the kernel
  /// has no VJP, and `grad` through it is an error. Not inherited through `extends:` (a child is
  /// another function: sub extends add, exp extends relu).
  std::optional<std::vector<VjpSpec>> vjp;

  [[nodiscard]] const ParamSpec* find_param(std::string_view name) const;
  [[nodiscard]] const InputSpec* find_input(std::string_view name) const;
  [[nodiscard]] bool is_broadcast(std::string_view group) const;
  /// `linear(x, w, bias)`.
  [[nodiscard]] std::string call_form() const;
};

}  // namespace tapestry::metakernel
