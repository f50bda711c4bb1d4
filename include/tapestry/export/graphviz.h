// Pictures of graphs: Graphviz DOT text, and SVG/PNG rendered in-process with libgvc.
//
// Operation graphs show tensors (label, dtype, range, shape) and operations (kernel, index range
// with dimension names and reductions, and each input/output IPF as a small matrix). Application
// graphs group each operation's shards in a box of the operation's colour, the way Tapestry's
// `linear.relu.4x` picture shows four Linear and four ReLU shards: every shard shows its index
// sub-box, and its edges carry the tensor boxes it reads and writes.
//
//   std::string dot = exporter::to_dot(graph);
//   exporter::render_file(graph, "graph.png");             // format from the extension
//   std::string svg = exporter::render_dot(dot, exporter::ImageFormat::kSvg);
//
// Output is deterministic (graph order, fixed colours), so DOT files diff well. See
// docs/rendering.md for what each element means.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tapestry/ir/graph.h"

namespace tapestry::exporter {

/// How much of a graph to draw: every operation, or a summary of groups (big graphs).
enum class Detail {
  kAuto,     // the summary above `summary_above` operations, else everything
  kFull,     // every operation (and shard)
  kSummary,  // the summary: operations grouped by the path of their names, repeats drawn once
};

struct RenderOptions {
  /// Draw IPF matrices inside operation nodes.
  bool show_ipfs = true;
  /// Group shards per operation and draw their edges (application graphs). When false, shards are
  /// omitted and the operation graph is drawn.
  bool show_applications = true;
  /// Above this many applications per operation, shards are summarised as one node
  /// ("1000 shards") to keep big graphs drawable.
  int max_shards_drawn = 64;
  /// Where each application runs (application node index → device name, e.g. from cost::place):
  /// when given, every shard is filled with its device's colour and names its device.
  std::unordered_map<std::uint32_t, std::string> device_of;
  /// The summary groups operations by the '/'-separated path of their names (an imported model:
  /// `encoder/layers/encoder_layer_3/mlp/…`) at the deepest level whose picture has at most
  /// `summary_groups` nodes; consecutive groups that differ only in their numbers and hold the
  /// same kernels (`encoder_layer_0` … `encoder_layer_11`) are one node "×12". Edges carry the
  /// tensors between groups; a graph input only one group reads (a weight) is counted in its
  /// node; with applications, each node counts its shards and names their devices.
  Detail detail = Detail::kAuto;
  int summary_above = 40;
  int summary_groups = 24;
};

enum class ImageFormat { kDot, kSvg, kPng };

/// The format named by a file extension (.dot, .gv, .svg, .png), or nullopt.
std::optional<ImageFormat> format_for_path(const std::filesystem::path& path);

/// The graph as Graphviz DOT text: to_summary_dot when draws_summary, else every node.
std::string to_dot(const ir::Graph& graph, const RenderOptions& options = {});

/// Whether `options.detail` draws `graph` as a summary.
bool draws_summary(const ir::Graph& graph, const RenderOptions& options);

/// The summary picture (RenderOptions::detail) as DOT text.
std::string to_summary_dot(const ir::Graph& graph, const RenderOptions& options = {});

/// Lays out DOT text with Graphviz's `dot` engine (in-process, libgvc) and renders it. kDot
/// returns the text unchanged. Throws tapestry::Error when Graphviz rejects the text or cannot
/// render the format.
std::string render_dot(std::string_view dot, ImageFormat format);

/// Renders the graph to `path` (format from the extension), written atomically; throws Error for
/// an unknown extension or a write failure.
void render_file(const ir::Graph& graph, const std::filesystem::path& path,
                 const RenderOptions& options = {});

}  // namespace tapestry::exporter
