// Labels of tensors, operations and shards (node_labels.h).
#include "node_labels.h"

#include <fmt/format.h>

#include <array>

#include "html_label.h"
#include "tapestry/zspace/format.h"

namespace tapestry::exporter {

namespace {

// ColorBrewer "Pastel1"/"Set2"-like fills with matching pale backgrounds and borders.
constexpr std::array<OpColors, 8> kPalette = {{
    {"#8dd3c7", "#e8f6f3", "#3c8c7f"},
    {"#fdb462", "#fff0de", "#b36b14"},
    {"#bebada", "#efeef7", "#6f6a9c"},
    {"#fb8072", "#fee3e0", "#b3392c"},
    {"#80b1d3", "#e3eef6", "#3b6f93"},
    {"#b3de69", "#eff8df", "#6c9626"},
    {"#fccde5", "#fff3f9", "#b3668d"},
    {"#ffed6f", "#fffbe0", "#a6971b"},
}};

std::string range_text(const zspace::Range& r) {
  return html::escape(r.to_string());
}

std::string shape_text(const zspace::Range& r) {
  std::string out = "[";
  for (std::size_t d = 0; d < r.rank(); ++d) {
    out += fmt::format("{}{}", d == 0 ? "" : ", ", r.extent(d));
  }
  return out + "]";
}

// Number cells of a matrix row: zeros in light grey so the structure stands out.
std::string number_cell(std::int64_t v) {
  std::string text = fmt::format("{}", v);
  return html::cell(v == 0 ? html::font(text, "#b0b0b0") : text, "ALIGN=\"RIGHT\"");
}

// The rows of one IPF: the port name spans them; one row per tensor dimension. The name cell is
// a Graphviz port, so the tensor's edge lands on its row.
std::string ipf_rows(const std::string& port, const std::string& port_id,
                     const zspace::IndexProjection& ipf) {
  const zspace::AffineMap& a = ipf.map();
  std::size_t rows = std::max<std::size_t>(a.out_rank(), 1);
  std::string out;
  for (std::size_t k = 0; k < rows; ++k) {
    std::string cells;
    if (k == 0) {
      cells += html::cell(html::escape(port),
                          fmt::format("ROWSPAN=\"{}\" ALIGN=\"LEFT\" PORT=\"{}\"", rows, port_id));
    }
    if (a.out_rank() == 0) {
      cells += html::cell(html::font("(scalar)", "#808080"),
                          fmt::format("COLSPAN=\"{}\"", a.in_rank() + 2));
    } else {
      for (std::size_t j = 0; j < a.in_rank(); ++j) cells += number_cell(a.at(k, j));
      cells += number_cell(a.offset()[k]);
      cells += number_cell(ipf.shape()[k]);
    }
    out += html::row(cells);
  }
  return out;
}

}  // namespace

std::string port_id(bool input, std::string_view name, std::uint32_t position) {
  return fmt::format("{}_{}_{}", input ? "in" : "out", name, position);
}

OpColors op_colors(std::size_t i) {
  return kPalette[i % kPalette.size()];
}

std::string label_or_short_key(const ir::NodeView& node) {
  if (!node.label().empty()) return node.label();
  return std::string(node.key().substr(0, 8));
}

std::string named_box(const ir::OperationView& op, const zspace::Range& box) {
  std::string out;
  for (std::size_t d = 0; d < box.rank(); ++d) {
    out += fmt::format("{}{} {}:{}", d == 0 ? "" : ", ", op.index_name(d), box.start()[d],
                       box.end()[d]);
    if (auto m = op.reduction(d)) out += fmt::format(" ({})", ir::monoid_name(*m));
  }
  return out.empty() ? "()" : out;
}

std::string tensor_label(const ir::TensorView& t) {
  std::string rows = html::row(html::cell(html::bold(label_or_short_key(t))));
  rows +=
      html::row(html::cell(html::escape(fmt::format("{} {}", t.dtype(), shape_text(t.range())))));
  rows += html::row(html::cell(html::font(range_text(t.range()), "#505050", 10)));
  return "<" + html::table(rows, "BGCOLOR=\"#f4f4f4\" COLOR=\"#606060\"") + ">";
}

std::string operation_label(const ir::OperationView& op, const OpColors& colors, bool show_ipfs) {
  std::string name = label_or_short_key(op);
  if (name != op.kernel()) name += " : " + op.kernel();
  const std::optional<zspace::Range> index = op.ipf_index();
  const ir::IpfSignature* sig = op.ipf_signature();
  std::size_t in_rank = index ? index->rank() : 0;
  std::size_t columns = show_ipfs && sig ? in_rank + 3 : 1;
  std::string span = fmt::format("COLSPAN=\"{}\"", columns);
  std::string rows = html::row(html::cell(html::bold(name), span));
  rows += html::row(html::cell(
      html::escape(index ? "index: " + named_box(op, *index) : std::string("no IPF index")), span));
  if (show_ipfs && sig && index) {
    std::string header = html::cell(html::font("IPF", "#505050", 10));
    for (std::size_t j = 0; j < in_rank; ++j) {
      header += html::cell(html::font(html::escape(op.index_name(j)), "#505050", 10));
    }
    header += html::cell(html::font("+offset", "#505050", 10));
    header += html::cell(html::font("shape", "#505050", 10));
    rows += html::row(header);
    for (const auto& e : sig->inputs.entries()) {
      rows += ipf_rows(fmt::format("in {}[{}]", e.name, e.position),
                       port_id(true, e.name, e.position), e.value);
    }
    for (const auto& e : sig->outputs.entries()) {
      rows += ipf_rows(fmt::format("out {}[{}]", e.name, e.position),
                       port_id(false, e.name, e.position), e.value);
    }
  }
  return "<" +
         html::table(rows, fmt::format("BGCOLOR=\"{}\" COLOR=\"{}\"", colors.fill, colors.border)) +
         ">";
}

std::string shard_label(const ir::ApplicationView& app, const ir::OperationView& op,
                        std::size_t number, const OpColors& colors, std::string_view device) {
  std::string rows =
      html::row(html::cell(html::bold(fmt::format("{} #{}", label_or_short_key(op), number))));
  if (!device.empty()) {
    rows += html::row(
        html::cell(html::font(html::escape(fmt::format("on {}", device)), "#000000", 10)));
  }
  const std::optional<zspace::Range> box = app.ipf_index();
  rows += html::row(
      html::cell(html::font(html::escape(box ? named_box(op, *box) : "no index"), "#303030", 10)));
  return "<" +
         html::table(rows, fmt::format("BGCOLOR=\"{}\" COLOR=\"{}\"", colors.fill, colors.border),
                     1, 4) +
         ">";
}

std::string other_label(const ir::NodeView& node) {
  std::string text = label_or_short_key(node);
  if (node.kind() == ir::NodeKind::kNote) {
    text += "\n" + node.graph().note(ir::NoteId(node.id())).message();
  } else {
    text += "\n" + std::string(ir::display_type(node.type()));
  }
  return "<" + html::escape(text) + ">";
}

}  // namespace tapestry::exporter
