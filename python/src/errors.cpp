#include "errors.h"

#include "json.h"

namespace tapestry::python {

namespace py = pybind11;

namespace {

// The exception classes live in tapestry/errors.py (so they can also derive from ValueError);
// looked up when an error is raised, with the GIL held.
py::object error_class(const char* name) {
  return py::module_::import("tapestry.errors").attr(name);
}

// Raises tapestry.errors.<kind>(message) with its `diagnostics` (empty: the message only).
void raise(const char* kind, const char* message,
           const std::vector<support::Diagnostic>& diagnostics = {}) {
  const py::object error = error_class(kind)(py::str(message));
  py::list list;
  for (const support::Diagnostic& d : diagnostics) list.append(to_python(diagnostic_to_json(d)));
  error.attr("diagnostics") = list;
  PyErr_SetObject(error_class(kind).ptr(), error.ptr());
}

}  // namespace

nlohmann::json diagnostic_to_json(const support::Diagnostic& diagnostic) {
  const support::Location& where = diagnostic.where;
  nlohmann::json j = {{"severity", support::severity_name(diagnostic.severity)}};
  if (!diagnostic.code.empty()) j["code"] = diagnostic.code;
  j["message"] = diagnostic.message;
  if (!where.file.empty()) j["file"] = where.file;
  if (where.pos.is_known()) {
    j["line"] = where.pos.line;
    if (where.pos.column > 0) j["column"] = where.pos.column;
  }
  if (!where.pointer.empty()) j["pointer"] = where.pointer;
  if (!where.node.empty()) j["node"] = where.node;
  if (!where.node_note.empty()) j["node_note"] = where.node_note;
  j["text"] = support::format_diagnostic(diagnostic);
  return j;
}

void register_error_translator() {
  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const VerificationFailed& e) {
      py::object error = error_class("VerificationError")(py::str(e.what()));
      error.attr("report") = to_python(e.report());
      error.attr("outputs") = e.outputs();
      PyErr_SetObject(error_class("VerificationError").ptr(), error.ptr());
    } catch (const GraphError& e) {
      raise("GraphError", e.what(), e.diagnostics());
    } catch (const InputError& e) {
      raise("InputError", e.what(), e.diagnostics());
    } catch (const support::DiagnosticError& e) {
      raise("Error", e.what(), e.diagnostics());
    } catch (const Error& e) {
      raise("Error", e.what());
    }
  });
}

}  // namespace tapestry::python
