// Recursive-descent parser for template-language expressions (grammar in expr.h). Nesting is
// capped so that a garbage file with ten thousand '(' is an error, not a stack overflow.
#include "expr_parse.h"

namespace tapestry::metakernel::detail {

namespace {

constexpr int kMaxDepth = 64;

class ExprParser {
 public:
  explicit ExprParser(TextCursor& cursor) : cursor_(cursor) {}

  Expr parse_or() {
    DepthGuard guard(*this);
    Expr left = parse_and();
    while (true) {
      const SourcePos pos = cursor_.pos();
      if (!cursor_.accept("||")) return left;
      left = Expr(Expr::Kind::kOr, {left, parse_and()}, pos);
    }
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(ExprParser& p) : parser(p) {
      if (++parser.depth_ > kMaxDepth) parser.cursor_.fail("expression is nested too deeply");
    }
    ~DepthGuard() { --parser.depth_; }
    ExprParser& parser;
  };

  Expr parse_and() {
    Expr left = parse_comparison();
    while (true) {
      const SourcePos pos = cursor_.pos();
      if (!cursor_.accept("&&")) return left;
      left = Expr(Expr::Kind::kAnd, {left, parse_comparison()}, pos);
    }
  }

  Expr parse_comparison() {
    Expr left = parse_sum();
    const SourcePos pos = cursor_.pos();
    // Longer tokens first so "<=" is not read as "<".
    static constexpr std::pair<std::string_view, Expr::Kind> kOps[] = {
        {"==", Expr::Kind::kEq}, {"!=", Expr::Kind::kNe}, {"<=", Expr::Kind::kLe},
        {">=", Expr::Kind::kGe}, {"<", Expr::Kind::kLt},  {">", Expr::Kind::kGt}};
    for (const auto& [token, kind] : kOps) {
      if (cursor_.accept(token)) return Expr(kind, {left, parse_sum()}, pos);
    }
    return left;
  }

  Expr parse_sum() {
    Expr left = parse_term();
    while (true) {
      const SourcePos pos = cursor_.pos();
      if (cursor_.accept("+")) {
        left = Expr(Expr::Kind::kAdd, {left, parse_term()}, pos);
      } else if (cursor_.peek() == '-') {
        cursor_.accept("-");
        left = Expr(Expr::Kind::kSub, {left, parse_term()}, pos);
      } else {
        return left;
      }
    }
  }

  Expr parse_term() {
    Expr left = parse_unary();
    while (true) {
      const SourcePos pos = cursor_.pos();
      if (cursor_.accept("*")) {
        left = Expr(Expr::Kind::kMul, {left, parse_unary()}, pos);
      } else if (cursor_.accept("/")) {
        left = Expr(Expr::Kind::kDiv, {left, parse_unary()}, pos);
      } else if (cursor_.accept("%")) {
        left = Expr(Expr::Kind::kMod, {left, parse_unary()}, pos);
      } else {
        return left;
      }
    }
  }

  Expr parse_unary() {
    DepthGuard guard(*this);
    const SourcePos pos = cursor_.pos();
    if (cursor_.peek() == '-') {
      cursor_.accept("-");
      return Expr(Expr::Kind::kNeg, {parse_unary()}, pos);
    }
    if (cursor_.peek() == '!' && cursor_.peek_at(1) != '=') {
      cursor_.accept("!");
      return Expr(Expr::Kind::kNot, {parse_unary()}, pos);
    }
    return parse_atom();
  }

  Expr parse_atom() {
    const SourcePos pos = cursor_.pos();
    const char c = cursor_.peek();
    if (std::isdigit(static_cast<unsigned char>(c))) {
      return Expr(Expr::Kind::kInt, cursor_.integer(), "", pos);
    }
    if (cursor_.accept("$")) return Expr(Expr::Kind::kDim, 0, name_after('$'), pos);
    if (cursor_.accept("#")) return Expr(Expr::Kind::kSize, 0, name_after('#'), pos);
    if (cursor_.accept("(")) {
      Expr inner = parse_or();
      cursor_.expect(")", "to close '('");
      return inner;
    }
    if (cursor_.at_identifier()) return parse_name(pos);
    cursor_.fail("expected a number, $dim, #dim, a parameter name or '('" + cursor_.found());
  }

  // The name right after a '$' or '#' sigil (no blank in between).
  std::string name_after(char sigil) {
    const std::string what = std::string("a dimension name right after '") + sigil + "'";
    const char c = cursor_.next_raw();
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_') {
      const std::string found = c == '\0'                 ? ", found the end of the text"
                                : (c == ' ' || c == '\t') ? ", found a blank"
                                                          : std::string(", found '") + c + "'";
      throw LocatedError(cursor_.pos(), "expected " + what + found);
    }
    return cursor_.identifier(what);
  }

  Expr parse_name(SourcePos pos) {
    std::string name = cursor_.identifier("a name");
    if (cursor_.peek() != '(') return Expr(Expr::Kind::kParam, 0, std::move(name), pos);
    if (name != "min" && name != "max") {
      throw LocatedError(pos, "unknown function '" + name + "' (expressions have min and max)");
    }
    cursor_.accept("(");
    Expr a = parse_or();
    cursor_.expect(",", "between the two arguments of " + name);
    Expr b = parse_or();
    cursor_.expect(")", "after the arguments of " + name);
    return Expr(name == "min" ? Expr::Kind::kMin : Expr::Kind::kMax, {a, b}, pos);
  }

  TextCursor& cursor_;
  int depth_ = 0;
};

}  // namespace

Expr parse_expr(TextCursor& cursor) {
  return ExprParser(cursor).parse_or();
}

}  // namespace tapestry::metakernel::detail

namespace tapestry::metakernel {

Expr Expr::parse(std::string_view text, SourcePos origin) {
  detail::TextCursor cursor(text, origin);
  if (cursor.at_end()) cursor.fail("expected an expression, found nothing");
  Expr result = detail::parse_expr(cursor);
  if (!cursor.at_end()) cursor.fail("unexpected text after the expression" + cursor.found());
  return result;
}

}  // namespace tapestry::metakernel
