// The `tapestry` command: parse, dispatch, map errors to exit codes. No logic lives here.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <new>

#include "command.h"
#include "registry.h"
#include "tapestry/support/error.h"
#include "tapestry/version.h"

int main(int argc, char** argv) {
  CLI::App app{"Tapestry: a compiler and runtime for tensor block-operation graphs", "tapestry"};
  app.set_version_flag("--version", std::string("tapestry ") + tapestry::kVersion);
  app.require_subcommand(1);
  tapestry::cli::Dispatch dispatch;
  tapestry::cli::register_all(app, dispatch);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : tapestry::cli::kExitBadInput;
  }
  try {
    return dispatch.run ? dispatch.run() : tapestry::cli::kExitBadInput;
  } catch (const tapestry::Error& e) {
    fmt::print(stderr, "tapestry {}: error: {}\n", dispatch.name, e.what());
    return tapestry::cli::kExitBadInput;
  } catch (const std::bad_alloc&) {
    // A last line of defence: sizes are checked before anything large is allocated
    // (memory_budget.h, npy.h), so this is an allocation the checks did not foresee.
    fmt::print(stderr, "tapestry {}: error: out of memory (an allocation failed)\n", dispatch.name);
    return tapestry::cli::kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tapestry {}: internal error: {}\n", dispatch.name, e.what());
    return 3;
  }
}
