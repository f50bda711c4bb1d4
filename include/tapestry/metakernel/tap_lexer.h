// Tokens of the .tap graph language (docs/language.md, "Lexical structure").
//
//   identifiers   [A-Za-z_][A-Za-z0-9_./]*      (`.` and `/` allow generated names: H/linear.2)
//   integers      123            floats   0.5, 1e-3, 2.5E+2
//   strings       "text" with \" \\ \n \t escapes; a string may also stand for a name
//                 ("op:add", "H 1"): see the parser
//   JSON objects  {"kernel": "op:add", …} — balanced braces, strings skipped, newlines allowed;
//                 the operation statement's body and object-valued parameters
//   punctuation   : = ( ) [ ] , - ;
//   comments      # to the end of the line
//   newlines      end statements (the parser skips them inside parentheses and brackets)
//
// The lexer never throws: a character it cannot read becomes a kError token carrying a message,
// which the parser reports at that position.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tapestry/metakernel/source.h"

namespace tapestry::metakernel::tap {

enum class TokenKind {
  kIdent,
  kInt,
  kFloat,
  kString,
  kJson,
  kColon,
  kEquals,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kComma,
  kMinus,
  kPlus,  // `+` and `*`: dim expressions (`batch*197 + 1`)
  kStar,
  kArrow,  // `<-` (update W <- Wn)
  kSemicolon,
  kNewline,
  kEnd,
  kError
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;  // identifier / number spelling / decoded string / JSON text / error message
  SourcePos pos;
};

/// Splits `text` into tokens; always ends with one kEnd token.
std::vector<Token> lex(std::string_view text);

/// "identifier", "')'", "end of line" … for "expected X, found Y" messages.
std::string describe(TokenKind kind);
/// Describes a concrete token: "'relu'", "the number 3", "end of line".
std::string describe(const Token& token);

}  // namespace tapestry::metakernel::tap
