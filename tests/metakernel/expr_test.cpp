// Template-language expressions and bracket lists: parsing (with error columns), printing,
// scalar and affine evaluation.
#include <gmock/gmock.h>

#include <map>

#include "tapestry/metakernel/expr.h"
#include "tapestry/metakernel/pattern.h"
#include "tapestry/support/error.h"

namespace tapestry::metakernel {
namespace {

using ::testing::HasSubstr;

ExprEnv env(std::map<std::string, std::int64_t> sizes,
            std::map<std::string, std::int64_t> params = {},
            std::map<std::string, std::size_t> coords = {}, std::size_t rank = 0) {
  ExprEnv e;
  e.size = [sizes](std::string_view n) -> std::optional<std::int64_t> {
    auto it = sizes.find(std::string(n));
    return it == sizes.end() ? std::nullopt : std::optional(it->second);
  };
  e.param = [params](std::string_view n) -> std::optional<std::int64_t> {
    auto it = params.find(std::string(n));
    return it == params.end() ? std::nullopt : std::optional(it->second);
  };
  e.coord = [coords](std::string_view n) -> std::optional<std::size_t> {
    auto it = coords.find(std::string(n));
    return it == coords.end() ? std::nullopt : std::optional(it->second);
  };
  e.index_rank = rank;
  return e;
}

std::int64_t eval(std::string_view text, const ExprEnv& e = env({})) {
  return Expr::parse(text, {1, 1}).evaluate(e);
}

struct ParseError {
  int column;
  std::string message;
};

ParseError parse_error(std::string_view text) {
  try {
    (void)Expr::parse(text, {3, 10});
  } catch (const LocatedError& e) {
    EXPECT_EQ(e.pos().line, 3);
    return {e.pos().column - 9, e.what()};  // column within the text, 1-based
  }
  return {0, ""};
}

TEST(Expr, ArithmeticFollowsPrecedenceAndFloorSemantics) {
  EXPECT_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("10 - 4 - 3"), 3);
  EXPECT_EQ(eval("-7 / 2"), -4);  // floor, as in Python
  EXPECT_EQ(eval("-7 % 2"), 1);
  EXPECT_EQ(eval("7 % -2"), -1);
  EXPECT_EQ(eval("min(3, 5) + max(3, 5)"), 8);
  EXPECT_EQ(eval("2 < 3 && 3 <= 3 && !(4 == 5) && 4 != 5 || 0"), 1);
  EXPECT_EQ(eval("1 > 2 || 2 >= 3"), 0);
  EXPECT_EQ(eval("--3"), 3);
}

TEST(Expr, NamesResolveToSizesAndParams) {
  const ExprEnv e = env({{"h", 32}, {"kh", 3}}, {{"stride", 2}});
  EXPECT_EQ(eval("($h - $kh) / stride + 1", e), 15);
  EXPECT_EQ(eval("#h", e), 32);
  EXPECT_THAT([&] { eval("$w", e); },
              ::testing::ThrowsMessage<Error>(HasSubstr("unknown dimension $ 'w'")));
  EXPECT_THAT([&] { eval("pad", e); },
              ::testing::ThrowsMessage<Error>(HasSubstr("unknown parameter 'pad'")));
  EXPECT_THAT([&] { eval("1 / ($h - 32)", e); },
              ::testing::ThrowsMessage<Error>(HasSubstr("division by zero")));
  EXPECT_THAT([&] { eval("9223372036854775807 + 1"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("overflow")));
}

TEST(Expr, AffineFormsOverIndexCoordinates) {
  const ExprEnv e = env({{"oh", 15}, {"kh", 3}}, {{"stride", 2}}, {{"n", 0}, {"oh", 2}}, 3);
  AffineForm f = Expr::parse("$oh * stride + 1", {}).evaluate_affine(e);
  EXPECT_EQ(f.coeffs, (std::vector<std::int64_t>{0, 0, 2}));
  EXPECT_EQ(f.constant, 1);
  f = Expr::parse("stride * (#kh - $oh) - $n", {}).evaluate_affine(e);
  EXPECT_EQ(f.coeffs, (std::vector<std::int64_t>{-1, 0, -2}));
  EXPECT_EQ(f.constant, 6);
  EXPECT_TRUE(Expr::parse("#oh / 2", {}).evaluate_affine(e).is_constant());
  EXPECT_THAT([&] { (void)Expr::parse("$oh * $n", {}).evaluate_affine(e); },
              ::testing::ThrowsMessage<Error>(HasSubstr("multiplies two index coordinates")));
  EXPECT_THAT([&] { (void)Expr::parse("$oh / 2", {}).evaluate_affine(e); },
              ::testing::ThrowsMessage<Error>(HasSubstr("not affine")));
  EXPECT_THAT([&] { (void)Expr::parse("$kh", {}).evaluate_affine(e); },
              ::testing::ThrowsMessage<Error>(HasSubstr("$kh is not an index dimension")));
}

TEST(Expr, PrintsWithMinimalParentheses) {
  for (const char* text : {"($h - $kh) / stride + 1", "a - (b - c)", "-(a + b) * #x",
                           "min(a, b) % 3", "a < b && (c || !d)", "$oh * stride"}) {
    EXPECT_EQ(Expr::parse(text, {}).to_string(), text);
  }
  EXPECT_EQ(Expr::parse("((a)+(b*c))", {}).to_string(), "a + b * c");
}

TEST(Expr, ParseErrorsNameTheColumn) {
  struct Case {
    const char* text;
    int column;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"", 1, "expected an expression, found nothing"},
           {"1 +", 4,
            "expected a number, $dim, #dim, a parameter name or '(', found the end of the text"},
           {"(a + b", 7, "expected ')' to close '(', found the end of the text"},
           {"$ h", 3, "expected a dimension name right after '$', found a blank"},
           {"a b", 3, "unexpected text after the expression, found 'b'"},
           {"pow(a, b)", 1, "unknown function 'pow' (expressions have min and max)"},
           {"min(a)", 6, "expected ',' between the two arguments of min, found ')'"},
           {"99999999999999999999", 1, "integer is too large"},
       }) {
    const ParseError e = parse_error(c.text);
    EXPECT_EQ(e.message, c.message) << c.text;
    EXPECT_EQ(e.column, c.column) << c.text;
  }
  EXPECT_EQ(parse_error(std::string(100, '(') + "1" + std::string(100, ')')).message,
            "expression is nested too deeply");
}

TEST(List, EntryForms) {
  const List list = parse_list("[$batch..., $in, 3, $oh * stride : $kh, *]", {5, 1});
  ASSERT_EQ(list.size(), 5u);
  EXPECT_EQ(list[0].kind, ListEntry::Kind::kGroup);
  EXPECT_EQ(list[0].group, "batch");
  EXPECT_TRUE(list[1].is_dim());
  EXPECT_EQ(list[1].dim_name(), "in");
  EXPECT_EQ(list[2].expr->kind(), Expr::Kind::kInt);
  EXPECT_FALSE(list[3].is_dim());
  EXPECT_EQ(list[3].window->to_string(), "$kh");
  EXPECT_EQ(list[4].kind, ListEntry::Kind::kWhole);
  EXPECT_EQ(list[3].pos, (SourcePos{5, 21}));
  EXPECT_EQ(list_to_string(list), "[$batch..., $in, 3, $oh * stride : $kh, *]");
  EXPECT_TRUE(parse_list(" [ ] ", {}).empty());
}

TEST(List, ErrorsNameTheColumn) {
  auto error = [](std::string_view text) -> std::pair<int, std::string> {
    try {
      (void)parse_list(text, {1, 1});
    } catch (const LocatedError& e) {
      return {e.pos().column, e.what()};
    }
    return {0, ""};
  };
  EXPECT_EQ(error("$a, $b]"),
            (std::pair<int, std::string>{1, "expected '[' to open the list, found '$'"}));
  EXPECT_EQ(error("[$a $b]"),
            (std::pair<int, std::string>{5, "expected ',' or ']' after a list entry, found '$'"}));
  EXPECT_EQ(error("[$a, ]"),
            (std::pair<int, std::string>{
                6, "expected a number, $dim, #dim, a parameter name or '(', found ']'"}));
  EXPECT_EQ(error("[$a] x"),
            (std::pair<int, std::string>{6, "unexpected text after ']', found 'x'"}));
  EXPECT_EQ(error("[$a"),
            (std::pair<int, std::string>{
                4, "expected ',' or ']' after a list entry, found the end of the text"}));
}

}  // namespace
}  // namespace tapestry::metakernel
