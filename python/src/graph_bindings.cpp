// tapestry.Graph: loading, parsing, the builder and inspection.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "errors.h"
#include "graph_views.h"
#include "json.h"
#include "plans.h"
#include "py_graph.h"
#include "tapestry/export/graphviz.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/metakernel/describe.h"
#include "tapestry/metakernel/printer.h"
#include "tapestry/runtime/tensor_map.h"

namespace tapestry::python {

namespace py = pybind11;

namespace {

using GraphPtr = std::shared_ptr<PyGraph>;

std::vector<std::string> kernel_dirs(const py::object& kernels) {
  std::vector<std::string> dirs;
  if (kernels.is_none()) return dirs;
  if (py::isinstance<py::str>(kernels) || py::hasattr(kernels, "__fspath__")) {
    dirs.push_back(fspath(kernels));
    return dirs;
  }
  for (py::handle d : kernels) dirs.push_back(fspath(d));
  return dirs;
}

GraphRef ref_of(const GraphPtr& g) {
  return {g, &g->current()};
}

TensorRef tensor_ref(const GraphPtr& g, metakernel::Tensor t) {
  return {ref_of(g), t.id(), g, t};
}

// "f32", "float32", numpy.float32, numpy.dtype("float32") → the dtype.
ir::DType parse_dtype_arg(const py::handle& value) {
  std::string name;
  if (py::isinstance<py::str>(value)) {
    name = value.cast<std::string>();
  } else {
    name = py::str(py::module_::import("numpy").attr("dtype")(value).attr("name"));
  }
  if (std::optional<ir::DType> d = ir::parse_tap_dtype(name)) return *d;
  throw GraphError(
      fmt::format("dtype '{}': expected one of f32 f64 i32 i64 bf16 f16 (or "
                  "float32, float64, …, or a numpy dtype)",
                  name));
}

// The builder handles of `inputs`, all of one graph being built.
std::vector<metakernel::Tensor> call_inputs(std::string_view kernel,
                                            const std::vector<TensorRef>& inputs) {
  std::vector<metakernel::Tensor> handles;
  for (const TensorRef& t : inputs) {
    if (!t.handle) {
      throw GraphError(
          fmt::format("{}: tensor '{}' is not from a graph being built (only a "
                      "tapestry.Graph() takes new operations)",
                      kernel, runtime::tensor_name(*t.ref.graph, t.id)));
    }
    if (t.builder != inputs.front().builder) {
      throw GraphError(fmt::format("{}: the inputs come from different graphs", kernel));
    }
    handles.push_back(*t.handle);
  }
  return handles;
}

TensorRef call_kernel(const std::string& kernel, const std::vector<TensorRef>& inputs,
                      const py::dict& params) {
  if (inputs.empty()) throw GraphError(fmt::format("{}: give at least one input tensor", kernel));
  const std::vector<metakernel::Tensor> handles = call_inputs(kernel, inputs);
  const GraphPtr& g = inputs.front().builder;
  return tensor_ref(g, g->call(kernel, handles, from_python(params, "kernel parameters")));
}

// `dims={"batch": 32}` → the parser's bindings; InputError for anything else.
metakernel::tap::DimBindings dim_bindings(const py::object& dims) {
  metakernel::tap::DimBindings out;
  if (dims.is_none()) return out;
  if (!py::isinstance<py::dict>(dims))
    throw InputError("dims: expected a dict of dim names to sizes, e.g. {\"batch\": 32}");
  for (const auto& [key, value] : dims.cast<py::dict>()) {
    if (!py::isinstance<py::str>(key) || !py::isinstance<py::int_>(value) ||
        py::isinstance<py::bool_>(value)) {
      throw InputError("dims: expected a dict of dim names to sizes, e.g. {\"batch\": 32}");
    }
    metakernel::tap::add_dim_binding(
        out, fmt::format("{}={}", key.cast<std::string>(), value.cast<long long>()));
  }
  return out;
}

}  // namespace

void bind_graph(py::module_& m, GraphClass& graph) {
  m.def(
      "load",
      [](const py::object& path, const py::object& kernels, const py::object& dims) {
        const std::string file = fspath(path);
        Signatures signatures = load_signatures(kernel_dirs(kernels));
        ir::Graph g = load_graph_file(file, *signatures, dim_bindings(dims));
        return std::make_shared<PyGraph>(std::move(g), std::move(signatures), file);
      },
      py::arg("path"), py::arg("kernels") = py::none(), py::arg("dims") = py::none());
  m.def(
      "parse",
      [](const std::string& text, const std::string& name, const py::object& kernels,
         const py::object& dims) {
        Signatures signatures = load_signatures(kernel_dirs(kernels));
        ir::Graph g = parse_tap_text(text, name, *signatures, dim_bindings(dims));
        return std::make_shared<PyGraph>(std::move(g), std::move(signatures), name);
      },
      py::arg("text"), py::arg("name") = "<string>", py::arg("kernels") = py::none(),
      py::arg("dims") = py::none());
  m.def("call", &call_kernel, py::arg("kernel"), py::arg("inputs"), py::arg("params"));
  m.def(
      "kernels",
      [](const py::object& kernels) {
        std::vector<std::string> names;
        for (const metakernel::Metakernel* k : load_signatures(kernel_dirs(kernels))->metakernels())
          names.push_back(k->name);
        return names;
      },
      py::arg("kernels") = py::none());
  m.def(
      "describe_kernel",
      [](const std::string& name) {
        return rethrow_as<Error>([&] {
          return metakernel::describe_kernel(metakernel::builtin_signatures().get(name));
        });
      },
      py::arg("name"));

  graph
      .def(py::init([](const py::object& kernels) {
             return std::make_shared<PyGraph>(load_signatures(kernel_dirs(kernels)));
           }),
           py::arg("kernels") = py::none())
      .def(
          "input",
          [](const GraphPtr& g, const std::string& name, const py::object& dtype,
             const std::vector<std::int64_t>& shape,
             const std::optional<std::vector<std::int64_t>>& start) {
            for (std::int64_t extent : shape) {
              if (extent < 0)
                throw GraphError(fmt::format("input {}: size {} is negative", name, extent));
            }
            std::vector<std::int64_t> first =
                start.value_or(std::vector<std::int64_t>(shape.size(), 0));
            if (first.size() != shape.size()) {
              throw GraphError(fmt::format("input {}: start has {} dims, shape {}", name,
                                           first.size(), shape.size()));
            }
            std::vector<std::int64_t> end(shape.size());
            for (std::size_t k = 0; k < shape.size(); ++k) end[k] = first[k] + shape[k];
            const zspace::Range range = rethrow_as<GraphError>(
                [&] { return zspace::Range(zspace::Point(first), zspace::Point(end)); });
            return tensor_ref(g, g->input(name, parse_dtype_arg(dtype), range));
          },
          py::arg("name"), py::arg("dtype"), py::arg("shape"), py::arg("start") = py::none())
      .def(
          "assign",
          [](const GraphPtr& g, const std::string& name, const TensorRef& value) {
            const std::vector<metakernel::Tensor> h = call_inputs("assign", {value});
            if (value.builder != g) throw GraphError("assign: the tensor is not from this graph");
            return tensor_ref(g, g->assign(name, h.front()));
          },
          py::arg("name"), py::arg("value"))
      .def("output",
           [](const GraphPtr& g, const py::args& args) {
             if (args.empty() || args.size() > 2) {
               throw py::type_error("output(tensor) or output(name, tensor)");
             }
             TensorRef value = args[args.size() - 1].cast<TensorRef>();
             const std::vector<metakernel::Tensor> h = call_inputs("output", {value});
             if (value.builder != g) throw GraphError("output: the tensor is not from this graph");
             metakernel::Tensor t = h.front();
             if (args.size() == 2) {
               const std::string name = args[0].cast<std::string>();
               if (t.name() != name) t = g->assign(name, t);
             }
             g->output(t);
             return tensor_ref(g, t);
           })
      .def(
          "update",
          [](const GraphPtr& g, const TensorRef& state, const TensorRef& next) {
            const std::vector<metakernel::Tensor> h = call_inputs("update", {state, next});
            if (state.builder != g || next.builder != g) {
              throw GraphError("update: the tensors are not from this graph");
            }
            g->update(h[0], h[1]);
          },
          py::arg("state"), py::arg("next"))
      .def(
          "grad",
          [](const GraphPtr& g, const TensorRef& loss, const std::vector<TensorRef>& wrt,
             const std::optional<TensorRef>& seed,
             const std::optional<std::vector<std::string>>& names) {
            std::vector<TensorRef> all{loss};
            all.insert(all.end(), wrt.begin(), wrt.end());
            if (seed) all.push_back(*seed);
            const std::vector<metakernel::Tensor> h = call_inputs("grad", all);
            if (loss.builder != g) throw GraphError("grad: the loss is not from this graph");
            metakernel::GradOptions options;
            if (seed) options.seed = h.back();
            if (names) options.names = *names;
            std::vector<ir::Issue> issues;
            options.issues = &issues;
            const std::vector<metakernel::Tensor> grads =
                g->grad(h.front(),
                        std::vector<metakernel::Tensor>(
                            h.begin() + 1, h.begin() + 1 + static_cast<std::ptrdiff_t>(wrt.size())),
                        options);
            for (const ir::Issue& issue : issues) {
              PyErr_WarnEx(PyExc_UserWarning,
                           fmt::format("{}: {}", issue.summary, issue.message).c_str(), 1);
            }
            std::vector<TensorRef> out;
            for (const metakernel::Tensor& t : grads) out.push_back(tensor_ref(g, t));
            return out;
          },
          py::arg("loss"), py::arg("wrt"), py::arg("seed") = py::none(),
          py::arg("names") = py::none())
      .def("__getitem__",
           [](const GraphPtr& g, const std::string& name) {
             const ir::TensorId id =
                 rethrow_as<GraphError>([&] { return runtime::find_tensor(g->current(), name); });
             return TensorRef{ref_of(g), id, g->is_built() ? g : nullptr, g->handle(id)};
           })
      .def("__setitem__",
           [](const GraphPtr& g, const std::string& name, const TensorRef& value) {
             const std::vector<metakernel::Tensor> h = call_inputs("assign", {value});
             (void)g->assign(name, h.front());
           })
      .def("__contains__",
           [](const GraphPtr& g, const std::string& name) {
             for (ir::TensorId t : g->current().tensors())
               if (runtime::tensor_name(g->current(), t) == name) return true;
             return false;
           })
      .def_property_readonly(
          "inputs",
          [](const GraphPtr& g) {
            std::vector<TensorRef> out;
            for (ir::TensorId t : runtime::graph_inputs(g->current()))
              out.push_back({ref_of(g), t, g->is_built() ? g : nullptr, g->handle(t)});
            return out;
          })
      .def_property_readonly(
          "outputs",
          [](const GraphPtr& g) {
            std::vector<TensorRef> out;
            for (ir::TensorId t : runtime::graph_outputs(g->current()))
              out.push_back({ref_of(g), t, g->is_built() ? g : nullptr, g->handle(t)});
            return out;
          })
      .def_property_readonly("tensors", [](const GraphPtr& g) { return tensor_list(ref_of(g)); })
      .def_property_readonly("operations",
                             [](const GraphPtr& g) { return operation_list(ref_of(g)); })
      .def_property_readonly("source", &PyGraph::source)
      .def("validate", [](const GraphPtr& g) { (void)g->validated(); })
      .def("to_json", [](const GraphPtr& g) { return ir::write_graph_json(g->current()); })
      .def(
          "save",
          [](const GraphPtr& g, const py::object& path) {
            ir::write_graph_file(*g->validated(), fspath(path));
          },
          py::arg("path"))
      .def("to_tap",
           [](const GraphPtr& g) { return metakernel::print_tap(g->current(), g->signatures()); })
      .def(
          "to_dot",
          [](const GraphPtr& g, const std::string& detail) {
            exporter::RenderOptions options;
            if (detail == "full") {
              options.detail = exporter::Detail::kFull;
            } else if (detail == "summary") {
              options.detail = exporter::Detail::kSummary;
            } else if (detail != "auto") {
              throw InputError(fmt::format(
                  "to_dot: detail must be 'auto', 'full' or 'summary', not '{}'", detail));
            }
            return exporter::to_dot(g->current(), options);
          },
          py::arg("detail") = "auto")
      .def("_repr_svg_", [](const GraphPtr& g) { return render_svg(g->current()); })
      .def(
          "shard",
          [](const GraphPtr& g, const py::object& plan) {
            const std::shared_ptr<const ir::Graph> snapshot = g->validated();
            const rewrite::Plan p = plan_from_python(plan);
            auto lowered = std::make_shared<const rewrite::LowerResult>(
                rewrite::lower(*snapshot, p,
                               {.driver = {},
                                .validate = true,
                                .check_kernels = true,
                                .signatures = &g->signatures()}));
            return ShardedGraph{std::move(lowered)};
          },
          py::arg("plan"))
      .def("release", &PyGraph::release)
      .def("__repr__", [](const GraphPtr& g) {
        const ir::Graph& ir = g->current();
        return fmt::format("Graph({}: {} inputs, {} operations, outputs {})", g->source(),
                           runtime::graph_inputs(ir).size(), ir.operations().size(), [&] {
                             std::vector<std::string> names;
                             for (ir::TensorId t : runtime::graph_outputs(ir))
                               names.push_back(runtime::tensor_name(ir, t));
                             return fmt::format("{}", fmt::join(names, ", "));
                           }());
      });
}

}  // namespace tapestry::python
