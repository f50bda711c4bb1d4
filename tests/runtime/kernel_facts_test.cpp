// What a kernel is, in one place: every built-in kernel of kernels/*.yaml declares its facts
// (metakernel/kernel_facts.h) and has both bodies — a reference and a fast kernel — and every
// registered kernel has a signature, so adding a kernel to the YAML without its bodies (or a body
// without its YAML) fails here. The readers of the facts — run metrics, the verifier — agree with
// what the YAML declares, and a kernel without facts is priced by the stated default and reported.
#include <gmock/gmock.h>

#include <algorithm>
#include <set>

#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/kernel_facts.h"
#include "tapestry/metakernel/loader.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/rewrite/fused.h"
#include "tapestry/rewrite/kernel_facts_check.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/runtime/block_executor.h"
#include "tapestry/runtime/executable_kernels.h"
#include "tapestry/runtime/fast_kernels.h"
#include "tapestry/runtime/input_generation.h"

namespace tapestry::runtime {
namespace {

namespace mk = tapestry::metakernel;

// The kernel files of the source tree (never an installed copy).
const mk::SignatureRegistry& yaml_kernels() {
  static const mk::SignatureRegistry registry =
      mk::SignatureRegistry::from_directory(TAPESTRY_KERNELS_SOURCE_DIR);
  return registry;
}

std::set<std::string> yaml_names() {
  std::set<std::string> names;
  for (const mk::Metakernel* k : yaml_kernels().metakernels()) names.insert(k->name);
  return names;
}

// A registry's names, less `fused` (rewrite/fused.h: a chain of kernels, whose facts are its
// stages').
std::set<std::string> registered(const ExecutableKernels& kernels) {
  std::set<std::string> names;
  for (const std::string& name : kernels.names()) {
    if (name != rewrite::kFusedKernel) names.insert(name);
  }
  return names;
}

TEST(KernelFacts, EveryBuiltInKernelHasFactsAndBothBodies) {
  ASSERT_GE(yaml_kernels().size(), 30u);
  for (const mk::Metakernel* k : yaml_kernels().metakernels()) {
    SCOPED_TRACE(k->name);
    ASSERT_TRUE(k->facts.has_value()) << "kernels/*.yaml: " << k->name << " declares no facts:";
    EXPECT_TRUE(k->facts->declared);
    // The process-wide lookup (what cost, run metrics and the verifier read) finds the same.
    ASSERT_NE(mk::find_kernel_facts(k->name), nullptr);
    EXPECT_EQ(*mk::find_kernel_facts(k->name), *k->facts);
    if (k->body) continue;  // a YAML body serves both sets (runtime/body_kernels.h)
    EXPECT_TRUE(ExecutableKernels::reference().find(k->name)) << "no reference kernel";
    EXPECT_TRUE(fast_kernels().find(k->name)) << "no fast kernel";
  }
}

// The registration lists (kernels/elementwise.cpp, kernels/fast/*.cpp, …) name only kernels of the
// YAML: a body without a signature is as wrong as a signature without a body.
TEST(KernelFacts, RegistrationListsAgreeWithTheYaml) {
  std::set<std::string> with_bodies;
  for (const mk::Metakernel* k : yaml_kernels().metakernels()) {
    if (!k->body) with_bodies.insert(k->name);
  }
  EXPECT_EQ(registered(ExecutableKernels::reference()), with_bodies);
  EXPECT_EQ(registered(fast_kernels()), with_bodies);
  EXPECT_EQ(yaml_names().size(), yaml_kernels().size());
}

// Facts that several modules used to keep in their own tables, checked against the YAML (and
// the cases where those tables disagreed: slice moves data only; gelu is 8 FLOPs per point).
TEST(KernelFacts, TheBuiltInsDeclareWhatTheReadersRelyOn) {
  const auto facts = [](std::string_view k) { return mk::kernel_facts(k); };
  EXPECT_EQ(facts("slice").flops, 0);
  EXPECT_EQ(facts("slice").kind, mk::KernelClass::kLayout);
  EXPECT_EQ(facts("slice").error_rule, mk::ErrorRule::kMove);
  EXPECT_EQ(facts("gelu").flops, 8);
  EXPECT_EQ(facts("op:gelu").flops, 8);  // Java-style names
  EXPECT_EQ(facts("conv2d").per_point, "w");
  EXPECT_EQ(facts("softmax").per_point, "result");
  EXPECT_EQ(facts("mul").error_rule, mk::ErrorRule::kBilinear);
  EXPECT_EQ(facts("sub").error_rule, mk::ErrorRule::kAdditive);  // inherited from add
  EXPECT_TRUE(facts("neg").exact);                               // inherited from relu
  EXPECT_FALSE(facts("exp").exact);
  EXPECT_FALSE(facts("div").exact);
  EXPECT_EQ(facts("max").error_rule, mk::ErrorRule::kMonoid);
  EXPECT_EQ(facts("variance").flops, 4);
  EXPECT_EQ(facts("variance").per_point, "x");  // inherited from mean
  EXPECT_EQ(facts("argmax").error_rule, mk::ErrorRule::kIndex);
  EXPECT_EQ(facts("argmin").error_rule, mk::ErrorRule::kIndex);  // inherited from argmax
  EXPECT_EQ(facts("argmin").per_point, "x");
  EXPECT_EQ(facts("gather").error_rule, mk::ErrorRule::kMove);
  EXPECT_TRUE(facts("gather").exact);
  EXPECT_EQ(facts("pow").error_rule, mk::ErrorRule::kElementwise);
  EXPECT_FALSE(facts("pow").exact);
  for (const mk::Metakernel* k : yaml_kernels().metakernels()) {
    const mk::KernelFacts& f = *k->facts;
    EXPECT_EQ(f.flops == 0, f.kind == mk::KernelClass::kLayout) << k->name;
    EXPECT_EQ(f.kind == mk::KernelClass::kLayout, f.error_rule == mk::ErrorRule::kMove) << k->name;
  }
}

// `swish` with and without facts, as a plugin or a --kernel-dir file would declare it.
const char kSwish[] = R"yaml(
kernel: swish_nofacts
types: {T: float}
inputs: {x: {shape: "[$d...]", dtype: T}}
outputs: {result: {shape: "[$d...]", dtype: T}}
index: "[$d...]"
ipfs: {x: "[$d...]", result: "[$d...]"}
---
kernel: swish_facts
extends: swish_nofacts
facts: {class: elementwise, flops: 6, error_rule: elementwise}
)yaml";

mk::SignatureRegistry with_swish() {
  mk::SignatureRegistry r = mk::SignatureRegistry::with_builtins();
  for (mk::Metakernel& k :
       mk::parse_kernels(std::make_shared<const mk::SourceFile>("swish.yaml", kSwish), {})) {
    r.add(std::move(k));
  }
  return r;
}

TEST(KernelFacts, AKernelWithoutFactsIsUnknownAndReported) {
  const mk::SignatureRegistry s = with_swish();
  EXPECT_EQ(mk::find_kernel_facts("swish_nofacts"), nullptr);
  EXPECT_EQ(mk::kernel_facts("swish_nofacts"), mk::kUnknownKernelFacts);
  EXPECT_EQ(mk::kUnknownKernelFacts.flops, 1);
  EXPECT_FALSE(mk::kUnknownKernelFacts.declared);
  ASSERT_NE(mk::find_kernel_facts("swish_facts"), nullptr);  // published by the registry
  EXPECT_EQ(mk::find_kernel_facts("swish_facts")->flops, 6);

  mk::Graph g(s);
  const mk::Tensor x = g.input("X", ir::DType::kFloat32, {4, 6});
  g.output(g.assign("A", g.call("swish_nofacts", {x})));
  g.output(g.assign("B", g.call("swish_facts", {x})));
  g.output(g.assign("C", g.call("swish_nofacts", {x})));
  const ir::Graph graph =
      rewrite::lower(g.take(), rewrite::Plan{}, {.driver = {}, .validate = true, .signatures = &s})
          .graph;
  const std::vector<ir::Issue> issues = rewrite::missing_kernel_facts(graph);
  ASSERT_EQ(issues.size(), 1u);  // one per kernel, at its first operation
  EXPECT_EQ(issues[0].type, rewrite::kKernelFactsMissing);
  EXPECT_EQ(issues[0].severity, ir::Severity::kWarning);
  EXPECT_EQ(issues[0].summary, "Kernel swish_nofacts declares no facts");
  ASSERT_EQ(issues[0].contexts.size(), 1u);
  EXPECT_EQ(issues[0].contexts[0].message, "A");

  // Run metrics price it by the stated default (1 FLOP per index point), swish_facts by its 6.
  ExecutableKernels kernels = ExecutableKernels::reference();
  const KernelFn copy = kernels.find("relu");
  kernels.add("swish_nofacts", copy);
  kernels.add("swish_facts", copy);
  const BlockExecutor exec(graph, {.threads = 1, .kernels = &kernels});
  EXPECT_EQ(exec.flops(), 24 + 6 * 24 + 24);
}

}  // namespace
}  // namespace tapestry::runtime
