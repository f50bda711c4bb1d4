// The list of subcommands. Adding one: write src/cli/cmd_<name>.cpp with
// register_<name>(), declare it in command.h, add it to register_all() below and to
// src/cli/CMakeLists.txt.
#pragma once

#include <CLI/CLI.hpp>

#include "command.h"

namespace tapestry::cli {

inline void register_all(CLI::App& app, Dispatch& dispatch) {
  register_project(app, dispatch);
  register_validate(app, dispatch);
  register_render(app, dispatch);
  register_kernels(app, dispatch);
  register_build(app, dispatch);
  register_grad(app, dispatch);
  register_print(app, dispatch);
  register_plan(app, dispatch);
  register_shard(app, dispatch);
  register_run(app, dispatch);
  register_train(app, dispatch);
  register_verify(app, dispatch);
  register_targets(app, dispatch);
  register_calibrate(app, dispatch);
  register_cost(app, dispatch);
  register_explain(app, dispatch);
  register_optimize(app, dispatch);
  register_import(app, dispatch);
  register_launch(app, dispatch);
  register_codegen(app, dispatch);
}

}  // namespace tapestry::cli
