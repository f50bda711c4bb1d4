#include "json.h"

#include <fmt/core.h>

namespace tapestry::python {

namespace py = pybind11;

std::string type_name(py::handle value) {
  return py::type::of(value).attr("__name__").cast<std::string>();
}

py::object to_python(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(value.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(value.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(value.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(value.get<double>());
    case nlohmann::json::value_t::string:
      return py::str(value.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list list;
      for (const nlohmann::json& item : value) list.append(to_python(item));
      return list;
    }
    case nlohmann::json::value_t::object: {
      py::dict dict;
      for (const auto& [key, item] : value.items()) dict[py::str(key)] = to_python(item);
      return dict;
    }
    case nlohmann::json::value_t::binary:
      break;
  }
  throw py::type_error("a binary JSON value has no Python form");
}

nlohmann::json from_python(py::handle value, const char* what) {
  // bool before int: Python's bool is an int.
  if (value.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) return value.cast<std::int64_t>();
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::dict>(value)) {
    nlohmann::json object = nlohmann::json::object();
    for (const auto& [key, item] : value.cast<py::dict>()) {
      if (!py::isinstance<py::str>(key)) {
        throw py::type_error(fmt::format("{}: keys must be str, not {}", what, type_name(key)));
      }
      object[key.cast<std::string>()] = from_python(item, what);
    }
    return object;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    nlohmann::json array = nlohmann::json::array();
    for (py::handle item : value) array.push_back(from_python(item, what));
    return array;
  }
  // NumPy scalars (np.int64(2), np.float32(0.5)) convert through their Python value.
  if (py::hasattr(value, "item") && py::hasattr(value, "dtype") &&
      py::getattr(value, "ndim", py::int_(1)).cast<int>() == 0) {
    return from_python(value.attr("item")(), what);
  }
  throw py::type_error(
      fmt::format("{}: cannot be given as {} (use dict, list, str, int, float, "
                  "bool or None)",
                  what, type_name(value)));
}

}  // namespace tapestry::python
