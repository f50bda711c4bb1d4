// Parser of the .tap graph language: text -> Program (tap_ast.h). Grammar (docs/language.md):
//
//   program    := { [statement] (NEWLINE | ';') }
//   statement  := name ':' dtype '[' [dim {',' dim}] ']'          declaration (a tensor)
//               | name '=' texpr                                 assignment
//               | 'output' name {',' name}                       graph outputs
//               | 'operation' JSON                               an operation given verbatim
//   name       := IDENT | STRING                                 a string for other names
//   dtype      := IDENT | STRING                                 f32 …, bool …, or any spelling
//   dim        := INT | INT ':' INT                             size, or start:end (may be < 0)
//   texpr      := name | name '(' [arg {',' arg}] ')'
//   arg        := texpr | name '=' literal                      positional tensors, then keywords
//   literal    := ['-'] INT | ['-'] FLOAT | STRING | IDENT | JSON | '[' [literal {',' literal}] ']'
//   JSON       := '{' … '}'                                     a JSON object
//
// Syntax errors are collected, one per statement: after an error the parser skips to the next
// line and goes on, so a file with three typos reports three diagnostics.
#pragma once

#include <string_view>
#include <vector>

#include "tapestry/metakernel/source.h"
#include "tapestry/metakernel/tap_ast.h"

namespace tapestry::metakernel::tap {

struct ParseResult {
  Program program;
  std::vector<support::Diagnostic> diagnostics;

  [[nodiscard]] bool ok() const { return diagnostics.empty(); }
};

/// Parses a whole .tap file.
ParseResult parse_program(SourceFilePtr file);

/// Parses exactly one call expression, e.g. a kernel's sugar `conv2d(pad(x, padding=padding), w)`.
/// `origin` is where the text starts in its file. Throws LocatedError.
Call parse_call(std::string_view text, SourcePos origin);

}  // namespace tapestry::metakernel::tap
