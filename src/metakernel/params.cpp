// Parameter resolution: check each given value against its spec, fill in defaults, normalise
// axes. The resolved values are what expressions see and what an operation records.
#include <fmt/format.h>

#include "bindings.h"
#include "tapestry/zspace/checked.h"

namespace tapestry::metakernel::detail {

namespace {

bool is_int(const nlohmann::json& v) {
  return v.is_number_integer();
}

std::string param_list(const Metakernel& kernel) {
  std::string out;
  for (const ParamSpec& p : kernel.params) out += (out.empty() ? "" : ", ") + p.name;
  return out.empty() ? "it takes none" : "it takes " + out;
}

void check_min(const Bindings& b, const ParamSpec& spec, std::int64_t value) {
  if (spec.min && value < *spec.min) {
    b.fail("parameter {} must be >= {}, got {}", spec.name, *spec.min, value);
  }
}

std::int64_t resolve_axis(const Bindings& b, const ParamSpec& spec, std::int64_t value) {
  const InputSpec* input = b.kernel.find_input(spec.axis_of);
  std::size_t index = 0;
  while (b.kernel.inputs[index].name != input->name) ++index;
  const std::size_t rank = b.args[index].type.rank();
  const auto r = static_cast<std::int64_t>(rank);
  if (value < -r || value >= r) {
    b.fail("parameter {}={} is out of range for {} of rank {} (valid: {} to {})", spec.name, value,
           b.label(index), rank, -r, r - 1);
  }
  return value < 0 ? value + r : value;
}

// Checks one value against its spec; returns the normalised value.
nlohmann::json check_value(const Bindings& b, const ParamSpec& spec, const nlohmann::json& v) {
  auto wrong = [&](std::string_view expected) {
    b.fail("parameter {} must be {}, got {}", spec.name, expected, v.dump());
  };
  switch (spec.type) {
    case ParamType::kInt:
      if (!is_int(v)) wrong("an integer");
      check_min(b, spec, v.get<std::int64_t>());
      return v;
    case ParamType::kInts:
      if (!v.is_array()) wrong("a list of integers");
      for (const nlohmann::json& e : v) {
        if (!is_int(e)) wrong("a list of integers");
        check_min(b, spec, e.get<std::int64_t>());
      }
      return v;
    case ParamType::kBool:
      if (!v.is_boolean()) wrong("true or false");
      return v;
    case ParamType::kFloat:
      if (!v.is_number()) wrong("a number");
      return v.get<double>();
    case ParamType::kStr:
      if (!v.is_string()) wrong("a string");
      if (!spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(),
                                             v.get<std::string>()) == spec.choices.end()) {
        wrong(fmt::format("one of {}", fmt::join(spec.choices, ", ")));
      }
      return v;
    case ParamType::kAxis:
      if (!is_int(v)) wrong("an integer dimension");
      return resolve_axis(b, spec, v.get<std::int64_t>());
    case ParamType::kMonoid:
      if (!v.is_string() || !parse_monoid(v.get<std::string>()))
        wrong("one of sum, max, min, prod");
      return v;
  }
  return v;
}

}  // namespace

void resolve_params(Bindings& b, const nlohmann::json& given) {
  if (!given.is_null() && !given.is_object()) b.fail("parameters must be a JSON object");
  if (given.is_object()) {
    for (const auto& [name, value] : given.items()) {
      if (!b.kernel.find_param(name))
        b.fail("unknown parameter '{}' ({})", name, param_list(b.kernel));
    }
  }
  for (const ParamSpec& spec : b.kernel.params) {
    if (given.is_object() && given.contains(spec.name)) {
      b.params[spec.name] = check_value(b, spec, given.at(spec.name));
    } else if (spec.default_value) {
      b.params[spec.name] = check_value(b, spec, *spec.default_value);
    } else if (spec.default_expr) {
      continue;  // from the input sizes, once they are bound (resolve_size_defaults)
    } else {
      b.fail("missing parameter '{}' ({})", spec.name, param_type_name(spec.type));
    }
  }
}

void resolve_size_defaults(Bindings& b) {
  for (const ParamSpec& spec : b.kernel.params) {
    if (!spec.default_expr || b.params.contains(spec.name)) continue;
    b.params[spec.name] = check_value(b, spec, spec.default_expr->evaluate(b.scalar_env()));
  }
}

nlohmann::json recorded_params(const Bindings& b) {
  nlohmann::json out = nlohmann::json::object();
  for (const ParamSpec& spec : b.kernel.params) {
    if (!spec.sugar) out[spec.name] = b.params.at(spec.name);
  }
  return out;
}

}  // namespace tapestry::metakernel::detail
