// JsonEmitter: see json_emitter.h.
#include "json_emitter.h"

#include <fmt/format.h>

#include "tapestry/support/assert.h"

namespace tapestry::ir {

void JsonEmitter::newline() {
  if (indent_ < 0) return;
  out_ += '\n';
  out_.append(levels_.size() * static_cast<std::size_t>(indent_), ' ');
}

// Separators before a value: after a key nothing more; inside an array a comma (unless first)
// and a line break.
void JsonEmitter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;
  Level& level = levels_.back();
  TAPESTRY_ASSERT(!level.is_object, "a value inside an object needs a key first");
  if (!level.empty) out_ += indent_ == -2 ? ", " : ",";
  level.empty = false;
  newline();
}

void JsonEmitter::key(std::string_view key) {
  TAPESTRY_ASSERT(!levels_.empty() && levels_.back().is_object, "a key outside an object");
  Level& level = levels_.back();
  if (!level.empty) out_ += indent_ == -2 ? ", " : ",";
  level.empty = false;
  newline();
  write_escaped(key);
  out_ += indent_ == -1 ? ":" : ": ";
  after_key_ = true;
}

void JsonEmitter::begin_object() {
  before_value();
  out_ += '{';
  levels_.push_back({true, true});
}

void JsonEmitter::end_object() {
  bool empty = levels_.back().empty;
  levels_.pop_back();
  if (!empty) newline();
  out_ += '}';
}

void JsonEmitter::begin_array() {
  before_value();
  out_ += '[';
  levels_.push_back({false, true});
}

void JsonEmitter::end_array() {
  bool empty = levels_.back().empty;
  levels_.pop_back();
  if (!empty) newline();
  out_ += ']';
}

void JsonEmitter::string(std::string_view value) {
  before_value();
  write_escaped(value);
}

void JsonEmitter::integer(std::int64_t value) {
  before_value();
  fmt::format_to(std::back_inserter(out_), "{}", value);
}

void JsonEmitter::boolean(bool value) {
  before_value();
  out_ += value ? "true" : "false";
}

void JsonEmitter::null() {
  before_value();
  out_ += "null";
}

void JsonEmitter::integers(std::span<const std::int64_t> values) {
  before_value();
  out_ += '[';
  const char* sep = indent_ == -1 ? "," : ", ";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out_ += sep;
    fmt::format_to(std::back_inserter(out_), "{}", values[i]);
  }
  out_ += ']';
}

void JsonEmitter::strings(std::span<const std::string> values) {
  before_value();
  out_ += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out_ += indent_ == -1 ? "," : ", ";
    write_escaped(values[i]);
  }
  out_ += ']';
}

template <typename Json>
void JsonEmitter::any_value(const Json& v) {
  if (v.is_object()) {
    begin_object();
    for (const auto& [k, item] : v.items()) {
      key(k);
      any_value(item);
    }
    end_object();
  } else if (v.is_array()) {
    bool scalars = true;
    for (const auto& item : v) scalars = scalars && !item.is_structured();
    if (scalars) {
      before_value();
      out_ += '[';
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0) out_ += indent_ == -1 ? "," : ", ";
        out_ += v[i].dump(-1, ' ', false, Json::error_handler_t::replace);
      }
      out_ += ']';
      return;
    }
    begin_array();
    for (const auto& item : v) any_value(item);
    end_array();
  } else if (v.is_string()) {
    string(v.template get_ref<const std::string&>());
  } else {
    before_value();
    out_ += v.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

void JsonEmitter::value(const nlohmann::json& v) {
  any_value(v);
}

void JsonEmitter::value(const nlohmann::ordered_json& v) {
  any_value(v);
}

void JsonEmitter::write_escaped(std::string_view s) {
  out_ += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\r':
        out_ += "\\r";
        break;
      case '\t':
        out_ += "\\t";
        break;
      case '\b':
        out_ += "\\b";
        break;
      case '\f':
        out_ += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(out_), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out_ += c;
        }
    }
  }
  out_ += '"';
}

}  // namespace tapestry::ir
