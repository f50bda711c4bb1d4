// `tapestry project`: apply an index projection to an index point or range.
//
//   tapestry project --index 'zr[0:3, 0:3]'
//                    --ipf '{"affineMap":{"projection":[[1,-1]],"offset":[0]},"shape":[1]}'
//   zr[-2:3]
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "command.h"
#include "common_options.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/format.h"
#include "tapestry/zspace/json.h"
#include "tapestry/zspace/text.h"

namespace tapestry::cli {

namespace {

struct ProjectOptions {
  std::string ipf;
  std::string index;
  bool json = false;
};

zspace::IndexProjection parse_ipf_argument(const std::string& text) {
  const nlohmann::json parsed = zspace::parse_json_text(text, "--ipf");
  try {
    return zspace::index_projection_from_json(parsed);
  } catch (const Error& e) {
    throw e.with_context("--ipf");
  }
}

// An index is a range (`zr[...]`) or a point (`(1, 2)` / `[1, 2]`).
zspace::Range project(const zspace::IndexProjection& ipf, const std::string& index) {
  try {
    if (index.find("zr") != std::string::npos) return ipf.apply(zspace::parse_range(index));
    return ipf.apply(zspace::parse_point(index));
  } catch (const Error& e) {
    throw e.with_context("--index");
  }
}

int run_project(const ProjectOptions& options) {
  zspace::IndexProjection ipf = parse_ipf_argument(options.ipf);
  zspace::Range result = project(ipf, options.index);
  if (options.json) {
    fmt::print("{}\n", zspace::to_json(result).dump());
  } else {
    fmt::print("{}\n", result);
  }
  return kExitOk;
}

}  // namespace

void register_project(CLI::App& app, Dispatch& dispatch) {
  auto options = std::make_shared<ProjectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "project", "Apply an index projection (IPF) to an index point or range; print the range");
  cmd->add_option(
         "--ipf", options->ipf,
         R"(IPF as loom JSON: {"affineMap":{"projection":[[..]],"offset":[..]},"shape":[..]})")
      ->required();
  cmd->add_option("--index", options->index, "index range 'zr[0:3, 0:3]' or point '(1, 2)'")
      ->required();
  cmd->add_flag("--json", options->json, R"(print the range as JSON {"start":[..],"end":[..]})");
  cmd->footer(exit_codes_footer());
  cmd->callback([&dispatch, options] {
    dispatch.name = "project";
    dispatch.run = [options] { return run_project(*options); };
  });
}

}  // namespace tapestry::cli
