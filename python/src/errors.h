// The Python package's error kinds, and how C++ errors become Python exceptions.
//
// Bad input stays `tapestry::Error` in the C++ layers; the bindings know which kind it is and
// throw one of these subclasses, which the translator turns into the classes of
// tapestry/errors.py (so Python code can catch them by kind):
//
//   tapestry::Error             → tapestry.Error             (plans, targets, files, …)
//   GraphError                  → tapestry.GraphError        (the graph does not build or validate)
//   InputError                  → tapestry.InputError        (run inputs: names, dtypes, shapes)
//   VerificationFailed          → tapestry.VerificationError (verify=True and an output FAILs)
//
// Every message is the C++ one, with its location (file:line:col, node id, JSON path). Where the
// engine located the problem as data (support::Diagnostic: a support::DiagnosticError, a .tap
// build's diagnostics, a graph's validation issues), the exception also carries that list as
// `diagnostics`, each a dict written by diagnostic_to_json (one serializer):
//
//   {"severity": "error", "message": "linear: X has 12 columns but W has 10 (its in dimension)",
//    "file": "bad.tap", "line": 4, "column": 10,
//    "text": "bad.tap:4:10: error: linear: X has 12 columns …"}    (text: the one formatter's)
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>
#include <nlohmann/json.hpp>

#include "tapestry/support/diagnostic.h"
#include "tapestry/support/error.h"

namespace tapestry::python {

/// A kind of bad input the bindings name (GraphError, InputError below), keeping the located
/// diagnostics of the engine's error it was made from, if any.
class KindOfError : public Error {
 public:
  explicit KindOfError(const std::string& what) : Error(what) {}
  /// The message `what`, with the diagnostics it reports as data.
  KindOfError(const std::string& what, std::vector<support::Diagnostic> diagnostics)
      : Error(what), diagnostics_(std::move(diagnostics)) {}
  /// The diagnostics' one formatted text as the message.
  explicit KindOfError(std::vector<support::Diagnostic> diagnostics)
      : Error(support::format_diagnostics(diagnostics)), diagnostics_(std::move(diagnostics)) {}
  explicit KindOfError(const support::DiagnosticError& error)
      : KindOfError(error.what(), error.diagnostics()) {}

  [[nodiscard]] const std::vector<support::Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<support::Diagnostic> diagnostics_;
};

class GraphError : public KindOfError {
 public:
  using KindOfError::KindOfError;
};

class InputError : public KindOfError {
 public:
  using KindOfError::KindOfError;
};

/// A diagnostic as JSON: severity, code (when it has one), message, the Location's fields that
/// are set (file, line, column, pointer, node, node_note) and its formatted `text`.
nlohmann::json diagnostic_to_json(const support::Diagnostic& diagnostic);

/// A failed verification: the report's text is the message; its JSON and the outputs that were
/// computed travel with it (as the exception's `report` and `outputs`).
class VerificationFailed : public Error {
 public:
  VerificationFailed(const std::string& text, nlohmann::json report, pybind11::object outputs)
      : Error(text), report_(std::move(report)), outputs_(std::move(outputs)) {}

  [[nodiscard]] const nlohmann::json& report() const { return report_; }
  [[nodiscard]] const pybind11::object& outputs() const { return outputs_; }

 private:
  nlohmann::json report_;
  pybind11::object outputs_;
};

/// Calls `fn`, rethrowing a plain tapestry::Error as `Kind` (the more specific kinds pass; a
/// located error's diagnostics go along).
template <typename Kind, typename Fn>
decltype(auto) rethrow_as(Fn&& fn) {
  try {
    return fn();
  } catch (const GraphError&) {
    throw;
  } catch (const InputError&) {
    throw;
  } catch (const VerificationFailed&) {
    throw;
  } catch (const support::DiagnosticError& e) {
    if constexpr (std::is_same_v<Kind, Error>)
      throw;
    else
      throw Kind(e);
  } catch (const Error& e) {
    throw Kind(e.what());
  }
}

/// Registers the translator (tapestry::Error and its kinds → tapestry.errors).
void register_error_translator();

}  // namespace tapestry::python
