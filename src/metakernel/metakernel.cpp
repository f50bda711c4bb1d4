#include "tapestry/metakernel/metakernel.h"

#include <algorithm>
#include <array>

#include "tapestry/metakernel/naming.h"

namespace tapestry::metakernel {

std::string_view param_type_name(ParamType type) {
  switch (type) {
    case ParamType::kInt:
      return "int";
    case ParamType::kInts:
      return "ints";
    case ParamType::kBool:
      return "bool";
    case ParamType::kFloat:
      return "float";
    case ParamType::kStr:
      return "str";
    case ParamType::kAxis:
      return "axis";
    case ParamType::kMonoid:
      return "monoid";
  }
  return "?";
}

const ParamSpec* Metakernel::find_param(std::string_view param) const {
  for (const ParamSpec& p : params) {
    if (p.name == param) return &p;
  }
  return nullptr;
}

const InputSpec* Metakernel::find_input(std::string_view input) const {
  for (const InputSpec& i : inputs) {
    if (i.name == input) return &i;
  }
  return nullptr;
}

bool Metakernel::is_broadcast(std::string_view group) const {
  return std::find(broadcast.begin(), broadcast.end(), group) != broadcast.end();
}

std::string Metakernel::call_form() const {
  std::string out = name + "(";
  for (std::size_t i = 0; i < inputs.size(); ++i) out += (i > 0 ? ", " : "") + inputs[i].name;
  for (const ParamSpec& p : params) {
    out += (out.back() == '(' ? "" : ", ") + p.name + "=";
    if (p.default_expr) {
      out += p.default_expr->to_string();
      continue;
    }
    if (!p.default_value) {
      out += param_type_name(p.type);
      continue;
    }
    const bool bare =
        p.default_value->is_string() && is_tap_identifier(p.default_value->get<std::string>());
    out += tap::literal_to_string(*p.default_value, bare);
  }
  return out + ")";
}

}  // namespace tapestry::metakernel
