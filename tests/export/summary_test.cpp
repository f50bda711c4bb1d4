// The summary picture of big graphs: groups by name path, repeated layers drawn once (×N), edges
// carrying the tensors between groups, weights counted inside; auto above the threshold.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tapestry/export/graphviz.h"
#include "tapestry/metakernel/tap_frontend.h"

namespace tapestry::exporter {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A stem, `layers` repeated blocks of linear → relu → linear → add (residual), and a head;
// block 7 (when there are 8 or more) uses gelu, so the run of repeats breaks there.
ir::Graph model(int layers) {
  // The stem is a composite: `stem/fc/mm` is a part of `stem/fc`.
  std::string tap =
      "x: f32[4, 16]\nstem.w: f32[16, 16]\nstem/fc/mm = linear_nobias(x, stem.w)\n"
      "stem/fc = relu(stem/fc/mm)\n";
  std::string prev = "stem/fc";
  for (int k = 0; k < layers; ++k) {
    const std::string l = "enc/layers/layer_" + std::to_string(k);
    tap += l + ".w1: f32[32, 16]\n" + l + ".w2: f32[16, 32]\n";
    tap += l + "/fc1 = linear_nobias(" + prev + ", " + l + ".w1)\n";
    tap += l + "/act = " + std::string(k == 7 ? "gelu" : "relu") + "(" + l + "/fc1)\n";
    tap += l + "/fc2 = linear_nobias(" + l + "/act, " + l + ".w2)\n";
    tap += l + "/add = add(" + prev + ", " + l + "/fc2)\n";
    prev = l + "/add";
  }
  tap += "head.w: f32[10, 16]\nhead/fc = linear_nobias(" + prev + ", head.w)\noutput head/fc\n";
  metakernel::BuildResult built =
      metakernel::build_tap(std::make_shared<const metakernel::SourceFile>("m.tap", tap),
                            metakernel::builtin_signatures());
  EXPECT_TRUE(built.ok()) << (built.diagnostics.empty() ? "" : built.diagnostics[0].message);
  return std::move(*built.graph);
}

TEST(Summary, RepeatedLayersAreOneNode) {
  const ir::Graph g = model(12);  // 3 + 48 operations
  const std::string dot = to_dot(g, {.detail = Detail::kSummary});
  // stem, layers 0–6 (×7), layer 7 (gelu), layers 8–11 (×4), head: five nodes.
  EXPECT_EQ(count(dot, "CELLBORDER=\"0\""), 5u) << dot;  // runs (tensors: CELLBORDER=1)
  EXPECT_THAT(dot, HasSubstr("<B>enc/layers/layer_0 … layer_6</B>  ×7"));
  EXPECT_THAT(dot, HasSubstr("<B>enc/layers/layer_7</B>"));
  EXPECT_THAT(dot, HasSubstr("<B>enc/layers/layer_8 … layer_11</B>  ×4"));
  EXPECT_THAT(dot, HasSubstr("4 operations each: linear_nobias 2, add 1, relu 1"));
  EXPECT_THAT(dot, HasSubstr("2 weights read only here"));  // each layer's weights
  EXPECT_THAT(dot, HasSubstr("51 operations in 14 groups, drawn as 5"));
  // x feeds the stem and the first layer's residual: drawn; weights are not.
  EXPECT_THAT(dot, HasSubstr("<B>x</B>"));
  EXPECT_THAT(dot, HasSubstr("<B>stem</B></TD></TR><TR><TD>2 operations: linear_nobias 1, relu 1"));
  EXPECT_THAT(dot, Not(HasSubstr("layer_3.w1")));
  // Edges run between consecutive runs, labelled with the crossing tensor; the result is drawn.
  EXPECT_THAT(dot, HasSubstr("r1 -> r2 [label=\"enc/layers/layer_6/add [4, 16]\"]"));
  EXPECT_THAT(dot, HasSubstr("<B>head/fc</B>"));
  EXPECT_EQ(dot, to_dot(model(12), {.detail = Detail::kSummary}));  // deterministic
  // It renders.
  EXPECT_THAT(render_dot(dot, ImageFormat::kSvg), HasSubstr("<svg"));
}

TEST(Summary, AutoAboveTheThresholdFullBelow) {
  const ir::Graph small = model(2), big = model(20);
  EXPECT_FALSE(draws_summary(small, {}));
  EXPECT_TRUE(draws_summary(big, {}));  // 83 operations > 40
  EXPECT_FALSE(draws_summary(big, {.detail = Detail::kFull}));
  EXPECT_TRUE(draws_summary(small, {.detail = Detail::kSummary}));
  EXPECT_THAT(to_dot(small), HasSubstr("index:"));  // the full picture: operation tables
  EXPECT_THAT(to_dot(big), Not(HasSubstr("index:")));
  // Fewer groups allowed: a shallower level (every layer is in `enc`).
  const std::string coarse = to_dot(big, {.summary_groups = 3});
  EXPECT_THAT(coarse, HasSubstr("<B>enc/layers</B>"));
  EXPECT_THAT(coarse, HasSubstr("80 operations: linear_nobias 40"));
}

}  // namespace
}  // namespace tapestry::exporter
