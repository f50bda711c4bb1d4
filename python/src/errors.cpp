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

void raise(const char* kind, const char* message) {
  PyErr_SetObject(error_class(kind).ptr(), py::str(message).ptr());
}

}  // namespace

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
      raise("GraphError", e.what());
    } catch (const InputError& e) {
      raise("InputError", e.what());
    } catch (const Error& e) {
      raise("Error", e.what());
    }
  });
}

}  // namespace tapestry::python
