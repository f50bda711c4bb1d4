#include "tapestry/metakernel/tap_lexer.h"

#include <fmt/core.h>

#include <cctype>

namespace tapestry::metakernel::tap {

namespace {

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/';
}
bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  std::vector<Token> run() {
    while (true) {
      skip_blanks_and_comments();
      if (at_end()) break;
      tokens_.push_back(next());
    }
    tokens_.push_back(Token{TokenKind::kEnd, "", pos()});
    return std::move(tokens_);
  }

 private:
  bool at_end() const { return i_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return i_ + ahead < text_.size() ? text_[i_ + ahead] : '\0';
  }
  SourcePos pos() const { return {line_, static_cast<int>(i_ - line_start_) + 1}; }
  void advance() {
    if (text_[i_] == '\n') {
      ++line_;
      line_start_ = i_ + 1;
    }
    ++i_;
  }

  void skip_blanks_and_comments() {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || c == '\r') {
        advance();
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') advance();
      } else {
        return;
      }
    }
  }

  Token next() {
    const SourcePos start = pos();
    const char c = peek();
    if (c == '\n') {
      advance();
      return {TokenKind::kNewline, "", start};
    }
    if (is_ident_start(c)) return identifier(start);
    if (is_digit(c)) return number(start);
    if (c == '"') return string(start);
    if (c == '{') return json_object(start);
    if (c == '<' && peek(1) == '-') {
      advance();
      advance();
      return {TokenKind::kArrow, "<-", start};
    }
    static constexpr std::pair<char, TokenKind> kPunct[] = {
        {':', TokenKind::kColon},  {'=', TokenKind::kEquals},   {'(', TokenKind::kLParen},
        {')', TokenKind::kRParen}, {'[', TokenKind::kLBracket}, {']', TokenKind::kRBracket},
        {',', TokenKind::kComma},  {'-', TokenKind::kMinus},    {';', TokenKind::kSemicolon},
        {'+', TokenKind::kPlus},   {'*', TokenKind::kStar}};
    for (const auto& [ch, kind] : kPunct) {
      if (c == ch) {
        advance();
        return {kind, std::string(1, c), start};
      }
    }
    advance();
    const auto u = static_cast<unsigned char>(c);
    const std::string shown =
        (u >= 0x20 && u < 0x7f) ? fmt::format("'{}'", c) : fmt::format("byte 0x{:02x}", u);
    return {TokenKind::kError, fmt::format("unexpected character {}", shown), start};
  }

  Token identifier(SourcePos start) {
    const std::size_t begin = i_;
    while (!at_end() && is_ident_char(peek())) advance();
    return {TokenKind::kIdent, std::string(text_.substr(begin, i_ - begin)), start};
  }

  Token number(SourcePos start) {
    const std::size_t begin = i_;
    bool is_float = false;
    while (is_digit(peek())) advance();
    if (peek() == '.' && is_digit(peek(1))) {
      is_float = true;
      advance();
      while (is_digit(peek())) advance();
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (is_digit(peek(1)) || ((peek(1) == '-' || peek(1) == '+') && is_digit(peek(2))))) {
      is_float = true;
      advance();
      if (peek() == '-' || peek() == '+') advance();
      while (is_digit(peek())) advance();
    }
    if (is_ident_start(peek())) {
      while (!at_end() && is_ident_char(peek())) advance();
      return {TokenKind::kError,
              fmt::format("malformed number '{}'", text_.substr(begin, i_ - begin)), start};
    }
    return {is_float ? TokenKind::kFloat : TokenKind::kInt,
            std::string(text_.substr(begin, i_ - begin)), start};
  }

  Token string(SourcePos start) {
    advance();  // opening quote
    std::string value;
    while (!at_end() && peek() != '"' && peek() != '\n') {
      char c = peek();
      advance();
      if (c == '\\' && !at_end() && peek() != '\n') {
        const char e = peek();
        advance();
        c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
      }
      value += c;
    }
    if (peek() != '"')
      return {TokenKind::kError, "unterminated string (a string ends on its line)", start};
    advance();
    return {TokenKind::kString, std::move(value), start};
  }

  // A JSON object, taken verbatim up to its matching '}' (braces inside strings do not count);
  // the parser hands the text to a JSON parser.
  Token json_object(SourcePos start) {
    const std::size_t begin = i_;
    int depth = 0;
    bool in_string = false;
    while (!at_end()) {
      const char c = peek();
      advance();
      if (in_string) {
        if (c == '\\' && !at_end()) {
          advance();
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        return {TokenKind::kJson, std::string(text_.substr(begin, i_ - begin)), start};
      }
    }
    return {TokenKind::kError, "unterminated '{' (a JSON object ends with its matching '}')",
            start};
  }

  std::string_view text_;
  std::size_t i_ = 0;
  int line_ = 1;
  std::size_t line_start_ = 0;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(std::string_view text) {
  return Lexer(text).run();
}

std::string describe(TokenKind kind) {
  switch (kind) {
    case TokenKind::kIdent:
      return "a name";
    case TokenKind::kInt:
      return "an integer";
    case TokenKind::kFloat:
      return "a number";
    case TokenKind::kString:
      return "a string";
    case TokenKind::kJson:
      return "a JSON object";
    case TokenKind::kColon:
      return "':'";
    case TokenKind::kEquals:
      return "'='";
    case TokenKind::kLParen:
      return "'('";
    case TokenKind::kRParen:
      return "')'";
    case TokenKind::kLBracket:
      return "'['";
    case TokenKind::kRBracket:
      return "']'";
    case TokenKind::kComma:
      return "','";
    case TokenKind::kMinus:
      return "'-'";
    case TokenKind::kPlus:
      return "'+'";
    case TokenKind::kStar:
      return "'*'";
    case TokenKind::kArrow:
      return "'<-'";
    case TokenKind::kSemicolon:
      return "';'";
    case TokenKind::kNewline:
      return "the end of the line";
    case TokenKind::kEnd:
      return "the end of the file";
    case TokenKind::kError:
      return "an invalid token";
  }
  return "?";
}

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::kIdent:
      return fmt::format("'{}'", token.text);
    case TokenKind::kInt:
    case TokenKind::kFloat:
      return fmt::format("the number {}", token.text);
    case TokenKind::kString:
      return "a string";
    default:
      return describe(token.kind);
  }
}

}  // namespace tapestry::metakernel::tap
