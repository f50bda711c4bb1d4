#include "graph_views.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "json.h"
#include "plans.h"
#include "py_graph.h"
#include "tapestry/export/graphviz.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/apply.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/runtime/tensor_map.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/text.h"

namespace tapestry::python {

namespace py = pybind11;

namespace {

py::tuple to_tuple(const zspace::Point& p) {
  py::tuple t(p.rank());
  for (std::size_t k = 0; k < p.rank(); ++k) t[k] = py::int_(p[k]);
  return t;
}

// {"x": [Selection(...)], …} for one selection map.
py::dict selections(const ir::Graph& graph, const ir::SelectionMap& map) {
  py::dict out;
  for (const auto& entry : map.entries()) {
    const py::str name(entry.name);
    if (!out.contains(name)) out[name] = py::list();
    const std::string tensor = entry.value.tensor.is_valid()
                                   ? runtime::tensor_name(graph, entry.value.tensor)
                                   : std::string("<unresolved>");
    out[name].cast<py::list>().append(py::make_tuple(tensor, entry.value.range));
  }
  return out;
}

void bind_range(py::module_& m) {
  py::class_<zspace::Range>(m, "Range",
                            "A box of integer points: start inclusive, end exclusive, per dim.")
      .def(py::init(
               [](const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& end) {
                 return zspace::Range(zspace::Point(start), zspace::Point(end));
               }),
           py::arg("start"), py::arg("end"))
      .def_static(
          "parse", [](const std::string& text) { return zspace::parse_range(text); },
          py::arg("text"), "Parses `zr[0:2, 0:3]`.")
      .def_property_readonly("start", [](const zspace::Range& r) { return to_tuple(r.start()); })
      .def_property_readonly("end", [](const zspace::Range& r) { return to_tuple(r.end()); })
      .def_property_readonly("shape", [](const zspace::Range& r) { return to_tuple(r.shape()); })
      .def_property_readonly("rank", &zspace::Range::rank)
      .def_property_readonly("size", &zspace::Range::size, "The number of points.")
      .def("__eq__", [](const zspace::Range& a, const zspace::Range& b) { return a == b; })
      .def("__hash__",
           [](const zspace::Range& r) { return py::hash(py::str(fmt::format("{}", r))); })
      .def("__str__", [](const zspace::Range& r) { return fmt::format("{}", r); })
      .def("__repr__", [](const zspace::Range& r) { return fmt::format("Range({})", r); });
}

void bind_tensor(py::module_& m) {
  py::class_<TensorRef>(m, "Tensor", "A tensor of a graph (a builder handle while building).")
      .def_property_readonly(
          "name", [](const TensorRef& t) { return runtime::tensor_name(*t.ref.graph, t.id); },
          "Its label: the input's or operation's name.")
      .def_property_readonly(
          "dtype",
          [](const TensorRef& t) { return std::string(t.ref.graph->tensor(t.id).dtype().name()); },
          "float32, float64, int32, int64, bfloat16, float16.")
      .def_property_readonly(
          "shape",
          [](const TensorRef& t) { return to_tuple(t.ref.graph->tensor(t.id).range().shape()); })
      .def_property_readonly(
          "range", [](const TensorRef& t) { return t.ref.graph->tensor(t.id).range(); },
          "Its coordinates (a tensor may start anywhere, e.g. zr[-40:60, 20:32]).")
      .def_property_readonly(
          "graph", [](const TensorRef& t) { return t.builder; },
          "The graph being built it belongs to (None for a loaded or sharded graph's tensor).")
      .def_property_readonly(
          "is_input", [](const TensorRef& t) { return t.ref.graph->producers(t.id).empty(); },
          "No operation computes it: a run needs it.")
      .def_property_readonly(
          "is_output",
          [](const TensorRef& t) { return metakernel::is_graph_output(*t.ref.graph, t.id); },
          "Marked by `output` (or, in a graph with none marked, consumed by nothing).")
      .def("__repr__", [](const TensorRef& t) {
        const ir::TensorView v = t.ref.graph->tensor(t.id);
        return fmt::format("Tensor('{}', {} {})", runtime::tensor_name(*t.ref.graph, t.id),
                           v.dtype().name(), v.range());
      });
}

void bind_operation(py::module_& m) {
  py::class_<OperationRef>(m, "Operation", "An operation: a kernel over an index space.")
      .def_property_readonly("name",
                             [](const OperationRef& o) { return o.ref.graph->display_name(o.id); })
      .def_property_readonly(
          "kernel", [](const OperationRef& o) { return o.ref.graph->operation(o.id).kernel(); })
      .def_property_readonly(
          "params",
          [](const OperationRef& o) { return to_python(o.ref.graph->operation(o.id).params()); })
      .def_property_readonly(
          "index", [](const OperationRef& o) { return o.ref.graph->operation(o.id).ipf_index(); },
          "Its index space (a Range), or None.")
      .def_property_readonly(
          "index_names",
          [](const OperationRef& o) { return o.ref.graph->operation(o.id).index_names(); })
      .def_property_readonly(
          "reductions",
          [](const OperationRef& o) {
            py::dict out;
            for (const ir::Reduction& r : o.ref.graph->operation(o.id).body().reductions)
              out[py::str(r.dim)] = std::string(ir::monoid_name(r.monoid));
            return out;
          })
      .def_property_readonly(
          "inputs",
          [](const OperationRef& o) {
            return selections(*o.ref.graph, o.ref.graph->operation(o.id).inputs());
          },
          "{port: [(tensor name, Range), …]}")
      .def_property_readonly("outputs",
                             [](const OperationRef& o) {
                               return selections(*o.ref.graph,
                                                 o.ref.graph->operation(o.id).outputs());
                             })
      .def_property_readonly("applications",
                             [](const OperationRef& o) {
                               py::list out;
                               for (ir::ApplicationId a : o.ref.graph->applications_of(o.id))
                                 out.append(ApplicationRef{o.ref, a});
                               return out;
                             })
      .def("__repr__", [](const OperationRef& o) {
        const ir::OperationView v = o.ref.graph->operation(o.id);
        const std::optional<zspace::Range> index = v.ipf_index();
        return fmt::format("Operation('{}', {}, index {}, {} applications)",
                           o.ref.graph->display_name(o.id), v.kernel(),
                           index ? fmt::format("{}", *index) : "none",
                           o.ref.graph->applications_of(o.id).size());
      });
}

void bind_application(py::module_& m) {
  py::class_<ApplicationRef>(m, "Application",
                             "One shard of an operation: its index sub-box and the tensor "
                             "boxes it reads and writes.")
      .def_property_readonly(
          "name", [](const ApplicationRef& a) { return a.ref.graph->display_name(a.id); })
      .def_property_readonly(
          "operation",
          [](const ApplicationRef& a) {
            return a.ref.graph->display_name(a.ref.graph->application(a.id).operation());
          })
      .def_property_readonly(
          "index",
          [](const ApplicationRef& a) { return a.ref.graph->application(a.id).ipf_index(); })
      .def_property_readonly(
          "inputs",
          [](const ApplicationRef& a) {
            return selections(*a.ref.graph, a.ref.graph->application(a.id).inputs());
          },
          "{port: [(tensor name, Range), …]}")
      .def_property_readonly("outputs",
                             [](const ApplicationRef& a) {
                               return selections(*a.ref.graph,
                                                 a.ref.graph->application(a.id).outputs());
                             })
      .def("__repr__", [](const ApplicationRef& a) {
        const std::optional<zspace::Range> index = a.ref.graph->application(a.id).ipf_index();
        return fmt::format("Application('{}', index {})", a.ref.graph->display_name(a.id),
                           index ? fmt::format("{}", *index) : "none");
      });
}

void bind_sharded(py::module_& m) {
  py::class_<ShardedGraph>(m, "ShardedGraph",
                           "A graph lowered under a plan: every operation cut into applications.")
      .def_property_readonly("operations",
                             [](const ShardedGraph& s) { return operation_list(s.ref()); })
      .def_property_readonly("applications",
                             [](const ShardedGraph& s) { return application_list(s.ref()); })
      .def_property_readonly("tensors", [](const ShardedGraph& s) { return tensor_list(s.ref()); })
      .def_property_readonly(
          "log",
          [](const ShardedGraph& s) {
            std::vector<std::string> lines;
            for (const rewrite::RewriteEvent& e : s.lowered->log) lines.push_back(e.to_string());
            return lines;
          },
          "The rewrites applied and refused, as `tapestry shard --explain` prints them.")
      .def_property_readonly(
          "plan", [](const ShardedGraph& s) { return to_python(s.lowered->plan.to_json()); },
          "The plan as the rewrites left it (it names the final operations).")
      .def(
          "to_json", [](const ShardedGraph& s) { return ir::write_graph_json(s.lowered->graph); },
          "The loom JSON text of the application graph.")
      .def(
          "save",
          [](const ShardedGraph& s, const py::object& path) {
            ir::write_graph_file(s.lowered->graph, fspath(path));
          },
          py::arg("path"), "Writes the loom JSON (as `tapestry shard -o`).")
      .def(
          "to_dot", [](const ShardedGraph& s) { return exporter::to_dot(s.lowered->graph); },
          "Graphviz DOT text.")
      .def("_repr_svg_", [](const ShardedGraph& s) { return render_svg(s.lowered->graph); })
      .def("__repr__", [](const ShardedGraph& s) {
        return fmt::format("ShardedGraph({} operations, {} applications)",
                           s.lowered->graph.operations().size(),
                           s.lowered->graph.applications().size());
      });
}

}  // namespace

py::list tensor_list(const GraphRef& graph) {
  py::list out;
  for (ir::TensorId t : graph.graph->tensors()) out.append(TensorRef{graph, t, nullptr, {}});
  return out;
}

py::list operation_list(const GraphRef& graph) {
  py::list out;
  for (ir::OperationId o : graph.graph->operations()) out.append(OperationRef{graph, o});
  return out;
}

py::list application_list(const GraphRef& graph) {
  py::list out;
  for (ir::ApplicationId a : graph.graph->applications()) out.append(ApplicationRef{graph, a});
  return out;
}

std::string render_svg(const ir::Graph& graph) {
  return exporter::render_dot(exporter::to_dot(graph), exporter::ImageFormat::kSvg);
}

void bind_views(py::module_& m) {
  bind_range(m);
  bind_tensor(m);
  bind_operation(m);
  bind_application(m);
  bind_sharded(m);
}

}  // namespace tapestry::python
