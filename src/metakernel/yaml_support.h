// Small helpers for reading kernel files with yaml-cpp: positions of nodes (1-based, and the
// position of a quoted scalar's *content*, so errors inside a pattern string point at the right
// character), and typed accessors that throw LocatedError naming what was expected.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "tapestry/metakernel/source.h"

namespace tapestry::metakernel::detail {

/// The 1-based position of a node's first character.
inline SourcePos pos_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return {};
  return {mark.line + 1, mark.column + 1};
}

/// Where a scalar's text starts: one past the quote of a quoted scalar; the node itself for a
/// plain scalar. For block scalars (| or >) only the node's position is known.
inline SourcePos content_pos(const YAML::Node& node, const SourceFile& file) {
  const SourcePos pos = pos_of(node);
  const std::string_view line = file.line(pos.line);
  const auto col = static_cast<std::size_t>(pos.column - 1);
  if (col < line.size() && (line[col] == '"' || line[col] == '\'')) return pos.advance(1);
  return pos;
}

inline std::string kind_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Null:
      return "nothing";
    default:
      return "an undefined value";
  }
}

[[noreturn]] inline void fail_at(const YAML::Node& node, const std::string& message) {
  throw LocatedError(pos_of(node), message);
}

inline void expect_map(const YAML::Node& node, std::string_view what) {
  if (!node.IsMap())
    fail_at(node, std::string(what) + " must be a mapping, found " + kind_name(node));
}

inline void expect_sequence(const YAML::Node& node, std::string_view what) {
  if (!node.IsSequence())
    fail_at(node, std::string(what) + " must be a list, found " + kind_name(node));
}

inline std::string scalar(const YAML::Node& node, std::string_view what) {
  if (!node.IsScalar())
    fail_at(node, std::string(what) + " must be a scalar, found " + kind_name(node));
  return node.Scalar();
}

/// Every YAML document of `text`, loaded one by one. yaml-cpp 0.7's LoadAll loops forever on
/// some malformed streams (a lone ",": jbeder/yaml-cpp#1040, fixed upstream in 2024 by #1319),
/// so documents are split at `---` lines here and each is given to YAML::Load padded with blank
/// lines in place of the text before it: node marks stay absolute line numbers.
inline std::vector<YAML::Node> load_documents(std::string_view text) {
  std::vector<YAML::Node> docs;
  std::string current;
  std::string padding;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    const bool separator = line.starts_with("---") && (line.size() == 3 || line[3] == ' ' ||
                                                       line[3] == '\t' || line[3] == '\r');
    if (separator) {
      docs.push_back(YAML::Load(current));
      current = padding;
    }
    current.append(line);
    if (end < text.size()) current.push_back('\n');
    padding.push_back('\n');
    pos = end + 1;
  }
  docs.push_back(YAML::Load(current));
  return docs;
}

}  // namespace tapestry::metakernel::detail
