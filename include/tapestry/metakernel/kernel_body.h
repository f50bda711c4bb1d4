// A kernel's executable body: the `body:` of a kernel file (docs/metakernels.md, "Kernels that
// run"). A small expression language over the kernel's inputs and numeric params, evaluated once
// per index point by both kernel sets of the runtime (runtime/body_kernels.h):
//
//   body: "x * x"                          square
//   body: "sigmoid(x) * x"                 silu
//   body: "max(x, 0) + slope * min(x, 0)"  leaky relu with a param `slope`
//   body: "x * y"  with  reductions: {k: sum}   a dot product: the monoid folds the values of
//                                               every index point that maps to one output cell
//
//   expr    := term {('+' | '-') term}
//   term    := unary {('*' | '/') unary}
//   unary   := '-' unary | primary
//   primary := NUMBER | NAME | NAME '(' expr {',' expr} ')' | '(' expr ')'
//
// NAME is an input or a numeric (int or float) param of the kernel; the functions are those of
// body_functions(): the built-in elementwise kernels' formulas (exp tanh sigmoid relu gelu neg)
// and max, min of two. Values have the dtype of the operation's tensors; numbers and params are
// converted to it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tapestry::metakernel {

struct BodyExpr {
  enum class Kind { kNumber, kName, kNegate, kBinary, kCall };
  Kind kind = Kind::kNumber;
  double number = 0;           // kNumber
  std::string name;            // kName: the input or param; kCall: the function
  char op = 0;                 // kBinary: + - * /
  std::vector<BodyExpr> args;  // kNegate: 1, kBinary: 2, kCall: its arity
  std::size_t column = 0;      // 1-based, in the body text (for messages)

  /// The expression as text, fully parenthesised where it nests: `(x * x) + 1`.
  [[nodiscard]] std::string to_string() const;
};

/// A function a body may call.
struct BodyFunction {
  std::string_view name;
  std::size_t arity;
};
/// exp(1) tanh(1) sigmoid(1) relu(1) gelu(1) neg(1) max(2) min(2).
std::span<const BodyFunction> body_functions();

/// Parses a body. Error "column N: …" on a syntax error or an unknown function or arity.
BodyExpr parse_body(std::string_view text);

/// The names a body uses (inputs and params), each once, in order of first use.
std::vector<std::string> body_names(const BodyExpr& body);

}  // namespace tapestry::metakernel
