// tapestry._core: the compiled part of the Python package (python/tapestry/__init__.py wraps
// it; docs/python.md is the guide). Every class and function here calls the C++ engine the
// `tapestry` command runs — there is no second implementation.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "errors.h"
#include "graph_views.h"
#include "py_graph.h"

PYBIND11_MODULE(_core, m) {
  namespace py = pybind11;
  using namespace tapestry::python;
  m.doc() = "Tapestry's engine, bound with pybind11 (use the `tapestry` package).";
  register_error_translator();
  bind_views(m);
  GraphClass graph(m, "Graph", "A tensor block-operation graph: built, loaded or parsed.");
  bind_graph(m, graph);
  bind_run(m, graph);
  bind_train(m, graph);
  bind_pricing(m, graph);
  bind_optimize(m);
  bind_onnx(m);
}
