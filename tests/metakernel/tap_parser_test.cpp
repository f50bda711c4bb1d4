// The .tap lexer and parser: statements, literals, error positions; naming rules.
#include <gmock/gmock.h>

#include "tapestry/metakernel/naming.h"
#include "tapestry/metakernel/tap_lexer.h"
#include "tapestry/metakernel/tap_parser.h"
#include "test_util.h"

namespace tapestry::metakernel {
namespace {

using namespace testing;  // NOLINT

tap::ParseResult parse(const std::string& text) {
  return tap::parse_program(std::make_shared<const SourceFile>("p.tap", text));
}

TEST(TapLexer, TokensAndPositions) {
  const std::vector<tap::Token> tokens =
      tap::lex("H/linear.2 = f(x, a=-1.5e3, s=\"q\\\"\") # c\n;");
  std::vector<tap::TokenKind> kinds;
  for (const tap::Token& t : tokens) kinds.push_back(t.kind);
  using K = tap::TokenKind;
  EXPECT_EQ(kinds, (std::vector<K>{K::kIdent, K::kEquals, K::kIdent, K::kLParen, K::kIdent,
                                   K::kComma, K::kIdent, K::kEquals, K::kMinus, K::kFloat,
                                   K::kComma, K::kIdent, K::kEquals, K::kString, K::kRParen,
                                   K::kNewline, K::kSemicolon, K::kEnd}));
  EXPECT_EQ(tokens[0].text, "H/linear.2");
  EXPECT_EQ(tokens[13].text, "q\"");
  EXPECT_EQ(tokens[16].pos, (SourcePos{2, 1}));
  EXPECT_EQ(tap::lex("@")[0].kind, K::kError);
  EXPECT_EQ(tap::lex("\x01")[0].text, "unexpected character byte 0x01");
  EXPECT_EQ(tap::lex("\"abc")[0].text, "unterminated string (a string ends on its line)");
  EXPECT_EQ(tap::lex("12ab")[0].text, "malformed number '12ab'");
}

TEST(TapParser, Statements) {
  tap::ParseResult r = parse(R"(# a comment
X: f32[-40:60, 20:32]   # declaration with a start
S: i64[]
Y = conv2d(relu(X), W,
           stride=2, padding=1); output Y, S
)");
  ASSERT_TRUE(r.ok()) << format_diagnostics(r.diagnostics);
  ASSERT_EQ(r.program.statements.size(), 4u);
  const auto& decl = std::get<tap::Decl>(r.program.statements[0]);
  EXPECT_EQ(decl.name, "X");
  EXPECT_EQ(decl.type.to_string(), "f32[-40:60, 20:32]");
  EXPECT_EQ(decl.pos, (SourcePos{2, 1}));
  EXPECT_EQ(std::get<tap::Decl>(r.program.statements[1]).type.to_string(), "i64[]");
  const auto& assign = std::get<tap::Assign>(r.program.statements[2]);
  ASSERT_TRUE(assign.value.is_call());
  EXPECT_EQ(tap::call_to_string(*assign.value.call), "conv2d(relu(X), W, stride=2, padding=1)");
  EXPECT_EQ(assign.value.call->args[0].call->pos, (SourcePos{4, 12}));
  EXPECT_EQ(assign.value.call->keywords[1].pos, (SourcePos{5, 22}));
  const auto& out = std::get<tap::Output>(r.program.statements[3]);
  ASSERT_EQ(out.names.size(), 2u);
  EXPECT_EQ(out.names[1].name, "S");
}

TEST(TapParser, Literals) {
  tap::Call c =
      tap::parse_call("f(a=1, b=-2, c=0.5, d=true, e=\"s\", f=max, g=[1, [2, -3]], h=[])", {1, 1});
  ASSERT_EQ(c.keywords.size(), 8u);
  EXPECT_EQ(c.keywords[0].value.value, 1);
  EXPECT_EQ(c.keywords[1].value.value, -2);
  EXPECT_EQ(c.keywords[2].value.value, 0.5);
  EXPECT_EQ(c.keywords[3].value.value, true);
  EXPECT_EQ(c.keywords[4].value.value, "s");
  EXPECT_FALSE(c.keywords[4].value.is_identifier);
  EXPECT_EQ(c.keywords[5].value.value, "max");
  EXPECT_TRUE(c.keywords[5].value.is_identifier);
  EXPECT_EQ(c.keywords[6].value.value, nlohmann::json::parse("[1, [2, -3]]"));
  EXPECT_EQ(c.keywords[7].value.value, nlohmann::json::array());
  EXPECT_EQ(tap::call_to_string(c),
            "f(a=1, b=-2, c=0.5, d=true, e=\"s\", f=max, g=[1, [2, -3]], h=[])");
  EXPECT_EQ(tap::literal_to_string(2.0), "2.0");
}

struct SyntaxCase {
  const char* text;
  SourcePos pos;
  const char* message;
};

TEST(TapParser, SyntaxErrors) {
  for (const SyntaxCase& c : std::vector<SyntaxCase>{
           {"X f32[4]",
            {1, 3},
            "expected ':' (a declaration) or '=' (an assignment) after 'X', found 'f32'"},
           {"X: f32[4:2]", {1, 8}, "dimension 4:2 ends before it starts"},
           {"X: f32[-4]", {1, 8}, "a dimension size must be >= 0, got -4"},
           {"X: f32[99999999999999999999]", {1, 8}, "integer 99999999999999999999 is too large"},
           {"Y = f(x",
            {1, 8},
            "expected ')' to close the arguments of f, found the end of the file"},
           {"Y = f(a=1, x)",
            {1, 12},
            "positional arguments (tensors) must come before keyword parameters"},
           {"Y = f(1)",
            {1, 7},
            "expected a tensor (a variable or a call), found the number 1; parameters are passed "
            "by keyword, e.g. dim=1"},
           {"Y = f(x) g", {1, 10}, "expected the end of the file after the statement, found 'g'"},
           {"Y = f(x, a=[1, 2)", {1, 17}, "expected ']' to close the list, found ')'"},
           {"= 3", {1, 1}, "expected a name at the start of a statement, found '='"},
           {"Y = f(x, s=\"open)", {1, 12}, "unterminated string (a string ends on its line)"},
           {"output",
            {1, 7},
            "expected ':' (a declaration) or '=' (an assignment) after 'output', found the end of "
            "the file"},
       }) {
    tap::ParseResult r = parse(c.text);
    ASSERT_EQ(r.diagnostics.size(), 1u) << c.text;
    EXPECT_EQ(r.diagnostics[0].where.pos, c.pos) << c.text;
    EXPECT_EQ(r.diagnostics[0].message, c.message) << c.text;
  }
}

tap::ParseResult parse_with(const std::string& text, tap::DimBindings dims) {
  return tap::parse_program(std::make_shared<const SourceFile>("p.tap", text),
                            tap::ParseOptions{std::move(dims)});
}

TEST(TapParser, DimVariablesStandForIntegers) {
  const std::string text = R"(dim batch = 2
dim seq = batch*4 - 1
X: f32[batch, seq, 16]
Z: f32[-batch:batch*3 + 1]
Y = reshape(X, shape=[batch*seq, 16], keep=[batch, -1, 2*batch*seq])
dim = relu(X)
)";
  tap::ParseResult r = parse(text);
  ASSERT_TRUE(r.ok()) << format_diagnostics(r.diagnostics);
  ASSERT_EQ(r.program.dims.size(), 2u);
  EXPECT_EQ(r.program.dims[0].name, "batch");
  EXPECT_EQ(r.program.dims[1].value, 7);
  EXPECT_EQ(r.program.dims[1].declared, 7);
  EXPECT_EQ(r.program.dims[1].pos, (SourcePos{2, 5}));
  ASSERT_EQ(r.program.statements.size(), 4u);  // `dim = relu(X)` assigns a variable named dim
  EXPECT_EQ(std::get<tap::Decl>(r.program.statements[0]).type.to_string(), "f32[2, 7, 16]");
  EXPECT_EQ(std::get<tap::Decl>(r.program.statements[1]).type.to_string(), "f32[-2:7]");
  const tap::Call& call = *std::get<tap::Assign>(r.program.statements[2]).value.call;
  EXPECT_EQ(tap::call_to_string(call), "reshape(X, shape=[14, 16], keep=[2, -1, 28])");
  EXPECT_EQ(std::get<tap::Assign>(r.program.statements[3]).name, "dim");

  // A binding replaces the statement's value, and what is computed from it follows.
  r = parse_with(text, {{"batch", 5}});
  ASSERT_TRUE(r.ok()) << format_diagnostics(r.diagnostics);
  EXPECT_EQ(r.program.dims[0].value, 5);
  EXPECT_EQ(r.program.dims[0].declared, 2);
  EXPECT_EQ(std::get<tap::Decl>(r.program.statements[0]).type.to_string(), "f32[5, 19, 16]");
  EXPECT_EQ(tap::call_to_string(*std::get<tap::Assign>(r.program.statements[2]).value.call),
            "reshape(X, shape=[95, 16], keep=[5, -1, 190])");
  r = parse_with(text, {{"seq", 3}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<tap::Decl>(r.program.statements[0]).type.to_string(), "f32[2, 3, 16]");
  // A bare identifier that is not a dim stays an enumeration value.
  EXPECT_EQ(
      tap::call_to_string(*std::get<tap::Assign>(
                               parse("dim n = 3\nY = reduce(X, op=max, k=n)").program.statements[0])
                               .value.call),
      "reduce(X, op=max, k=3)");
}

TEST(TapParser, DimVariableErrors) {
  for (const SyntaxCase& c : std::vector<SyntaxCase>{
           {"X: f32[n]", {1, 8}, "unknown dim 'n' (declare it first: dim n = N)"},
           {"dim n = 2\ndim n = 3", {2, 5}, "dim 'n' is declared twice"},
           {"dim n = 2 - 3", {1, 9}, "dim 'n' must be >= 0, got -1"},
           {"dim n = m", {1, 9}, "unknown dim 'm' (declare it first: dim m = N)"},
           {"dim n = 4000000000*4000000000\n", {1, 9}, "the integer expression overflows int64"},
           {"dim n = 2\nX: f32[n*]", {2, 10}, "expected an integer or a dim, found ']'"},
           {"dim n = 2\nX: f32[n - 3]", {2, 8}, "a dimension size must be >= 0, got -1"},
           {"dim n = 2\nY = f(X, a=n + x)",
            {2, 16},
            "unknown dim 'x' (declare it first: dim x = N)"},
       }) {
    tap::ParseResult r = parse(c.text);
    ASSERT_EQ(r.diagnostics.size(), 1u) << c.text;
    EXPECT_EQ(r.diagnostics[0].where.pos, c.pos) << c.text;
    EXPECT_EQ(r.diagnostics[0].message, c.message) << c.text;
  }
  // Binding a dim the program does not declare names the file and what it declares.
  tap::ParseResult r = parse_with("dim batch = 2\nX: f32[batch]", {{"bach", 4}});
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(format_diagnostic(r.diagnostics[0]),
            "p.tap: --dim bach=4: the program declares no `dim bach` (it declares: batch)");
  r = parse_with("X: f32[2]", {{"batch", 4}});
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_THAT(r.diagnostics[0].message, ::testing::HasSubstr("(it declares no dims)"));
}

TEST(TapParser, DimBindingsFromTheCommandLine) {
  tap::DimBindings b;
  tap::add_dim_binding(b, "batch=32");
  tap::add_dim_binding(b, "_s2=0");
  EXPECT_EQ(b, (tap::DimBindings{{"batch", 32}, {"_s2", 0}}));
  for (const char* bad : {"batch", "batch=", "=3", "batch=-1", "batch=3x", "2b=3", "a-b=3"}) {
    tap::DimBindings d;
    EXPECT_THROW(tap::add_dim_binding(d, bad), Error) << bad;
  }
  EXPECT_THAT([&] { tap::add_dim_binding(b, "batch=4"); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr("dim 'batch' is bound twice")));
}

TEST(TapParser, DeepNestingIsAnErrorNotACrash) {
  std::string text = "Y = ";
  for (int i = 0; i < 5000; ++i) text += "f(";
  tap::ParseResult r = parse(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics[0].message, "calls are nested too deeply");
  r = parse("Y = f(x, a=" + std::string(5000, '[') + ")");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics[0].message, "lists are nested too deeply");
}

TEST(Naming, NestedNamesAreNumberedPerKernel) {
  const std::vector<std::string> kernels{"relu", "linear", "relu", "relu", "add"};
  EXPECT_EQ(nested_names("Z", kernels),
            (std::vector<std::string>{"Z/relu", "Z/linear", "Z/relu.2", "Z/relu.3", "Z"}));
  EXPECT_EQ(nested_names("Y", std::vector<std::string>{"linear"}), std::vector<std::string>{"Y"});
  EXPECT_TRUE(nested_names("Y", std::vector<std::string>{}).empty());
  NameTable table;
  EXPECT_EQ(table.fresh("relu"), "relu");
  table.take("relu");
  table.take("relu.2");
  EXPECT_EQ(table.fresh("relu"), "relu.3");
  table.release("relu");
  EXPECT_EQ(table.fresh("relu"), "relu");
  EXPECT_TRUE(is_tap_identifier("H/linear.2"));
  EXPECT_FALSE(is_tap_identifier("2x"));
  EXPECT_FALSE(is_tap_identifier("a b"));
  EXPECT_FALSE(is_tap_identifier(""));
}

}  // namespace
}  // namespace tapestry::metakernel
