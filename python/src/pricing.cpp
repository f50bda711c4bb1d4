// Graph.cost and Graph.explain: a plan priced on a target without running it, as `tapestry
// cost` and `tapestry explain` price it. `cost` goes through the graph's kept cost::Evaluator
// (equal to lower → place → simulate, bit for bit, and fast when many plans of one graph are
// priced on one target, as a notebook loop does); `explain` through the reference path.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "errors.h"
#include "json.h"
#include "plans.h"
#include "py_graph.h"
#include "tapestry/cost/explain.h"
#include "tapestry/cost/placement.h"
#include "tapestry/cost/simulate.h"
#include "tapestry/workflow/calibration.h"
#include "tapestry/workflow/price.h"

namespace tapestry::python {

namespace py = pybind11;

namespace {

cost::CostVector price(const std::shared_ptr<PyGraph>& g, const py::object& plan,
                       const py::object& target) {
  const std::shared_ptr<const ir::Graph> snapshot = g->validated();
  const rewrite::Plan p = plan_from_python(plan);
  const TargetArg t = target_from_python(target);
  const py::gil_scoped_release release;
  const std::lock_guard lock(g->work_mutex());
  return g->evaluator(snapshot, t.key, t.target).evaluate(p);
}

cost::Explanation explain_plan(const std::shared_ptr<PyGraph>& g, const py::object& plan,
                               const py::object& target) {
  const std::shared_ptr<const ir::Graph> snapshot = g->validated();
  const rewrite::Plan plan_value = plan_from_python(plan);
  const TargetArg t = target_from_python(target);
  const py::gil_scoped_release release;
  // As `tapestry explain`: with the gains against one device and against data parallelism.
  const workflow::Priced p = workflow::price(*snapshot, plan_value, t.target,
                                             {.lower = {.driver = {},
                                                        .validate = true,
                                                        .check_kernels = true,
                                                        .signatures = &g->signatures()},
                                              .baselines = true,
                                              .plan_source = {}});
  cost::Explanation e = cost::explain(p.lowered.graph, p.placement, p.target, p.cost, p.schedule);
  e.gains = p.gains;
  return e;
}

std::string cost_repr(const cost::CostVector& c) {
  return fmt::format(
      "Cost(makespan {:.6g} s, peak memory {} B, {} devices, {:.6g} J, {} B moved{})", c.makespan_s,
      c.peak_memory_bytes, c.devices_used, c.energy_j, c.bytes_moved,
      c.fits ? "" : ", does NOT fit");
}

void bind_cost_classes(py::module_& m) {
  py::class_<cost::DeviceCost>(m, "DeviceCost", "One device's share of a Cost.")
      .def_readonly("device", &cost::DeviceCost::device)
      .def_readonly("applications", &cost::DeviceCost::applications)
      .def_readonly("compute_s", &cost::DeviceCost::compute_s)
      .def_readonly("comm_s", &cost::DeviceCost::comm_s)
      .def_readonly("idle_s", &cost::DeviceCost::idle_s)
      .def_readonly("finish_s", &cost::DeviceCost::finish_s)
      .def_readonly("peak_memory_bytes", &cost::DeviceCost::peak_memory_bytes)
      .def_readonly("bytes_sent", &cost::DeviceCost::bytes_sent)
      .def_readonly("bytes_received", &cost::DeviceCost::bytes_received)
      .def_readonly("energy_j", &cost::DeviceCost::energy_j)
      .def("__repr__", [](const cost::DeviceCost& d) {
        return fmt::format("DeviceCost('{}', {} applications, compute {:.6g} s)", d.device,
                           d.applications, d.compute_s);
      });
  py::class_<cost::CostVector>(m, "Cost", "What a plan costs on a target (`tapestry cost --json`).")
      .def_readonly("makespan_s", &cost::CostVector::makespan_s)
      .def_readonly("peak_memory_bytes", &cost::CostVector::peak_memory_bytes,
                    "The largest per-device peak.")
      .def_readonly("devices_used", &cost::CostVector::devices_used)
      .def_readonly("devices_held", &cost::CostVector::devices_held,
                    "Every device on a node the plan uses.")
      .def_readonly("energy_j", &cost::CostVector::energy_j)
      .def_readonly("idle_energy_j", &cost::CostVector::idle_energy_j,
                    "The idle power of every device held, over the makespan.")
      .def_readonly("bytes_moved", &cost::CostVector::bytes_moved)
      .def_readonly("fits", &cost::CostVector::fits, "Every device's peak fits its memory.")
      .def_readonly("per_device", &cost::CostVector::per_device)
      .def(
          "to_dict", [](const cost::CostVector& c) { return to_python(cost::to_json(c)); },
          "The JSON form `tapestry cost --json` prints.")
      .def("__repr__", &cost_repr);
  py::class_<cost::Explanation>(m, "Explanation",
                                "A priced plan in DTensor terms (`tapestry explain`): str() "
                                "gives the text, to_dict() the JSON.")
      .def_readonly("target", &cost::Explanation::target)
      .def_readonly("cost", &cost::Explanation::cost)
      .def_property_readonly(
          "operations",
          [](const cost::Explanation& e) { return to_python(cost::to_json(e)["operations"]); },
          "Per operation: its grid axes, devices and every tensor's placements.")
      .def_property_readonly(
          "communication",
          [](const cost::Explanation& e) { return to_python(cost::to_json(e)["communication"]); })
      .def_property_readonly(
          "strategy",
          [](const cost::Explanation& e) { return to_python(cost::to_json(e)["strategy"]); },
          "The strategy in one line and its parts: summary, kind, data, tensor, megatron.")
      .def_property_readonly(
          "gains", [](const cost::Explanation& e) { return to_python(cost::to_json(e)["gains"]); },
          "Against one device and against data parallelism: baseline, baseline_s, ratio.")
      .def_property_readonly(
          "critical_path",
          [](const cost::Explanation& e) { return to_python(cost::to_json(e)["critical_path"]); })
      .def("to_dict", [](const cost::Explanation& e) { return to_python(cost::to_json(e)); })
      .def("__str__", [](const cost::Explanation& e) { return cost::to_text(e); })
      .def("__repr__",
           [](const cost::Explanation& e) {
             return fmt::format("Explanation(target {}, {})", e.target, cost_repr(e.cost));
           })
      .def("_repr_pretty_", [](const cost::Explanation& e, const py::object& printer, bool) {
        printer.attr("text")(cost::to_text(e));
      });
}

// tapestry.calibrate: `tapestry calibrate` without the file — the target as a dict.
py::dict calibrate(double seconds, const py::object& progress) {
  if (!workflow::valid_calibration_budget(seconds)) {
    throw py::value_error(fmt::format("seconds={}: expected a time in (0, 3600]", seconds));
  }
  std::function<void(std::string_view)> heard;
  if (!progress.is_none()) {
    heard = [&progress](std::string_view name) {
      const py::gil_scoped_acquire gil;
      progress(std::string(name));
    };
  }
  cost::Target target;
  {
    const py::gil_scoped_release release;
    target = workflow::calibrated_target(workflow::calibrate(seconds, heard));
  }
  return to_python(cost::to_json(target));
}

}  // namespace

void bind_pricing(py::module_& m, GraphClass& graph) {
  bind_cost_classes(m);
  m.def("targets", &cost::preset_target_names, "The preset target names (`tapestry targets`).");
  m.def("calibrate", &calibrate, py::arg("seconds") = 10.0, py::arg("progress") = py::none(),
        "Measures this machine as `tapestry calibrate` does; the target as a dict.");
  graph.def("cost", &price, py::arg("plan"), py::arg("target"));
  graph.def("explain", &explain_plan, py::arg("plan"), py::arg("target"));
}

}  // namespace tapestry::python
