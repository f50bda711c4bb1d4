// Rendering DOT with libgvc, in-process (graphviz.h).
//
// Graphviz keeps global state (plugin registry, error handler), so rendering is serialised by a
// mutex; errors it reports are collected through agseterrf and turned into one tapestry::Error.
//
// One GVC context serves the whole process and is never freed: Graphviz 2.42's pango plugin
// caches a font name that points into the context's font dictionary, so a second context reads
// freed memory (AddressSanitizer catches it in textspan_size). Keeping the first context alive
// avoids that and saves reloading the plugins for every picture.
#include <fmt/format.h>
#include <gvc.h>

#include <mutex>

#include "tapestry/export/graphviz.h"
#include "tapestry/support/error.h"
#include "tapestry/support/file.h"

namespace tapestry::exporter {

namespace {

std::mutex& graphviz_mutex() {
  static std::mutex m;
  return m;
}

std::string& graphviz_errors() {
  static std::string errors;
  return errors;
}

int collect_error(char* message) {
  graphviz_errors() += message;
  return 0;
}

GVC_t* shared_context() {
  static GVC_t* gvc = gvContext();  // intentionally never freed (see the file comment)
  return gvc;
}

// Owns a graph (and its layout) for one render.
struct GraphvizSession {
  GVC_t* gvc = nullptr;
  Agraph_t* graph = nullptr;
  bool laid_out = false;
  ~GraphvizSession() {
    if (laid_out) gvFreeLayout(gvc, graph);
    if (graph) agclose(graph);
  }
};

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::optional<ImageFormat> format_for_path(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  if (ext == ".dot" || ext == ".gv") return ImageFormat::kDot;
  if (ext == ".svg") return ImageFormat::kSvg;
  if (ext == ".png") return ImageFormat::kPng;
  return std::nullopt;
}

std::string render_dot(std::string_view dot, ImageFormat format) {
  if (format == ImageFormat::kDot) return std::string(dot);
  std::lock_guard lock(graphviz_mutex());
  graphviz_errors().clear();
  agseterrf(collect_error);
  agseterr(AGERR);
  GraphvizSession s;
  s.gvc = shared_context();
  std::string text(dot);
  s.graph = agmemread(text.c_str());
  if (s.graph == nullptr) {
    throw Error(fmt::format("Graphviz rejected the DOT text: {}", trimmed(graphviz_errors())));
  }
  if (gvLayout(s.gvc, s.graph, "dot") != 0) {
    throw Error(fmt::format("Graphviz layout failed: {}", trimmed(graphviz_errors())));
  }
  s.laid_out = true;
  char* data = nullptr;
  unsigned int length = 0;
  const char* renderer = format == ImageFormat::kSvg ? "svg" : "png";
  if (gvRenderData(s.gvc, s.graph, renderer, &data, &length) != 0 || data == nullptr) {
    throw Error(fmt::format("Graphviz cannot render {}: {}", renderer, trimmed(graphviz_errors())));
  }
  std::string bytes(data, length);
  gvFreeRenderData(data);
  return bytes;
}

void render_file(const ir::Graph& graph, const std::filesystem::path& path,
                 const RenderOptions& options) {
  std::optional<ImageFormat> format = format_for_path(path);
  if (!format) {
    throw Error(fmt::format("{}: unknown image format (use .dot, .svg or .png)", path.string()));
  }
  write_file_atomically(path, render_dot(to_dot(graph, options), *format));
}

}  // namespace tapestry::exporter

#if defined(__SANITIZE_ADDRESS__)
// Graphviz, fontconfig, pango and glib keep caches for the life of the process (and our shared
// GVC context is never freed, by design). Tell LeakSanitizer, so sanitizer builds of any program
// that renders pictures still exit cleanly; our own code's leaks are still reported.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libgvc.so\n"
         "leak:libcgraph.so\n"
         "leak:libgvplugin_\n"
         "leak:libfontconfig.so\n"
         "leak:libpango\n"
         "leak:libcairo.so\n"
         "leak:libglib-2.0.so\n"
         "leak:libgobject-2.0.so\n"
         "leak:libharfbuzz.so\n"
         "leak:libfreetype.so\n";
}
// Without it, every such program ends by printing LeakSanitizer's table of the suppressions used,
// which a command's tested output (the docs' transcripts of `tapestry render`) does not show.
extern "C" const char* __lsan_default_options() {
  return "print_suppressions=0";
}
#endif
