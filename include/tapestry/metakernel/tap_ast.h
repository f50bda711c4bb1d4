// The syntax tree of the .tap graph language (docs/language.md).
//
//   X: f32[-40:60, 20:32]            Decl    (a graph input: name, dtype, range)
//   Y = relu(linear(X, W, b))        Assign  (a variable bound to a tensor expression)
//   dW, db = grad(L, W, b)           Assign with several variables (gradients; autodiff.h)
//   Z = conv2d(x, w, stride=2)       Call with a keyword parameter
//   output Y, Z                      Output
//   update W <- Wn, b <- bn          Update  (training state: next step's W is this step's Wn)
//   operation {"label": …, "body": …}  OperationStmt (an operation given verbatim, as loom JSON)
//
// Names (variables, kernels) are identifiers or, when they are not, strings: `"op:add"(t0, t1)`.
//
// A tensor expression is a variable name or a call; calls take tensor expressions positionally
// and parameters by keyword. Parameter values are literals: integers, floats, `true`/`false`,
// "strings", bare identifiers (enumerations such as `op=max`) and `[lists]` of literals.
// Every node records where it starts, so later stages can point at it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "tapestry/metakernel/source.h"
#include "tapestry/metakernel/tensor_type.h"

namespace tapestry::metakernel::tap {

/// A parameter value. Integers, floats, bools, strings and lists are JSON values; a bare
/// identifier is a JSON string with `is_identifier` set (it may name an enumeration value, or, in
/// a kernel's `sugar` call, one of the kernel's own parameters).
struct Literal {
  nlohmann::json value;
  bool is_identifier = false;
  SourcePos pos;
};

struct Call;

struct TensorExpr {
  std::string name;            // a variable, when `call` is null
  std::shared_ptr<Call> call;  // a nested call
  SourcePos pos;

  [[nodiscard]] bool is_call() const { return call != nullptr; }
};

struct Keyword {
  std::string name;
  Literal value;
  SourcePos pos;
};

struct Call {
  std::string callee;
  std::vector<TensorExpr> args;
  std::vector<Keyword> keywords;
  SourcePos pos;  // of the callee name
};

struct Decl {
  std::string name;
  TensorType type;  // for a dtype kernels do not take, its dtype is a placeholder (f32)
  SourcePos pos;
  /// The dtype as written: type.dtype, or one kernels do not take — a loom-only dtype (`bool`,
  /// `int8`, …) or an unknown spelling (`"boolean"`) — which only operation statements may use.
  ir::LoomDType dtype;
};

struct OutputName {
  std::string name;
  SourcePos pos;
};

struct Assign {
  std::string name;
  TensorExpr value;
  SourcePos pos;
  /// Further variables (`dW, db = grad(L, W, b)`): only `grad` assigns several.
  std::vector<OutputName> more_names;
};

struct Output {
  std::vector<OutputName> names;
  SourcePos pos;
};

/// `update W <- Wn, b <- bn`: after a step, `Wn`'s value becomes graph input `W`'s
/// (ir/state_update.h).
struct UpdatePair {
  OutputName state;
  OutputName next;
};
struct Update {
  std::vector<UpdatePair> pairs;
  SourcePos pos;
};

/// `operation {JSON}`: an operation given as its loom node (label, body, tags; no id) whose
/// selections name tensors by variable (`"tensorId": "X"`) — how `tapestry print` writes an
/// operation its kernel would not rebuild exactly (docs/language.md, "Operation statements").
struct OperationStmt {
  nlohmann::json node;  // the object
  SourcePos pos;        // of the `operation` keyword
};

using Statement = std::variant<Decl, Assign, Output, Update, OperationStmt>;

/// `dim batch = 8`: a size variable (tap_parser.h). Its value is already substituted wherever the
/// program uses it; the declaration is kept so tools can list a program's dims.
struct DimDecl {
  std::string name;
  std::int64_t value = 0;     // the value the program was parsed with (a binding, else `declared`)
  std::int64_t declared = 0;  // the value its statement gives
  SourcePos pos;
};

struct Program {
  SourceFilePtr file;
  std::vector<Statement> statements;
  std::vector<DimDecl> dims;  // in the order declared
};

/// .tap text of a name: itself when it is an identifier, else a string (`"op:add"`).
std::string name_to_string(const std::string& name);

/// .tap text of a literal: `2`, `0.5`, `true`, `"text"`, `max`, `[1, 2]`.
std::string literal_to_string(const nlohmann::json& value, bool is_identifier = false);

/// .tap text of a call: `conv2d(pad(x, padding=padding), w, stride=stride)`.
std::string call_to_string(const Call& call);

}  // namespace tapestry::metakernel::tap
