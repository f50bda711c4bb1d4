// JsonEmitter: deterministic JSON text output, pretty or compact (private to module ir).
//
// Pretty output puts each object member and each array element on its own line, except arrays
// whose elements are all scalars, which stay on one line — the layout of Tapestry's own loom
// files, so `"start": [200, 50]` reads as a point and a projection matrix as rows:
//
//   {
//     "projection": [
//       [1, 0],
//       [0, 1]
//     ],
//     "offset": [0, 0]
//   }
//
// Compact output (indent = -1) has no whitespace at all; one-line output (indent = -2) keeps a
// space after ',' and ':' (`{"end": [10, 5], "start": [0, 0]}`) for messages.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tapestry::ir {

class JsonEmitter {
 public:
  JsonEmitter(std::string& out, int indent) : out_(out), indent_(indent) {}

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  /// An object member's key; the value follows with one of the value calls.
  void key(std::string_view key);

  void string(std::string_view value);
  void integer(std::int64_t value);
  void boolean(bool value);
  void null();
  /// An array of integers, on one line.
  void integers(std::span<const std::int64_t> values);
  /// An array of strings, on one line.
  void strings(std::span<const std::string> values);
  /// Any JSON value (objects' keys are already sorted by nlohmann).
  void value(const nlohmann::json& value);
  /// Any JSON value, objects' keys in the order they were inserted (a schema's documented order).
  void value(const nlohmann::ordered_json& value);

 private:
  template <typename Json>
  void any_value(const Json& value);
  void before_value();
  void newline();
  void write_escaped(std::string_view s);

  std::string& out_;
  int indent_;
  struct Level {
    bool is_object = false;
    bool empty = true;
  };
  std::vector<Level> levels_;
  bool after_key_ = false;
};

}  // namespace tapestry::ir
