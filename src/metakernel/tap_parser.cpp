// Recursive-descent parser for .tap (grammar in tap_parser.h). Each statement parses inside a
// try block; a LocatedError becomes a Diagnostic and the parser resumes after the next newline.
#include "tapestry/metakernel/tap_parser.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "tapestry/metakernel/tap_lexer.h"
#include "tapestry/support/error.h"

namespace tapestry::metakernel::tap {

namespace {

constexpr int kMaxNesting = 200;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens, const ParseOptions& options = {})
      : tokens_(std::move(tokens)), options_(options) {}

  ParseResult program(SourceFilePtr file) {
    ParseResult result;
    result.program.file = file;
    while (peek().kind != TokenKind::kEnd) {
      if (accept(TokenKind::kNewline) || accept(TokenKind::kSemicolon)) continue;
      try {
        if (at_dim_statement()) {
          result.program.dims.push_back(dim_statement());
        } else {
          result.program.statements.push_back(statement());
        }
        if (!accept(TokenKind::kSemicolon) && !accept(TokenKind::kNewline)) {
          expect(TokenKind::kEnd, "after the statement");
        }
      } catch (const LocatedError& e) {
        result.diagnostics.push_back(support::Diagnostic::at_source(file, e.pos(), e.what()));
        skip_to_next_line();
      }
    }
    for (const auto& [name, value] : options_.dims) {
      if (dims_.contains(name)) continue;
      std::string declared;
      for (const DimDecl& d : result.program.dims)
        declared += (declared.empty() ? "" : ", ") + d.name;
      result.diagnostics.push_back(support::Diagnostic::in_file(
          file ? file->name() : "<input>",
          fmt::format("--dim {}={}: the program declares no `dim {}` ({})", name, value, name,
                      declared.empty() ? "it declares no dims" : "it declares: " + declared)));
    }
    return result;
  }

  Call single_call() {
    const Token& name = expect(TokenKind::kIdent, "(a kernel call)");
    Call call = call_after_name(name);
    while (accept(TokenKind::kNewline)) {
    }
    expect(TokenKind::kEnd, "after the call");
    return call;
  }

 private:
  const Token& peek(std::size_t ahead = 0) const {
    return tokens_[std::min(i_ + ahead, tokens_.size() - 1)];
  }
  bool accept(TokenKind kind) {
    if (peek().kind != kind) return false;
    ++i_;
    return true;
  }
  const Token& expect(TokenKind kind, std::string_view context) {
    const Token& token = peek();
    if (token.kind == TokenKind::kError) throw LocatedError(token.pos, token.text);
    if (token.kind != kind) {
      const std::string where = context.empty() ? "" : " " + std::string(context);
      throw LocatedError(token.pos, fmt::format("expected {}{}, found {}", describe(kind), where,
                                                describe(token)));
    }
    ++i_;
    return token;
  }
  void skip_newlines() {
    while (accept(TokenKind::kNewline)) {
    }
  }
  bool at_name(std::size_t ahead = 0) const {
    const TokenKind kind = peek(ahead).kind;
    return kind == TokenKind::kIdent || kind == TokenKind::kString;
  }
  // A name: an identifier, or a string for names that are not identifiers ("op:add").
  const Token& name(std::string_view context) {
    if (peek().kind == TokenKind::kString) {
      if (peek().text.empty()) throw LocatedError(peek().pos, "a name cannot be empty");
      return tokens_[i_++];
    }
    return expect(TokenKind::kIdent, context);
  }
  void skip_to_next_line() {
    while (peek().kind != TokenKind::kEnd && !accept(TokenKind::kNewline)) ++i_;
  }

  // `dim NAME = dimexpr`: `dim` is a keyword only when a name and '=' follow it.
  bool at_dim_statement() const {
    return peek().kind == TokenKind::kIdent && peek().text == "dim" &&
           peek(1).kind == TokenKind::kIdent && peek(2).kind == TokenKind::kEquals;
  }

  DimDecl dim_statement() {
    ++i_;  // `dim`
    const Token& name = tokens_[i_];
    i_ += 2;  // the name and '='
    if (dims_.contains(name.text))
      throw LocatedError(name.pos, fmt::format("dim '{}' is declared twice", name.text));
    const SourcePos at = peek().pos;
    const std::int64_t declared = dim_expr();
    const auto bound = options_.dims.find(name.text);
    const std::int64_t value = bound != options_.dims.end() ? bound->second : declared;
    if (declared < 0)
      throw LocatedError(at, fmt::format("dim '{}' must be >= 0, got {}", name.text, declared));
    dims_.emplace(name.text, value);
    return DimDecl{name.text, value, declared, name.pos};
  }

  // dimexpr := ['-'] term {('+' | '-') term}, with int64 overflow checked.
  std::int64_t dim_expr() {
    const SourcePos at = peek().pos;
    const bool negative = accept(TokenKind::kMinus);
    std::int64_t value = dim_term();
    if (negative) value = checked(at, 0, value, '-');
    while (peek().kind == TokenKind::kPlus || peek().kind == TokenKind::kMinus) {
      const char op = peek().kind == TokenKind::kPlus ? '+' : '-';
      ++i_;
      value = checked(at, value, dim_term(), op);
    }
    return value;
  }
  std::int64_t dim_term() {
    const SourcePos at = peek().pos;
    std::int64_t value = dim_factor();
    while (accept(TokenKind::kStar)) value = checked(at, value, dim_factor(), '*');
    return value;
  }
  std::int64_t dim_factor() {
    const Token& token = peek();
    if (token.kind == TokenKind::kInt) return unsigned_int();
    if (token.kind == TokenKind::kIdent) {
      const auto found = dims_.find(token.text);
      if (found == dims_.end()) {
        throw LocatedError(token.pos, fmt::format("unknown dim '{}' (declare it first: dim {} = N)",
                                                  token.text, token.text));
      }
      ++i_;
      return found->second;
    }
    if (token.kind == TokenKind::kError) throw LocatedError(token.pos, token.text);
    throw LocatedError(token.pos,
                       fmt::format("expected an integer or a dim, found {}", describe(token)));
  }
  static std::int64_t checked(SourcePos at, std::int64_t a, std::int64_t b, char op) {
    std::int64_t r = 0;
    const bool overflow = op == '+'   ? __builtin_add_overflow(a, b, &r)
                          : op == '-' ? __builtin_sub_overflow(a, b, &r)
                                      : __builtin_mul_overflow(a, b, &r);
    if (overflow) throw LocatedError(at, "the integer expression overflows int64");
    return r;
  }
  bool at_dim_expr() const {
    const Token& t = peek();
    if (t.kind == TokenKind::kIdent) return dims_.contains(t.text);
    const TokenKind next = peek(1).kind;
    return t.kind == TokenKind::kInt &&
           (next == TokenKind::kStar || next == TokenKind::kPlus || next == TokenKind::kMinus);
  }

  Statement statement() {
    const Token& first = peek();
    if (first.kind == TokenKind::kIdent && first.text == "output" && at_name(1)) {
      ++i_;
      return output(first.pos);
    }
    if (first.kind == TokenKind::kIdent && first.text == "update" && at_name(1) &&
        peek(2).kind == TokenKind::kArrow) {
      ++i_;
      return update(first.pos);
    }
    if (first.kind == TokenKind::kIdent && first.text == "operation" &&
        peek(1).kind == TokenKind::kJson) {
      const Token& json = peek(1);
      i_ += 2;
      return OperationStmt{json_object(json), first.pos};
    }
    const Token& name = this->name("at the start of a statement");
    if (accept(TokenKind::kColon)) return declaration(name);
    if (accept(TokenKind::kEquals)) return Assign{name.text, tensor_expr(0), name.pos, {}};
    if (peek().kind == TokenKind::kComma) {  // `dW, db = grad(L, W, b)`: several targets
      Assign assign{name.text, {}, name.pos, {}};
      while (accept(TokenKind::kComma)) {
        const Token& more = this->name("(another variable to assign)");
        assign.more_names.push_back(OutputName{more.text, more.pos});
      }
      expect(TokenKind::kEquals, "after the variables to assign");
      assign.value = tensor_expr(0);
      return assign;
    }
    const Token& next = peek();
    if (next.kind == TokenKind::kError) throw LocatedError(next.pos, next.text);
    throw LocatedError(next.pos, fmt::format("expected ':' (a declaration) or '=' (an assignment) "
                                             "after '{}', found {}",
                                             name.text, describe(next)));
  }

  Output output(SourcePos pos) {
    Output out{{}, pos};
    do {
      const Token& name = this->name("(a variable to output)");
      out.names.push_back(OutputName{name.text, name.pos});
    } while (accept(TokenKind::kComma));
    return out;
  }

  Update update(SourcePos pos) {
    Update out{{}, pos};
    do {
      const Token& state = this->name("(a state input to update)");
      expect(TokenKind::kArrow, "between the state and its next value (update W <- Wn)");
      const Token& next = this->name("(the tensor that updates it)");
      out.pairs.push_back(UpdatePair{{state.text, state.pos}, {next.text, next.pos}});
    } while (accept(TokenKind::kComma));
    return out;
  }

  Decl declaration(const Token& name) {
    const ir::LoomDType dtype = declared_dtype();
    expect(TokenKind::kLBracket, "to start the dimensions");
    std::vector<std::int64_t> start, end;
    if (!accept(TokenKind::kRBracket)) {
      do {
        const SourcePos pos = peek().pos;
        const std::int64_t a = dim_expr();
        std::int64_t lo = 0, hi = a;
        if (accept(TokenKind::kColon)) {
          lo = a;
          hi = dim_expr();
        }
        std::int64_t extent = 0;
        if (__builtin_sub_overflow(hi, lo, &extent)) {
          throw LocatedError(
              pos,
              fmt::format("dimension {}:{} is too large (its extent overflows int64)", lo, hi));
        }
        if (hi < lo) {
          throw LocatedError(
              pos, lo == 0 ? fmt::format("a dimension size must be >= 0, got {}", hi)
                           : fmt::format("dimension {}:{} ends before it starts", lo, hi));
        }
        start.push_back(lo);
        end.push_back(hi);
      } while (accept(TokenKind::kComma));
      expect(TokenKind::kRBracket, "after the dimensions");
    }
    const DType kernel_dtype =
        dtype.known() && ir::is_tap_dtype(*dtype.known()) ? *dtype.known() : DType::kFloat32;
    return Decl{name.text,
                TensorType{kernel_dtype, zspace::Range(zspace::Point(start), zspace::Point(end))},
                name.pos, dtype};
  }

  // A .tap dtype (f32, float32, …), a loom-only dtype (bool, int8, …), or any spelling as a
  // string ("boolean") for tensors only operation statements use.
  ir::LoomDType declared_dtype() {
    if (peek().kind == TokenKind::kString) {
      const Token& token = tokens_[i_++];
      if (token.text.empty()) throw LocatedError(token.pos, "a dtype cannot be empty");
      return ir::LoomDType::parse(token.text);
    }
    const Token& token =
        expect(TokenKind::kIdent, fmt::format("(a dtype: {})", tap_dtype_names(" ")));
    if (const std::optional<DType> dtype = ir::parse_tap_dtype(token.text)) return *dtype;
    const ir::LoomDType loom = ir::LoomDType::parse(token.text);
    if (loom.known()) return loom;
    throw LocatedError(token.pos, fmt::format("unknown dtype '{}' (dtypes: {})", token.text,
                                              tap_dtype_names(" ")));
  }

  std::int64_t unsigned_int() {
    const Token& token = expect(TokenKind::kInt, "");
    std::int64_t value = 0;
    const auto [ptr, ec] =
        std::from_chars(token.text.data(), token.text.data() + token.text.size(), value);
    if (ec != std::errc() || ptr != token.text.data() + token.text.size()) {
      throw LocatedError(token.pos, fmt::format("integer {} is too large", token.text));
    }
    return value;
  }

  TensorExpr tensor_expr(int depth) {
    if (depth > kMaxNesting) throw LocatedError(peek().pos, "calls are nested too deeply");
    const Token& name = this->name("(a variable or a kernel call)");
    if (peek().kind != TokenKind::kLParen) return TensorExpr{name.text, nullptr, name.pos};
    return TensorExpr{name.text, std::make_shared<Call>(call_after_name(name, depth)), name.pos};
  }

  Call call_after_name(const Token& name, int depth = 0) {
    Call call{name.text, {}, {}, name.pos};
    expect(TokenKind::kLParen, "to start the arguments");
    skip_newlines();
    if (accept(TokenKind::kRParen)) return call;
    do {
      skip_newlines();
      if (at_name() && peek(1).kind == TokenKind::kEquals) {
        const Token& key = peek();
        i_ += 2;
        call.keywords.push_back(Keyword{key.text, literal(0), key.pos});
      } else if (!call.keywords.empty()) {
        throw LocatedError(peek().pos,
                           "positional arguments (tensors) must come before keyword parameters");
      } else if (!at_name() && peek().kind != TokenKind::kError) {
        throw LocatedError(peek().pos,
                           fmt::format("expected a tensor (a variable or a call), found {}; "
                                       "parameters are passed by keyword, e.g. dim=1",
                                       describe(peek())));
      } else {
        call.args.push_back(tensor_expr(depth + 1));
      }
      skip_newlines();
    } while (accept(TokenKind::kComma));
    expect(TokenKind::kRParen, fmt::format("to close the arguments of {}", name.text));
    return call;
  }

  Literal literal(int depth) {
    if (depth > kMaxNesting) throw LocatedError(peek().pos, "lists are nested too deeply");
    skip_newlines();
    const Token& token = peek();
    if (accept(TokenKind::kLBracket)) {
      Literal list{nlohmann::json::array(), false, token.pos};
      skip_newlines();
      if (accept(TokenKind::kRBracket)) return list;
      do {
        list.value.push_back(literal(depth + 1).value);
        skip_newlines();
      } while (accept(TokenKind::kComma));
      expect(TokenKind::kRBracket, "to close the list");
      return list;
    }
    if (accept(TokenKind::kString)) return Literal{token.text, false, token.pos};
    if (accept(TokenKind::kJson)) return Literal{json_object(token), false, token.pos};
    if (at_dim_expr() || (peek().kind == TokenKind::kMinus &&
                          (peek(1).kind == TokenKind::kInt ||
                           (peek(1).kind == TokenKind::kIdent && dims_.contains(peek(1).text))))) {
      return Literal{dim_expr(), false, token.pos};
    }
    if (accept(TokenKind::kIdent)) {
      if (token.text == "true" || token.text == "false")
        return Literal{token.text == "true", false, token.pos};
      return Literal{token.text, true, token.pos};
    }
    const bool negative = accept(TokenKind::kMinus);
    const Token& number = peek();
    if (number.kind == TokenKind::kFloat) {
      ++i_;
      const double v = std::strtod(number.text.c_str(), nullptr);
      return Literal{negative ? -v : v, false, token.pos};
    }
    if (number.kind == TokenKind::kInt) return Literal{unsigned_int(), false, token.pos};
    if (number.kind == TokenKind::kError) throw LocatedError(number.pos, number.text);
    throw LocatedError(number.pos,
                       fmt::format("expected a parameter value (a number, a string, a name "
                                   "or a [list]), found {}",
                                   describe(number)));
  }

  // The JSON of a {…} token; a syntax error points at its own line and column.
  static nlohmann::json json_object(const Token& token) {
    try {
      return nlohmann::json::parse(token.text);
    } catch (const nlohmann::json::parse_error& e) {
      SourcePos pos = token.pos;
      for (std::size_t i = 0; i + 1 < e.byte && i < token.text.size(); ++i) {
        if (token.text[i] == '\n') {
          ++pos.line;
          pos.column = 1;
        } else {
          ++pos.column;
        }
      }
      std::string message = e.what();
      if (const std::size_t colon = message.find(": "); colon != std::string::npos)
        message = message.substr(colon + 2);
      throw LocatedError(pos, "invalid JSON: " + message);
    }
  }

  std::vector<Token> tokens_;
  std::size_t i_ = 0;
  const ParseOptions& options_;
  std::map<std::string, std::int64_t> dims_;  // declared so far, with their values
};

}  // namespace

ParseResult parse_program(SourceFilePtr file, const ParseOptions& options) {
  return Parser(lex(file->text()), options).program(file);
}

void add_dim_binding(DimBindings& bindings, std::string_view text) {
  const std::size_t eq = text.find('=');
  const std::string_view name = text.substr(0, eq == std::string_view::npos ? 0 : eq);
  const std::string_view number = eq == std::string_view::npos ? "" : text.substr(eq + 1);
  std::int64_t value = -1;
  const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  const bool identifier =
      !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) != 0 || name[0] == '_') &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
      });
  if (!identifier || number.empty() || ec != std::errc() || ptr != number.data() + number.size() ||
      value < 0) {
    throw Error(
        fmt::format("--dim {}: expected NAME=N, a dim name and an integer >= 0 "
                    "(--dim batch=32)",
                    text));
  }
  if (!bindings.emplace(std::string(name), value).second)
    throw Error(fmt::format("--dim {}: dim '{}' is bound twice", text, name));
}

Call parse_call(std::string_view text, SourcePos origin) {
  std::vector<Token> tokens = lex(text);
  // Re-base positions from the snippet onto the file.
  for (Token& t : tokens) {
    t.pos = SourcePos{origin.line + t.pos.line - 1,
                      t.pos.line == 1 ? origin.column + t.pos.column - 1 : t.pos.column};
  }
  return Parser(std::move(tokens)).single_call();
}

}  // namespace tapestry::metakernel::tap
