// JSON values between nlohmann::json and Python objects (dict, list, str, int, float, bool,
// None): kernel parameters in, plans, reports and cost figures out.
#pragma once

#include <string>

#include <pybind11/pybind11.h>
#include <nlohmann/json.hpp>

namespace tapestry::python {

/// The Python value of `value` (objects keep their key order).
pybind11::object to_python(const nlohmann::json& value);

/// The JSON value of a Python object made of dicts (str keys), lists, tuples, str, int, float,
/// bool and None; TypeError naming `what` and the offending type otherwise.
nlohmann::json from_python(pybind11::handle value, const char* what);

/// The name of `value`'s type, for messages ("int", "ndarray").
std::string type_name(pybind11::handle value);

}  // namespace tapestry::python
