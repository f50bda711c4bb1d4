#include "tapestry/metakernel/pattern.h"

#include "expr_parse.h"
#include "text_cursor.h"

namespace tapestry::metakernel {

namespace {

// `$name...` is a group; anything else starting with '$' is an expression. Looks ahead on a copy
// of the cursor so an expression like `$oh * stride` is left untouched.
std::optional<ListEntry> try_group(detail::TextCursor& cursor) {
  detail::TextCursor probe = cursor;
  const SourcePos pos = probe.pos();
  if (!probe.accept("$") || !probe.at_identifier()) return std::nullopt;
  std::string name = probe.identifier("a group name");
  if (!probe.accept("...")) return std::nullopt;
  cursor = probe;
  ListEntry entry;
  entry.kind = ListEntry::Kind::kGroup;
  entry.group = std::move(name);
  entry.pos = pos;
  return entry;
}

ListEntry parse_entry(detail::TextCursor& cursor) {
  const SourcePos pos = cursor.pos();
  if (std::optional<ListEntry> group = try_group(cursor)) return *group;
  ListEntry entry;
  entry.pos = pos;
  if (cursor.peek() == '*') {
    cursor.accept("*");
    entry.kind = ListEntry::Kind::kWhole;
    return entry;
  }
  entry.expr = detail::parse_expr(cursor);
  if (cursor.accept(":")) entry.window = detail::parse_expr(cursor);
  return entry;
}

}  // namespace

List parse_list(std::string_view text, SourcePos origin) {
  detail::TextCursor cursor(text, origin);
  cursor.expect("[", "to open the list");
  List list;
  if (!cursor.accept("]")) {
    while (true) {
      list.push_back(parse_entry(cursor));
      if (cursor.accept("]")) break;
      cursor.expect(",", "or ']' after a list entry");
    }
  }
  if (!cursor.at_end()) cursor.fail("unexpected text after ']'" + cursor.found());
  return list;
}

std::string ListEntry::to_string() const {
  switch (kind) {
    case Kind::kGroup:
      return "$" + group + "...";
    case Kind::kWhole:
      return "*";
    case Kind::kExpr:
      break;
  }
  std::string out = expr->to_string();
  if (window) out += " : " + window->to_string();
  return out;
}

std::string list_to_string(const List& list) {
  std::string out = "[";
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ", ";
    out += list[i].to_string();
  }
  return out + "]";
}

}  // namespace tapestry::metakernel
