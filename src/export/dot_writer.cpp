// Graph → DOT text (graphviz.h). Operation graphs: tensor and operation nodes, edges labelled
// with port names. Application graphs: each operation becomes a cluster in its colour, labelled
// with the operation's table, holding its shards; edges run between tensors and shards and carry
// the boxes read and written.
#include <map>

#include <fmt/format.h>

#include "html_label.h"
#include "node_labels.h"
#include "tapestry/export/graphviz.h"
#include "tapestry/zspace/format.h"

namespace tapestry::exporter {

namespace {

std::string node_name(ir::NodeId id) {
  return fmt::format("n{}", id.index());
}

// "[0:2, 0:4]" — a range without the zr prefix, for edge labels.
std::string box_text(const zspace::Range& r) {
  std::string s = r.to_string();
  return s.rfind("zr", 0) == 0 ? s.substr(2) : s;
}

std::string dot_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

class DotWriter {
 public:
  DotWriter(const ir::Graph& g, const RenderOptions& o) : g_(g), o_(o) {}

  std::string write() {
    out_ += "digraph tapestry {\n";
    out_ += "  graph [rankdir=LR, fontname=\"Helvetica\", nodesep=0.3, ranksep=0.7];\n";
    out_ += "  node [fontname=\"Helvetica\", fontsize=11, shape=plain];\n";
    out_ += "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#505050\", arrowsize=0.7];\n";
    for (ir::TensorId t : g_.tensors()) {
      line(fmt::format("{} [label={}];", node_name(t), tensor_label(g_.tensor(t))));
    }
    for (ir::NoteId n : g_.notes()) {
      line(fmt::format("{} [shape=note, style=filled, fillcolor=\"#fffbd0\", label={}];",
                       node_name(n), other_label(g_.node(n))));
    }
    for (ir::NodeId n : g_.opaque_nodes()) {
      line(fmt::format("{} [shape=box, style=dashed, label={}];", node_name(n),
                       other_label(g_.node(n))));
    }
    const auto ops = g_.operations();
    for (std::size_t i = 0; i < ops.size(); ++i)
      write_operation(g_.operation(ops[i]), op_colors(i));
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  std::map<std::string, std::size_t> device_colour_;

  void line(const std::string& text, int indent = 2) {
    out_.append(static_cast<std::size_t>(indent), ' ');
    out_ += text;
    out_ += '\n';
  }

  void write_operation(const ir::OperationView& op, const OpColors& colors) {
    bool sharded = o_.show_applications && !op.applications().empty();
    if (!sharded) {
      line(fmt::format("{} [label={}];", node_name(op.id()),
                       operation_label(op, colors, o_.show_ipfs)));
      const ir::IpfSignature* sig =
          o_.show_ipfs && op.has_ipf_index() ? op.ipf_signature() : nullptr;
      write_edges_named(node_name(op.id()), op.inputs(), op.outputs(), /*with_boxes=*/false, sig);
      return;
    }
    line(fmt::format("subgraph cluster_{} {{", node_name(op.id())));
    line(fmt::format("label={};", operation_label(op, colors, o_.show_ipfs)), 4);
    line(fmt::format("style=\"filled,rounded\"; fillcolor=\"{}\"; color=\"{}\"; penwidth=1.5;",
                     colors.pale, colors.border),
         4);
    std::span<const ir::ApplicationId> apps = op.applications();
    bool summarise = static_cast<int>(apps.size()) > o_.max_shards_drawn;
    if (summarise) {
      std::string label =
          html::table(html::row(html::cell(html::bold(fmt::format("{} shards", apps.size())))),
                      fmt::format("BGCOLOR=\"{}\" COLOR=\"{}\"", colors.fill, colors.border));
      line(fmt::format("s{} [label=<{}>];", op.id().index(), label), 4);
    } else {
      for (std::size_t k = 0; k < apps.size(); ++k) {
        auto device = o_.device_of.find(apps[k].index());
        if (device == o_.device_of.end()) {
          line(fmt::format("{} [label={}];", node_name(apps[k]),
                           shard_label(g_.application(apps[k]), op, k, colors)),
               4);
        } else {
          // One colour per device, in the order devices first appear.
          auto [it, added] = device_colour_.emplace(device->second, device_colour_.size());
          line(fmt::format("{} [label={}];", node_name(apps[k]),
                           shard_label(g_.application(apps[k]), op, k, op_colors(it->second),
                                       device->second)),
               4);
        }
      }
      // Shards stand in one column, in order (#0 at the top): same rank, chained invisibly.
      if (apps.size() > 1) {
        std::string chain;
        for (std::size_t k = 0; k < apps.size(); ++k) {
          chain += (k == 0 ? "" : " -> ") + node_name(apps[k]);
        }
        line(fmt::format("{{ rank=same; {} [style=invis]; }}", chain), 4);
      }
    }
    line("}");
    if (summarise) {
      std::string name = fmt::format("s{}", op.id().index());
      write_edges_named(name, op.inputs(), op.outputs(), false);
      return;
    }
    for (ir::ApplicationId app : apps) {
      ir::ApplicationView a = g_.application(app);
      write_edges(app, a.inputs(), a.outputs(), /*with_boxes=*/true);
    }
  }

  void write_edges(ir::NodeId node, const ir::SelectionMap& inputs, const ir::SelectionMap& outputs,
                   bool with_boxes) {
    write_edges_named(node_name(node), inputs, outputs, with_boxes);
  }

  // Edges between tensors and `name`; with a signature, input edges attach to their IPF rows.
  void write_edges_named(const std::string& name, const ir::SelectionMap& inputs,
                         const ir::SelectionMap& outputs, bool with_boxes,
                         const ir::IpfSignature* sig = nullptr) {
    auto end = [&](bool input, const std::string& port, std::uint32_t position) {
      const ir::IpfMap* ipfs = sig ? (input ? &sig->inputs : &sig->outputs) : nullptr;
      // Outputs leave from the node's side: the row's name cell sits on the left of the table.
      if (!input || !ipfs || position >= ipfs->list(port).size()) return name;
      return fmt::format("{}:{}:{}", name, port_id(input, port, position), input ? "w" : "e");
    };
    for (const auto& e : inputs.entries()) {
      if (!e.value.tensor.is_valid()) continue;
      line(fmt::format("{} -> {} [label={}];", node_name(e.value.tensor),
                       end(true, e.name, e.position),
                       dot_string(edge_label(e.name, e.position, e.value.range, with_boxes))));
    }
    for (const auto& e : outputs.entries()) {
      if (!e.value.tensor.is_valid()) continue;
      line(fmt::format("{} -> {} [label={}, penwidth=1.3];", end(false, e.name, e.position),
                       node_name(e.value.tensor),
                       dot_string(edge_label(e.name, e.position, e.value.range, with_boxes))));
    }
  }

  static std::string edge_label(const std::string& port, std::uint32_t position,
                                const zspace::Range& range, bool with_box) {
    std::string text = position == 0 ? port : fmt::format("{}[{}]", port, position);
    if (with_box) text += " " + box_text(range);
    return text;
  }

  const ir::Graph& g_;
  const RenderOptions& o_;
  std::string out_;
};

}  // namespace

std::string to_dot(const ir::Graph& graph, const RenderOptions& options) {
  if (draws_summary(graph, options)) return to_summary_dot(graph, options);
  return DotWriter(graph, options).write();
}

}  // namespace tapestry::exporter
