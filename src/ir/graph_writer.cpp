// Writing graphs as loom JSON: deterministic field order (json_io.h), via JsonEmitter.
#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <utility>

#include "json_emitter.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"

namespace tapestry::ir {

namespace {

class GraphWriter {
 public:
  GraphWriter(const Graph& graph, const WriteOptions& options, std::string& out)
      : g_(graph), options_(options), e_(out, options.indent) {
    for (const UnresolvedReference& r : graph.unresolved_references()) {
      unresolved_[{r.from, r.json_path}] = r.key;
    }
  }

  void write() {
    e_.begin_object();
    if (!g_.graph_key().empty()) {
      e_.key("id");
      e_.string(g_.graph_key());
    }
    e_.key("nodes");
    e_.begin_array();
    for (std::uint32_t i = 0; i < g_.size(); ++i) write_node(NodeId(i));
    e_.end_array();
    if (!g_.updates().empty()) {
      e_.key("updates");
      e_.begin_object();
      for (const StateUpdate& u : g_.updates()) {
        e_.key(g_.display_name(u.state));
        e_.string(g_.display_name(u.next));
      }
      e_.end_object();
    }
    e_.end_object();
  }

  /// One node object (also used alone by node_to_json).
  void write_node(NodeId id) {
    NodeView node = g_.node(id);
    e_.begin_object();
    e_.key("id");
    e_.string(node.key());
    e_.key("type");
    e_.string(node.kind() == NodeKind::kOpaque
                  ? node.type()
                  : node_type_url(node.kind(), options_.short_type_names));
    if (!node.label().empty()) {
      e_.key("label");
      e_.string(node.label());
    }
    e_.key("body");
    write_body(node);
    write_tags(node);
    e_.end_object();
  }

 private:
  void write_body(const NodeView& node) {
    switch (node.kind()) {
      case NodeKind::kTensor:
        return write_tensor(g_.tensor(TensorId(node.id())));
      case NodeKind::kOperation:
        return write_operation(g_.operation(OperationId(node.id())));
      case NodeKind::kApplication:
        return write_application(g_.application(ApplicationId(node.id())));
      case NodeKind::kNote:
        e_.begin_object();
        e_.key("message");
        e_.string(g_.note(NoteId(node.id())).message());
        write_extensions(node);
        e_.end_object();
        return;
      case NodeKind::kOpaque:
        e_.value(g_.opaque(node.id()).body);
        return;
    }
  }

  void write_range(const zspace::Range& range) {
    e_.begin_object();
    e_.key("start");
    e_.integers(range.start().coords());
    e_.key("end");
    e_.integers(range.end().coords());
    e_.end_object();
  }

  void write_ipf(const zspace::IndexProjection& ipf) {
    e_.begin_object();
    e_.key("affineMap");
    e_.begin_object();
    e_.key("projection");
    e_.begin_array();
    for (std::size_t r = 0; r < ipf.map().out_rank(); ++r) e_.integers(ipf.map().row(r));
    e_.end_array();
    e_.key("offset");
    e_.integers(ipf.map().offset().coords());
    e_.end_object();
    e_.key("shape");
    e_.integers(ipf.shape().coords());
    e_.end_object();
  }

  template <typename Map, typename WriteValue>
  void write_named_lists(const Map& map, WriteValue&& write_value) {
    e_.begin_object();
    std::string current;
    bool open = false;
    for (const auto& entry : map.entries()) {
      if (!open || entry.name != current) {
        if (open) e_.end_array();
        e_.key(entry.name);
        e_.begin_array();
        current = entry.name;
        open = true;
      }
      write_value(entry);
    }
    if (open) e_.end_array();
    e_.end_object();
  }

  void write_selections(NodeId from, const char* name, const SelectionMap& map) {
    e_.key(name);
    write_named_lists(map, [&](const SelectionMap::Entry& entry) {
      e_.begin_object();
      e_.key("tensorId");
      if (entry.value.tensor.is_valid()) {
        e_.string(g_.key(entry.value.tensor));
      } else {
        e_.string(unresolved_key(
            from, fmt::format(".{}.{}[{}].tensorId", name, entry.name, entry.position)));
      }
      e_.key("range");
      write_range(entry.value.range);
      e_.end_object();
    });
  }

  void write_tensor(const TensorView& t) {
    e_.begin_object();
    e_.key("dtype");
    e_.string(t.dtype().name());
    e_.key("range");
    write_range(t.range());
    write_extensions(t);
    e_.end_object();
  }

  void write_operation(const OperationView& op) {
    const OperationBody& body = op.body();
    e_.begin_object();
    e_.key("kernel");
    e_.string(body.kernel);
    if (!body.params.is_null()) {
      e_.key("params");
      e_.value(body.params);
    }
    if (!body.inputs.empty()) write_selections(op.id(), "inputs", body.inputs);
    if (!body.outputs.empty()) write_selections(op.id(), "outputs", body.outputs);
    if (!body.index_names.empty()) {
      e_.key("indexNames");
      e_.strings(body.index_names);
    }
    if (!body.reductions.empty()) {
      e_.key("reductions");
      e_.begin_object();
      for (const Reduction& r : body.reductions) {
        e_.key(r.dim);
        e_.string(monoid_name(r.monoid));
      }
      e_.end_object();
    }
    write_extensions(op);
    e_.end_object();
  }

  void write_application(const ApplicationView& app) {
    const ApplicationBody& body = app.body();
    e_.begin_object();
    e_.key("operationId");
    e_.string(body.operation.is_valid() ? g_.key(body.operation)
                                        : unresolved_key(app.id(), ".operationId"));
    if (!body.inputs.empty()) write_selections(app.id(), "inputs", body.inputs);
    if (!body.outputs.empty()) write_selections(app.id(), "outputs", body.outputs);
    write_extensions(app);
    e_.end_object();
  }

  void write_extensions(const NodeView& node) {
    const nlohmann::json& ext = node.extensions();
    if (!ext.is_object()) return;
    for (const auto& [k, v] : ext.items()) {
      e_.key(k);
      e_.value(v);
    }
  }

  void write_tags(const NodeView& node) {
    const std::optional<zspace::Range> index = node.ipf_index();
    const IpfSignature* sig = node.ipf_signature();
    const nlohmann::json& other = node.other_tags();
    if (!index && !sig && !node.has_io_sequence_point() && !other.is_object()) return;
    bool short_names = options_.short_type_names;
    e_.key("tags");
    e_.begin_object();
    if (index) {
      e_.key(tag_type_url(TagKind::kIpfIndex, short_names));
      write_range(*index);
    }
    if (sig) {
      e_.key(tag_type_url(TagKind::kIpfSignature, short_names));
      e_.begin_object();
      e_.key("inputs");
      write_named_lists(sig->inputs, [&](const IpfMap::Entry& entry) { write_ipf(entry.value); });
      e_.key("outputs");
      write_named_lists(sig->outputs, [&](const IpfMap::Entry& entry) { write_ipf(entry.value); });
      e_.end_object();
    }
    if (node.has_io_sequence_point()) {
      e_.key(tag_type_url(TagKind::kIoSequencePoint, short_names));
      e_.begin_object();
      e_.end_object();
    }
    if (other.is_object()) {
      for (const auto& [url, value] : other.items()) {
        e_.key(url);
        e_.value(value);
      }
    }
    e_.end_object();
  }

  std::string unresolved_key(NodeId from, const std::string& path) const {
    auto it = unresolved_.find({from, path});
    return it == unresolved_.end() ? std::string() : it->second;
  }

  const Graph& g_;
  const WriteOptions& options_;
  JsonEmitter e_;
  std::map<std::pair<NodeId, std::string>, std::string> unresolved_;
};

}  // namespace

nlohmann::json node_to_json(const Graph& graph, NodeId node, const WriteOptions& options) {
  std::string out;
  WriteOptions compact = options;
  compact.indent = -1;
  GraphWriter(graph, compact, out).write_node(node);
  nlohmann::json parsed = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? nlohmann::json() : parsed;
}

std::string write_graph_json(const Graph& graph, const WriteOptions& options) {
  std::string out;
  GraphWriter(graph, options, out).write();
  if (options.indent >= 0) out += '\n';
  return out;
}

void write_graph_file(const Graph& graph, const std::filesystem::path& path,
                      const WriteOptions& options) {
  write_file_atomically(path, write_graph_json(graph, options));
}

}  // namespace tapestry::ir
