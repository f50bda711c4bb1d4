// `tapestry targets [NAME|FILE]`: list the preset targets, or describe one target (a preset or a
// target file), checked as `--target` would read it.
//
//   tapestry targets                      # the presets compiled in, one line each
//   tapestry targets h100x64              # a preset, described
//   tapestry targets my-cluster.json      # a file: located errors, exit 2, when it is bad
//   tapestry targets h100x8 --json        # the canonical JSON form (every default written out)
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <algorithm>

#include "command.h"
#include "common_options.h"
#include "tapestry/cost/target.h"

namespace tapestry::cli {

namespace {

struct TargetsOptions {
  std::string target;
  bool json = false;
};

int run_targets(const TargetsOptions& options) {
  if (options.target.empty()) {
    std::size_t width = 10;  // the name column fits the longest name
    for (const std::string& name : cost::preset_target_names())
      width = std::max(width, name.size());
    for (const std::string& name : cost::preset_target_names()) {
      const cost::Target t = *cost::preset_target(name);
      fmt::print("{:<{}} {:>4} devices  {}\n", name, width, t.devices.size(), t.about);
    }
    return kExitOk;
  }
  const cost::Target target = cost::resolve_target(options.target);
  fmt::print("{}", options.json ? cost::target_json_text(target) : cost::describe_target(target));
  return kExitOk;
}

}  // namespace

void register_targets(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<TargetsOptions>();
  CLI::App* cmd =
      app.add_subcommand("targets", "List the preset targets, or check and describe one target");
  cmd->add_option("target", options->target, "a preset name or a target file (JSON)");
  cmd->add_flag("--json", options->json, "print the target's canonical JSON instead");
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "targets";
    dispatch.run = [options] { return run_targets(*options); };
  });
}

}  // namespace tapestry::cli
