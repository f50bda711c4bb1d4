// How a `tapestry` subcommand plugs into the CLI.
//
// Each subcommand lives in its own src/cli/cmd_<name>.cpp and exposes one function
// `void register_<name>(CLI::App& app, Dispatch& dispatch)` that adds a CLI11 subcommand and,
// in its callback, stores the work to run in `dispatch.run`. main() parses, then runs it. The
// work returns the process exit code; bad input throws tapestry::Error, which main() prints
// as `tapestry <cmd>: error: <message>` with exit code 2 (the documented code for unreadable
// input and bad arguments). Commands with their own codes (validate: 1 = invalid) return them.
//
// Keep command files thin: parse options, call the library, print. Logic belongs in a module.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace tapestry::cli {

/// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;    // the input is fine but the answer is "no" (invalid, FAIL)
inline constexpr int kExitBadInput = 2;  // unreadable input or bad arguments

struct Dispatch {
  std::string name;          // the selected subcommand
  std::function<int()> run;  // its work
};

void register_project(CLI::App& app, Dispatch& dispatch);
void register_validate(CLI::App& app, Dispatch& dispatch);
void register_render(CLI::App& app, Dispatch& dispatch);
void register_kernels(CLI::App& app, Dispatch& dispatch);
void register_build(CLI::App& app, Dispatch& dispatch);
void register_grad(CLI::App& app, Dispatch& dispatch);
void register_print(CLI::App& app, Dispatch& dispatch);
void register_shard(CLI::App& app, Dispatch& dispatch);
void register_run(CLI::App& app, Dispatch& dispatch);
void register_train(CLI::App& app, Dispatch& dispatch);
void register_verify(CLI::App& app, Dispatch& dispatch);
void register_targets(CLI::App& app, Dispatch& dispatch);
void register_calibrate(CLI::App& app, Dispatch& dispatch);
void register_cost(CLI::App& app, Dispatch& dispatch);
void register_explain(CLI::App& app, Dispatch& dispatch);
void register_plan(CLI::App& app, Dispatch& dispatch);
void register_optimize(CLI::App& app, Dispatch& dispatch);
void register_import(CLI::App& app, Dispatch& dispatch);
void register_launch(CLI::App& app, Dispatch& dispatch);
void register_codegen(CLI::App& app, Dispatch& dispatch);

}  // namespace tapestry::cli
