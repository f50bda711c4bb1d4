// Graph.optimize: the plan search of `tapestry optimize` (search/optimize.h) from Python. The
// front comes back as its JSON form plus its SVG picture; tapestry/front.py wraps them in a Front
// of Python objects (plans as dicts that Graph.run, cost and explain take).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "errors.h"
#include "json.h"
#include "plans.h"
#include "py_graph.h"
#include "tapestry/search/front_plot.h"
#include "tapestry/search/objectives.h"
#include "tapestry/search/optimize.h"

namespace tapestry::python {

namespace py = pybind11;

namespace {

std::vector<search::Objective> objectives_of(const py::object& objectives) {
  if (objectives.is_none()) return search::OptimizeOptions{}.objectives;
  if (py::isinstance<py::str>(objectives)) {
    return search::parse_objectives(objectives.cast<std::string>());
  }
  std::vector<std::string> names;
  for (py::handle o : objectives) names.push_back(py::str(o).cast<std::string>());
  return search::parse_objectives(fmt::format("{}", fmt::join(names, ",")));
}

py::tuple optimize(const std::shared_ptr<PyGraph>& g, const py::object& target,
                   const py::object& objectives, std::optional<double> time_budget,
                   std::optional<std::uint64_t> max_evals, std::uint64_t seed,
                   std::optional<int> threads, const py::object& max_memory_per_device,
                   std::optional<std::int64_t> max_devices, bool tie_layers) {
  if (!time_budget && !max_evals) {
    throw py::value_error("optimize: give time_budget (seconds) or max_evals, or both");
  }
  const std::shared_ptr<const ir::Graph> snapshot = g->validated();
  const TargetArg t = target_from_python(target);
  search::OptimizeOptions options;
  options.objectives = objectives_of(objectives);
  if (py::isinstance<py::str>(max_memory_per_device)) {  // "80G", as the CLI takes it
    options.constraints.max_memory_per_device =
        search::parse_byte_size(max_memory_per_device.cast<std::string>(), "max_memory_per_device");
  } else if (!max_memory_per_device.is_none()) {
    options.constraints.max_memory_per_device = max_memory_per_device.cast<std::int64_t>();
  }
  options.constraints.max_devices = max_devices.value_or(0);
  options.seed = seed;
  options.threads = threads.value_or(0);
  options.time_budget_s = time_budget.value_or(0);
  options.max_evaluations = max_evals.value_or(0);
  options.tie_layers = tie_layers;
  options.lower.signatures = &g->signatures();
  const std::string target_name = t.target.name;
  nlohmann::json front;
  std::string svg;
  {
    const py::gil_scoped_release release;
    search::Optimizer optimizer(*snapshot, t.target, options);
    const search::OptimizeResult result = optimizer.run();
    front = search::front_json(result, g->source(), target_name);
    svg = search::front_svg(result.archive, fmt::format("{} on {}", g->source(), target_name));
  }
  return py::make_tuple(to_python(front), svg);
}

}  // namespace

void bind_optimize(py::module_& m) {
  m.def("_optimize", &optimize, py::arg("graph"), py::arg("target"), py::arg("objectives"),
        py::arg("time_budget"), py::arg("max_evals"), py::arg("seed"), py::arg("threads"),
        py::arg("max_memory_per_device"), py::arg("max_devices"), py::arg("tie_layers"),
        "The search behind Graph.optimize: (front JSON, front SVG).");
}

}  // namespace tapestry::python
