// Parser of the .tap graph language: text -> Program (tap_ast.h). Grammar (docs/language.md):
//
//   program    := { [statement] (NEWLINE | ';') }
//   statement  := 'dim' IDENT '=' dimexpr                        a dim variable
//               | name ':' dtype '[' [dim {',' dim}] ']'          declaration (a tensor)
//               | name '=' texpr                                 assignment
//               | 'output' name {',' name}                       graph outputs
//               | 'operation' JSON                               an operation given verbatim
//   name       := IDENT | STRING                                 a string for other names
//   dtype      := IDENT | STRING                                 f32 …, bool …, or any spelling
//   dim        := dimexpr | dimexpr ':' dimexpr                 size, or start:end (may be < 0)
//   dimexpr    := ['-'] term {('+' | '-') term}                   integers and dim variables
//   term       := factor {'*' factor};  factor := INT | IDENT     (IDENT: a declared dim)
//   texpr      := name | name '(' [arg {',' arg}] ')'
//   arg        := texpr | name '=' literal                      positional tensors, then keywords
//   literal    := dimexpr | ['-'] FLOAT | STRING | IDENT | JSON | '[' [literal {',' literal}] ']'
//   JSON       := '{' … '}'                                     a JSON object
//
// Dim variables (`dim batch = 8`) name sizes: after its statement, a declared dim may stand
// wherever an integer goes — in a declaration's dims and in parameters — alone or in an
// expression of integers, `+`, `-` and `*` (`x: f32[batch, 197, 768]`,
// `reshape(t, shape=[batch*197, 768])`). Its value is the statement's, unless the caller binds
// the name (ParseOptions::dims: `--dim batch=32` on the command line), so one program describes
// a model at every batch size. A declared dim shadows the bare-identifier literal of its name.
//
// Syntax errors are collected, one per statement: after an error the parser skips to the next
// line and goes on, so a file with three typos reports three diagnostics.
#pragma once

#include <cstdint>
#include <map>
#include <string>
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

/// Values for a program's dim variables, by name, replacing those its `dim` statements give.
using DimBindings = std::map<std::string, std::int64_t>;

struct ParseOptions {
  /// Binds dim variables; binding a name the program does not declare is a diagnostic.
  DimBindings dims;
};

/// Parses a whole .tap file.
ParseResult parse_program(SourceFilePtr file, const ParseOptions& options = {});

/// Parses `NAME=N` (the command line's `--dim batch=32`) into `bindings`; Error naming the text
/// when it is malformed, N is not an integer ≥ 0 or NAME is bound twice.
void add_dim_binding(DimBindings& bindings, std::string_view text);

/// Parses exactly one call expression, e.g. a kernel's sugar `conv2d(pad(x, padding=padding), w)`.
/// `origin` is where the text starts in its file. Throws LocatedError.
Call parse_call(std::string_view text, SourcePos origin);

}  // namespace tapestry::metakernel::tap
