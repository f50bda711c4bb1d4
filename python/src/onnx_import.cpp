// `tapestry._import_onnx` (tapestry.import_onnx's core): an ONNX model as a Graph and its weights.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "arrays.h"
#include "bindings.h"
#include "errors.h"
#include "plans.h"
#include "py_graph.h"

#ifdef TAPESTRY_HAS_ONNX
#include "tapestry/onnx/import.h"
#endif

namespace py = pybind11;

namespace tapestry::python {

namespace {

// (Graph, {weight name: ndarray}, {"inputs": […], "outputs": […], "opset": n,
// "converted_from": n, "nodes": n, "renames": [(what, from, to), …]}).
py::tuple import_onnx(const py::object& path, const py::dict& shapes) {
#ifdef TAPESTRY_HAS_ONNX
  const std::string file = fspath(path);
  onnx::ImportOptions options;
  for (const auto& [name, dims] : shapes) {
    std::vector<std::int64_t> shape;
    for (const py::handle d : dims) shape.push_back(d.cast<std::int64_t>());
    options.shapes.emplace(name.cast<std::string>(), std::move(shape));
  }
  onnx::ImportResult r =
      rethrow_as<GraphError>([&] { return onnx::import_onnx_file(file, options); });
  py::dict weights;
  for (onnx::Weight& w : r.weights) weights[py::str(w.name)] = to_numpy(std::move(w.value));
  py::list renames;
  for (const onnx::Rename& rn : r.renames) renames.append(py::make_tuple(rn.what, rn.from, rn.to));
  py::dict info;
  info["inputs"] = py::cast(r.inputs);
  info["outputs"] = py::cast(r.outputs);
  info["opset"] = r.opset;
  info["converted_from"] = r.converted_from;
  info["nodes"] = r.nodes;
  info["renames"] = renames;
  auto graph = std::make_shared<PyGraph>(std::move(r.graph), load_signatures({}), file);
  return py::make_tuple(graph, weights, info);
#else
  (void)path;
  (void)shapes;
  throw Error(
      "this tapestry was built without ONNX support: install libonnx-dev and libprotobuf-dev "
      "(scripts/install-deps.sh) and rebuild");
#endif
}

}  // namespace

void bind_onnx(py::module_& m) {
  m.def("_import_onnx", &import_onnx, py::arg("path"), py::arg("shapes"));
}

}  // namespace tapestry::python
