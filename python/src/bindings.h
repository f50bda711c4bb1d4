// The pieces of the extension module `tapestry._core`, bound in module.cpp in this order.
#pragma once

#include <memory>

#include <pybind11/pybind11.h>

namespace tapestry::python {

class PyGraph;
using GraphClass = pybind11::class_<PyGraph, std::shared_ptr<PyGraph>>;

/// Graph (load, parse, the builder, inspection, pictures), `call`, `kernels`.
void bind_graph(pybind11::module_& m, GraphClass& graph);
/// Graph.run and RunInfo.
void bind_run(pybind11::module_& m, GraphClass& graph);
/// Graph.train (the training loop, workflow/train.h).
void bind_train(pybind11::module_& m, GraphClass& graph);
/// Graph.cost, Graph.explain, Cost, Explanation, `targets`.
void bind_pricing(pybind11::module_& m, GraphClass& graph);
/// `_optimize` (Graph.optimize is tapestry/front.py's wrapper around it).
void bind_optimize(pybind11::module_& m);
/// `_import_onnx` (tapestry.import_onnx's core; an error when built without the ONNX importer).
void bind_onnx(pybind11::module_& m);

}  // namespace tapestry::python
