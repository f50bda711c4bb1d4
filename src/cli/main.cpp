// The `tapestry` command: parse, dispatch, map errors to exit codes. No logic lives here.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>

#include "command.h"
#include "common_options.h"
#include "registry.h"
#include "tapestry/support/error.h"
#include "tapestry/version.h"

int main(int argc, char** argv) {
  CLI::App app{"Tapestry: a compiler and runtime for tensor block-operation graphs", "tapestry"};
  app.set_version_flag("--version", std::string("tapestry ") + tapestry::kVersion);
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // every --help shows the defaults
  app.footer(tapestry::cli::exit_codes_footer(
      "the answer is \"no\": an invalid graph (validate, build), a FAIL or UNCHECKED (run "
      "--verify, verify)"));
  tapestry::cli::Dispatch dispatch;
  tapestry::cli::register_all(app, dispatch);
  std::vector<std::string> names;
  for (CLI::App* sub : app.get_subcommands({})) {
    names.push_back(sub->get_name());
    for (CLI::Option* option : sub->get_options({})) {  // an empty list is no default to show
      if (option->get_default_str() == "[]") option->default_str("");
    }
  }
  if (argc > 1 && argv[1][0] != '-' &&
      std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    // CLI11 would say "A subcommand is required", which hides the typo.
    fmt::print(stderr, "tapestry: unknown command '{}' (commands: {}); see tapestry --help\n",
               argv[1], fmt::join(names, ", "));
    return tapestry::cli::kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : tapestry::cli::kExitBadInput;
  }
  try {
    return dispatch.run ? dispatch.run() : tapestry::cli::kExitBadInput;
  } catch (const tapestry::Error& e) {
    fmt::print(stderr, "{}\n", tapestry::cli::error_line(dispatch.name, e.what()));
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
