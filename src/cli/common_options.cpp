#include "common_options.h"

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <cctype>

#include "tapestry/rewrite/fuse_elementwise.h"

namespace tapestry::cli {

namespace {

// Whether `message` starts with "FILE:LINE[:COLUMN]: error: " (a located diagnostic).
bool is_located_error(std::string_view message) {
  const std::size_t marker = message.find(": error: ");
  if (marker == std::string_view::npos) return false;
  const std::string_view where = message.substr(0, marker);
  if (where.find(' ') != std::string_view::npos) return false;
  // FILE, then one or two ":<digits>" groups.
  std::size_t end = where.size();
  int groups = 0;
  while (groups < 2) {
    std::size_t digits = end;
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(where[digits - 1]))) --digits;
    if (digits == end || digits == 0 || where[digits - 1] != ':') break;
    end = digits - 1;
    ++groups;
  }
  return groups > 0 && end > 0;
}

}  // namespace

std::string error_line(std::string_view command, std::string_view message) {
  if (is_located_error(message)) return fmt::format("tapestry {}: {}", command, message);
  return fmt::format("tapestry {}: error: {}", command, message);
}

void add_kernel_source_options(CLI::App& cmd, KernelSources& sources, bool trap_kernels) {
  cmd.add_option("--kernel-dir", sources.dirs,
                 "a directory of extra kernel files (*.yaml) added to the built-in kernels; "
                 "repeatable (also: $TAPESTRY_KERNELS, ':'-separated)")
      ->allow_extra_args(false)
      ->type_name("DIR");
  cmd.add_option("--plugin", sources.plugins,
                 "a kernel plugin (a shared library: docs/metakernels.md, \"C++ plugins\") whose "
                 "kernels are added; repeatable (also: $TAPESTRY_PLUGINS, ':'-separated)")
      ->allow_extra_args(false)
      ->type_name("FILE");
  if (!trap_kernels) return;
  cmd.add_option_function<std::string>(
         "--kernels",
         [](const std::string& value) {
           throw CLI::ValidationError(
               "--kernels",
               fmt::format("this command runs no kernels; for a directory of kernel files write "
                           "--kernel-dir {}",
                           value));
         })
      ->group("");  // hidden
}

std::string exit_codes_footer(const std::string& failed) {
  return failed.empty()
             ? "Exit codes: 0 success, 2 unreadable input or bad arguments (the error names the "
               "file, line:column or node)."
             : fmt::format(
                   "Exit codes: 0 success, 1 {}, 2 unreadable input or bad arguments (the error "
                   "names the file, line:column or node).",
                   failed);
}

void print_refused_fusions(const std::vector<rewrite::RewriteEvent>& log) {
  for (const rewrite::RewriteEvent& e : log) {
    if (!e.applied && e.pattern == rewrite::kFuseElementwise) {
      fmt::print(stderr, "{}\n", e.to_string());
    }
  }
}

}  // namespace tapestry::cli
