// Expression evaluation (scalar and affine) and printing.
#include "tapestry/metakernel/expr.h"

#include <fmt/core.h>

#include <algorithm>

#include "tapestry/support/assert.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::metakernel {

using zspace::checked_add;
using zspace::checked_mul;
using zspace::checked_sub;

Expr::Expr(Kind kind, std::vector<Expr> args, SourcePos pos)
    : node_(std::make_shared<const Node>(Node{kind, 0, "", std::move(args), pos})) {}

Expr::Expr(Kind kind, std::int64_t value, std::string name, SourcePos pos)
    : node_(std::make_shared<const Node>(Node{kind, value, std::move(name), {}, pos})) {}

Expr Expr::integer(std::int64_t value) {
  return Expr(Kind::kInt, value, "", {});
}

Expr Expr::dim(std::string name) {
  return Expr(Kind::kDim, 0, std::move(name), {});
}

bool AffineForm::is_constant() const {
  return std::all_of(coeffs.begin(), coeffs.end(), [](std::int64_t c) { return c == 0; });
}

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b, const Expr& where) {
  if (b == 0) throw Error(fmt::format("division by zero in `{}`", where.to_string()));
  if (a == INT64_MIN && b == -1) throw Error("int64 overflow: -9223372036854775808 / -1");
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::int64_t floor_mod(std::int64_t a, std::int64_t b, const Expr& where) {
  if (b == 0) throw Error(fmt::format("modulo by zero in `{}`", where.to_string()));
  if (b == -1) return 0;
  std::int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

std::int64_t lookup(const std::function<std::optional<std::int64_t>(std::string_view)>& f,
                    const std::string& name, std::string_view what) {
  std::optional<std::int64_t> value = f ? f(name) : std::nullopt;
  if (!value) throw Error(fmt::format("unknown {} '{}'", what, name));
  return *value;
}

std::int64_t binary(Expr::Kind kind, std::int64_t a, std::int64_t b, const Expr& e) {
  using K = Expr::Kind;
  switch (kind) {
    case K::kAdd:
      return checked_add(a, b);
    case K::kSub:
      return checked_sub(a, b);
    case K::kMul:
      return checked_mul(a, b);
    case K::kDiv:
      return floor_div(a, b, e);
    case K::kMod:
      return floor_mod(a, b, e);
    case K::kMin:
      return std::min(a, b);
    case K::kMax:
      return std::max(a, b);
    case K::kEq:
      return a == b;
    case K::kNe:
      return a != b;
    case K::kLt:
      return a < b;
    case K::kLe:
      return a <= b;
    case K::kGt:
      return a > b;
    case K::kGe:
      return a >= b;
    case K::kAnd:
      return (a != 0) && (b != 0);
    case K::kOr:
      return (a != 0) || (b != 0);
    default:
      TAPESTRY_ASSERT(false, "not a binary expression kind");
  }
  return 0;
}

}  // namespace

std::int64_t Expr::evaluate(const ExprEnv& env) const {
  switch (kind()) {
    case Kind::kInt:
      return value();
    case Kind::kDim:
    case Kind::kSize:
      return lookup(env.size, name(), "dimension $");
    case Kind::kParam:
      return lookup(env.param, name(), "parameter");
    case Kind::kNeg:
      return checked_sub(0, arg(0).evaluate(env));
    case Kind::kNot:
      return arg(0).evaluate(env) == 0;
    default:
      return binary(kind(), arg(0).evaluate(env), arg(1).evaluate(env), *this);
  }
}

namespace {

// a + sign·b, term by term.
AffineForm combine(AffineForm a, const AffineForm& b, std::int64_t sign) {
  for (std::size_t i = 0; i < a.coeffs.size(); ++i) {
    a.coeffs[i] = checked_add(a.coeffs[i], checked_mul(sign, b.coeffs[i]));
  }
  a.constant = checked_add(a.constant, checked_mul(sign, b.constant));
  return a;
}

AffineForm scale(AffineForm a, std::int64_t factor) {
  for (std::int64_t& c : a.coeffs) c = checked_mul(c, factor);
  a.constant = checked_mul(a.constant, factor);
  return a;
}

}  // namespace

AffineForm Expr::evaluate_affine(const ExprEnv& env) const {
  switch (kind()) {
    case Kind::kDim: {
      const std::optional<std::size_t> col = env.coord ? env.coord(name()) : std::nullopt;
      if (!col) {
        throw Error(fmt::format(
            "${0} is not an index dimension; in an IPF offset $name is an index coordinate "
            "(write #{0} for the size)",
            name()));
      }
      AffineForm out{std::vector<std::int64_t>(env.index_rank, 0), 0};
      out.coeffs[*col] = 1;
      return out;
    }
    case Kind::kNeg:
      return scale(arg(0).evaluate_affine(env), -1);
    case Kind::kAdd:
      return combine(arg(0).evaluate_affine(env), arg(1).evaluate_affine(env), 1);
    case Kind::kSub:
      return combine(arg(0).evaluate_affine(env), arg(1).evaluate_affine(env), -1);
    case Kind::kMul: {
      AffineForm a = arg(0).evaluate_affine(env);
      AffineForm b = arg(1).evaluate_affine(env);
      if (!a.is_constant() && !b.is_constant()) {
        throw Error(
            fmt::format("`{}` is not affine: it multiplies two index coordinates", to_string()));
      }
      return a.is_constant() ? scale(std::move(b), a.constant) : scale(std::move(a), b.constant);
    }
    default:
      break;
  }
  // Everything else must not involve coordinates: evaluate it as a scalar, but first make sure
  // no coordinate hides inside (a quotient of coordinates is not affine).
  for (std::size_t i = 0; i < arity(); ++i) {
    if (!arg(i).evaluate_affine(env).is_constant()) {
      throw Error(fmt::format("`{}` is not affine in the index coordinates", to_string()));
    }
  }
  return AffineForm{std::vector<std::int64_t>(env.index_rank, 0), evaluate(env)};
}

void Expr::visit_names(
    const std::function<void(Kind, const std::string&, SourcePos)>& visit) const {
  if (kind() == Kind::kDim || kind() == Kind::kSize || kind() == Kind::kParam) {
    visit(kind(), name(), pos());
  }
  for (const Expr& a : node_->args) a.visit_names(visit);
}

namespace {

int precedence(Expr::Kind kind) {
  using K = Expr::Kind;
  switch (kind) {
    case K::kOr:
      return 1;
    case K::kAnd:
      return 2;
    case K::kEq:
    case K::kNe:
    case K::kLt:
    case K::kLe:
    case K::kGt:
    case K::kGe:
      return 3;
    case K::kAdd:
    case K::kSub:
      return 4;
    case K::kMul:
    case K::kDiv:
    case K::kMod:
      return 5;
    case K::kNeg:
    case K::kNot:
      return 6;
    default:
      return 7;
  }
}

std::string_view symbol(Expr::Kind kind) {
  using K = Expr::Kind;
  switch (kind) {
    case K::kAdd:
      return "+";
    case K::kSub:
      return "-";
    case K::kMul:
      return "*";
    case K::kDiv:
      return "/";
    case K::kMod:
      return "%";
    case K::kEq:
      return "==";
    case K::kNe:
      return "!=";
    case K::kLt:
      return "<";
    case K::kLe:
      return "<=";
    case K::kGt:
      return ">";
    case K::kGe:
      return ">=";
    case K::kAnd:
      return "&&";
    case K::kOr:
      return "||";
    default:
      return "?";
  }
}

}  // namespace

std::string Expr::to_string() const {
  const int mine = precedence(kind());
  auto wrap = [mine](const Expr& child, bool right) {
    const int theirs = precedence(child.kind());
    const bool parens = theirs < mine || (right && theirs == mine);
    return parens ? "(" + child.to_string() + ")" : child.to_string();
  };
  switch (kind()) {
    case Kind::kInt:
      return fmt::format("{}", value());
    case Kind::kDim:
      return "$" + name();
    case Kind::kSize:
      return "#" + name();
    case Kind::kParam:
      return name();
    case Kind::kNeg:
      return "-" + wrap(arg(0), false);
    case Kind::kNot:
      return "!" + wrap(arg(0), false);
    case Kind::kMin:
      return "min(" + arg(0).to_string() + ", " + arg(1).to_string() + ")";
    case Kind::kMax:
      return "max(" + arg(0).to_string() + ", " + arg(1).to_string() + ")";
    default:
      return fmt::format("{} {} {}", wrap(arg(0), false), symbol(kind()), wrap(arg(1), true));
  }
}

}  // namespace tapestry::metakernel
