#include "common_options.h"

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "tapestry/rewrite/fuse_elementwise.h"

namespace tapestry::cli {

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
