// Integer expressions of the template metakernel language.
//
// Kernel files compute sizes, check constraints and write IPF offsets with small integer
// expressions (docs/metakernels.md, "Expressions"):
//
//   ($h - $kh) / stride + 1        output height of a convolution
//   $oh * stride                   IPF offset: the window of output row oh starts stride·oh
//   padding != 0 && stride > 0     a condition (0 = false, anything else = true)
//
// Atoms: integer literals; `$name`, a pattern dimension; `#name`, its size; a bare `name`, a
// kernel parameter (bool params are 0/1). Operators, loosest first: `||`, `&&`, comparisons
// (== != < <= > >=), `+ -`, `* / %`, unary `-` and `!`; functions `min(a, b)`, `max(a, b)`.
// `/` and `%` round toward negative infinity (Python semantics); arithmetic is overflow-checked.
//
// `$name` means the *size* of the dimension when evaluated as a scalar (shapes, lets, checks,
// window sizes) and the *index coordinate* when evaluated as an IPF offset, where the result
// must be affine in the coordinates:
//
//   Expr e = Expr::parse("$oh * stride + 1", {});
//   e.evaluate(env)          // with $oh the size 5, stride 2: 11
//   e.evaluate_affine(env)   // with $oh index column 2 of 5: coeffs (0,0,2,0,0), constant 1
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapestry/metakernel/source.h"

namespace tapestry::metakernel {

/// Name lookups used while evaluating. Each returns nullopt for a name it does not know.
struct ExprEnv {
  std::function<std::optional<std::int64_t>(std::string_view)> size;   // $name, #name
  std::function<std::optional<std::int64_t>(std::string_view)> param;  // bare name
  /// Affine mode only: the index column of `$name`, nullopt when it is not an index dim.
  std::function<std::optional<std::size_t>(std::string_view)> coord;
  std::size_t index_rank = 0;  // affine mode: number of index columns
};

/// c_0·i_0 + … + c_{n-1}·i_{n-1} + constant over the index coordinates i.
struct AffineForm {
  std::vector<std::int64_t> coeffs;
  std::int64_t constant = 0;

  [[nodiscard]] bool is_constant() const;
};

class Expr {
 public:
  enum class Kind {
    kInt,
    kDim,
    kSize,
    kParam,  // atoms
    kNeg,
    kNot,  // unary
    kAdd,
    kSub,
    kMul,
    kDiv,
    kMod,  // arithmetic
    kMin,
    kMax,  // functions
    kEq,
    kNe,
    kLt,
    kLe,
    kGt,
    kGe,
    kAnd,
    kOr  // conditions
  };

  /// Parses the whole of `text`; `origin` is where the text starts in its file (for errors).
  /// Throws LocatedError naming the column of the problem.
  static Expr parse(std::string_view text, SourcePos origin);
  static Expr integer(std::int64_t value);
  static Expr dim(std::string name);

  [[nodiscard]] Kind kind() const { return node_->kind; }
  [[nodiscard]] std::int64_t value() const { return node_->value; }      // kInt
  [[nodiscard]] const std::string& name() const { return node_->name; }  // kDim kSize kParam
  [[nodiscard]] SourcePos pos() const { return node_->pos; }
  [[nodiscard]] std::size_t arity() const { return node_->args.size(); }
  [[nodiscard]] const Expr& arg(std::size_t i) const { return node_->args[i]; }

  /// Scalar value; throws Error on unknown names, division by zero or overflow.
  [[nodiscard]] std::int64_t evaluate(const ExprEnv& env) const;
  /// Affine form over the index coordinates; throws Error when the expression is not affine
  /// (a product or quotient of coordinates) or `$name` is not an index dimension.
  [[nodiscard]] AffineForm evaluate_affine(const ExprEnv& env) const;

  /// Calls `visit(kind, name, pos)` for every kDim, kSize and kParam atom.
  void visit_names(const std::function<void(Kind, const std::string&, SourcePos)>& visit) const;
  /// Canonical text with minimal parentheses: `($h - $kh) / stride + 1`.
  [[nodiscard]] std::string to_string() const;

  // Construction from parts (used by the parser).
  Expr(Kind kind, std::vector<Expr> args, SourcePos pos);
  Expr(Kind kind, std::int64_t value, std::string name, SourcePos pos);

 private:
  struct Node {
    Kind kind;
    std::int64_t value = 0;
    std::string name;
    std::vector<Expr> args;
    SourcePos pos;
  };
  std::shared_ptr<const Node> node_;
};

}  // namespace tapestry::metakernel
