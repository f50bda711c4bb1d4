#include "plans.h"

#include <fmt/core.h>

#include "json.h"

namespace tapestry::python {

namespace py = pybind11;

std::string fspath(const py::handle& value) {
  return py::str(py::module_::import("os").attr("fspath")(value));
}

namespace {

bool is_path(const py::handle& value) {
  return py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__");
}

}  // namespace

rewrite::Plan plan_from_python(const py::handle& plan) {
  if (plan.is_none()) return {};
  if (py::isinstance<py::dict>(plan)) {
    return rewrite::parse_plan(from_python(plan, "plan").dump(1), "<plan>");
  }
  if (is_path(plan)) return rewrite::read_plan_file(fspath(plan));
  throw py::type_error(
      fmt::format("plan: expected None, a dict or a path, not {}", type_name(plan)));
}

TargetArg target_from_python(const py::handle& target) {
  if (py::isinstance<py::dict>(target)) {
    cost::Target t = cost::parse_target(from_python(target, "target").dump(1), "<target>");
    std::string key = cost::target_json_text(t);
    return {std::move(t), std::move(key)};
  }
  if (is_path(target)) {
    cost::Target t = cost::resolve_target(fspath(target));
    std::string key = cost::target_json_text(t);
    return {std::move(t), std::move(key)};
  }
  throw py::type_error(
      fmt::format("target: expected a preset name, a path or a dict, not {}", type_name(target)));
}

}  // namespace tapestry::python
