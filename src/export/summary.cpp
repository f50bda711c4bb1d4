// The summarised picture of a big graph (graphviz.h, RenderOptions::detail): operations grouped
// by the path of their names, repeated groups drawn once.
//
//   1. Order the operations (topologically) and choose a depth d: the deepest at which the
//      picture, repeats merged (2.), has at most `summary_groups` nodes. An operation's group is
//      the first d segments of its name, not counting its own last segment; a composite's parts
//      (`conv1/Conv/pad`) go with the operation they make up (`conv1/Conv`). ViT-B/16:
//      `encoder/layers/encoder_layer_3`; ResNet: `layer2/layer2.0`.
//   2. Runs: consecutive groups whose names differ only in their numbers and that hold the same
//      kernels under the same relative names (`encoder_layer_0` … `encoder_layer_11`) are one
//      node, "×12".
//   3. Edges between runs carry the tensors that cross them; a graph input read by one run only,
//      not the first (where the model's inputs enter) — a weight — is counted in that run's label;
//      other graph inputs are drawn, as are the graph's outputs.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "html_label.h"
#include "node_labels.h"
#include "tapestry/export/graphviz.h"

namespace tapestry::exporter {

namespace {

std::vector<std::string_view> segments(std::string_view name) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = name.find('/', start);
    out.push_back(name.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

// The group of a name at depth d: its first min(d, segments − 1) segments (a one-segment name is
// its own group).
std::string group_key(std::string_view name, std::size_t depth) {
  const std::vector<std::string_view> s = segments(name);
  const std::size_t keep = s.size() == 1 ? 1 : std::min(depth, s.size() - 1);
  std::string out;
  for (std::size_t i = 0; i < keep; ++i) {
    if (i > 0) out += '/';
    out += s[i];
  }
  return out;
}

// Digits runs as '#': `encoder_layer_11/mlp/Gemm_3` → `encoder_layer_#/mlp/Gemm_#`.
std::string without_numbers(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
      out += '#';
      while (i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])) != 0) ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string count_text(std::int64_t n) {
  if (n >= 1'000'000) return fmt::format("{:.1f} M", static_cast<double>(n) / 1e6);
  if (n >= 10'000) return fmt::format("{:.0f} k", static_cast<double>(n) / 1e3);
  return fmt::format("{}", n);
}

struct Group {
  std::string key;
  std::vector<ir::OperationId> ops;
  std::string signature;  // the numbers-free key, then each operation's kernel and relative name
};

struct Run {
  std::vector<const Group*> groups;
  std::set<ir::TensorId> owned_inputs;  // graph inputs only this run reads
};

class SummaryWriter {
 public:
  SummaryWriter(const ir::Graph& g, const RenderOptions& o) : g_(g), o_(o) {}

  std::string write() {
    const std::vector<ir::OperationId> ops = ordered_operations();
    groups_ = make_groups(ops, choose_depth(ops));
    make_runs();
    std::string out = "digraph tapestry {\n";
    out += "  graph [rankdir=TB, fontname=\"Helvetica\", nodesep=0.3, ranksep=0.35];\n";
    out += "  node [fontname=\"Helvetica\", fontsize=11, shape=plain];\n";
    out += "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#505050\", arrowsize=0.7];\n";
    out += fmt::format(
        "  title [label=<{}>];\n",
        html::font(html::escape(fmt::format("{} operations in {} groups, drawn as {} (summary: "
                                            "--full draws every operation)",
                                            ops.size(), groups_.size(), runs_.size())),
                   "#606060"));
    for (std::size_t r = 0; r < runs_.size(); ++r)
      out += fmt::format("  r{} [label=<{}>];\n", r, run_label(runs_[r], op_colors(r)));
    write_tensors_and_edges(out);
    out += "}\n";
    return out;
  }

 private:
  std::vector<ir::OperationId> ordered_operations() const {
    ir::TopologicalOrder order = g_.topological_order();
    if (!order.cycle.empty()) {
      const auto all = g_.operations();
      return {all.begin(), all.end()};
    }
    std::vector<ir::OperationId> out;
    for (ir::NodeId n : order.order)
      if (g_.node(n).kind() == ir::NodeKind::kOperation) out.emplace_back(n);
    return out;
  }

  // A composite's parts go with it: `conv1/Conv/pad` and `conv1/Conv/conv2d` are grouped as the
  // operation `conv1/Conv` they make up (the shortest prefix path that names an operation).
  std::string_view unit_name(std::string_view name) const {
    for (std::size_t slash = name.find('/'); slash != std::string_view::npos;
         slash = name.find('/', slash + 1)) {
      if (op_names_.contains(std::string(name.substr(0, slash)))) return name.substr(0, slash);
    }
    return name;
  }

  // The deepest level whose picture has at most `summary_groups` nodes after repeats are
  // merged; where none has, the level with the fewest.
  std::size_t choose_depth(const std::vector<ir::OperationId>& ops) {
    for (ir::OperationId op : ops) op_names_.insert(std::string(g_.operation(op).display_name()));
    std::size_t deepest = 1;
    for (ir::OperationId op : ops)
      deepest = std::max(deepest, segments(g_.operation(op).display_name()).size());
    std::size_t best = 0, fewest = 1, fewest_runs = SIZE_MAX;
    for (std::size_t d = 1; d <= deepest; ++d) {
      const std::size_t runs = count_runs(make_groups(ops, d));
      if (runs <= static_cast<std::size_t>(std::max(o_.summary_groups, 1))) best = d;
      if (runs < fewest_runs) fewest = d, fewest_runs = runs;
    }
    return best > 0 ? best : fewest;
  }

  static std::size_t count_runs(const std::vector<Group>& groups) {
    std::size_t runs = 0;
    for (std::size_t i = 0; i < groups.size(); ++i)
      if (i == 0 || groups[i].signature != groups[i - 1].signature) ++runs;
    return runs;
  }

  std::vector<Group> make_groups(const std::vector<ir::OperationId>& ops, std::size_t depth) {
    std::vector<Group> out;
    std::map<std::string, std::size_t> index;
    for (ir::OperationId op : ops) {
      const std::string_view name = g_.operation(op).display_name();
      std::string key = group_key(unit_name(name), depth);
      auto [it, added] = index.emplace(key, out.size());
      if (added) out.push_back(Group{key, {}, without_numbers(key)});
      Group& group = out[it->second];
      group.ops.push_back(op);
      group.signature +=
          fmt::format("|{}:{}", g_.operation(op).kernel(),
                      without_numbers(name.substr(std::min(name.size(), key.size()))));
    }
    return out;
  }

  void make_runs() {
    for (const Group& group : groups_) {
      if (!runs_.empty() && runs_.back().groups.back()->signature == group.signature) {
        runs_.back().groups.push_back(&group);
      } else {
        runs_.push_back(Run{{&group}, {}});
      }
      for (ir::OperationId op : group.ops) run_of_op_[op.index()] = runs_.size() - 1;
    }
    // A graph input that one run reads, other than the first (where the model's own inputs
    // enter), is that run's: a weight, a bias, a mask. The others are drawn.
    for (ir::TensorId t : g_.tensors()) {
      if (!g_.producers(t).empty()) continue;
      const std::set<std::size_t> readers = reader_runs(t);
      if (readers.size() == 1 && *readers.begin() != 0)
        runs_[*readers.begin()].owned_inputs.insert(t);
    }
  }

  std::set<std::size_t> reader_runs(ir::TensorId t) const {
    std::set<std::size_t> out;
    for (ir::OperationId op : g_.consumers(t)) {
      auto it = run_of_op_.find(op.index());
      if (it != run_of_op_.end()) out.insert(it->second);
    }
    return out;
  }

  std::string run_label(const Run& run, const OpColors& colors) const {
    const std::size_t n = run.groups.size();
    std::string title = run.groups.front()->key;
    if (n > 1) {
      const std::vector<std::string_view> last = segments(run.groups.back()->key);
      title += fmt::format(" … {}", last.back());
    }
    std::map<std::string, int> kernels;
    std::int64_t shards = 0;
    std::set<std::string> devices;
    for (ir::OperationId op : run.groups.front()->ops) ++kernels[g_.operation(op).kernel()];
    for (const Group* group : run.groups) {
      for (ir::OperationId op : group->ops) {
        for (ir::ApplicationId app : g_.operation(op).applications()) {
          ++shards;
          if (auto d = o_.device_of.find(app.index()); d != o_.device_of.end())
            devices.insert(d->second);
        }
      }
    }
    std::vector<std::pair<int, std::string>> by_count;
    for (const auto& [k, c] : kernels) by_count.emplace_back(-c, k);
    std::sort(by_count.begin(), by_count.end());
    std::string mix;
    for (std::size_t i = 0; i < by_count.size() && i < 5; ++i)
      mix += fmt::format("{}{} {}", i == 0 ? "" : ", ", by_count[i].second, -by_count[i].first);
    if (by_count.size() > 5) mix += ", …";
    const std::size_t ops = run.groups.front()->ops.size();
    std::string rows = html::row(
        html::cell(html::bold(title) + (n > 1 ? html::escape(fmt::format("  ×{}", n)) : ""),
                   fmt::format("BGCOLOR=\"{}\"", colors.fill)));
    rows += html::row(html::cell(html::escape(
        fmt::format("{} operation{}{}: {}", ops, ops == 1 ? "" : "s", n > 1 ? " each" : "", mix))));
    if (!run.owned_inputs.empty()) {
      std::int64_t cells = 0;
      for (ir::TensorId t : run.owned_inputs) cells += g_.tensor(t).range().size();
      rows += html::row(html::cell(html::font(
          html::escape(fmt::format("{} weight{} read only here ({} values)",
                                   run.owned_inputs.size(), run.owned_inputs.size() == 1 ? "" : "s",
                                   count_text(cells))),
          "#606060")));
    }
    std::size_t run_ops = 0;
    for (const Group* group : run.groups) run_ops += group->ops.size();
    if (!devices.empty() || (shards > 0 && static_cast<std::size_t>(shards) != run_ops)) {
      std::string where = devices.empty() ? "" : fmt::format(" on {}", fmt::join(devices, ", "));
      if (devices.size() > 6) where = fmt::format(" on {} devices", devices.size());
      rows += html::row(html::cell(
          html::escape(fmt::format("{} shard{}{}", shards, shards == 1 ? "" : "s", where))));
    }
    return html::table(rows, fmt::format("BGCOLOR=\"{}\" COLOR=\"{}\"", colors.pale, colors.border),
                       0, 4);
  }

  static std::string shape(const ir::TensorView& t) {
    std::string out = "[";
    for (std::size_t d = 0; d < t.range().rank(); ++d)
      out += fmt::format("{}{}", d == 0 ? "" : ", ", t.range().extent(d));
    return out + "]";
  }

  void write_tensors_and_edges(std::string& out) const {
    // run → run edges: the tensors crossing them, named (at most two, then a count).
    std::map<std::pair<std::size_t, std::size_t>, std::vector<std::string>> crossing;
    for (ir::TensorId t : g_.tensors()) {
      const ir::TensorView view = g_.tensor(t);
      const std::string name = fmt::format("{} {}", view.display_name(), shape(view));
      const auto producers = g_.producers(t);
      const std::set<std::size_t> readers = reader_runs(t);
      if (producers.empty()) {
        if (readers.size() == 1 && runs_[*readers.begin()].owned_inputs.contains(t)) continue;
        out += fmt::format("  t{} [label={}];\n", t.index(), tensor_label(view));
        for (std::size_t r : readers) out += fmt::format("  t{} -> r{};\n", t.index(), r);
        continue;
      }
      auto from = run_of_op_.find(producers.front().index());
      if (from == run_of_op_.end()) continue;
      for (std::size_t r : readers)
        if (r != from->second) crossing[{from->second, r}].push_back(name);
      if (readers.empty()) {  // a result
        out += fmt::format("  t{} [label={}];\n", t.index(), tensor_label(view));
        out += fmt::format("  r{} -> t{} [penwidth=1.3];\n", from->second, t.index());
      }
    }
    for (const auto& [edge, names] : crossing) {
      std::string label = names.front();
      if (names.size() == 2) label += "\n" + names[1];
      if (names.size() > 2) label += fmt::format("\n+ {} more", names.size() - 1);
      std::string quoted = "\"";
      for (char c : label) {
        if (c == '"' || c == '\\') quoted += '\\';
        quoted += c == '\n' ? std::string("\\n") : std::string(1, c);
      }
      out += fmt::format("  r{} -> r{} [label={}\"];\n", edge.first, edge.second, quoted);
    }
  }

  const ir::Graph& g_;
  const RenderOptions& o_;
  std::vector<Group> groups_;
  std::vector<Run> runs_;
  std::map<std::uint32_t, std::size_t> run_of_op_;  // operation index → run
  std::set<std::string> op_names_;
};

}  // namespace

bool draws_summary(const ir::Graph& graph, const RenderOptions& options) {
  switch (options.detail) {
    case Detail::kFull:
      return false;
    case Detail::kSummary:
      return !graph.operations().empty();
    case Detail::kAuto:
      return static_cast<int>(graph.operations().size()) > options.summary_above;
  }
  return false;
}

std::string to_summary_dot(const ir::Graph& graph, const RenderOptions& options) {
  return SummaryWriter(graph, options).write();
}

}  // namespace tapestry::exporter
