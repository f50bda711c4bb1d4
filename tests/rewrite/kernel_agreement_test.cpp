// operation-kernel-agreement: Tapestry's own graphs pass — every example under each of its plans,
// the test data graphs, each form the rewrites make — and every way an operation can contradict
// its kernel is reported with the operation, the field and both values. The damaged graphs keep
// their selections equal to IPF(index), so only this constraint can notice.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ir/ir_testing.h"
#include "rewrite/rewrite_testing.h"
#include "tapestry/ir/json_io.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/rewrite/kernel_agreement.h"
#include "tapestry/rewrite/lower.h"
#include "tapestry/support/error.h"
#include "tapestry/zspace/json.h"

namespace tapestry::rewrite {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kData = TAPESTRY_TEST_DATA;
const fs::path kExamples = kData.parent_path().parent_path() / "examples";

// The issues of operation-kernel-agreement (which must have run) on `g`.
std::vector<ir::Issue> kernel_issues(
    const ir::Graph& g,
    const metakernel::SignatureRegistry& signatures = metakernel::builtin_signatures()) {
  const ir::Dialect& base =
      g.applications().empty() ? ir::Dialect::operation() : ir::Dialect::application();
  ir::ValidationReport report = ir::validate(g, with_kernel_agreement(base, signatures));
  for (const std::string& skipped : report.skipped) {
    EXPECT_NE(skipped, kOperationKernelAgreement) << ir::format_issues_text(report.issues);
  }
  std::vector<ir::Issue> out;
  for (ir::Issue& issue : report.issues) {
    if (issue.type == kOperationKernelAgreement) out.push_back(std::move(issue));
  }
  return out;
}

ir::Graph build_file(const fs::path& tap) {
  metakernel::BuildResult built = metakernel::build_tap_file(tap, metakernel::builtin_signatures());
  EXPECT_TRUE(built.ok()) << support::format_diagnostics(built.diagnostics);
  return built.ok() ? std::move(*built.graph) : ir::Graph();
}

ir::Graph lower_unchecked(const ir::Graph& g, const std::string& plan) {
  return lower(g, parse_plan(plan), {.driver = {}, .validate = true, .check_kernels = false}).graph;
}

// ---- damaging documents ----------------------------------------------------------------------

json& node(json& doc, std::string_view label, bool operation) {
  for (json& n : doc["nodes"]) {
    if (n.value("label", "") == label && n["body"].contains("kernel") == operation) return n;
  }
  ADD_FAILURE() << "no " << (operation ? "operation" : "tensor") << " labelled " << label;
  return doc["nodes"][0];
}
json& operation(json& doc, std::string_view label) {
  return node(doc, label, true);
}
json& tensor(json& doc, std::string_view label) {
  return node(doc, label, false);
}

// Recomputes the selections of operation `op` and its applications from its IPFs.
void refresh_selections(json& doc, json& op) {
  const std::string index_tag = ir::testing::ipf_index_tag();
  const std::string sig_tag = ir::testing::ipf_signature_tag();
  const json& sig = op["tags"][sig_tag];
  auto refresh = [&](json& n) {
    const zspace::Range index = zspace::range_from_json(n["tags"][index_tag]);
    for (const char* side : {"inputs", "outputs"}) {
      for (auto& [port, list] : n["body"][side].items()) {
        const auto ipf = zspace::index_projection_from_json(sig[side][port][0]);
        list[0]["range"] = zspace::to_json(ipf.apply(index));
      }
    }
  };
  refresh(op);
  for (json& n : doc["nodes"]) {
    if (n["body"].value("operationId", "") == op["id"]) refresh(n);
  }
}

// Replaces one IPF of the operation labelled `label` (and the selections it determines).
void set_ipf(json& doc, std::string_view label, const char* side, const char* port,
             const zspace::IndexProjection& ipf) {
  json& op = operation(doc, label);
  op["tags"][ir::testing::ipf_signature_tag()][side][port][0] = zspace::to_json(ipf);
  refresh_selections(doc, op);
}

// Replaces the index of the operation labelled `label` and of its one whole-index application.
void set_index(json& doc, std::string_view label, const zspace::Range& index) {
  json& op = operation(doc, label);
  op["tags"][ir::testing::ipf_index_tag()] = zspace::to_json(index);
  for (json& n : doc["nodes"]) {
    if (n["body"].value("operationId", "") == op["id"]) {
      n["tags"][ir::testing::ipf_index_tag()] = zspace::to_json(index);
    }
  }
  refresh_selections(doc, op);
}

ir::Graph damaged(const ir::Graph& g, const std::function<void(json&)>& damage) {
  json doc = json::parse(ir::write_graph_json(g));
  damage(doc);
  ir::ReadResult r = ir::read_graph_json(doc.dump());
  EXPECT_FALSE(ir::has_errors(r.issues)) << ir::format_issues_text(r.issues);
  return std::move(*r.graph);
}

using ir::testing::ipf;

// ---- Tapestry's own graphs pass ----------------------------------------------------------------

TEST(KernelAgreement, EveryExampleUnderEachOfItsPlansAgrees) {
  int lowered = 0, block_splits = 0, fused = 0, nested = 0;
  for (const auto& entry : fs::directory_iterator(kExamples)) {
    if (entry.path().extension() != ".tap") continue;
    const std::string name = entry.path().stem().string();
    const ir::Graph g = build_file(entry.path());
    EXPECT_TRUE(kernel_issues(g).empty()) << name;
    std::vector<std::string> plans = {"{}"};
    for (const auto& p : fs::directory_iterator(kExamples / "plans")) {
      if (p.path().stem().string().starts_with(name + "-")) {
        plans.push_back(ir::testing::read_data(fs::relative(p.path(), kData).string()));
      }
    }
    for (const std::string& plan : plans) {
      const ir::Graph l = lower_unchecked(g, plan);
      const std::vector<ir::Issue> issues = kernel_issues(l);
      EXPECT_TRUE(issues.empty()) << name << " under " << plan << ":\n"
                                  << ir::format_issues_text(issues);
      ++lowered;
      for (ir::OperationId op : l.operations()) {
        const ir::OperationView v = l.operation(op);
        block_splits += !v.index_names().empty() && v.index_names()[0].starts_with("block");
        fused += v.kernel() == "fused";
        nested += v.params().dump().find(R"("kernel":"fused")") != std::string::npos;
      }
    }
  }
  EXPECT_GE(lowered, 12);  // 4 examples, 8 plans
  // The plans exercise the rewrite forms: split-reduction's block split, fused operations, and
  // a fused operation fused again (linear_relu-split-in).
  EXPECT_GT(block_splits, 0);
  EXPECT_GT(fused, 0);
  EXPECT_GT(nested, 0);
}

// Forms the example plans do not reach: uneven splits (partial blocks and a combine tree, for
// sum and max), partial blocks fused with their combine, an output at a non-origin start.
TEST(KernelAgreement, EveryRewriteFormAgrees) {
  struct Case {
    const char* tap;
    const char* plan;
  };
  const Case cases[] = {
      {"A: f32[6, 10]\nB: f32[10, 4]\nY = matmul(A, B)\noutput Y\n",
       R"({"ops": {"Y": {"split": {"k": 4, "m": 2}}}})"},
      {"A: f32[6, 10]\nB: f32[10, 4]\nY = matmul(A, B)\noutput Y\n",
       R"({"ops": {"Y": {"split": {"k": 4}}}, "fuse": "auto"})"},
      {"A: f32[6, 10]\nB: f32[10, 4]\nY = matmul(A, B)\noutput Y\n",
       R"({"ops": {"Y": {"split": {"k": 5}}}, "fuse": "auto"})"},
      {"X: f32[-3:5, 2:12]\nY = max(X, dim=1)\noutput Y\n",
       R"({"ops": {"Y": {"split": {"reduced": 3}}}})"},
      {"X: f32[-40:60, 20:32]\nW: f32[32, 12]\nb: f32[32]\nY = gelu(linear(X, W, b))\n"
       "output Y\n",
       R"({"ops": {"Y/linear": {"split": {"in": 5, "out": 2}}}, "fuse": "auto"})"},
  };
  for (const Case& c : cases) {
    const ir::Graph g = testing::build(c.tap);
    const ir::Graph l = lower_unchecked(g, c.plan);
    const std::vector<ir::Issue> issues = kernel_issues(l);
    EXPECT_TRUE(issues.empty()) << c.tap << c.plan << "\n" << ir::format_issues_text(issues);
    EXPECT_NO_THROW(lower(g, parse_plan(c.plan)));  // lower() checks it too
  }
}

// Every graph of tests/data agrees with its kernels, but for the loom graphs of another system,
// whose kernels are namespaced ("op:add": a warning), and the one made to contradict them.
TEST(KernelAgreement, TestDataGraphsAgreeOrNameAForeignKernel) {
  int graphs = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kData)) {
    if (entry.path().extension() != ".json") continue;
    ir::ReadResult r = ir::read_graph_file(entry.path());
    if (!r.graph || ir::has_errors(r.issues)) continue;  // syntax_error.json and the like
    ++graphs;
    const ir::Dialect& base =
        r.graph->applications().empty() ? ir::Dialect::operation() : ir::Dialect::application();
    std::vector<ir::Issue> errors;
    for (ir::Issue& issue :
         ir::validate(*r.graph, with_kernel_agreement(base, metakernel::builtin_signatures()))
             .issues) {
      if (issue.type != kOperationKernelAgreement) continue;
      if (issue.is_error()) {
        errors.push_back(std::move(issue));
        continue;
      }
      EXPECT_NE(issue.params["kernel"].get<std::string>().find(':'), std::string::npos)
          << entry.path() << "\n"
          << ir::format_issue_text(issue);
    }
    if (entry.path().filename() == "linear_relu_bad_bias.json") {
      ASSERT_EQ(errors.size(), 1u) << ir::format_issues_text(errors);
      EXPECT_EQ(errors[0].params["field"], "inputs.bias");
    } else {
      EXPECT_TRUE(errors.empty()) << entry.path() << "\n" << ir::format_issues_text(errors);
    }
  }
  EXPECT_GE(graphs, 10);
}

// ---- contradictions ----------------------------------------------------------------------------

struct Contradiction {
  const char* name;
  std::function<void(json&)> damage;
  const char* operation;  // the operation reported
  const char* summary;
  const char* field;    // params.field, or "" when the issue has none
  const char* message;  // a part of the message
};

// The running example, Y = relu(linear(X, W, b)) with X at zr[-40:60, 20:32].
ir::Graph linear_relu() {
  return build_file(kExamples / "linear_relu.tap");
}

const Contradiction kContradictions[] = {
    {"bias reads b[0] in every column",
     [](json& d) {
       set_ipf(d, "Y/linear", "inputs", "bias", ipf({{0, 0, 0}}, {0}, {1}));
     },
     "Y/linear", "Operation IPF differs from its kernel's", "inputs.bias",
     "inputs.bias: the graph's IPF is ipf([[0, 0, 0]] + (0), shape (1)); linear derives "
     "ipf([[0, 1, 0]] + (0), shape (1))"},
    {"wrong offset",
     [](json& d) {
       set_ipf(d, "Y/linear", "inputs", "x", ipf({{1, 0, 0}, {0, 0, 1}}, {-39, 20}, {1, 1}));
     },
     "Y/linear", "Operation IPF differs from its kernel's", "inputs.x", "+ (-40, 20)"},
    {"wrong IPF shape",
     [](json& d) {
       set_ipf(d, "Y/linear", "inputs", "w", ipf({{0, 1, 0}, {0, 0, 1}}, {0, 0}, {1, 2}));
     },
     "Y/linear", "Operation IPF differs from its kernel's", "inputs.w", "shape (1, 2)"},
    {"wrong output IPF",
     [](json& d) {
       set_ipf(d, "Y", "outputs", "result", ipf({{1, 0}, {0, 1}}, {0, 1}, {1, 1}));
     },
     "Y", "Operation IPF differs from its kernel's", "outputs.result", "relu derives"},
    {"wrong output shape",
     [](json& d) {
       tensor(d, "Y/linear")["body"]["range"]["end"] = {100, 33};
     },
     "Y/linear", "Operation output type differs from its kernel's", "outputs.result",
     "tensor Y/linear is float32 [100, 33]; linear derives float32 [100, 32]"},
    {"wrong output dtype", [](json& d) { tensor(d, "Y/linear")["body"]["dtype"] = "float64"; },
     "Y/linear", "Operation output type differs from its kernel's", "outputs.result",
     "tensor Y/linear is float64 [100, 32]; linear derives float32 [100, 32]"},
    {"wrong index range",
     [](json& d) {
       set_index(d, "Y/linear", zspace::Range::of_shape({50, 32, 12}));
     },
     "Y/linear", "Operation index differs from its kernel's", "index",
     "the graph's IPFIndex is zr[0:50, 0:32, 0:12]; linear derives zr[0:100, 0:32, 0:12]"},
    {"a reduction cut short",
     [](json& d) {
       set_index(d, "Y/linear", zspace::Range::of_shape({100, 32, 11}));
     },
     "Y/linear", "Partial reduction is not combined", "index",
     "only reduce or add may combine them, but Y reads Y/linear (relu)"},
    {"wrong reduction monoid",
     [](json& d) { operation(d, "Y/linear")["body"]["reductions"]["in"] = "max"; }, "Y/linear",
     "Operation reductions differ from its kernel's", "reductions",
     R"(the graph reduces {"in":"max"}; linear derives {"in":"sum"})"},
    {"renamed index dim",
     [](json& d) {
       operation(d, "Y")["body"]["indexNames"] = {"rows", "cols"};
     },
     "Y", "Operation index names differ from its kernel's", "indexNames",
     "the graph names the index dims (rows, cols); relu derives (d0, d1)"},
    {"unknown kernel", [](json& d) { operation(d, "Y")["body"]["kernel"] = "relu6"; }, "Y",
     "Operation's kernel is unknown", "", "no kernel 'relu6' is loaded"},
    {"a port the kernel does not have",
     [](json& d) {
       json& op = operation(d, "Y/linear");
       for (json* n :
            {&op["body"]["inputs"], &op["tags"][ir::testing::ipf_signature_tag()]["inputs"]}) {
         (*n)["b"] = (*n)["bias"];
         n->erase("bias");
       }
       for (json& a : d["nodes"]) {
         if (a["body"].value("operationId", "") != op["id"]) continue;
         a["body"]["inputs"]["b"] = a["body"]["inputs"]["bias"];
         a["body"]["inputs"].erase("bias");
       }
     },
     "Y/linear", "Operation cannot be derived from its kernel", "",
     "linear takes the inputs (x, w, bias), the operation has (b, w, x)"},
    {"a parameter the kernel rejects",
     [](json& d) {
       operation(d, "Y")["body"]["params"] = {{"slope", 2}};
     },
     "Y", "Operation cannot be derived from its kernel", "", "slope"},
};

void PrintTo(const Contradiction& c, std::ostream* os) {
  *os << c.name;
}

class ContradictionTest : public ::testing::TestWithParam<Contradiction> {};

TEST_P(ContradictionTest, IsReportedWithTheOperationAndBothValues) {
  const Contradiction& c = GetParam();
  const ir::Graph g = damaged(linear_relu(), c.damage);
  const std::vector<ir::Issue> issues = kernel_issues(g);
  const ir::Issue* found = nullptr;
  for (const ir::Issue& issue : issues) {
    if (issue.params.value("operation", "") == c.operation && issue.summary == c.summary) {
      found = &issue;
    }
  }
  ASSERT_NE(found, nullptr) << ir::format_issues_text(issues);
  EXPECT_TRUE(found->is_error());
  EXPECT_NE(found->message.find(c.message), std::string::npos) << found->message;
  ASSERT_EQ(found->contexts.size(), 1u);
  EXPECT_EQ(found->contexts[0].message, c.operation);
  if (*c.field != 0) {
    EXPECT_EQ(found->params["field"], c.field);
    EXPECT_NE(found->params["graph"], found->params["derived"]);
  }
  // The undamaged graph has no such issue.
  EXPECT_TRUE(kernel_issues(linear_relu()).empty());
}

INSTANTIATE_TEST_SUITE_P(LinearRelu, ContradictionTest, ::testing::ValuesIn(kContradictions),
                         [](const auto& info) {
                           std::string name = info.param.name;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(KernelAgreement, ANamespacedKernelIsAWarning) {
  const ir::Graph g =
      damaged(linear_relu(), [](json& d) { operation(d, "Y")["body"]["kernel"] = "ops:relu"; });
  const std::vector<ir::Issue> issues = kernel_issues(g);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].severity, ir::Severity::kWarning);
  EXPECT_EQ(issues[0].params["derivable"], false);
}

TEST(KernelAgreement, UserKernelsAreKnownWhenLoaded) {
  metakernel::SignatureRegistry signatures = metakernel::SignatureRegistry::with_builtins();
  signatures.load_directory(kData / "metakernel" / "user_kernels");
  auto file = std::make_shared<metakernel::SourceFile>(
      "scale.tap", "X: f32[4, 5]\nY = scale(X, factor=3.0)\noutput Y\n");
  metakernel::BuildResult built = metakernel::build_tap(file, signatures);
  ASSERT_TRUE(built.ok());
  EXPECT_TRUE(kernel_issues(*built.graph, signatures).empty());
  const std::vector<ir::Issue> issues = kernel_issues(*built.graph);  // built-ins only
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].summary, "Operation's kernel is unknown");
  EXPECT_TRUE(issues[0].is_error());
}

// An operation without IPF tags (legal, a warning) is checked through its selections.
TEST(KernelAgreement, AnOperationWithoutIpfTagsIsCheckedByItsSelections) {
  const ir::Graph g = damaged(linear_relu(), [](json& d) {
    for (json& n : d["nodes"]) {
      if (n["body"].contains("operationId")) n = json(nullptr);
    }
    d["nodes"].erase(std::remove(d["nodes"].begin(), d["nodes"].end(), json(nullptr)),
                     d["nodes"].end());
    json& op = operation(d, "Y/linear");
    op.erase("tags");
    op["body"]["inputs"]["bias"][0]["range"] = {{"start", {0}}, {"end", {31}}};
  });
  const std::vector<ir::Issue> issues = kernel_issues(g);
  ASSERT_EQ(issues.size(), 1u) << ir::format_issues_text(issues);
  EXPECT_EQ(issues[0].summary, "Operation selection differs from its kernel's");
  EXPECT_EQ(issues[0].params["field"], "inputs.bias");
}

// ---- contradictions in rewritten operations ---------------------------------------------------

// The issue of `type` summary on operation `op`, or null.
const ir::Issue* find_issue(const std::vector<ir::Issue>& issues, std::string_view op,
                            std::string_view summary) {
  for (const ir::Issue& issue : issues) {
    if (issue.params.value("operation", "") == op && issue.summary == summary) return &issue;
  }
  return nullptr;
}

TEST(KernelAgreement, ABlockSplitOperationIsCheckedInItsForm) {
  // matmul's k = 10 in 2 blocks of 5: index [block, m, n, k'], a reads A[m, 5·block + k'].
  const ir::Graph l = lower_unchecked(testing::build("A: f32[6, 10]\nB: f32[10, 4]\n"
                                                     "Y = matmul(A, B)\noutput Y\n"),
                                      R"({"ops": {"Y": {"split": {"k": 2}}}})");
  ASSERT_TRUE(kernel_issues(l).empty());
  const ir::Graph bad = damaged(l, [](json& d) {
    set_ipf(d, "Y", "inputs", "a", ipf({{0, 1, 0, 0}, {4, 0, 0, 1}}, {0, 0}, {1, 1}));
  });
  const std::vector<ir::Issue> issues = kernel_issues(bad);
  const ir::Issue* issue = find_issue(issues, "Y", "Operation IPF differs from its kernel's");
  ASSERT_NE(issue, nullptr) << ir::format_issues_text(issues);
  EXPECT_EQ(issue->params["form"], "block split of k into 2");
  EXPECT_EQ(issue->params["field"], "inputs.a");
}

TEST(KernelAgreement, AFusedOperationIsCheckedStageByStage) {
  const ir::Graph l = lower_unchecked(
      linear_relu(), ir::testing::read_data("../../examples/plans/linear_relu-batch2-fused.json"));
  ASSERT_TRUE(kernel_issues(l).empty());
  // Stage 1 (relu) over the wrong part of the fused index: its index map moved by one row.
  const ir::Graph bad = damaged(l, [](json& d) {
    json& map = operation(d, "Y")["body"]["params"]["stages"][1]["indexMap"];
    map["offset"] = {1, 0};
  });
  const std::vector<ir::Issue> issues = kernel_issues(bad);
  const ir::Issue* issue = find_issue(issues, "Y", "Fused stage differs from its kernel's");
  ASSERT_NE(issue, nullptr) << ir::format_issues_text(issues);
  EXPECT_EQ(issue->params["field"], "stages/1/indexMap");
  EXPECT_EQ(issue->params["form"], "fused: linear, relu");
}

TEST(KernelAgreement, APartialBlockMayOnlyBeCombined) {
  // k = 10 in 4 uneven blocks: Y/block0 … over sub-ranges of k, combined by a tree of add.
  const ir::Graph l = lower_unchecked(testing::build("A: f32[6, 10]\nB: f32[10, 4]\n"
                                                     "Y = matmul(A, B)\noutput Y\n"),
                                      R"({"ops": {"Y": {"split": {"k": 4}}}})");
  ASSERT_TRUE(kernel_issues(l).empty());
  const ir::Graph bad = damaged(l, [](json& d) {
    for (json& n : d["nodes"]) {
      if (n["body"].value("kernel", "") == "add") n["body"]["kernel"] = "sub";
    }
  });
  const std::vector<ir::Issue> issues = kernel_issues(bad);
  const ir::Issue* issue = find_issue(issues, "Y/block0", "Partial reduction is not combined");
  ASSERT_NE(issue, nullptr) << ir::format_issues_text(issues);
  EXPECT_NE(issue->message.find("(sub)"), std::string::npos) << issue->message;
}

// ---- lowering ---------------------------------------------------------------------------------

TEST(KernelAgreement, LoweringRefusesAContradictingGraphUnlessTrusted) {
  const ir::Graph bad = damaged(linear_relu(), kContradictions[0].damage);
  try {
    (void)lower(bad, parse_plan(R"({"ops": {"Y": {"split": {"d0": 2}}}})"));
    FAIL() << "lowered a graph that contradicts its kernels";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.starts_with("the graph to lower is invalid")) << what;
    EXPECT_NE(what.find("inputs.bias"), std::string::npos) << what;
  }
  const LowerResult trusted = lower(bad, parse_plan(R"({"ops": {"Y": {"split": {"d0": 2}}}})"),
                                    {.driver = {}, .validate = true, .check_kernels = false});
  EXPECT_EQ(trusted.graph.applications().size(), 3u);
}

}  // namespace
}  // namespace tapestry::rewrite
