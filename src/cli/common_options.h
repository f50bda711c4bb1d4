// Options several subcommands share, declared once so they read and behave the same everywhere.
//
// * `--kernel-dir DIR`: a directory of kernel files (*.yaml) added to the built-in kernels;
//   repeatable, one directory per flag (so it never swallows the GRAPH argument). The
//   directories of $TAPESTRY_KERNELS (':'-separated) are added too, before the flags'.
// * `--plugin FILE`: a kernel plugin (a shared library, tapestry/plugin.h); repeatable, after
//   those of $TAPESTRY_PLUGINS (':'-separated). kernel_sources.h loads both.
// * `--kernels` on a command that executes nothing is refused with a pointer to --kernel-dir
//   (it used to mean a directory; on `run` it selects the executable kernels: fast|reference).
// * Every `--help` ends with the command's exit codes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernel_sources.h"
#include "tapestry/rewrite/pattern.h"

namespace CLI {
class App;
}

namespace tapestry::cli {

/// Adds `--kernel-dir DIR` and `--plugin FILE` (both repeatable) to `cmd`, and, when
/// `trap_kernels`, a hidden `--kernels` that is refused with a message naming `--kernel-dir`.
void add_kernel_source_options(CLI::App& cmd, KernelSources& sources, bool trap_kernels = true);

/// `--help`'s footer: "Exit codes: 0 …, 1 …, 2 …". `failed` says what exit code 1 means for
/// this command (empty: the command has no such outcome).
std::string exit_codes_footer(const std::string& failed = "");

/// The line main prints for an Error of `command`: "tapestry run: error: MESSAGE", or, when the
/// message is a located diagnostic that says "error" itself ("g.tap:2:5: error: unknown kernel
/// 'foo'"), "tapestry run: g.tap:2:5: error: unknown kernel 'foo'" — one "error" per line.
std::string error_line(std::string_view command, std::string_view message);

/// Prints one line per fusion the plan asked for and the rewrites refused (stderr), e.g.
/// "refused  fuse-elementwise on Y/linear: …": without it a refused fusion is silent. `run` and
/// `shard` call it unless --quiet (--explain prints every rewrite instead).
void print_refused_fusions(const std::vector<rewrite::RewriteEvent>& log);

}  // namespace tapestry::cli
