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
// Every message is the C++ one, with its location (file:line:col, node id, JSON path).
#pragma once

#include <string>

#include <pybind11/pybind11.h>
#include <nlohmann/json.hpp>

#include "tapestry/support/error.h"

namespace tapestry::python {

class GraphError : public Error {
 public:
  using Error::Error;
};

class InputError : public Error {
 public:
  using Error::Error;
};

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

/// Calls `fn`, rethrowing a plain tapestry::Error as `Kind` (the more specific kinds pass).
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
  } catch (const Error& e) {
    throw Kind(e.what());
  }
}

/// Registers the translator (tapestry::Error and its kinds → tapestry.errors).
void register_error_translator();

}  // namespace tapestry::python
