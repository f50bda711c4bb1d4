// Pictures: DOT structure, rendering in-process, and the 4-shard Linear ⇒ ReLU picture.
#include "tapestry/export/graphviz.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ir/ir_testing.h"
#include "tapestry/support/error.h"

namespace tapestry::exporter {
namespace {

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(GraphvizTest, OperationGraphsShowTensorsOperationsAndIpfs) {
  auto m = ir::testing::linear_relu(0);
  std::string dot = to_dot(m.g);
  EXPECT_EQ(count(dot, "cluster_"), 0u);
  EXPECT_NE(dot.find("<B>linear</B>"), std::string::npos);
  EXPECT_NE(dot.find("index: batch 0:8, out 0:6, in 0:4 (sum)"), std::string::npos) << dot;
  EXPECT_NE(dot.find("float32 [8, 4]"), std::string::npos);
  EXPECT_NE(dot.find("in x[0]"), std::string::npos);
  EXPECT_NE(dot.find("out result[0]"), std::string::npos);
  EXPECT_NE(dot.find("n0 -> n5:in_x_0:w [label=\"x\"]"), std::string::npos) << dot;
  EXPECT_EQ(dot, to_dot(ir::testing::linear_relu(0).g));  // deterministic
}

TEST(GraphvizTest, ApplicationGraphsGroupShardsPerOperationInOneColour) {
  auto m = ir::testing::linear_relu(4);
  std::string dot = to_dot(m.g);
  EXPECT_EQ(count(dot, "subgraph cluster_"), 2u);
  EXPECT_EQ(count(dot, "linear #"), 4u);
  EXPECT_EQ(count(dot, "relu #"), 4u);
  EXPECT_NE(dot.find("batch 2:4, out 0:6, in 0:4 (sum)"), std::string::npos);
  EXPECT_NE(dot.find("label=\"x [2:4, 0:4]\""), std::string::npos) << dot;
  // All four linear shards share the first palette colour; relu's shards the second.
  EXPECT_EQ(count(dot, "BGCOLOR=\"#8dd3c7\""), 5u);  // the operation table and its 4 shards
  EXPECT_EQ(count(dot, "BGCOLOR=\"#fdb462\""), 5u);
}

TEST(GraphvizTest, ManyShardsAreSummarised) {
  auto m = ir::testing::linear_relu(8);
  std::string dot = to_dot(m.g, {.max_shards_drawn = 4});
  EXPECT_NE(dot.find("8 shards"), std::string::npos);
  EXPECT_EQ(count(dot, "linear #"), 0u);
}

TEST(GraphvizTest, LabelsAreEscaped) {
  ir::Graph g;
  g.add_tensor({.dtype = ir::DType::kInt32, .range = ir::testing::zr("zr[0:1]")},
               {.label = "a<b>&\"c\""});
  std::string dot = to_dot(g);
  EXPECT_NE(dot.find("a&lt;b&gt;&amp;&quot;c&quot;"), std::string::npos) << dot;
  EXPECT_NO_THROW(render_dot(dot, ImageFormat::kSvg));
}

TEST(GraphvizTest, RendersSvgAndPngInProcess) {
  auto m = ir::testing::linear_relu(4);
  std::string dot = to_dot(m.g);
  std::string svg = render_dot(dot, ImageFormat::kSvg);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("linear #3"), std::string::npos);
  std::string png = render_dot(dot, ImageFormat::kPng);
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

TEST(GraphvizTest, BadDotIsAnError) {
  EXPECT_THROW(render_dot("digraph { a -> ", ImageFormat::kSvg), Error);
}

TEST(GraphvizTest, RenderFilePicksTheFormatFromTheExtension) {
  auto dir = std::filesystem::temp_directory_path();
  auto m = ir::testing::linear_relu(4);
  for (const char* name :
       {"tapestry_render_test.dot", "tapestry_render_test.svg", "tapestry_render_test.png"}) {
    auto path = dir / name;
    render_file(m.g, path);
    EXPECT_GT(std::filesystem::file_size(path), 100u) << name;
    std::filesystem::remove(path);
  }
  EXPECT_THROW(render_file(m.g, dir / "x.jpeg"), Error);
  EXPECT_EQ(format_for_path("a/b.gv"), ImageFormat::kDot);
}

// A failed write reports its cause (here the rename onto a directory: "Is a directory", which
// the cleanup of the temporary must not overwrite) and leaves no temporary behind.
TEST(GraphvizTest, RenderFileFailuresNameTheirCauseAndLeaveNothing) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tapestry_render_fail_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "taken.dot");
  auto m = ir::testing::linear_relu(2);
  try {
    render_file(m.g, dir / "taken.dot");
    ADD_FAILURE() << "rendering onto a directory succeeded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("cannot write " + (dir / "taken.dot").string() +
                                               ": Is a directory"));
  }
  EXPECT_THROW(render_file(m.g, dir / "missing" / "x.svg"), Error);
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    left.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"taken.dot"});
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tapestry::exporter
