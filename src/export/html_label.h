// Building Graphviz HTML-like labels (private to module export).
//
// Graphviz labels written as <<TABLE>…</TABLE>> can hold tables, bold text and colours. These
// helpers escape text and assemble the few table shapes the DOT writer uses.
#pragma once

#include <string>
#include <string_view>

namespace tapestry::exporter::html {

/// Escapes &, <, >, " for use inside an HTML-like label.
std::string escape(std::string_view text);

/// <B>text</B>, escaped.
std::string bold(std::string_view text);

/// <FONT COLOR="…" POINT-SIZE="…">text</FONT>; `text` must already be escaped.
std::string font(std::string_view escaped, std::string_view color, int point_size = 0);

/// A cell: <TD …attributes>content</TD>; `content` must already be escaped.
std::string cell(std::string_view content, std::string_view attributes = {});

/// <TR>cells</TR>.
std::string row(std::string_view cells);

/// <TABLE BORDER="0" CELLBORDER="…" CELLSPACING="0" CELLPADDING="…" …attributes>rows</TABLE>.
std::string table(std::string_view rows, std::string_view attributes = {}, int cell_border = 1,
                  int cell_padding = 3);

}  // namespace tapestry::exporter::html
