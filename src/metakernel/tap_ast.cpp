#include "tapestry/metakernel/tap_ast.h"

#include <fmt/core.h>

#include "tapestry/metakernel/naming.h"

namespace tapestry::metakernel::tap {

namespace {

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\t') {
      out += "\\t";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string tensor_to_string(const TensorExpr& e) {
  return e.is_call() ? call_to_string(*e.call) : name_to_string(e.name);
}

}  // namespace

std::string name_to_string(const std::string& name) {
  return is_tap_identifier(name) ? name : quote(name);
}

std::string literal_to_string(const nlohmann::json& value, bool is_identifier) {
  if (value.is_string())
    return is_identifier ? value.get<std::string>() : quote(value.get<std::string>());
  if (value.is_array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (i > 0) out += ", ";
      out += literal_to_string(value[i], false);
    }
    return out + "]";
  }
  if (value.is_number_float()) {
    std::string text = fmt::format("{}", value.get<double>());
    // Keep a float a float when read back: 2.0 prints "2", so add the decimal point.
    if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
    return text;
  }
  return value.dump();
}

std::string call_to_string(const Call& call) {
  std::string out = name_to_string(call.callee) + "(";
  bool first = true;
  for (const TensorExpr& arg : call.args) {
    out += (first ? "" : ", ") + tensor_to_string(arg);
    first = false;
  }
  for (const Keyword& k : call.keywords) {
    out += (first ? "" : ", ") + name_to_string(k.name) + "=" +
           literal_to_string(k.value.value, k.value.is_identifier);
    first = false;
  }
  return out + ")";
}

}  // namespace tapestry::metakernel::tap
