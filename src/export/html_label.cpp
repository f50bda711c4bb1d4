// HTML-like label helpers (html_label.h).
#include "html_label.h"

#include <fmt/format.h>

#include "tapestry/support/text.h"

namespace tapestry::exporter::html {

std::string escape(std::string_view text) {
  // XML escaping, with a line break as Graphviz's <BR/>.
  std::string out;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find('\n', start);
    out +=
        support::xml_escape(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return out;
    out += "<BR/>";
    start = end + 1;
  }
}

std::string bold(std::string_view text) {
  return fmt::format("<B>{}</B>", escape(text));
}

std::string font(std::string_view escaped, std::string_view color, int point_size) {
  if (point_size > 0) {
    return fmt::format("<FONT COLOR=\"{}\" POINT-SIZE=\"{}\">{}</FONT>", color, point_size,
                       escaped);
  }
  return fmt::format("<FONT COLOR=\"{}\">{}</FONT>", color, escaped);
}

std::string cell(std::string_view content, std::string_view attributes) {
  if (attributes.empty()) return fmt::format("<TD>{}</TD>", content);
  return fmt::format("<TD {}>{}</TD>", attributes, content);
}

std::string row(std::string_view cells) {
  return fmt::format("<TR>{}</TR>", cells);
}

std::string table(std::string_view rows, std::string_view attributes, int cell_border,
                  int cell_padding) {
  return fmt::format(
      "<TABLE BORDER=\"0\" CELLBORDER=\"{}\" CELLSPACING=\"0\" CELLPADDING=\"{}\"{}{}>{}</TABLE>",
      cell_border, cell_padding, attributes.empty() ? "" : " ", attributes, rows);
}

}  // namespace tapestry::exporter::html
