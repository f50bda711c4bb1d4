// The kernel registry: the built-ins load from the source tree, user directories add to them,
// calls resolve by name and input count; hooks' reshape grouping.
#include <gmock/gmock.h>

#include <cstdlib>

#include "tapestry/metakernel/describe.h"
#include "tapestry/metakernel/hooks.h"
#include "test_util.h"

namespace tapestry::metakernel {
namespace {

using namespace testing;  // NOLINT
using ::testing::HasSubstr;

TEST(Registry, BuiltinsAreAllThere) {
  std::vector<std::string> names;
  for (const Metakernel* k : signatures().metakernels()) names.push_back(k->name);
  for (const char* want :
       {"linear",  "matmul",    "relu",    "gelu",    "exp",     "neg",      "tanh",  "sigmoid",
        "add",     "sub",       "mul",     "div",     "maximum", "bias_add", "sum",   "max",
        "softmax", "transpose", "permute", "reshape", "pad",     "conv2d",   "reduce"}) {
    EXPECT_THAT(names, ::testing::Contains(want));
  }
  // Every built-in is declared in a kernel file; only reshape, permute, sum_to, argmax and argmin
  // use a C++ hook.
  for (const Metakernel* k : signatures().metakernels()) {
    ASSERT_NE(k->file, nullptr);
    EXPECT_THAT(k->file->name(), HasSubstr("kernels/"));
    if (k->name == "argmax" || k->name == "argmin") {
      EXPECT_EQ(k->hook, "arg_extreme") << k->name;
    } else if (k->name != "reshape" && k->name != "permute" && k->name != "sum_to") {
      EXPECT_EQ(k->hook, "") << k->name;
    }
    EXPECT_FALSE(k->summary.empty()) << k->name;
  }
}

TEST(Registry, ResolvesByNameAliasAndInputCount) {
  EXPECT_EQ(signatures().resolve("max", 1).name, "max");
  EXPECT_EQ(signatures().resolve("max", 2).name, "maximum");
  EXPECT_EQ(signatures().resolve("maximum", 2).name, "maximum");
  EXPECT_EQ(signatures().resolve("relu", 3).name, "relu");  // its evaluation reports the count
  EXPECT_THAT(
      [] { (void)signatures().resolve("max", 3); },
      ::testing::ThrowsMessage<Error>(HasSubstr("max with 3 tensor arguments: no such form")));
  EXPECT_THAT([] { (void)signatures().get("lienar"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("did you mean linear?")));
  EXPECT_THAT([] { (void)signatures().get("zzzzzzzz"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("`tapestry kernels` lists them")));
}

TEST(Registry, UserDirectoriesAddKernels) {
  SignatureRegistry registry = SignatureRegistry::from_directory(TAPESTRY_KERNELS_SOURCE_DIR);
  const std::size_t builtins = registry.size();
  registry.load_directory(std::string(TAPESTRY_TEST_DATA) + "/metakernel/user_kernels");
  EXPECT_EQ(registry.size(), builtins + 2);
  const Metakernel& leaky = registry.get("leaky_relu");
  EXPECT_EQ(leaky.call_form(), "leaky_relu(x, slope=0.01)");
  Signature sig = evaluate_signature(leaky, std::vector<Argument>{{"X", tt("f32[3]")}}, {});
  EXPECT_EQ(sig.params, (nlohmann::json{{"slope", 0.01}}));
  EXPECT_THAT(
      [&] {
        registry.load_directory(std::string(TAPESTRY_TEST_DATA) + "/metakernel/user_kernels");
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("kernel scale")));
  EXPECT_THAT([&] { registry.load_directory("/nonexistent/dir"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("does not exist")));
}

TEST(Registry, DefaultDirectoryHonoursTheBuiltinEnvironmentVariable) {
  ::setenv("TAPESTRY_BUILTIN_KERNELS", TAPESTRY_KERNELS_SOURCE_DIR, 1);
  EXPECT_EQ(default_kernel_dir(), std::filesystem::path(TAPESTRY_KERNELS_SOURCE_DIR));
  ::setenv("TAPESTRY_BUILTIN_KERNELS", "/nonexistent/kernels", 1);
  EXPECT_THAT([] { (void)default_kernel_dir(); },
              ::testing::ThrowsMessage<Error>(HasSubstr("is not a directory")));
  ::unsetenv("TAPESTRY_BUILTIN_KERNELS");
  // TAPESTRY_KERNELS adds user kernels (read by the CLI); it never moves the built-ins.
  ::setenv("TAPESTRY_KERNELS", "/nonexistent/kernels", 1);
  EXPECT_TRUE(std::filesystem::is_directory(default_kernel_dir()));
  ::unsetenv("TAPESTRY_KERNELS");
  EXPECT_TRUE(std::filesystem::is_directory(default_kernel_dir()));  // compiled-in source path
}

TEST(Describe, ListsKernelsAndShowsOneWithItsIpfs) {
  const std::string list = describe_kernels(signatures());
  EXPECT_THAT(list, HasSubstr("maximum (max)"));
  EXPECT_THAT(list, HasSubstr("conv2d(x, w, stride=1, padding=0)"));
  EXPECT_THAT(list, HasSubstr("reduce(x, op=sum)"));
  const std::string conv = describe_kernel(signatures().get("conv2d"));
  EXPECT_THAT(conv, HasSubstr("x        [$n, $c, $oh * stride : $kh, $ow * stride : $kw]"));
  EXPECT_THAT(
      conv,
      HasSubstr("sugar    when padding != 0: conv2d(pad(x, padding=padding), w, stride=stride)"));
  EXPECT_THAT(conv, HasSubstr("index    [$n, $o, $oh, $ow, $c]   reductions: c (sum)"));
  EXPECT_THAT(conv, HasSubstr("facts    contraction, 2 FLOPs per index point × w's window, error "
                              "rule bilinear, exact on integers"));
  EXPECT_THAT(describe_kernel(signatures().get("reshape")),
              HasSubstr("computed by the C++ hook 'reshape'"));
  Signature sig = eval("linear", {"f32[-40:60, 20:32]", "f32[32, 12]", "f32[32]"});
  EXPECT_THAT(sig.to_string(), HasSubstr("linear  index [batch 100, out 32, in 12 (sum)]"));
}

TEST(ReshapeGroups, RunsOfEqualProducts) {
  auto groups = [](std::vector<std::int64_t> in, std::vector<std::int64_t> out) {
    std::vector<std::vector<std::size_t>> result;
    for (const ReshapeGroup& g : reshape_groups(zspace::Point(in), zspace::Point(out))) {
      result.push_back({g.in_first, g.in_count, g.out_first, g.out_count});
    }
    return result;
  };
  using G = std::vector<std::vector<std::size_t>>;
  EXPECT_EQ(groups({6, 8}, {2, 3, 4, 2}), (G{{0, 1, 0, 2}, {1, 1, 2, 2}}));
  EXPECT_EQ(groups({2, 3, 4}, {6, 4}), (G{{0, 2, 0, 1}, {2, 1, 1, 1}}));
  EXPECT_EQ(groups({4, 1, 6}, {4, 6}), (G{{0, 1, 0, 1}, {1, 2, 1, 1}}));
  EXPECT_EQ(groups({6, 4}, {4, 6}), (G{{0, 2, 0, 2}}));
  EXPECT_EQ(groups({}, {1, 1}), (G{{0, 0, 0, 2}}));
  EXPECT_EQ(groups({3, 1}, {3}), (G{{0, 2, 0, 1}}));
  EXPECT_THROW(reshape_groups(zspace::Point{0, 3}, zspace::Point{0, 5}), Error);
}

}  // namespace
}  // namespace tapestry::metakernel
