// Helpers for the workflow tests: the examples' graphs and plans.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/plan.h"
#include "tapestry/support/file.h"

namespace tapestry::workflow_testing {

inline ir::Graph build(const std::string& tap, const std::string& name = "test.tap") {
  auto file = std::make_shared<metakernel::SourceFile>(name, tap);
  metakernel::BuildResult r = metakernel::build_tap(file, metakernel::builtin_signatures());
  if (!r.ok()) {
    ADD_FAILURE() << "cannot build " << name << ":\n" << support::format_diagnostics(r.diagnostics);
    return ir::Graph();
  }
  return std::move(*r.graph);
}

inline ir::Graph example(const std::string& name) {
  return build(read_file(std::string(TAPESTRY_EXAMPLES) + "/" + name), name);
}

inline rewrite::Plan example_plan(const std::string& name) {
  const std::string path = std::string(TAPESTRY_EXAMPLES) + "/plans/" + name;
  return rewrite::parse_plan(read_file(path), path);
}

}  // namespace tapestry::workflow_testing
