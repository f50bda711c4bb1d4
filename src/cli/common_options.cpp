#include "common_options.h"

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <sstream>

#include "tapestry/rewrite/fuse_elementwise.h"

namespace tapestry::cli {

void add_kernel_dir_option(CLI::App& cmd, std::vector<std::string>& dirs, bool trap_kernels) {
  cmd.add_option("--kernel-dir", dirs,
                 "a directory of extra kernel files (*.yaml) added to the built-in kernels; "
                 "repeatable (also: $TAPESTRY_KERNELS, ':'-separated)")
      ->allow_extra_args(false)
      ->type_name("DIR");
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

std::vector<std::string> kernel_dirs_from_environment() {
  std::vector<std::string> dirs;
  const char* env = std::getenv("TAPESTRY_KERNELS");
  if (env == nullptr) return dirs;
  std::istringstream in(env);
  for (std::string dir; std::getline(in, dir, ':');) {
    if (!dir.empty()) dirs.push_back(dir);
  }
  return dirs;
}

}  // namespace tapestry::cli
