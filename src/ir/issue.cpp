// Issues as JSON and as text (issue.h).
#include "tapestry/ir/issue.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "json_emitter.h"
#include "tapestry/support/error.h"

namespace tapestry::ir {

namespace {

// "line 3, column 7": how the schema's `jsonpath` names a file position.
constexpr std::string_view kLinePrefix = "line ";
constexpr std::string_view kColumnInfix = ", column ";

// The schema's `jsonpath` of a context: loom's JSONPath, else the file position it was found at.
std::string schema_path(const IssueContext& c) {
  if (!c.jsonpath.empty() || !c.where.pos.is_known()) return c.jsonpath;
  return fmt::format("{}{}{}{}", kLinePrefix, c.where.pos.line, kColumnInfix, c.where.pos.column);
}

// schema_path's inverse for a position: "line 3, column 7" → {3, 7}; unknown for anything else.
support::SourcePos position_of(std::string_view path) {
  support::SourcePos pos;
  if (!path.starts_with(kLinePrefix)) return pos;
  const auto comma = path.find(kColumnInfix);
  if (comma == std::string_view::npos) return pos;
  const auto number = [](std::string_view text) {
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && end == text.data() + text.size() && value > 0 ? value : 0;
  };
  const int line = number(path.substr(kLinePrefix.size(), comma - kLinePrefix.size()));
  const int column = number(path.substr(comma + kColumnInfix.size()));
  if (line > 0 && column > 0) pos = {line, column};
  return pos;
}

}  // namespace

bool has_errors(std::span<const Issue> issues) {
  return std::any_of(issues.begin(), issues.end(), [](const Issue& i) { return i.is_error(); });
}

std::size_t count_type(std::span<const Issue> issues, std::string_view type) {
  return static_cast<std::size_t>(
      std::count_if(issues.begin(), issues.end(), [&](const Issue& i) { return i.type == type; }));
}

namespace {

// The schema's form of an issue, fields in its documented order (type, severity, summary, message,
// params, contexts): the one serializer of issues, which to_json (keys sorted) and
// format_issues_json (indented text in this order) both print.
nlohmann::ordered_json schema_object(const Issue& issue) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["type"] = issue.type;
  j["severity"] = severity_name(issue.severity);
  j["summary"] = issue.summary;
  if (!issue.message.empty()) j["message"] = issue.message;
  if (!issue.params.is_null()) j["params"] = issue.params;
  nlohmann::ordered_json contexts = nlohmann::ordered_json::array();
  for (const IssueContext& c : issue.contexts) {
    nlohmann::ordered_json cj = {{"name", c.name}};
    if (!c.message.empty()) cj["message"] = c.message;
    if (const std::string path = schema_path(c); !path.empty()) cj["jsonpath"] = path;
    if (!c.data.is_null()) cj["data"] = c.data;
    contexts.push_back(std::move(cj));
  }
  j["contexts"] = std::move(contexts);
  return j;
}

// `{"valid", "errors", "warnings", "issues"}` in that order.
nlohmann::ordered_json schema_report(std::span<const Issue> issues) {
  const auto errors = static_cast<std::size_t>(
      std::count_if(issues.begin(), issues.end(), [](const Issue& i) { return i.is_error(); }));
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Issue& i : issues) list.push_back(schema_object(i));
  return {{"valid", errors == 0},
          {"errors", errors},
          {"warnings", issues.size() - errors},
          {"issues", std::move(list)}};
}

}  // namespace

nlohmann::json to_json(const Issue& issue) {
  return nlohmann::json(schema_object(issue));
}

nlohmann::json issues_to_json(std::span<const Issue> issues) {
  return nlohmann::json(schema_report(issues));
}

namespace {

std::string string_member(const nlohmann::json& j, const char* key, bool required) {
  if (!j.contains(key)) {
    if (required) throw Error(fmt::format("issue: missing \"{}\"", key));
    return {};
  }
  if (!j[key].is_string()) throw Error(fmt::format("issue: \"{}\" must be a string", key));
  return j[key].get<std::string>();
}

// Indents every line after the first of `text` by `spaces`.
std::string indent_continuation(const std::string& text, std::size_t spaces) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out.append(spaces, ' ');
  }
  return out;
}

// Data: indented, with arrays of scalars kept on one line (the loom file layout).
std::string pretty(const nlohmann::json& j) {
  std::string out;
  JsonEmitter(out, 2).value(j);
  return out;
}

// Params: one line, `{"end": [10, 5], "start": [0, 0]}`.
std::string one_line(const nlohmann::json& j) {
  std::string out;
  JsonEmitter(out, -2).value(j);
  return out;
}

}  // namespace

Issue issue_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("issue: expected an object");
  Issue issue;
  issue.type = string_member(j, "type", true);
  issue.summary = string_member(j, "summary", true);
  issue.message = string_member(j, "message", false);
  std::string severity = string_member(j, "severity", false);
  if (severity == "warning") issue.severity = Severity::kWarning;
  if (j.contains("params")) issue.params = j["params"];
  if (j.contains("contexts")) {
    if (!j["contexts"].is_array()) throw Error("issue: \"contexts\" must be an array");
    for (const auto& c : j["contexts"]) {
      if (!c.is_object()) throw Error("issue: a context must be an object");
      IssueContext ctx{.name = string_member(c, "name", true),
                       .message = string_member(c, "message", false),
                       .jsonpath = string_member(c, "jsonpath", false)};
      if (c.contains("data")) ctx.data = c["data"];
      if (const support::SourcePos pos = position_of(ctx.jsonpath); pos.is_known()) {
        ctx.where.pos = pos;  // a file position, typed again
        ctx.jsonpath.clear();
      }
      issue.contexts.push_back(std::move(ctx));
    }
  }
  return issue;
}

std::string format_issues_json(std::span<const Issue> issues) {
  std::string out;
  JsonEmitter(out, 2).value(schema_report(issues));
  out += '\n';
  return out;
}

std::string format_issue_text(const Issue& issue) {
  std::string out =
      fmt::format("{}[{}]: {}\n", severity_name(issue.severity), issue.type, issue.summary);
  if (!issue.message.empty()) out += fmt::format("  {}\n", indent_continuation(issue.message, 2));
  if (issue.params.is_object() && !issue.params.empty()) {
    out += "  params:\n";
    for (const auto& [key, value] : issue.params.items()) {
      std::string text = value.is_string() ? value.get<std::string>() : one_line(value);
      out += fmt::format("    {}: {}\n", key, text);
    }
  }
  for (const IssueContext& c : issue.contexts) {
    out += fmt::format("  - {}{}{}\n", c.name, c.message.empty() ? "" : ": ",
                       indent_continuation(c.message, 4));
    if (const std::string path = schema_path(c); !path.empty())
      out += fmt::format("    jsonpath: {}\n", path);
    if (!c.data.is_null())
      out += fmt::format("    data: {}\n", indent_continuation(pretty(c.data), 4));
  }
  return out;
}

support::Diagnostic to_diagnostic(const Issue& issue) {
  support::Diagnostic d{.severity = issue.severity,
                        .code = issue.type,
                        .message = issue.message.empty() ? issue.summary : issue.message};
  for (const IssueContext& c : issue.contexts) {
    if (c.where.empty()) continue;
    d.where = c.where;
    break;
  }
  return d;
}

std::string format_issues_text(std::span<const Issue> issues) {
  std::string out;
  std::size_t errors = 0;
  for (const Issue& issue : issues) {
    out += format_issue_text(issue);
    out += '\n';
    errors += issue.is_error() ? 1 : 0;
  }
  std::size_t warnings = issues.size() - errors;
  if (issues.empty()) {
    out += "valid: no issues\n";
  } else {
    out += fmt::format("{}: {} error{}, {} warning{}\n", errors == 0 ? "valid" : "invalid", errors,
                       errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
  }
  return out;
}

}  // namespace tapestry::ir
