// Plans and targets given from Python: None, a dict (the JSON form), or a path.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "tapestry/cost/target.h"
#include "tapestry/rewrite/plan.h"

namespace tapestry::python {

/// None → the empty plan (one application per operation); a dict → its JSON form (errors name
/// `<plan>` and the JSON path); a str or os.PathLike → the plan file. TypeError otherwise.
rewrite::Plan plan_from_python(const pybind11::handle& plan);

/// A target and the key that tells targets apart (for the evaluator kept between calls).
struct TargetArg {
  cost::Target target;
  std::string key;
};
/// A preset name ("h100x8") or a target file (str or os.PathLike), or a dict (the JSON form).
TargetArg target_from_python(const pybind11::handle& target);

/// os.fspath(value) as a string.
std::string fspath(const pybind11::handle& value);

}  // namespace tapestry::python
