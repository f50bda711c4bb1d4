// Helpers for the search tests: graphs from .tap text or files, and the plans of the tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "rewrite/rewrite_testing.h"
#include "tapestry/cost/target.h"
#include "tapestry/ir/graph.h"

namespace tapestry::search::testing {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A .tap file of tests/data/search or examples/.
inline ir::Graph test_graph(const std::string& name) {
  return rewrite::testing::build(read_text(std::string(TAPESTRY_TEST_DATA) + "/search/" + name));
}
inline ir::Graph example_graph(const std::string& name) {
  return rewrite::testing::build(read_text(std::string(TAPESTRY_EXAMPLES) + "/" + name));
}

/// `n` layers L0 … L{n-1} of relu(linear), 256 × 128: a graph whose first two layers
/// --tie-layers searches first (the tied layers' tests).
inline ir::Graph relu_layers(int n) {
  std::string tap = "X: f32[256, 128]\n";
  std::string prev = "X";
  for (int l = 0; l < n; ++l) {
    tap += "W" + std::to_string(l) + ": f32[128, 128]\nb" + std::to_string(l) + ": f32[128]\nL" +
           std::to_string(l) + " = relu(linear(" + prev + ", W" + std::to_string(l) + ", b" +
           std::to_string(l) + "))\n";
    prev = "L" + std::to_string(l);
  }
  tap += "output " + prev + "\n";
  return rewrite::testing::build(tap);
}

inline const cost::Target& h100x8() {
  static const cost::Target t = *cost::preset_target("h100x8");
  return t;
}

/// A test with a scratch directory of its own, removed after it.
class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tapestry_search_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

}  // namespace tapestry::search::testing
